/// A pixel format, identified by a four-character code like Core Video's `OSType` formats.
///
/// The named constants use Core Video's codes where one exists (`'BGRA'`, `'420v'`, `'420f'`,
/// `'yuvs'`, `'y420'`), so a format printed by Viewfinder reads like one printed on macOS.
/// Each format knows its planes and their geometry for a given size.
///
/// Thread safety: a value type; freely sendable.
public struct PixelFormat: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The four-character code, big-endian packed (`'BGRA'` is `0x4247_5241`).
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// A format from its four-character code string, e.g. `PixelFormat(fourCC: "BGRA")`.
    public init?(fourCC: String) {
        let bytes = Array(fourCC.utf8)
        guard bytes.count == 4 else { return nil }
        rawValue = bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// The known format with Core Video's pixel format type `osType` (e.g.
    /// `kCVPixelFormatType_32BGRA`), or `nil` when Viewfinder does not know its layout.
    public init?(osType: OSType) {
        let format = PixelFormat(rawValue: osType)
        guard format.isKnown else { return nil }
        self = format
    }

    /// The format's Core Video pixel format type: its four-character code.
    public var osType: OSType { rawValue }

    /// 32-bit BGRA, one plane, 8 bits a channel in memory order B, G, R, A
    /// (`kCVPixelFormatType_32BGRA`; libyuv calls this layout "ARGB").
    public static let bgra = PixelFormat(fourCCLiteral: "BGRA")
    /// NV12 with BT.601 video-range luma 16–235 and chroma 16–240: a Y plane and an interleaved
    /// CbCr plane at half width and half height (`kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange`).
    public static let nv12VideoRange = PixelFormat(fourCCLiteral: "420v")
    /// NV12 with full-range 0–255 values (`kCVPixelFormatType_420YpCbCr8BiPlanarFullRange`).
    public static let nv12FullRange = PixelFormat(fourCCLiteral: "420f")
    /// Packed 4:2:2 in byte order Y0 Cb Y1 Cr, video range (V4L2's YUYV, Core Video's `'yuvs'`).
    public static let yuyv = PixelFormat(fourCCLiteral: "yuvs")
    /// Three-plane 4:2:0, Y then Cb then Cr, video range (`kCVPixelFormatType_420YpCbCr8Planar`).
    public static let i420 = PixelFormat(fourCCLiteral: "y420")
    /// Motion-JPEG: each frame one compressed JPEG image. Cameras produce it; Viewfinder decodes
    /// it for outputs that want raw frames, and a video data output asking for it gets the
    /// camera's JPEG bytes untouched (no converter makes or takes it).
    public static let mjpeg = PixelFormat(fourCCLiteral: "jpeg")

    /// The formats Viewfinder knows the geometry of.
    public static let allKnown: [PixelFormat] = [.bgra, .nv12VideoRange, .nv12FullRange, .yuyv, .i420, .mjpeg]

    private init(fourCCLiteral: StaticString) {
        var code: UInt32 = 0
        fourCCLiteral.withUTF8Buffer { for byte in $0 { code = code << 8 | UInt32(byte) } }
        rawValue = code
    }

    /// The four-character code as a string, e.g. `"420v"`.
    public var fourCC: String {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (24 - 8 * UInt32($0))) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A readable name, e.g. `"NV12 (video range)"`.
    public var name: String {
        switch self {
        case .bgra: return "BGRA"
        case .nv12VideoRange: return "NV12 (video range)"
        case .nv12FullRange: return "NV12 (full range)"
        case .yuyv: return "YUYV 4:2:2"
        case .i420: return "I420"
        case .mjpeg: return "Motion-JPEG"
        default: return "'\(fourCC)'"
        }
    }

    public var description: String { name }

    /// Whether frames of this format are compressed (their size is not a function of geometry).
    public var isCompressed: Bool { self == .mjpeg }

    /// Whether Viewfinder knows this format's layout.
    public var isKnown: Bool { Self.allKnown.contains(self) }

    /// Whether the format stores Y'CbCr (as opposed to RGB).
    public var isYUV: Bool { self != .bgra && self != .mjpeg }

    /// Whether Y'CbCr values span the full 0–255 range.
    public var isFullRange: Bool { self == .nv12FullRange }

    /// The number of planes a buffer of this format has (0 for an unknown format).
    public var planeCount: Int {
        switch self {
        case .bgra, .yuyv, .mjpeg: return 1
        case .nv12VideoRange, .nv12FullRange: return 2
        case .i420: return 3
        default: return 0
        }
    }

    /// The geometry of one plane of a `width` × `height` image, with rows tightly packed.
    public func planeGeometry(_ plane: Int, width: Int, height: Int) -> PlaneGeometry {
        let halfWidth = (width + 1) / 2
        let halfHeight = (height + 1) / 2
        switch (self, plane) {
        case (.bgra, 0): return PlaneGeometry(width: width, height: height, bytesPerRow: width * 4)
        case (.yuyv, 0): return PlaneGeometry(width: width, height: height, bytesPerRow: halfWidth * 4)
        case (.nv12VideoRange, 0), (.nv12FullRange, 0), (.i420, 0):
            return PlaneGeometry(width: width, height: height, bytesPerRow: width)
        case (.nv12VideoRange, 1), (.nv12FullRange, 1):
            return PlaneGeometry(width: halfWidth, height: halfHeight, bytesPerRow: halfWidth * 2)
        case (.i420, 1), (.i420, 2):
            return PlaneGeometry(width: halfWidth, height: halfHeight, bytesPerRow: halfWidth)
        case (.mjpeg, 0):
            // A compressed frame has no fixed layout; budget the worst case of raw 4:2:2.
            return PlaneGeometry(width: width, height: height, bytesPerRow: halfWidth * 4)
        default: return PlaneGeometry(width: 0, height: 0, bytesPerRow: 0)
        }
    }

    /// The bytes one tightly packed `width` × `height` frame takes, all planes together.
    public func frameSize(width: Int, height: Int) -> Int {
        (0..<planeCount).reduce(0) {
            let plane = planeGeometry($1, width: width, height: height)
            return $0 + plane.bytesPerRow * plane.height
        }
    }
}

/// The size and row stride of one plane of a pixel buffer.
public struct PlaneGeometry: Sendable, Hashable {
    /// Samples per row (for an interleaved chroma plane: CbCr pairs per row).
    public var width: Int
    /// Rows.
    public var height: Int
    /// Bytes from the start of one row to the start of the next.
    public var bytesPerRow: Int
}
