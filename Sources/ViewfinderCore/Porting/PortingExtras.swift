// swift-format-ignore-file: AlwaysUseLowerCamelCase
// Small forms ported code uses that have no other home: format descriptions of device formats,
// Core Video pixel format types in format lists, and the AVFoundation classes Linux has no
// counterpart for, which the compiler names the replacement of. (The preview layer is in Preview/.)

/// `CMVideoDimensions`: a video size (Viewfinder's ``CaptureDevice/Dimensions``, `Int32` fields as
/// in Core Media).
public typealias VideoDimensions = CaptureDevice.Dimensions

/// `CMVideoFormatDescriptionGetDimensions(_:)`: the size a video format description describes
/// (zero for non-video descriptions).
public func VideoFormatDescriptionGetDimensions(_ description: FormatDescription) -> VideoDimensions {
    if case .video(_, let dimensions) = description { return dimensions }
    return VideoDimensions(width: 0, height: 0)
}

/// `CMFormatDescriptionGetMediaSubType(_:)`: the pixel format as an `OSType` (0 when none).
public func FormatDescriptionGetMediaSubType(_ description: FormatDescription) -> OSType {
    description.pixelFormat?.osType ?? 0
}

extension CaptureDevice.Format {
    /// `AVCaptureDevice.Format.formatDescription`: the format as a ``FormatDescription``.
    public var formatDescription: FormatDescription {
        .video(pixelFormat: pixelFormat, dimensions: dimensions)
    }
}

extension Array where Element == PixelFormat {
    /// Whether the list holds the format with Core Video type `osType`, so
    /// `output.availableVideoPixelFormatTypes.contains(kCVPixelFormatType_32BGRA)` ports unchanged.
    public func contains(_ osType: OSType) -> Bool {
        contains { $0.osType == osType }
    }
}
