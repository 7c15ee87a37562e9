import CYUV

/// Reads the luma (Y') of a frame row by row, for the analysis processors: straight from the Y
/// plane for NV12 and I420, through libyuv for YUYV (`YUY2ToY`) and BGRA (`ARGBToJ400`, BT.601
/// full-range luma `0.299 R + 0.587 G + 0.114 B` in 8-bit fixed point, within 1 of the exact value).
package enum LumaRows {
    /// The formats luma can be read from.
    package static let formats: [PixelFormat] = [.nv12VideoRange, .nv12FullRange, .i420, .yuyv, .bgra]

    /// Whether the luma of `format` is full range (0–255) rather than video range (16–235).
    package static func isFullRange(_ format: PixelFormat) -> Bool { format == .bgra || format.isFullRange }

    /// Whether reading `format` needs a row of scratch (one byte per pixel).
    package static func needsRowScratch(_ format: PixelFormat) -> Bool { format == .bgra || format == .yuyv }

    /// Row `row` of `buffer`'s luma, `buffer.width` bytes. For BGRA and YUYV the row is computed
    /// into `scratch` (at least `buffer.width` bytes) and the result points there.
    package static func row(_ row: Int, of buffer: PixelBuffer, scratch: UnsafeMutablePointer<UInt8>?) -> UnsafePointer<
        UInt8
    > {
        let start = BuiltIn.pixels(buffer, 0) + row * buffer.bytesPerRow(ofPlane: 0)
        switch buffer.pixelFormat {
        case .bgra:
            guard let scratch else { preconditionFailure("BGRA luma needs a scratch row") }
            ARGBToJ400(start, 0, scratch, 0, Int32(buffer.width), 1)
            return UnsafePointer(scratch)
        case .yuyv:
            guard let scratch else { preconditionFailure("YUYV luma needs a scratch row") }
            YUY2ToY(start, 0, scratch, 0, Int32(buffer.width), 1)
            return UnsafePointer(scratch)
        default:
            return UnsafePointer(start)
        }
    }
}
