import Foundation

// The rest of `AVCapturePhotoOutput`, `AVCapturePhotoSettings`, `AVCaptureResolvedPhotoSettings`
// and `AVCapturePhoto`: prepared settings, readiness, file types, and the features no Linux camera
// has (RAW, Live Photos, depth and mattes, virtual-device fusion, constant colour), answering as
// AVFoundation does without them: `is…Supported` `false`, empty lists, `nil`; turning such a
// feature on traps as AVFoundation raises (check `is…Supported` first), turning it off is fine.

extension FileType {
    /// A JPEG image (`.jpg`).
    public static let jpg = FileType(rawValue: "public.jpeg")
    /// A DNG raw image (`.dng`).
    public static let dng = FileType(rawValue: "com.adobe.raw-image")
    /// A HEIC image (`.heic`).
    public static let heic = FileType(rawValue: "public.heic")
}

/// Semantic segmentation mattes (`AVSemanticSegmentationMatte`): only their types are used here,
/// since no Linux camera makes them.
public enum SemanticSegmentationMatte {
    /// A kind of matte (`AVSemanticSegmentationMatte.MatteType`).
    public struct MatteType: RawRepresentable, Sendable, Hashable {
        /// The matte type's name.
        public let rawValue: String
        /// The matte type named `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Hair.
        public static let hair = Self(rawValue: "hair")
        /// Skin.
        public static let skin = Self(rawValue: "skin")
        /// Teeth.
        public static let teeth = Self(rawValue: "teeth")
        /// Glasses.
        public static let glasses = Self(rawValue: "glasses")
    }
}

extension CapturePhotoOutput {
    /// The settings prepared with ``setPreparedPhotoSettingsArray(_:completionHandler:)``.
    public var preparedPhotoSettingsArray: [CapturePhotoSettings] {
        porting.extras.withLock { $0.preparedSettings }
    }

    /// Prepares for photos with `preparedPhotoSettingsArray`: kept (photos need no preparation
    /// here, a photo being a frame of the running stream); `completionHandler` is called on a
    /// global queue with `true`.
    public func setPreparedPhotoSettingsArray(
        _ preparedPhotoSettingsArray: [CapturePhotoSettings],
        completionHandler: ((Bool, (any Error)?) -> Void)? = nil
    ) {
        porting.extras.withLock { $0.preparedSettings = preparedPhotoSettingsArray }
        guard let completionHandler else { return }
        let box = UncheckedBox(completionHandler)
        DispatchQueue.global().async { box.value(true, nil) }
    }

    /// The file types photos can be written as: JPEG.
    public var availablePhotoFileTypes: [FileType] { [.jpg] }
    /// The uncompressed pixel formats a file type takes: none (JPEG is compressed).
    public func supportedPhotoPixelFormatTypes(for fileType: FileType) -> [OSType] { [] }
    /// The codecs a file type takes: JPEG for ``FileType/jpg``.
    public func supportedPhotoCodecTypes(for fileType: FileType) -> [VideoCodecType] {
        fileType == .jpg ? [.jpeg] : []
    }

    /// Whether still-image stabilization is available: `false`.
    public var isStillImageStabilizationSupported: Bool { false }
    /// Whether the scene would use still-image stabilization: `false`.
    public var isStillImageStabilizationScene: Bool { false }
    /// Whether red-eye reduction is available: `false` (no flash).
    public var isAutoRedEyeReductionSupported: Bool { false }
    /// Whether the scene would use the flash: `false` (no flash).
    public var isFlashScene: Bool { false }
    /// The settings ``isFlashScene`` and ``isStillImageStabilizationScene`` are judged for: kept.
    public var photoSettingsForSceneMonitoring: CapturePhotoSettings? {
        get { porting.extras.withLock { $0.sceneMonitoringSettings } }
        set { porting.extras.withLock { $0.sceneMonitoringSettings = newValue } }
    }
    /// Whether content-aware distortion correction is available: `false`.
    public var isContentAwareDistortionCorrectionSupported: Bool { false }
    /// Whether content-aware distortion correction is on: `false`; setting `true` traps.
    public var isContentAwareDistortionCorrectionEnabled: Bool {
        get { false }
        set {
            CaptureDevice.unsupported(
                newValue, "content-aware distortion correction", check: "isContentAwareDistortionCorrectionSupported")
        }
    }
    /// Whether the shutter sound can be suppressed: `false` (there is none to suppress).
    public var isShutterSoundSuppressionSupported: Bool { false }
    /// Whether photos can be rotated for the sensor's orientation: `false`.
    public var isCameraSensorOrientationCompensationSupported: Bool { false }
    /// Whether sensor orientation compensation is on: `false`; setting `true` traps.
    public var isCameraSensorOrientationCompensationEnabled: Bool {
        get { false }
        set {
            CaptureDevice.unsupported(
                newValue, "sensor orientation compensation", check: "isCameraSensorOrientationCompensationSupported")
        }
    }
    /// Whether the lens can be stabilized during bracketed capture: `false`.
    public var isLensStabilizationDuringBracketedCaptureSupported: Bool { false }
    /// The most photos a bracket can take: 0 (no bracketed capture).
    public var maxBracketedCapturePhotoCount: Int { 0 }
    /// Whether constant-colour photos are available: `false`.
    public var isConstantColorSupported: Bool { false }
    /// Whether constant-colour photos are on: `false`; setting `true` traps.
    public var isConstantColorEnabled: Bool {
        get { false }
        set { CaptureDevice.unsupported(newValue, "constant colour", check: "isConstantColorSupported") }
    }
    /// A JPEG file from sample buffers (the API before ``CapturePhoto``): `nil` — photos arrive
    /// as ``CapturePhoto``, whose ``CapturePhoto/fileDataRepresentation()`` is the file.
    public static func jpegPhotoDataRepresentation(
        forJPEGSampleBuffer jpegSampleBuffer: SampleBuffer, previewPhotoSampleBuffer: SampleBuffer?
    ) -> Data? { nil }

    // MARK: RAW

    /// RAW pixel formats: none.
    public var availableRawPhotoPixelFormatTypes: [OSType] { [] }
    /// RAW file types: none.
    public var availableRawPhotoFileTypes: [FileType] { [] }
    /// RAW pixel formats for a file type: none.
    public func supportedRawPhotoPixelFormatTypes(for fileType: FileType) -> [OSType] { [] }
    /// Whether Apple ProRAW is available: `false`.
    public var isAppleProRAWSupported: Bool { false }
    /// Whether Apple ProRAW is on: `false`; setting `true` traps.
    public var isAppleProRAWEnabled: Bool {
        get { false }
        set { CaptureDevice.unsupported(newValue, "Apple ProRAW", check: "isAppleProRAWSupported") }
    }
    /// Whether `pixelFormat` is an Apple ProRAW format: `false` for every format here.
    public static func isAppleProRAWPixelFormat(_ pixelFormat: OSType) -> Bool { false }
    /// Whether `pixelFormat` is a Bayer RAW format: `false` for every format here.
    public static func isBayerRAWPixelFormat(_ pixelFormat: OSType) -> Bool { false }
    /// A DNG file from sample buffers: `nil` (no RAW).
    public static func dngPhotoDataRepresentation(
        forRawSampleBuffer rawSampleBuffer: SampleBuffer, previewPhotoSampleBuffer: SampleBuffer?
    ) -> Data? { nil }

    // MARK: Live Photos

    /// Whether Live Photo capture is suspended: `false` (it is never on); setting is ignored.
    public var isLivePhotoCaptureSuspended: Bool {
        get { false }
        set {}
    }
    /// Whether suspension survives the session stopping: `false`; setting is ignored.
    public var preservesLivePhotoCaptureSuspendedOnSessionStop: Bool {
        get { false }
        set {}
    }
    /// Whether Live Photo movies are trimmed: `false`; setting is ignored (no Live Photos).
    public var isLivePhotoAutoTrimmingEnabled: Bool {
        get { false }
        set {}
    }
    /// Codecs for Live Photo movies: none.
    public var availableLivePhotoVideoCodecTypes: [VideoCodecType] { [] }

    // MARK: Depth and mattes

    /// Whether depth data comes with photos: `false`; setting `true` traps.
    public var isDepthDataDeliveryEnabled: Bool {
        get { false }
        set { CaptureDevice.unsupported(newValue, "depth data delivery", check: "isDepthDataDeliverySupported") }
    }
    /// Whether portrait effects mattes come with photos: `false`; setting `true` traps.
    public var isPortraitEffectsMatteDeliveryEnabled: Bool {
        get { false }
        set {
            CaptureDevice.unsupported(
                newValue, "portrait effects matte delivery", check: "isPortraitEffectsMatteDeliverySupported")
        }
    }
    /// Segmentation mattes the output can make: none.
    public var availableSemanticSegmentationMatteTypes: [SemanticSegmentationMatte.MatteType] { [] }
    /// Segmentation mattes asked for: none; setting a non-empty list traps.
    public var enabledSemanticSegmentationMatteTypes: [SemanticSegmentationMatte.MatteType] {
        get { [] }
        set {
            CaptureDevice.unsupported(
                !newValue.isEmpty, "semantic segmentation mattes", check: "availableSemanticSegmentationMatteTypes")
        }
    }
    /// Whether camera calibration data can come with photos: `false`.
    public var isCameraCalibrationDataDeliverySupported: Bool { false }

    // MARK: Virtual devices

    /// Whether a virtual device can fuse its cameras' images: `false`.
    public var isVirtualDeviceFusionSupported: Bool { false }
    /// The dual camera's fusion (before ``isVirtualDeviceFusionSupported``): `false`.
    public var isDualCameraFusionSupported: Bool { false }
    /// Whether a virtual device can deliver a photo per camera: `false`.
    public var isVirtualDeviceConstituentPhotoDeliverySupported: Bool { false }
    /// The dual camera's photo pair (before ``isVirtualDeviceConstituentPhotoDeliverySupported``): `false`.
    public var isDualCameraDualPhotoDeliverySupported: Bool { false }
    /// Whether a photo per camera is delivered: `false`; setting `true` traps.
    public var isVirtualDeviceConstituentPhotoDeliveryEnabled: Bool {
        get { false }
        set {
            CaptureDevice.unsupported(
                newValue, "constituent photo delivery", check: "isVirtualDeviceConstituentPhotoDeliverySupported")
        }
    }
    /// The dual camera's photo pair: `false`; setting `true` traps.
    public var isDualCameraDualPhotoDeliveryEnabled: Bool {
        get { false }
        set {
            CaptureDevice.unsupported(
                newValue, "dual photo delivery", check: "isDualCameraDualPhotoDeliverySupported")
        }
    }
}

/// A value handed to another queue as AVFoundation hands its objects (the caller's delegate).
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Still-image bracket settings (`AVCaptureBracketedStillImageSettings`); bracketed capture is
/// not supported here (``CapturePhotoOutput/maxBracketedCapturePhotoCount`` is 0).
///
/// Thread safety: immutable; freely sendable.
public class CaptureBracketedStillImageSettings: @unchecked Sendable {  // unchecked: immutable.
    init() {}
}

/// A bracket step at a manual exposure (`AVCaptureManualExposureBracketedStillImageSettings`).
public final class CaptureManualExposureBracketedStillImageSettings: CaptureBracketedStillImageSettings,
    @unchecked Sendable
{
    /// The exposure time.
    public let exposureDuration: MediaTime
    /// The ISO.
    public let iso: Float
    init(exposureDuration: MediaTime, iso: Float) {
        self.exposureDuration = exposureDuration
        self.iso = iso
    }
    /// A step at `exposureDuration` and `iso`.
    public static func manualExposureSettings(exposureDuration: MediaTime, iso: Float)
        -> CaptureManualExposureBracketedStillImageSettings
    {
        .init(exposureDuration: exposureDuration, iso: iso)
    }
}

/// A bracket step at an exposure bias (`AVCaptureAutoExposureBracketedStillImageSettings`).
public final class CaptureAutoExposureBracketedStillImageSettings: CaptureBracketedStillImageSettings,
    @unchecked Sendable
{
    /// The exposure target bias, in EV.
    public let exposureTargetBias: Float
    init(exposureTargetBias: Float) { self.exposureTargetBias = exposureTargetBias }
    /// A step at `exposureTargetBias`.
    public static func autoExposureSettings(exposureTargetBias: Float) -> CaptureAutoExposureBracketedStillImageSettings
    {
        .init(exposureTargetBias: exposureTargetBias)
    }
}

extension CapturePhotoSettings {
    /// RAW settings: requests made with them fail through the delegate with
    /// ``CaptureError/Code/unsupportedFormat`` (``CapturePhotoOutput/availableRawPhotoPixelFormatTypes`` is empty).
    public convenience init(rawPixelFormatType: OSType) {
        self.init(
            rawPixelFormatType: rawPixelFormatType, rawFileType: nil, processedFormat: nil, processedFileType: nil)
    }
    /// RAW plus processed settings: as ``init(rawPixelFormatType:)``, failing.
    public convenience init(rawPixelFormatType: OSType, processedFormat: [String: Any]?) {
        self.init(
            rawPixelFormatType: rawPixelFormatType, rawFileType: nil, processedFormat: processedFormat,
            processedFileType: nil)
    }
    /// RAW plus processed settings with file types: as ``init(rawPixelFormatType:)``, failing.
    public convenience init(
        rawPixelFormatType: OSType, rawFileType: FileType?, processedFormat: [String: Any]?,
        processedFileType: FileType?
    ) {
        self.init(
            resolved: nil,
            error: CaptureError(
                .unsupportedFormat,
                "RAW photos are not supported by Linux cameras: check CapturePhotoOutput.availableRawPhotoPixelFormatTypes (it is empty)"
            ), format: [:])
        porting.withLock {
            $0.rawPhotoPixelFormatType = rawPixelFormatType
            $0.rawFileType = rawFileType
            $0.processedFileType = processedFileType
        }
    }

    /// The RAW pixel format asked for: 0 for processed-only settings.
    public var rawPhotoPixelFormatType: OSType { porting.withLock { $0.rawPhotoPixelFormatType } }
    /// The RAW file type asked for.
    public var rawFileType: FileType? { porting.withLock { $0.rawFileType } }
    /// RAW file format options: `nil` (no RAW).
    public var rawFileFormat: [String: Any]? {
        get { nil }
        set {}
    }
    /// The processed photo's file type asked for.
    public var processedFileType: FileType? { porting.withLock { $0.processedFileType } }
    /// Codecs for a RAW file's thumbnail: none.
    public var availableRawEmbeddedThumbnailPhotoCodecTypes: [VideoCodecType] { [] }
    /// A RAW file's thumbnail format: `nil`; setting is ignored (no RAW).
    public var rawEmbeddedThumbnailPhotoFormat: [String: Any]? {
        get { nil }
        set {}
    }

    /// Whether red-eye reduction may be used. Kept (default `true`); no flash, so it changes nothing.
    public var isAutoRedEyeReductionEnabled: Bool {
        get { porting.withLock { $0.autoRedEyeReduction } }
        set { porting.withLock { $0.autoRedEyeReduction = newValue } }
    }
    /// Whether still-image stabilization may be used. Kept (default `true`); changes nothing.
    public var isAutoStillImageStabilizationEnabled: Bool {
        get { porting.withLock { $0.autoStillImageStabilization } }
        set { porting.withLock { $0.autoStillImageStabilization = newValue } }
    }
    /// Whether a virtual device may fuse its cameras. Kept (default `true`); changes nothing.
    public var isAutoVirtualDeviceFusionEnabled: Bool {
        get { porting.withLock { $0.autoVirtualDeviceFusion } }
        set { porting.withLock { $0.autoVirtualDeviceFusion = newValue } }
    }
    /// The dual camera's fusion flag: the same as ``isAutoVirtualDeviceFusionEnabled``.
    public var isAutoDualCameraFusionEnabled: Bool {
        get { isAutoVirtualDeviceFusionEnabled }
        set { isAutoVirtualDeviceFusionEnabled = newValue }
    }
    /// The cameras of a virtual device to deliver a photo each from: none; setting a non-empty list traps.
    public var virtualDeviceConstituentPhotoDeliveryEnabledDevices: [CaptureDevice] {
        get { [] }
        set {
            CaptureDevice.unsupported(
                !newValue.isEmpty, "constituent photo delivery",
                check: "CapturePhotoOutput.isVirtualDeviceConstituentPhotoDeliverySupported")
        }
    }
    /// The dual camera's photo pair: `false`; setting `true` traps.
    public var isDualCameraDualPhotoDeliveryEnabled: Bool {
        get { false }
        set {
            CaptureDevice.unsupported(
                newValue, "dual photo delivery", check: "CapturePhotoOutput.isDualCameraDualPhotoDeliverySupported")
        }
    }
    /// Whether content-aware distortion correction may be used. Kept (default `false`); changes nothing.
    public var isAutoContentAwareDistortionCorrectionEnabled: Bool {
        get { porting.withLock { $0.autoContentAwareDistortionCorrection } }
        set { porting.withLock { $0.autoContentAwareDistortionCorrection = newValue } }
    }
    /// Whether the shutter sound is suppressed. Kept (default `false`); Linux plays none.
    public var isShutterSoundSuppressionEnabled: Bool {
        get { porting.withLock { $0.shutterSoundSuppression } }
        set { porting.withLock { $0.shutterSoundSuppression = newValue } }
    }
    /// Whether a constant-colour photo is asked for: `false`; setting `true` traps.
    public var isConstantColorEnabled: Bool {
        get { false }
        set {
            CaptureDevice.unsupported(newValue, "constant colour", check: "CapturePhotoOutput.isConstantColorSupported")
        }
    }
    /// Whether a fallback photo comes with a constant-colour one: `false`; setting is ignored.
    public var isConstantColorFallbackPhotoDeliveryEnabled: Bool {
        get { false }
        set {}
    }

    /// Pixel formats a preview image can have: 32-bit BGRA.
    public var availablePreviewPhotoPixelFormatTypes: [OSType] { [kCVPixelFormatType_32BGRA] }
    /// The preview image asked for: `kCVPixelBufferPixelFormatTypeKey` (one of
    /// ``availablePreviewPhotoPixelFormatTypes``), and optionally `kCVPixelBufferWidthKey` and
    /// `kCVPixelBufferHeightKey`, the box the preview is scaled to fit (aspect kept; without them
    /// it is the photo's size). The photo's ``CapturePhoto/previewPixelBuffer`` holds it and
    /// ``CaptureResolvedPhotoSettings/previewDimensions`` says its size. Another pixel format or
    /// key, or a size that is not positive, fails the request with
    /// ``CaptureError/Code/invalidArgument``.
    public var previewPhotoFormat: [String: Any]? {
        get { porting.withLock { $0.previewPhotoFormat } }
        set { porting.withLock { $0.previewPhotoFormat = newValue } }
    }
    /// Codecs an embedded thumbnail can have: JPEG for a JPEG photo, none for an uncompressed one.
    public var availableEmbeddedThumbnailPhotoCodecTypes: [VideoCodecType] {
        if case .uncompressed = resolvedFormat { return [] }
        return [.jpeg]
    }
    /// The JPEG thumbnail to embed in the photo's EXIF data (IFD1), as `AVCapturePhotoSettings`'
    /// (`nil`, the default: none): ``VideoCodecKey`` set to ``VideoCodecType/jpeg`` (the one codec
    /// in ``availableEmbeddedThumbnailPhotoCodecTypes``), and optionally ``VideoWidthKey`` and
    /// ``VideoHeightKey``, the box the thumbnail is scaled to fit, aspect kept (at most 640 pixels a
    /// side; without them, 160 × 120, the size EXIF readers expect). The thumbnail's quality is the
    /// photo's, lowered until the EXIF segment fits in its 64 KiB.
    /// ``CaptureResolvedPhotoSettings/embeddedThumbnailDimensions`` says its size and
    /// ``CapturePhoto/embeddedThumbnailPhotoFormat`` its format. Another codec (AVFoundation raises
    /// an exception), another key, a size that is not positive, or an uncompressed photo format
    /// fails the request with ``CaptureError/Code/invalidArgument``.
    public var embeddedThumbnailPhotoFormat: [String: Any]? {
        get { porting.withLock { $0.embeddedThumbnailPhotoFormat } }
        set { porting.withLock { $0.embeddedThumbnailPhotoFormat = newValue } }
    }

    /// Whether depth data is asked for: `false`; setting `true` traps.
    public var isDepthDataDeliveryEnabled: Bool {
        get { false }
        set {
            CaptureDevice.unsupported(
                newValue, "depth data delivery", check: "CapturePhotoOutput.isDepthDataDeliverySupported")
        }
    }
    /// Whether depth data is embedded in the file: `false`; setting is ignored.
    public var embedsDepthDataInPhoto: Bool {
        get { false }
        set {}
    }
    /// Whether depth data is filtered: `false`; setting is ignored.
    public var isDepthDataFiltered: Bool {
        get { false }
        set {}
    }
    /// Whether camera calibration data is asked for: `false`; setting `true` traps.
    public var isCameraCalibrationDataDeliveryEnabled: Bool {
        get { false }
        set {
            CaptureDevice.unsupported(
                newValue, "camera calibration data",
                check: "CapturePhotoOutput.isCameraCalibrationDataDeliverySupported")
        }
    }
    /// Whether a portrait effects matte is asked for: `false`; setting `true` traps.
    public var isPortraitEffectsMatteDeliveryEnabled: Bool {
        get { false }
        set {
            CaptureDevice.unsupported(
                newValue, "portrait effects matte", check: "CapturePhotoOutput.isPortraitEffectsMatteDeliverySupported")
        }
    }
    /// Whether the matte is embedded in the file: `false`; setting is ignored.
    public var embedsPortraitEffectsMatteInPhoto: Bool {
        get { false }
        set {}
    }
    /// Segmentation mattes asked for: none; setting a non-empty list traps.
    public var enabledSemanticSegmentationMatteTypes: [SemanticSegmentationMatte.MatteType] {
        get { [] }
        set {
            CaptureDevice.unsupported(
                !newValue.isEmpty, "semantic segmentation mattes",
                check: "CapturePhotoOutput.availableSemanticSegmentationMatteTypes")
        }
    }
    /// Whether mattes are embedded in the file: `false`; setting is ignored.
    public var embedsSemanticSegmentationMattesInPhoto: Bool {
        get { false }
        set {}
    }

    /// Where a Live Photo's movie goes: `nil`; setting a URL traps (no Live Photos).
    public var livePhotoMovieFileURL: URL? {
        get { nil }
        set {
            CaptureDevice.unsupported(
                newValue != nil, "Live Photos", check: "CapturePhotoOutput.isLivePhotoCaptureSupported")
        }
    }
    /// The Live Photo movie's codec: `nil`; setting is ignored.
    public var livePhotoVideoCodecType: VideoCodecType? {
        get { nil }
        set {}
    }
    /// The Live Photo movie's metadata: none; setting is ignored.
    public var livePhotoMovieMetadata: [String: String] {
        get { [:] }
        set {}
    }
}

/// Bracketed photo settings (`AVCapturePhotoBracketSettings`): bracketed capture is not
/// supported here, so requests made with them fail through the delegate with
/// ``CaptureError/Code/unsupportedFormat`` (``CapturePhotoOutput/maxBracketedCapturePhotoCount`` is 0).
public final class CapturePhotoBracketSettings: @unchecked Sendable {  // unchecked: immutable.
    /// The bracket's steps.
    public let bracketedSettings: [CaptureBracketedStillImageSettings]
    /// Whether the lens is stabilized during the bracket: `false`; setting is ignored.
    public var isLensStabilizationEnabled: Bool {
        get { false }
        set {}
    }
    /// The settings a request would use (failing, as bracketed capture is not supported).
    public let photoSettings: CapturePhotoSettings

    /// A bracket of `bracketedSettings`.
    public init(
        rawPixelFormatType: OSType, processedFormat: [String: Any]?,
        bracketedSettings: [CaptureBracketedStillImageSettings]
    ) {
        self.bracketedSettings = bracketedSettings
        self.photoSettings = CapturePhotoSettings(
            rawPixelFormatType: rawPixelFormatType, processedFormat: processedFormat)
    }

    /// A bracket of `bracketedSettings` with file types.
    public convenience init(
        rawPixelFormatType: OSType, rawFileType: FileType?, processedFormat: [String: Any]?,
        processedFileType: FileType?, bracketedSettings: [CaptureBracketedStillImageSettings]
    ) {
        self.init(
            rawPixelFormatType: rawPixelFormatType, processedFormat: processedFormat,
            bracketedSettings: bracketedSettings)
    }
}

extension CaptureResolvedPhotoSettings {
    /// The RAW photo's size: zero (no RAW).
    public var rawPhotoDimensions: CaptureDevice.Dimensions { .init(width: 0, height: 0) }
    /// The RAW thumbnail's size: zero.
    public var rawEmbeddedThumbnailDimensions: CaptureDevice.Dimensions { .init(width: 0, height: 0) }
    /// The portrait effects matte's size: zero.
    public var portraitEffectsMatteDimensions: CaptureDevice.Dimensions { .init(width: 0, height: 0) }
    /// A segmentation matte's size: zero.
    public func dimensionsForSemanticSegmentationMatte(
        ofType semanticSegmentationMatteType: SemanticSegmentationMatte.MatteType
    )
        -> CaptureDevice.Dimensions
    { .init(width: 0, height: 0) }
    /// The Live Photo movie's size: zero.
    public var livePhotoMovieDimensions: CaptureDevice.Dimensions { .init(width: 0, height: 0) }
    /// Whether red-eye reduction was used: `false`.
    public var isRedEyeReductionEnabled: Bool { false }
    /// Whether still-image stabilization was used: `false`.
    public var isStillImageStabilizationEnabled: Bool { false }
    /// Whether virtual-device fusion was used: `false`.
    public var isVirtualDeviceFusionEnabled: Bool { false }
    /// Whether dual-camera fusion was used: `false`.
    public var isDualCameraFusionEnabled: Bool { false }
    /// How long processing may take: zero (a photo is a frame already captured).
    public var photoProcessingTimeRange: MediaTimeRange { MediaTimeRange(start: .zero, duration: .zero) }
    /// Whether content-aware distortion correction was used: `false`.
    public var isContentAwareDistortionCorrectionEnabled: Bool { false }
}

/// Whether the lens was stabilized for a bracket photo (`AVCaptureLensStabilizationStatus`).
public enum CaptureLensStabilizationStatus: Int, Sendable, Hashable {
    /// Not supported (every photo here).
    case unsupported = 0
    /// Off.
    case off = 1
    /// Active.
    case active = 2
    /// Out of range.
    case outOfRange = 3
    /// Unavailable.
    case unavailable = 4
}

extension CapturePhoto {
    /// Depth data: `nil` (no depth cameras).
    public var depthData: DepthData? { nil }
    /// The portrait effects matte: `nil`.
    public var portraitEffectsMatte: AnyObject? { nil }
    /// The camera type of a virtual device's photo: `nil` (no virtual devices).
    public var sourceDeviceType: CaptureDevice.DeviceType? { nil }
    /// Whether this is a RAW photo: `false`.
    public var isRawPhoto: Bool { false }
    /// The preview image asked for with ``CapturePhotoSettings/previewPhotoFormat`` (BGRA, scaled
    /// to fit the size asked), or `nil` when none was asked for. The buffer is the photo's own.
    public var previewPixelBuffer: PixelBuffer? { preview }
    /// The embedded thumbnail's format as it was made — ``VideoCodecKey`` (``VideoCodecType/jpeg``),
    /// ``VideoWidthKey`` and ``VideoHeightKey`` (`Int`) — or `nil` when none was asked for with
    /// ``CapturePhotoSettings/embeddedThumbnailPhotoFormat``.
    public var embeddedThumbnailPhotoFormat: [String: Any]? {
        let size = resolvedSettings.embeddedThumbnailDimensions
        guard size.width > 0, size.height > 0 else { return nil }
        return [VideoCodecKey: VideoCodecType.jpeg, VideoWidthKey: Int(size.width), VideoHeightKey: Int(size.height)]
    }
    /// Camera calibration data: `nil`.
    public var cameraCalibrationData: AnyObject? { nil }
    /// A segmentation matte: `nil`.
    public func semanticSegmentationMatte(for semanticSegmentationMatteType: SemanticSegmentationMatte.MatteType)
        -> AnyObject?
    { nil }
    /// The bracket step this photo belongs to: `nil` (no brackets).
    public var bracketSettings: CaptureBracketedStillImageSettings? { nil }
    /// The photo's number in its request's sequence: 1 (one photo a request).
    public var sequenceCount: Int { 1 }
    /// Lens stabilization: ``CaptureLensStabilizationStatus/unsupported``.
    public var lensStabilizationStatus: CaptureLensStabilizationStatus { .unsupported }
    /// Whether this is a constant-colour fallback photo: `false`.
    public var isConstantColorFallbackPhoto: Bool { false }
    /// The constant-colour confidence map: `nil`.
    public var constantColorConfidenceMap: PixelBuffer? { nil }
    /// The constant-colour confidence: 0.
    public var constantColorCenterWeightedMeanConfidenceLevel: Float { 0 }
}

/// Changes what ``CapturePhoto/fileDataRepresentation(with:)`` writes
/// (`AVCapturePhotoFileDataRepresentationCustomizer`). Every method is optional.
///
/// Only the metadata can be replaced here: a Linux photo has no embedded thumbnail, depth data,
/// mattes or RAW to replace, so those methods are never called.
public protocol CapturePhotoFileDataRepresentationCustomizer: AnyObject {
    /// The metadata to write instead of ``CapturePhoto/metadata``, in either of the shapes
    /// ``CapturePhotoSettings/metadata`` takes (its keys replace the photo's fields); `nil` keeps
    /// the photo's.
    func replacementMetadata(for photo: CapturePhoto) -> [String: Any]?
    /// A thumbnail to embed: never called (photos here embed none).
    func replacementEmbeddedThumbnailPixelBuffer(
        withPhotoFormat replacementEmbeddedThumbnailPhotoFormatOut: UnsafeMutablePointer<[String: Any]?>,
        for photo: CapturePhoto
    ) -> PixelBuffer?
    /// Depth data to embed: never called (no depth cameras).
    func replacementDepthData(for photo: CapturePhoto) -> DepthData?
    /// A portrait effects matte to embed: never called (no mattes).
    func replacementPortraitEffectsMatte(for photo: CapturePhoto) -> AnyObject?
    /// A segmentation matte to embed: never called (no mattes).
    func replacementSemanticSegmentationMatte(
        ofType semanticSegmentationMatteType: SemanticSegmentationMatte.MatteType, for photo: CapturePhoto
    ) -> AnyObject?
    /// Apple ProRAW compression settings: never called (no RAW).
    func replacementAppleProRAWCompressionSettings(
        for photo: CapturePhoto, defaultSettings: [String: Any], maximumBitDepth: Int
    ) -> [String: Any]
}

extension CapturePhotoFileDataRepresentationCustomizer {
    /// Keeps the photo's metadata.
    public func replacementMetadata(for photo: CapturePhoto) -> [String: Any]? { nil }
    /// Embeds nothing.
    public func replacementEmbeddedThumbnailPixelBuffer(
        withPhotoFormat replacementEmbeddedThumbnailPhotoFormatOut: UnsafeMutablePointer<[String: Any]?>,
        for photo: CapturePhoto
    ) -> PixelBuffer? { nil }
    /// Embeds nothing.
    public func replacementDepthData(for photo: CapturePhoto) -> DepthData? { nil }
    /// Embeds nothing.
    public func replacementPortraitEffectsMatte(for photo: CapturePhoto) -> AnyObject? { nil }
    /// Embeds nothing.
    public func replacementSemanticSegmentationMatte(
        ofType semanticSegmentationMatteType: SemanticSegmentationMatte.MatteType, for photo: CapturePhoto
    ) -> AnyObject? { nil }
    /// The default settings.
    public func replacementAppleProRAWCompressionSettings(
        for photo: CapturePhoto, defaultSettings: [String: Any], maximumBitDepth: Int
    ) -> [String: Any] { defaultSettings }
}

extension CapturePhoto {
    /// The JPEG file with `customizer`'s replacement metadata
    /// (``CapturePhotoFileDataRepresentationCustomizer/replacementMetadata(for:)``) written as its
    /// EXIF instead of the photo's: the photo's fields given back unchanged are kept, the others
    /// replace the photo's; `nil` for an uncompressed or failed photo, or when a changed field is
    /// one ``CapturePhotoSettings/metadata`` would refuse.
    public func fileDataRepresentation(with customizer: any CapturePhotoFileDataRepresentationCustomizer) -> Data? {
        guard let file = fileDataRepresentation() else { return nil }
        guard let replacement = customizer.replacementMetadata(for: self) else { return file }
        var metadata = exif
        // The photo's own fields given back unchanged (`var m = photo.metadata; m[…] = …`) are kept.
        let own = EXIFMetadata.flattened(self.metadata).mapValues { "\($0)" }
        let changed = EXIFMetadata.flattened(replacement).filter { own[$0.key] != "\($0.value)" }
        let values = changed.mapValues(CapturePhotoSettings.MetadataValue.init)
        do throws(CaptureError) {
            try metadata.apply(values)
            return Data(try EXIFWriter.insert(metadata, into: [UInt8](file)))
        } catch {
            return nil
        }
    }
}
