/// The virtual camera's picture: a strip of 32 black-or-white cells at the top that spell the
/// frame's sequence number (least significant bit on the left), eight 75 % colour bars in the
/// middle, and a white box moving over grey at the bottom.
///
/// Every edge sits on an even pixel and the code strip and the box are neutral grey levels, so
/// 4:2:0 and 4:2:2 subsampling leave them exact, and ``readSequenceNumber(from:)`` recovers the
/// number from a frame in any uncompressed format at least 64 pixels wide (narrower frames have
/// cells too few to hold 32 bits: it answers `nil`). In frames too short for the bars, the box
/// keeps below the strip, so the number stays readable down to one row.
///
/// Thread safety: a stateless namespace.
import ViewfinderCore

public enum TestPattern {
    /// The bar colours, left to right, as 8-bit R, G, B (75 % amplitude).
    public static let barColors: [(r: UInt8, g: UInt8, b: UInt8)] = [
        (191, 191, 191), (191, 191, 0), (0, 191, 191), (0, 191, 0),
        (191, 0, 191), (191, 0, 0), (0, 0, 191), (0, 0, 0),
    ]
    /// The grey behind the moving box.
    package static let backgroundLevel: UInt8 = 64

    /// Rows taken by the sequence-number strip in a frame `height` rows tall.
    public static func codeStripHeight(height: Int) -> Int { max(2, (height / 16) & ~1) }

    /// The rows the colour bars occupy (none in a frame too short for them).
    public static func barRows(height: Int) -> Range<Int> {
        let top = min(codeStripHeight(height: height), max(0, height))
        return top..<max(top, (height * 3 / 4) & ~1)
    }

    /// The columns of bar `index` (0–7) in a frame `width` pixels wide.
    public static func barColumns(_ index: Int, width: Int) -> Range<Int> {
        ((index * width / 8) & ~1)..<(((index + 1) * width / 8) & ~1)
    }

    /// The rectangle of the moving box for frame `sequenceNumber`.
    package static func boxRect(sequenceNumber: UInt64, width: Int, height: Int) -> (x: Range<Int>, y: Range<Int>) {
        let top = barRows(height: height).upperBound
        let boxWidth = max(2, (width / 8) & ~1)
        let boxHeight = max(2, ((height - top) / 2) & ~1)
        let travel = max(1, width - boxWidth)
        let x = Int((sequenceNumber &* 8) % UInt64(travel)) & ~1
        // Never over the sequence-number strip (frames of a few rows have no room for the box).
        let y = max(codeStripHeight(height: height), min(height, (top + (height - top - boxHeight) / 2) & ~1))
        return (x..<(x + boxWidth), y..<max(y, min(height, y + boxHeight)))
    }

    /// The narrowest frame whose 32 code cells are each at least one pixel pair wide.
    public static let minimumReadableWidth = 64

    /// The columns of the code cell of `bit`, or `nil` in a frame too narrow for every cell to
    /// have its own pixels.
    package static func readableCell(_ bit: Int, width: Int) -> Range<Int>? {
        guard width >= minimumReadableWidth else { return nil }
        let cell = cellColumns(bit, width: width)
        return cell.isEmpty ? nil : cell
    }

    package static func cellColumns(_ bit: Int, width: Int) -> Range<Int> {
        ((bit * width / 32) & ~1)..<(((bit + 1) * width / 32) & ~1)
    }

    /// Draws frame `sequenceNumber` into `buffer` in full.
    public static func render(sequenceNumber: UInt64, into buffer: PixelBuffer) {
        let painter = Painter(buffer)
        let w = buffer.width
        let h = buffer.height
        painter.fill(x: 0..<w, y: 0..<h, grey: 0)
        let bars = barRows(height: h)
        for (index, color) in barColors.enumerated() {
            painter.fill(x: barColumns(index, width: w), y: bars, rgb: color)
        }
        painter.fill(x: 0..<w, y: bars.upperBound..<h, grey: backgroundLevel)
        stamp(sequenceNumber: sequenceNumber, previous: nil, into: buffer)
    }

    /// Draws a flash frame: all white but for the sequence-number strip, which still shows
    /// `sequenceNumber` (``readSequenceNumber(from:)`` reads it as from any frame).
    public static func renderFlash(sequenceNumber: UInt64, into buffer: PixelBuffer) {
        let painter = Painter(buffer)
        painter.fill(x: 0..<buffer.width, y: 0..<buffer.height, grey: 255)
        let strip = 0..<codeStripHeight(height: buffer.height)
        for bit in 0..<32 {
            let on = (sequenceNumber >> UInt64(bit)) & 1 == 1
            painter.fill(x: cellColumns(bit, width: buffer.width), y: strip, grey: on ? 255 : 0)
        }
    }

    /// Whether `buffer` shows a flash frame (``renderFlash(sequenceNumber:into:)``): every probed
    /// point below the sequence-number strip is bright, where an ordinary frame has a black bar
    /// and a grey background. `false` for compressed buffers.
    public static func isFlash(_ buffer: PixelBuffer) -> Bool {
        guard !buffer.pixelFormat.isCompressed, buffer.pixelFormat.planeCount > 0, buffer.width > 0 else {
            return false
        }
        let top = codeStripHeight(height: buffer.height)
        guard buffer.height > top else { return false }
        for row in 0..<8 {
            let y = top + (buffer.height - top) * (2 * row + 1) / 16
            for column in 0..<16 {
                let x = buffer.width * (2 * column + 1) / 32
                if brightness(of: buffer, x: x, y: y) < 200 { return false }
            }
        }
        return true
    }

    /// Updates a buffer that holds frame `previous` (rendered by this pattern) to show
    /// `sequenceNumber`, touching only the code cells that change and the box.
    package static func stamp(sequenceNumber: UInt64, previous: UInt64?, into buffer: PixelBuffer) {
        let painter = Painter(buffer)
        let w = buffer.width
        let h = buffer.height
        let strip = 0..<codeStripHeight(height: h)
        for bit in 0..<32 {
            let on = (sequenceNumber >> UInt64(bit)) & 1 == 1
            if let previous, ((previous >> UInt64(bit)) & 1 == 1) == on { continue }
            painter.fill(x: cellColumns(bit, width: w), y: strip, grey: on ? 255 : 0)
        }
        if let previous {
            let old = boxRect(sequenceNumber: previous, width: w, height: h)
            painter.fill(x: old.x, y: old.y, grey: backgroundLevel)
        }
        let box = boxRect(sequenceNumber: sequenceNumber, width: w, height: h)
        painter.fill(x: box.x, y: box.y, grey: 255)
    }

    /// Reads the sequence number (its low 32 bits) that ``render(sequenceNumber:into:)`` drew,
    /// from a frame in any uncompressed format at least ``minimumReadableWidth`` pixels wide and
    /// one row high, reading each code cell at its centre. `nil` where the pattern cannot hold
    /// the number: a compressed or empty buffer, or a frame narrower than that.
    public static func readSequenceNumber(from buffer: PixelBuffer) -> UInt64? {
        guard !buffer.pixelFormat.isCompressed, buffer.pixelFormat.planeCount > 0 else { return nil }
        guard buffer.height > 0, buffer.width > 0 else { return nil }
        let y = min(codeStripHeight(height: buffer.height) / 2, buffer.height - 1)
        var value: UInt64 = 0
        for bit in 0..<32 {
            guard let cell = readableCell(bit, width: buffer.width) else { return nil }
            let x = cell.lowerBound + cell.count / 2
            if brightness(of: buffer, x: x, y: y) > 128 { value |= 1 << UInt64(bit) }
        }
        return value
    }

    /// A 0–255 brightness of one pixel: luma for Y'CbCr formats, the RGB mean for BGRA.
    package static func brightness(of buffer: PixelBuffer, x: Int, y: Int) -> Int {
        let row = buffer.baseAddress(ofPlane: 0) + y * buffer.bytesPerRow(ofPlane: 0)
        switch buffer.pixelFormat {
        case .bgra:
            let p = row.assumingMemoryBound(to: UInt8.self) + x * 4
            return (Int(p[0]) + Int(p[1]) + Int(p[2])) / 3
        case .yuyv:
            return Int(row.load(fromByteOffset: x * 2, as: UInt8.self))
        default:
            return Int(row.load(fromByteOffset: x, as: UInt8.self))
        }
    }
}

/// Fills rectangles of a buffer with a colour, in whatever format it has. Rectangles must start
/// and end on even coordinates for subsampled formats.
package struct Painter {
    package let buffer: PixelBuffer
    package init(_ buffer: PixelBuffer) { self.buffer = buffer }

    package func fill(x: Range<Int>, y: Range<Int>, grey: UInt8) {
        fill(x: x, y: y, rgb: (grey, grey, grey))
    }

    package func fill(x requested: Range<Int>, y: Range<Int>, rgb: (r: UInt8, g: UInt8, b: UInt8)) {
        // Shapes of a frame only a few pixels wide may reach past its right edge: cut them there.
        let x = requested.clamped(to: 0..<max(0, buffer.width))
        guard !x.isEmpty, !y.isEmpty else { return }
        let format = buffer.pixelFormat
        let ycc = BT601.ycbcr(r: rgb.r, g: rgb.g, b: rgb.b, fullRange: format.isFullRange)
        switch format {
        case .bgra:
            let pixel = UInt32(rgb.b) | UInt32(rgb.g) << 8 | UInt32(rgb.r) << 16 | 0xFF00_0000
            forRows(plane: 0, y) { row in
                let p = row.assumingMemoryBound(to: UInt32.self)
                for column in x { p[column] = pixel.littleEndian }
            }
        case .yuyv:
            forRows(plane: 0, y) { row in
                let p = row.assumingMemoryBound(to: UInt8.self)
                for pair in stride(from: x.lowerBound & ~1, to: x.upperBound, by: 2) {
                    p[pair * 2] = ycc.y
                    p[pair * 2 + 1] = ycc.cb
                    p[pair * 2 + 2] = ycc.y
                    p[pair * 2 + 3] = ycc.cr
                }
            }
        case .nv12VideoRange, .nv12FullRange:
            forRows(plane: 0, y) { row in
                (row + x.lowerBound).initializeMemory(as: UInt8.self, repeating: ycc.y, count: x.count)
            }
            forRows(plane: 1, (y.lowerBound / 2)..<((y.upperBound + 1) / 2)) { row in
                let p = row.assumingMemoryBound(to: UInt8.self)
                for pair in (x.lowerBound / 2)..<((x.upperBound + 1) / 2) {
                    p[pair * 2] = ycc.cb
                    p[pair * 2 + 1] = ycc.cr
                }
            }
        case .i420:
            forRows(plane: 0, y) { row in
                (row + x.lowerBound).initializeMemory(as: UInt8.self, repeating: ycc.y, count: x.count)
            }
            let half = (x.lowerBound / 2)..<((x.upperBound + 1) / 2)
            for (plane, value) in [(1, ycc.cb), (2, ycc.cr)] {
                forRows(plane: plane, (y.lowerBound / 2)..<((y.upperBound + 1) / 2)) { row in
                    (row + half.lowerBound).initializeMemory(as: UInt8.self, repeating: value, count: half.count)
                }
            }
        default:
            break
        }
    }

    private func forRows(plane: Int, _ rows: Range<Int>, _ body: (UnsafeMutableRawPointer) -> Void) {
        let base = buffer.baseAddress(ofPlane: plane)
        let stride = buffer.bytesPerRow(ofPlane: plane)
        let limit = buffer.height(ofPlane: plane)
        for row in rows where row < limit { body(base + row * stride) }
    }
}

/// ITU-R BT.601, the matrix Viewfinder uses for every Y'CbCr conversion (video range 16–235 /
/// 16–240 unless the format is full range), as cameras and JPEG do.
package enum BT601 {
    package static func ycbcr(r: UInt8, g: UInt8, b: UInt8, fullRange: Bool) -> (y: UInt8, cb: UInt8, cr: UInt8) {
        let (rf, gf, bf) = (Double(r), Double(g), Double(b))
        let y: Double
        let cb: Double
        let cr: Double
        if fullRange {
            y = 0.299 * rf + 0.587 * gf + 0.114 * bf
            cb = 128 + (-0.168736 * rf - 0.331264 * gf + 0.5 * bf)
            cr = 128 + (0.5 * rf - 0.418688 * gf - 0.081312 * bf)
        } else {
            y = 16 + (65.481 * rf + 128.553 * gf + 24.966 * bf) / 255
            cb = 128 + (-37.797 * rf - 74.203 * gf + 112.0 * bf) / 255
            cr = 128 + (112.0 * rf - 93.786 * gf - 18.214 * bf) / 255
        }
        func clamp(_ v: Double) -> UInt8 { UInt8(max(0, min(255, v.rounded()))) }
        return (clamp(y), clamp(cb), clamp(cr))
    }
}
