import Foundation
import Synchronization

/// What one photo should be (the counterpart of `AVCapturePhotoSettings`): JPEG at a quality, or
/// uncompressed pixels in a format; a ``flashMode``; ``metadata`` to add to the photo's EXIF.
///
/// ```swift
/// let settings = CapturePhotoSettings(format: [VideoCodecKey: VideoCodecType.jpeg,
///                                              VideoCompressionPropertiesKey: [VideoQualityKey: 0.8]])
/// output.capturePhoto(with: settings, delegate: self)
/// ```
///
/// Each instance has its own ``uniqueID``; a settings object may be used for one request only
/// (use ``init(from:)`` for another with the same values): passing it again fails that request.
///
/// Thread safety: every member may be used from any thread (mutable values are under a lock);
/// the output reads a snapshot when the request is made.
public final class CapturePhotoSettings: Sendable {
    /// What the photo is encoded as.
    package enum Format: Sendable, Hashable {
        case jpeg(quality: Double)
        case uncompressed(PixelFormat)
    }

    /// A metadata value kept in a sendable form.
    package enum MetadataValue: Sendable, Hashable {
        case string(String)
        case integer(Int)
        /// A value of a type no EXIF field takes.
        case unsupported(String)

        package init(_ value: Any) {
            switch value {
            case let string as String: self = .string(string)
            case let integer as Int: self = .integer(integer)
            case let number as Double where number.rounded() == number && abs(number) < 1e15:
                self = .integer(Int(number))
            default: self = .unsupported(String(describing: type(of: value)))
            }
        }

        package var value: Any {
            switch self {
            case .string(let s): return s
            case .integer(let i): return i
            case .unsupported(let t): return t
            }
        }
    }

    /// The JPEG quality used when the format names none (AVFoundation's default is similar).
    public static let defaultQuality = 0.9

    private static let counter = Atomic<Int64>(0)

    /// The request's identity, increasing with every settings object made in this process.
    public let uniqueID: Int64
    /// The format resolved from what was passed: ``VideoCodecKey`` and ``VideoQualityKey``, or
    /// `kCVPixelBufferPixelFormatTypeKey` (empty when the format cannot be used).
    public let format: [String: any Sendable]
    /// The photo's codec, `nil` for an uncompressed photo.
    public let photoCodecType: VideoCodecType?
    /// The uncompressed photo's pixel format, `nil` for a compressed photo.
    public let photoPixelFormatType: PixelFormat?
    package let resolvedFormat: Format?
    /// Why the format cannot be used, if it cannot (reported through the delegate).
    package let formatError: CaptureError?

    private struct Mutable {
        var flashMode = CaptureDevice.FlashMode.off
        var metadata: [String: MetadataValue] = [:]
        var qualityPrioritization = CapturePhotoOutput.QualityPrioritization.balanced
        var maxPhotoDimensions = CaptureDevice.Dimensions(width: 0, height: 0)
    }
    private let mutable = Mutex(Mutable())
    /// AVFoundation's settings that change nothing on Linux (`CapturePhotoSettings+AVFoundation.swift`).
    package let porting = Mutex(PhotoSettingsExtras())

    /// The largest photo asked for (`AVCapturePhotoSettings.maxPhotoDimensions`). Kept and copied
    /// by ``init(from:)``; a photo is always a frame of the running stream, at
    /// ``CapturePhotoOutput/maxPhotoDimensions``, whatever is set.
    public var maxPhotoDimensions: CaptureDevice.Dimensions {
        get { mutable.withLock { $0.maxPhotoDimensions } }
        set { mutable.withLock { $0.maxPhotoDimensions = newValue } }
    }

    /// How much to favour quality over speed (`AVCapturePhotoSettings.photoQualityPrioritization`).
    /// Default ``CapturePhotoOutput/QualityPrioritization/balanced``. Kept and copied by
    /// ``init(from:)``, but every photo is one frame of the running stream whatever is asked (Linux
    /// cameras have no multi-frame fusion), so it changes nothing.
    public var photoQualityPrioritization: CapturePhotoOutput.QualityPrioritization {
        get { mutable.withLock { $0.qualityPrioritization } }
        set { mutable.withLock { $0.qualityPrioritization = newValue } }
    }

    /// JPEG at ``defaultQuality``.
    public convenience init() {
        self.init(format: [:])
    }

    /// Settings for `format`: ``VideoCodecKey`` (``VideoCodecType/jpeg``, the only codec; also
    /// its raw value `"jpeg"`) with an optional ``VideoQualityKey`` (0…1, top level or inside
    /// ``VideoCompressionPropertiesKey``), or `kCVPixelBufferPixelFormatTypeKey` (an ``OSType``
    /// such as `kCVPixelFormatType_32BGRA`, or a ``PixelFormat``) for an uncompressed photo. A
    /// format that cannot be used makes the request fail with
    /// ``CaptureError/Code/invalidArgument``, through every delegate callback.
    public init(format: [String: Any]) {
        uniqueID = Self.counter.add(1, ordering: .relaxed).newValue
        var sendable: [String: any Sendable] = [:]
        let parsed = Self.parse(format)
        switch parsed {
        case .success(let resolved):
            resolvedFormat = resolved
            formatError = nil
            switch resolved {
            case .jpeg(let quality):
                photoCodecType = .jpeg
                photoPixelFormatType = nil
                sendable = [VideoCodecKey: VideoCodecType.jpeg, VideoQualityKey: quality]
            case .uncompressed(let pixelFormat):
                photoCodecType = nil
                photoPixelFormatType = pixelFormat
                sendable = [kCVPixelBufferPixelFormatTypeKey: pixelFormat.rawValue]
            }
        case .failure(let error):
            resolvedFormat = nil
            formatError = error
            photoCodecType = nil
            photoPixelFormatType = nil
        }
        self.format = sendable
    }

    /// New settings (with a new ``uniqueID``) with the format, flash mode and metadata of
    /// `settings` (the counterpart of `AVCapturePhotoSettings(from:)`).
    public convenience init(from settings: CapturePhotoSettings) {
        self.init(resolved: settings.resolvedFormat, error: settings.formatError, format: settings.format)
        let copied = settings.mutable.withLock { $0 }
        mutable.withLock { $0 = copied }
    }

    package init(resolved: Format?, error: CaptureError?, format: [String: any Sendable]) {
        uniqueID = Self.counter.add(1, ordering: .relaxed).newValue
        resolvedFormat = resolved
        formatError = error
        self.format = format
        if case .jpeg = resolved { photoCodecType = .jpeg } else { photoCodecType = nil }
        if case .uncompressed(let p) = resolved { photoPixelFormatType = p } else { photoPixelFormatType = nil }
    }

    /// Whether the flash fires. Default ``CaptureDevice/FlashMode/off``; anything else fails the
    /// request on a camera without a flash (every webcam).
    public var flashMode: CaptureDevice.FlashMode {
        get { mutable.withLock { $0.flashMode } }
        set { mutable.withLock { $0.flashMode = newValue } }
    }

    /// Gone, as ``CapturePhotoOutput/isHighResolutionCaptureEnabled`` is: a photo is a frame of
    /// the running stream, so the flag could change nothing.
    /// Whether this photo should be at the highest resolution the format allows
    /// (``CaptureDevice/Format/highResolutionStillImageDimensions``). Kept and copied: a photo
    /// is a frame of the running stream, which is already that size, so every photo is at it.
    /// Default `false`, as in AVFoundation.
    public var isHighResolutionPhotoEnabled: Bool {
        get { porting.withLock { $0.highResolution } }
        set { porting.withLock { $0.highResolution = newValue } }
    }

    /// EXIF fields to add to the photo: `"ImageDescription"`, `"Artist"`, `"UserComment"`,
    /// `"Software"`, `"Make"`, `"Model"` (strings) and `"Orientation"` (1…8), given in Image I/O's
    /// nested shape (under `"{Exif}"`/`"{TIFF}"`, as ``CapturePhoto/metadata`` has them) or flat by
    /// tag name; read back flat. They replace what the output would write. Another key,
    /// or a value of the wrong type, fails the request with ``CaptureError/Code/invalidArgument``.
    public var metadata: [String: Any] {
        get { mutable.withLock { $0.metadata }.mapValues(\.value) }
        set {
            let converted = EXIFMetadata.flattened(newValue).mapValues(MetadataValue.init)
            mutable.withLock { $0.metadata = converted }
        }
    }

    /// A snapshot for a request.
    package var snapshot: (flashMode: CaptureDevice.FlashMode, metadata: [String: MetadataValue]) {
        mutable.withLock { ($0.flashMode, $0.metadata) }
    }

    private static func parse(_ format: [String: Any]) -> Result<Format, CaptureError> {
        let known: Set<String> = [
            VideoCodecKey, VideoQualityKey, VideoCompressionPropertiesKey, kCVPixelBufferPixelFormatTypeKey,
        ]
        if let unknown = format.keys.first(where: { !known.contains($0) }) {
            return .failure(
                CaptureError(
                    .invalidArgument,
                    "photo format key '\(unknown)' is not supported: use VideoCodecKey (+ VideoQualityKey) or kCVPixelBufferPixelFormatTypeKey"
                ))
        }
        if let raw = format[kCVPixelBufferPixelFormatTypeKey] {
            guard format[VideoCodecKey] == nil else {
                return .failure(
                    CaptureError(
                        .invalidArgument,
                        "a photo format names either a codec or an uncompressed pixel format, not both"))
            }
            let pixelFormat: PixelFormat?
            switch raw {
            case let p as PixelFormat: pixelFormat = p
            case let v as OSType: pixelFormat = PixelFormat(rawValue: v)
            case let v as Int where v >= 0 && v <= Int(UInt32.max): pixelFormat = PixelFormat(rawValue: OSType(v))
            default: pixelFormat = nil
            }
            guard let pixelFormat, CapturePhotoOutput.photoPixelFormats.contains(pixelFormat) else {
                return .failure(
                    CaptureError(
                        .unsupportedPixelFormat,
                        "uncompressed photos come as \(CapturePhotoOutput.photoPixelFormats.map(\.name).joined(separator: ", ")), not \(raw)"
                    ))
            }
            return .success(.uncompressed(pixelFormat))
        }
        if let codec = format[VideoCodecKey] {
            let type: VideoCodecType?
            switch codec {
            case let c as VideoCodecType: type = c
            case let s as String: type = VideoCodecType(rawValue: s)
            default: type = nil
            }
            guard type == .jpeg else {
                return .failure(
                    CaptureError(.invalidArgument, "photos are written as JPEG (VideoCodecType.jpeg), not \(codec)"))
            }
        }
        var qualityValue = format[VideoQualityKey]
        if let properties = format[VideoCompressionPropertiesKey] {
            guard let dictionary = properties as? [String: Any] else {
                return .failure(
                    CaptureError(.invalidArgument, "VideoCompressionPropertiesKey takes a [String: Any] dictionary"))
            }
            if let inner = dictionary[VideoQualityKey] { qualityValue = inner }
        }
        guard let qualityValue else { return .success(.jpeg(quality: defaultQuality)) }
        let quality: Double?
        switch qualityValue {
        case let d as Double: quality = d
        case let f as Float: quality = Double(f)
        case let i as Int: quality = Double(i)
        default: quality = nil
        }
        guard let quality, quality.isFinite, quality >= 0, quality <= 1 else {
            return .failure(
                CaptureError(.invalidArgument, "VideoQualityKey takes a number from 0 to 1, got \(qualityValue)"))
        }
        return .success(.jpeg(quality: quality))
    }
}

/// What the output will do for a request, handed to every delegate callback (the counterpart of
/// `AVCaptureResolvedPhotoSettings`).
///
/// Thread safety: a value type; freely sendable.
public struct CaptureResolvedPhotoSettings: Sendable, Hashable {
    /// The ``CapturePhotoSettings/uniqueID`` of the request.
    public let uniqueID: Int64
    /// The size of the photo: the size of the stream's frames (zero when the request failed
    /// before a stream was known).
    public let photoDimensions: CaptureDevice.Dimensions
    /// The codec of a compressed photo.
    public let photoCodecType: VideoCodecType?
    /// The pixel format of an uncompressed photo.
    public let photoPixelFormatType: PixelFormat?
    /// Whether the flash fires (never, on webcams).
    public let isFlashEnabled: Bool
    /// How many photos the request delivers (always 1: no brackets or bursts).
    public let expectedPhotoCount: Int
    /// The preview image's size (``CapturePhoto/previewPixelBuffer``): zero when no preview was
    /// asked for with ``CapturePhotoSettings/previewPhotoFormat``.
    public internal(set) var previewDimensions = CaptureDevice.Dimensions(width: 0, height: 0)
    /// Whether the photo is taken with fast capture prioritization: it was asked for while
    /// another photo was being made, on an output with
    /// ``CapturePhotoOutput/isFastCapturePrioritizationEnabled``.
    public internal(set) var isFastCapturePrioritizationEnabled = false
    /// The size of the deferred photo proxy's photo when the request is delivered as a
    /// ``CaptureDeferredPhotoProxy``; zero when it is delivered as a processed photo.
    public internal(set) var deferredPhotoProxyDimensions = CaptureDevice.Dimensions(width: 0, height: 0)
    /// The size of the JPEG thumbnail embedded in the photo's EXIF data (asked for with
    /// ``CapturePhotoSettings/embeddedThumbnailPhotoFormat``); zero when none is embedded.
    public internal(set) var embeddedThumbnailDimensions = CaptureDevice.Dimensions(width: 0, height: 0)
}
