import Foundation

/// A photo taken by a ``CapturePhotoOutput`` (the counterpart of `AVCapturePhoto`): the JPEG
/// file's bytes (``fileDataRepresentation()``) or the uncompressed pixels (``pixelBuffer``), its
/// EXIF ``metadata``, when it was captured and the settings it was taken with.
///
/// Orientation: the connection's `videoRotationAngle` and `isVideoMirrored` are not applied to
/// the pixels (a video data output rotates frames through processors; a photo does not pay for
/// that): they are written as the EXIF `Orientation` tag, which viewers apply.
///
/// A ``CaptureDeferredPhotoProxy`` is a `CapturePhoto` too, as `AVCaptureDeferredPhotoProxy` is
/// an `AVCapturePhoto`.
///
/// Thread safety: immutable; may be shared across threads.
public class CapturePhoto: @unchecked Sendable {  // unchecked: immutable (a subclass guards its own state).
    /// When the camera captured the frame, on the device's clock (`.invalid` when the request
    /// failed before a frame was taken).
    public let timestamp: MediaTime
    /// The settings the photo was taken with.
    public let resolvedSettings: CaptureResolvedPhotoSettings
    /// Which photo of the request this is, from 1 (always 1: no brackets).
    public let photoCount: Int
    /// The uncompressed photo's pixels (`nil` for a JPEG photo). The buffer is the photo's own,
    /// not one of the camera's.
    public let pixelBuffer: PixelBuffer?
    /// The camera's sequence number of the frame the photo was taken from.
    public let sequenceNumber: UInt64
    /// The EXIF fields written (or, for an uncompressed photo, that describe it).
    public let exif: EXIFMetadata
    private let jpeg: Data?
    /// The preview image asked for with ``CapturePhotoSettings/previewPhotoFormat``.
    package let preview: PixelBuffer?

    package init(
        timestamp: MediaTime, resolvedSettings: CaptureResolvedPhotoSettings, pixelBuffer: PixelBuffer?,
        sequenceNumber: UInt64, exif: EXIFMetadata, jpeg: Data?, preview: PixelBuffer? = nil
    ) {
        self.timestamp = timestamp
        self.resolvedSettings = resolvedSettings
        self.photoCount = 1
        self.pixelBuffer = pixelBuffer
        self.sequenceNumber = sequenceNumber
        self.exif = exif
        self.jpeg = jpeg
        self.preview = preview
    }

    /// The photo of a request that failed: no pixels, no data.
    package convenience init(failed resolved: CaptureResolvedPhotoSettings) {
        self.init(
            timestamp: .invalid, resolvedSettings: resolved, pixelBuffer: nil, sequenceNumber: 0, exif: EXIFMetadata(),
            jpeg: nil)
    }

    /// The JPEG file's bytes, EXIF APP1 segment right after SOI; `nil` for an uncompressed photo
    /// (read ``pixelBuffer``, or encode it with ``JPEGEncoder``) and for a failed request.
    public func fileDataRepresentation() -> Data? { jpeg }

    /// The photo's metadata in Image I/O's shape, as `AVCapturePhoto.metadata`:
    /// ``kCGImagePropertyExifDictionary`` (`"{Exif}"`: `DateTimeOriginal`, `OffsetTimeOriginal`,
    /// `PixelXDimension`, `PixelYDimension`, `UserComment`), ``kCGImagePropertyTIFFDictionary``
    /// (`"{TIFF}"`: `Make`, `Model`, `Software`, `Artist`, `ImageDescription`, `Orientation`), and
    /// at the top level ``kCGImagePropertyOrientation``, ``kCGImagePropertyPixelWidth`` and
    /// ``kCGImagePropertyPixelHeight`` (each where set). The same fields, typed and flat, are
    /// ``exif``.
    public var metadata: [String: Any] { exif.imageIOProperties }
}

extension EXIFMetadata {
    /// The EXIF tag names of the fields, for ``CapturePhoto/metadata`` and
    /// ``CapturePhotoSettings/metadata``.
    package static var stringKeys: [String: WritableKeyPath<EXIFMetadata, String?>] {
        [
            "DateTimeOriginal": \.dateTimeOriginal, "OffsetTimeOriginal": \.offsetTimeOriginal, "Make": \.make,
            "Model": \.model, "ImageDescription": \.imageDescription, "Software": \.software, "Artist": \.artist,
            "UserComment": \.userComment,
        ]
    }
    package static var integerKeys: [String: WritableKeyPath<EXIFMetadata, Int?>] {
        ["PixelXDimension": \.pixelWidth, "PixelYDimension": \.pixelHeight, "Orientation": \.orientation]
    }
    /// The keys users may set through ``CapturePhotoSettings/metadata``.
    package static let userKeys: Set<String> = [
        "ImageDescription", "Artist", "UserComment", "Software", "Make", "Model", "Orientation",
    ]

    /// The fields set, by EXIF tag name.
    package var dictionary: [String: Any] {
        var result: [String: Any] = [:]
        for (key, path) in Self.stringKeys { if let value = self[keyPath: path] { result[key] = value } }
        for (key, path) in Self.integerKeys { if let value = self[keyPath: path] { result[key] = value } }
        return result
    }

    /// Applies the user's fields (validated first: see ``CapturePhotoSettings/metadata``).
    package mutating func apply(_ user: [String: CapturePhotoSettings.MetadataValue]) throws(CaptureError) {
        for (key, value) in user.sorted(by: { $0.key < $1.key }) {
            guard Self.userKeys.contains(key) else {
                throw CaptureError(
                    .invalidArgument,
                    "photo metadata key '\(key)' cannot be set: use one of \(Self.userKeys.sorted().joined(separator: ", "))"
                )
            }
            switch value {
            case .string(let string) where Self.stringKeys[key] != nil:
                self[keyPath: Self.stringKeys[key]!] = string
            case .integer(let integer) where key == "Orientation" && (1...8).contains(integer):
                orientation = integer
            default:
                throw CaptureError(
                    .invalidArgument,
                    key == "Orientation"
                        ? "photo metadata 'Orientation' takes an Int from 1 to 8, got \(value.value)"
                        : "photo metadata '\(key)' takes a String, got \(value.value)")
            }
        }
    }
}
