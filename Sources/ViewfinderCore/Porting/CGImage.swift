import Foundation

/// Viewfinder's own minimal stand-in for Core Graphics' `CGImage`, which Linux does not have
/// (swift-corelibs-foundation gives `CGFloat`, `CGPoint`, `CGSize` and `CGRect` only): an
/// immutable bitmap of decoded 8-bit BGRA pixels, with the read-only members capture code uses.
///
/// ``CapturePhoto/cgImageRepresentation()`` and ``CapturePhoto/previewCGImageRepresentation()``
/// make one. The layout is what iOS' `cgImageRepresentation()` typically gives: 32 bits a pixel,
/// 8 bits a component, in memory B, G, R, A (32-bit little-endian ARGB, alpha first: Core
/// Graphics' `byteOrder32Little` with `premultipliedFirst`); camera pictures are opaque, so the
/// alpha byte is always 255 and premultiplied and plain colour are the same. Rows are
/// ``bytesPerRow`` apart, top row first.
///
/// ```swift
/// if let image = photo.cgImageRepresentation(), let pixels = image.dataProvider?.data {
///     let firstBlue = pixels[0]  // B, G, R, A of the top-left pixel
///     _ = (image.width, image.height, firstBlue)
/// }
/// ```
///
/// There is no drawing, colour space or `UIImage` on Linux: `UIImage(cgImage:)` lines stay with
/// your UI code (see the porting table).
///
/// Thread safety: immutable; freely sendable.
public final class CGImage: Sendable {
    /// The width in pixels.
    public let width: Int
    /// The height in pixels.
    public let height: Int
    /// The bytes from the start of one row to the start of the next (`width * 4` here).
    public let bytesPerRow: Int
    /// The pixel data.
    public let dataProvider: CGDataProvider?
    private let pixels: Data

    /// Bits per colour component: 8.
    public var bitsPerComponent: Int { 8 }
    /// Bits per pixel: 32 (B, G, R, A).
    public var bitsPerPixel: Int { 32 }

    /// An image of `width` × `height` BGRA pixels `bytesPerRow` apart in `pixels`.
    package init?(width: Int, height: Int, bytesPerRow: Int, pixels: Data) {
        guard width > 0, height > 0, bytesPerRow >= width * 4, pixels.count >= bytesPerRow * (height - 1) + width * 4
        else { return nil }
        self.width = width
        self.height = height
        self.bytesPerRow = bytesPerRow
        self.pixels = pixels
        dataProvider = CGDataProvider(data: pixels)
    }

    /// An image holding a copy of a BGRA pixel buffer's pixels (`nil` for another format).
    package convenience init?(bgra buffer: PixelBuffer) {
        guard buffer.pixelFormat == .bgra, buffer.width > 0, buffer.height > 0 else { return nil }
        let rowBytes = buffer.width * 4
        var data = Data(count: rowBytes * buffer.height)
        let source = buffer.bytes(ofPlane: 0)
        let stride = buffer.bytesPerRow
        data.withUnsafeMutableBytes { target in
            for row in 0..<buffer.height {
                let from = UnsafeRawBufferPointer(rebasing: source[(row * stride)..<(row * stride + rowBytes)])
                UnsafeMutableRawBufferPointer(rebasing: target[(row * rowBytes)..<((row + 1) * rowBytes)])
                    .copyMemory(from: from)
            }
        }
        self.init(width: buffer.width, height: buffer.height, bytesPerRow: rowBytes, pixels: data)
    }

    /// The part of the image inside `rect` (pixels, origin top-left), as a new image, like Core
    /// Graphics' `cropping(to:)`: the rectangle is first made integral (its edges moved outwards to
    /// whole pixels) and clipped to the image; `nil` when nothing of it is inside the image or it
    /// is null, empty or not finite.
    public func cropping(to rect: CGRect) -> CGImage? {
        guard !rect.isNull, !rect.isEmpty, rect.minX.isFinite, rect.minY.isFinite, rect.maxX.isFinite,
            rect.maxY.isFinite
        else { return nil }
        let standard = rect.standardized
        let left = max(0, Int(standard.minX.rounded(.down).clamped(to: -1e9...1e9)))
        let top = max(0, Int(standard.minY.rounded(.down).clamped(to: -1e9...1e9)))
        let right = min(width, Int(standard.maxX.rounded(.up).clamped(to: -1e9...1e9)))
        let bottom = min(height, Int(standard.maxY.rounded(.up).clamped(to: -1e9...1e9)))
        guard right > left, bottom > top else { return nil }
        let rowBytes = (right - left) * 4
        var data = Data(count: rowBytes * (bottom - top))
        pixels.withUnsafeBytes { source in
            data.withUnsafeMutableBytes { target in
                for row in top..<bottom {
                    let start = row * bytesPerRow + left * 4
                    UnsafeMutableRawBufferPointer(
                        rebasing: target[((row - top) * rowBytes)..<((row - top + 1) * rowBytes)]
                    ).copyMemory(from: UnsafeRawBufferPointer(rebasing: source[start..<(start + rowBytes)]))
                }
            }
        }
        return CGImage(width: right - left, height: bottom - top, bytesPerRow: rowBytes, pixels: data)
    }
}

/// The pixel data of a ``CGImage`` (Core Graphics' `CGDataProvider`, read-only here).
///
/// Thread safety: immutable; freely sendable.
public final class CGDataProvider: Sendable {
    private let bytes: Data

    package init(data: Data) { bytes = data }

    /// The bytes (Core Graphics gives a `CFData`; on Linux it is Foundation's `Data`).
    public var data: Data? { bytes }
}

extension Comparable {
    fileprivate func clamped(to range: ClosedRange<Self>) -> Self { min(max(self, range.lowerBound), range.upperBound) }
}
