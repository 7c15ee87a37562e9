import CV4L2
import ViewfinderCore

/// Translates between V4L2 FourCCs and Viewfinder's ``PixelFormat``s, and between V4L2 fractions
/// and ``MediaTime``.
///
/// Thread safety: a stateless namespace.
package enum V4L2FourCC {
    /// The Viewfinder format for a V4L2 pixel format, or `nil` for formats Viewfinder cannot
    /// handle (those are left out of a device's formats).
    package static func pixelFormat(_ fourCC: UInt32) -> PixelFormat? {
        switch fourCC {
        case VF_V4L2_PIX_FMT_YUYV: return .yuyv
        case VF_V4L2_PIX_FMT_NV12: return .nv12VideoRange
        case VF_V4L2_PIX_FMT_YUV420: return .i420
        case VF_V4L2_PIX_FMT_BGR32, VF_V4L2_PIX_FMT_ABGR32, VF_V4L2_PIX_FMT_XBGR32: return .bgra
        case VF_V4L2_PIX_FMT_MJPEG, VF_V4L2_PIX_FMT_JPEG: return .mjpeg
        default: return nil
        }
    }

    /// The V4L2 code for a Viewfinder format (the inverse of ``pixelFormat(_:)``).
    package static func fourCC(_ pixelFormat: PixelFormat) -> UInt32? {
        switch pixelFormat {
        case .yuyv: return VF_V4L2_PIX_FMT_YUYV
        case .nv12VideoRange: return VF_V4L2_PIX_FMT_NV12
        case .i420: return VF_V4L2_PIX_FMT_YUV420
        case .bgra: return VF_V4L2_PIX_FMT_XBGR32
        case .mjpeg: return VF_V4L2_PIX_FMT_MJPEG
        default: return nil
        }
    }

    /// A FourCC from its four characters (`"YUYV"`), V4L2's little-endian packing.
    package static func code(_ string: String) -> UInt32? {
        let bytes = Array(string.utf8)
        guard bytes.count == 4 else { return nil }
        return bytes.enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }

    /// The four characters of a V4L2 FourCC (`"YUYV"`).
    package static func string(_ code: UInt32) -> String {
        String(decoding: (0..<4).map { UInt8(truncatingIfNeeded: code >> (8 * UInt32($0))) }, as: UTF8.self)
    }

    /// A V4L2 fraction of a second as a time.
    package static func time(numerator: UInt32, denominator: UInt32) -> MediaTime {
        guard denominator > 0 else { return .invalid }
        if denominator <= UInt32(Int32.max) {
            return MediaTime(value: Int64(numerator), timescale: Int32(denominator))
        }
        return MediaTime(value: Int64(numerator) * 1_000_000_000 / Int64(denominator), timescale: 1_000_000_000)
    }

    /// A time as a V4L2 fraction of a second (numerator, denominator).
    package static func fraction(_ time: MediaTime) -> (numerator: UInt32, denominator: UInt32) {
        if time.value >= 0, time.value <= Int64(UInt32.max) {
            return (UInt32(time.value), UInt32(time.timescale))
        }
        return (UInt32(clamping: time.nanoseconds / 1000), 1_000_000)
    }
}
