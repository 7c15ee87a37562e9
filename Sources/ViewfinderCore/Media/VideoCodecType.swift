// swift-format-ignore-file: AlwaysUseLowerCamelCase
// AVFoundation's settings keys keep their capitalised names with "AV" deleted, so ported code compiles.

/// A compressed video or image format, the counterpart of `AVVideoCodecType`: photo outputs
/// list the ones they write in `availablePhotoCodecTypes`, and settings dictionaries name one
/// under ``VideoCodecKey``.
///
/// Thread safety: a value type; freely sendable.
public struct VideoCodecType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The codec's name (`"jpeg"`, `"avc1"`, `"hvc1"`), as AVFoundation spells it.
    public var rawValue: String

    /// A codec type named `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// JPEG (photos; Motion-JPEG frames).
    public static let jpeg = VideoCodecType(rawValue: "jpeg")
    /// H.264 / AVC.
    public static let h264 = VideoCodecType(rawValue: "avc1")
    /// H.265 / HEVC.
    public static let hevc = VideoCodecType(rawValue: "hvc1")

    /// The raw value.
    public var description: String { rawValue }
}

/// The settings key whose value is a ``VideoCodecType`` (or its raw value), as `AVVideoCodecKey`.
public let VideoCodecKey = "AVVideoCodecKey"
/// The settings key whose value is a dictionary of compression properties such as
/// ``VideoQualityKey``, as `AVVideoCompressionPropertiesKey`.
public let VideoCompressionPropertiesKey = "AVVideoCompressionPropertiesKey"
/// The compression property whose value is the JPEG quality from 0 (smallest) to 1 (best), as
/// `AVVideoQualityKey`. Photo settings also take it at the top level of their format.
public let VideoQualityKey = "AVVideoQualityKey"
