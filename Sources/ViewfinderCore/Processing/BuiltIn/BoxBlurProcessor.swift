import Synchronization

/// Blurs frames with a box filter: each output sample is the mean, rounded to nearest, of the
/// (2 × radius + 1)² samples around it (like ffmpeg's `boxblur` with one pass). Samples beyond
/// the border repeat the edge sample.
///
/// It is a separable running-sum blur, O(1) per sample whatever the radius: a running sum down
/// each column (one row of 32-bit sums, updated by adding the row entering the box and
/// subtracting the row leaving it), then a running sum along that row. BGRA is blurred as four
/// interleaved channels (alpha included); NV12 and I420 blur luma with `radius` and chroma, at half
/// resolution, with `(radius + 1) / 2`, covering about the same area.
///
/// A flat image stays exactly flat; a step edge becomes a monotone ramp 2 × radius + 1 samples
/// wide. (libyuv's `ARGBBlur` was the first choice for BGRA, but it truncates its averages — a
/// flat level of 90 comes out as 89 with 3×3 and 5×5 boxes, which also breaks monotonicity at
/// edges — and no installed library has a planar box blur.)
///
/// ```swift
/// try output.addProcessor(BoxBlurProcessor(radius: 4), named: "blur")
/// ```
///
/// Thread safety: the row of column sums sits behind a `Mutex` (allocated on the first frame of
/// a width, reused after); one instance may serve several outputs.
public final class BoxBlurProcessor: FrameProcessor {
    /// Samples on each side of the centre that the box reaches (1 is a 3×3 box).
    public let radius: Int
    private let scratch = Mutex<ScratchMemory?>(nil)

    /// The largest radius accepted.
    public static let maximumRadius = 64

    /// A blur reaching `radius` samples each way (1…``maximumRadius``); other values throw
    /// ``CaptureError/Code/invalidArgument``.
    public init(radius: Int) throws(CaptureError) {
        guard (1...Self.maximumRadius).contains(radius) else {
            throw CaptureError(
                .invalidArgument, "a box blur radius must be 1...\(Self.maximumRadius), got \(radius)")
        }
        self.radius = radius
    }

    /// BGRA, NV12 (either range) and I420.
    public var acceptedPixelFormats: [PixelFormat] { [.bgra, .nv12VideoRange, .nv12FullRange, .i420] }

    /// The input; throws ``CaptureError/Code/invalidArgument`` when the box would be wider than
    /// the frame (radius ≥ half the width or height), where a blur stops meaning much.
    public func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat {
        guard acceptedPixelFormats.contains(input.pixelFormat) else {
            throw BuiltIn.unsupported("BoxBlurProcessor", input, accepted: acceptedPixelFormats)
        }
        let limit = min(input.width / 2 - 1, input.height / 2 - 1)
        guard radius <= limit else {
            throw CaptureError(
                .invalidArgument,
                "a box blur radius of \(radius) is too large for \(input.width)x\(input.height) frames: "
                    + "use at most \(max(0, limit)) or blur larger frames"
            )
        }
        return input
    }

    public func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        let source = frame.image
        let destination = try BuiltIn.outputBuffer(for: frame, processor: "BoxBlurProcessor")
        let radius = self.radius
        scratch.withLock { scratch in
            // Two rows of 32-bit sums, as wide as the widest plane row in samples (bytes), plus
            // room on either side of the column sums for the repeated edge positions.
            var samples = 0
            for plane in 0..<source.planeCount {
                samples = max(
                    samples, source.pixelFormat.planeGeometry(plane, width: source.width, height: 1).bytesPerRow)
            }
            let padding = (radius + 1) * 4
            let memory = ScratchMemory.reuse(scratch, byteCount: (2 * samples + 2 * padding) * 4, key: samples)
            scratch = memory
            let columnSums = memory.typed(UInt32.self) + padding
            let rowSums = columnSums + samples + padding
            for plane in 0..<source.planeCount {
                let channels: Int
                switch (source.pixelFormat, plane) {
                case (.bgra, _): channels = 4
                case (.i420, _), (_, 0): channels = 1
                default: channels = 2  // NV12's interleaved CbCr
                }
                Self.blurPlane(
                    source, into: destination, plane: plane, channels: channels,
                    radius: plane == 0 ? radius : (radius + 1) / 2, columnSums: columnSums, rowSums: rowSums)
            }
        }
        frame.image = destination
        return .keep
    }

    /// Box-blurs one plane of 8-bit samples (`channels` interleaved per position) with edge
    /// samples repeated, in O(1) per sample. `columnSums` holds a row of samples with room for
    /// `radius + 1` positions before and after it; `rowSums` holds a row of samples.
    ///
    /// Per output row: repeat the edge column sums into that room, run a sum of 2 × radius + 1
    /// positions along the row (`rowSums`), divide every sum by the box area (a multiply and a
    /// shift, exact for these ranges), then slide the column sums down a row.
    private static func blurPlane(
        _ source: PixelBuffer, into destination: PixelBuffer, plane: Int, channels: Int, radius: Int,
        columnSums: UnsafeMutablePointer<UInt32>, rowSums: UnsafeMutablePointer<UInt32>
    ) {
        let positions = source.width(ofPlane: plane)
        let rows = source.height(ofPlane: plane)
        let samples = positions * channels
        let input = UnsafePointer(BuiltIn.pixels(source, plane))
        let inputStride = source.bytesPerRow(ofPlane: plane)
        let output = BuiltIn.pixels(destination, plane)
        let outputStride = destination.bytesPerRow(ofPlane: plane)
        let divider = BoxDivider(radius: radius)
        func rowStart(_ row: Int) -> UnsafePointer<UInt8> { input + min(max(row, 0), rows - 1) * inputStride }

        // Column sums for output row 0: rows -r…r, edge rows repeated.
        columnSums.update(repeating: 0, count: samples)
        for row in -radius...radius {
            let line = rowStart(row)
            for index in 0..<samples { columnSums[index] &+= UInt32(line[index]) }
        }
        let edge = (radius + 1) * channels
        for row in 0..<rows {
            // Repeat the first and last positions' sums beyond the edges.
            for index in 0..<edge {
                let channel = index % channels
                (columnSums - edge)[index] = columnSums[channel]
                columnSums[samples + index] = columnSums[samples - channels + channel]
            }
            switch channels {
            case 1: runningSums(UInt32.self, columnSums, rowSums, positions: positions, radius: radius)
            case 2: runningSums(SIMD2<UInt32>.self, columnSums, rowSums, positions: positions, radius: radius)
            default: runningSums(SIMD4<UInt32>.self, columnSums, rowSums, positions: positions, radius: radius)
            }
            divider.divide(rowSums, into: output + row * outputStride, count: samples)
            // Slide the box down: add the row entering it, subtract the row leaving it.
            let entering = rowStart(row + radius + 1)
            let leaving = rowStart(row - radius)
            for index in 0..<samples {
                columnSums[index] = columnSums[index] &+ UInt32(entering[index]) &- UInt32(leaving[index])
            }
        }
    }

    /// `sums[p]` = the sum of `columns[p - radius … p + radius]`, per position of `Lanes`
    /// interleaved channels; `columns` must be readable from `-radius` to `positions + radius`.
    @inline(__always)
    private static func runningSums<Lanes: BoxBlurLanes>(
        _: Lanes.Type, _ columns: UnsafeMutablePointer<UInt32>, _ sums: UnsafeMutablePointer<UInt32>,
        positions: Int, radius: Int
    ) {
        let size = MemoryLayout<Lanes>.stride
        var leaving = UnsafeRawPointer(columns - radius * Lanes.scalarCount)
        var entering = leaving
        var sum = Lanes.zero
        for _ in -radius...radius {
            sum &+= entering.loadUnaligned(as: Lanes.self)
            entering += size
        }
        var target = UnsafeMutableRawPointer(sums)
        for _ in 0..<positions {
            target.storeBytes(of: sum, as: Lanes.self)
            sum = sum &+ entering.loadUnaligned(as: Lanes.self) &- leaving.loadUnaligned(as: Lanes.self)
            target += size
            entering += size
            leaving += size
        }
    }
}

/// Divides box sums by the box's area, rounding to nearest, for one radius.
///
/// Up to ``floatRadiusLimit`` it multiplies in `Float` by the reciprocal and rounds by adding
/// 2^23 (the sum's integer part lands in the low mantissa bits): four lanes per SSE instruction,
/// no checked conversions. That is exact: a sum `y` < 2^24 converts exactly, the product is
/// within 255 × 2^-23 ≈ 3.1e-5 of `y / area`, while `y / area` (area odd, so never a half) lies at
/// least `1 / (2 area)` ≥ 5.3e-5 from the nearest rounding boundary. Larger boxes take an integer
/// multiply and shift, also exact.
package struct BoxDivider {
    package static let floatRadiusLimit = 48

    package let area: UInt32
    package let reciprocal: Float
    package let multiplier: UInt64
    package let shift: UInt64
    package let usesFloat: Bool

    package init(radius: Int) {
        area = UInt32((2 * radius + 1) * (2 * radius + 1))
        reciprocal = 1 / Float(area)
        // With 2^shift ≥ 2^23 × area the multiplier's error (below 1) never carries a sum
        // below 2^23 to the next quotient.
        shift = UInt64(23 + (UInt32.bitWidth - area.leadingZeroBitCount))
        multiplier = (1 << shift) / UInt64(area) + 1
        usesFloat = radius <= Self.floatRadiusLimit
    }

    /// `round(sum / area)` (halves up), the reference the fast paths must match.
    package func quotient(_ sum: UInt32) -> UInt8 {
        if usesFloat {
            let rounded = Float(Int32(bitPattern: sum)) * reciprocal + 8_388_608
            return UInt8(truncatingIfNeeded: rounded.bitPattern)
        }
        return UInt8(truncatingIfNeeded: (UInt64(sum &+ area / 2) &* multiplier) &>> shift)
    }

    /// `target[i] = round(sums[i] / area)` for `count` sums.
    package func divide(_ sums: UnsafePointer<UInt32>, into target: UnsafeMutablePointer<UInt8>, count: Int) {
        if usesFloat {
            let reciprocal = self.reciprocal
            for index in 0..<count {
                let rounded = Float(Int32(bitPattern: sums[index])) * reciprocal + 8_388_608
                target[index] = UInt8(truncatingIfNeeded: rounded.bitPattern)
            }
        } else {
            let (half, multiplier, shift) = (area / 2, multiplier, shift)
            for index in 0..<count {
                target[index] = UInt8(truncatingIfNeeded: (UInt64(sums[index] &+ half) &* multiplier) &>> shift)
            }
        }
    }
}

/// The channel groups a running sum moves along a row at once: one, two or four 32-bit sums.
package protocol BoxBlurLanes: BitwiseCopyable {
    static var zero: Self { get }
    static var scalarCount: Int { get }
    static func &+ (lhs: Self, rhs: Self) -> Self
    static func &- (lhs: Self, rhs: Self) -> Self
    static func &+= (lhs: inout Self, rhs: Self)
}

extension UInt32: BoxBlurLanes {
    package static var scalarCount: Int { 1 }
}
extension SIMD2<UInt32>: BoxBlurLanes {}
extension SIMD4<UInt32>: BoxBlurLanes {}
