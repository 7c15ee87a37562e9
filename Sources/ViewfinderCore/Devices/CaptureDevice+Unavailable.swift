import Foundation
import Synchronization

// `AVCaptureDevice`'s members for hardware and system features no Linux camera has, answering as
// AVFoundation does on a device without them: `is…Supported`/`is…Active` are `false`, lists are
// empty, optionals `nil`; setting a feature on traps as AVFoundation raises for an unsupported
// feature (check the `is…Supported` first), and turning it off is accepted.

// MARK: Virtual devices

extension CaptureDevice {
    /// Whether the device is made of several cameras (a dual or triple camera): `false`.
    public var isVirtualDevice: Bool { false }
    /// The cameras of a virtual device: none.
    public var constituentDevices: [CaptureDevice] { [] }
    /// The zoom factors at which a virtual device switches cameras: none.
    public var virtualDeviceSwitchOverVideoZoomFactors: [NSNumber] { [] }

    /// How a virtual device may switch its primary camera (`AVCaptureDevice.PrimaryConstituentDeviceSwitchingBehavior`).
    public enum PrimaryConstituentDeviceSwitchingBehavior: Int, Sendable, Hashable {
        /// Not a virtual device.
        case unsupported = 0
        /// Switches freely.
        case auto = 1
        /// Switches only under the given conditions.
        case restricted = 2
        /// Never switches.
        case locked = 3
    }

    /// When a restricted virtual device may switch (`AVCaptureDevice.PrimaryConstituentDeviceRestrictedSwitchingBehaviorConditions`).
    public struct PrimaryConstituentDeviceRestrictedSwitchingBehaviorConditions: OptionSet, Sendable, Hashable {
        public let rawValue: UInt
        /// Conditions from their raw value.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// When the zoom factor changes.
        public static let videoZoomChanged = Self(rawValue: 1 << 0)
        /// When the focus mode changes.
        public static let focusModeChanged = Self(rawValue: 1 << 1)
        /// When the exposure mode changes.
        public static let exposureModeChanged = Self(rawValue: 1 << 2)
    }

    /// Sets how a virtual device switches cameras: traps, as no device here is virtual (check
    /// ``isVirtualDevice``).
    public func setPrimaryConstituentDeviceSwitchingBehavior(
        _ switchingBehavior: PrimaryConstituentDeviceSwitchingBehavior,
        restrictedSwitchingBehaviorConditions: PrimaryConstituentDeviceRestrictedSwitchingBehaviorConditions
    ) {
        Self.unsupported(true, "primary constituent device switching", check: "isVirtualDevice")
    }
    /// The switching behaviour asked for: ``PrimaryConstituentDeviceSwitchingBehavior/unsupported``.
    public var primaryConstituentDeviceSwitchingBehavior: PrimaryConstituentDeviceSwitchingBehavior { .unsupported }
    /// The conditions asked for: none.
    public var primaryConstituentDeviceRestrictedSwitchingBehaviorConditions:
        PrimaryConstituentDeviceRestrictedSwitchingBehaviorConditions
    { [] }
    /// The switching behaviour in effect: ``PrimaryConstituentDeviceSwitchingBehavior/unsupported``.
    public var activePrimaryConstituentDeviceSwitchingBehavior: PrimaryConstituentDeviceSwitchingBehavior {
        .unsupported
    }
    /// The conditions in effect: none.
    public var activePrimaryConstituentDeviceRestrictedSwitchingBehaviorConditions:
        PrimaryConstituentDeviceRestrictedSwitchingBehaviorConditions
    { [] }
    /// The camera a virtual device streams from now: `nil`.
    public var activePrimaryConstituent: CaptureDevice? { nil }
    /// The cameras a virtual device may fall back to: none.
    public var supportedFallbackPrimaryConstituentDevices: [CaptureDevice] { [] }
    /// The fallback cameras chosen: none; setting a non-empty list traps.
    public var fallbackPrimaryConstituentDevices: [CaptureDevice] {
        get { [] }
        set {
            Self.unsupported(!newValue.isEmpty, "fallback primary constituent devices", check: "isVirtualDevice")
        }
    }
}

// MARK: Depth

extension CaptureDevice {
    /// The depth format streamed alongside video: `nil` (no depth cameras); setting one traps
    /// (``Format/supportedDepthDataFormats`` is empty).
    public var activeDepthDataFormat: Format? {
        get { nil }
        set { Self.unsupported(newValue != nil, "depth data", check: "activeFormat.supportedDepthDataFormats") }
    }
    /// The depth frame duration: ``MediaTime/invalid`` (no depth).
    public var activeDepthDataMinFrameDuration: MediaTime {
        get { .invalid }
        set {}
    }
}

// MARK: Center Stage, video effects and microphone modes

/// Center Stage and the system's video effects, kept per process as AVFoundation keeps them.
private let effectSettings = Mutex(
    (centerStageControlMode: CaptureDevice.CenterStageControlMode.user, centerStage: false))

extension CaptureDevice {
    /// Who controls Center Stage (`AVCaptureDevice.CenterStageControlMode`).
    public enum CenterStageControlMode: Int, Sendable, Hashable {
        /// The user, in Control Center.
        case user = 0
        /// The app.
        case app = 1
        /// Both.
        case cooperative = 2
    }

    /// Who controls Center Stage, for the whole process (default ``CenterStageControlMode/user``).
    /// Kept: no Linux camera has Center Stage.
    public static var centerStageControlMode: CenterStageControlMode {
        get { effectSettings.withLock { $0.centerStageControlMode } }
        set { effectSettings.withLock { $0.centerStageControlMode = newValue } }
    }
    /// Whether Center Stage is on for the process: `false`; kept when set in the app or
    /// cooperative mode, but no camera supports it (``Format/isCenterStageSupported``), so it is
    /// never active.
    public static var isCenterStageEnabled: Bool {
        get { effectSettings.withLock { $0.centerStage } }
        set {
            effectSettings.withLock { state in
                if state.centerStageControlMode == .user, newValue {
                    preconditionFailure(
                        "isCenterStageEnabled can only be set when centerStageControlMode is .app or .cooperative")
                }
                state.centerStage = newValue
            }
        }
    }
    /// Whether Center Stage is framing now: `false`.
    public var isCenterStageActive: Bool { false }
    /// The region Center Stage keeps subjects in: the whole frame; setting it traps (no Center Stage).
    public var centerStageRectOfInterest: CGRect {
        get { CGRect(x: 0, y: 0, width: 1, height: 1) }
        set { Self.unsupported(true, "Center Stage", check: "activeFormat.isCenterStageSupported") }
    }
    /// Whether the portrait effect is on (set by the user in Control Center): `false`.
    public static var isPortraitEffectEnabled: Bool { false }
    /// Whether the portrait effect is applied now: `false`.
    public var isPortraitEffectActive: Bool { false }
    /// Whether Studio Light is on (set by the user): `false`.
    public static var isStudioLightEnabled: Bool { false }
    /// Whether Studio Light is applied now: `false`.
    public var isStudioLightActive: Bool { false }
    /// Whether reaction effects are on (set by the user): `false`.
    public static var reactionEffectsEnabled: Bool { false }
    /// Whether gestures trigger reactions (set by the user): `false`.
    public static var reactionEffectGesturesEnabled: Bool { false }
    /// Whether ``performEffect(for:)`` can run now: `false`.
    public var canPerformReactionEffects: Bool { false }
    /// The reactions the camera can perform: none.
    public var availableReactionTypes: Set<CaptureReactionType> { [] }
    /// Performs a reaction: does nothing, as AVFoundation when ``canPerformReactionEffects`` is `false`.
    public func performEffect(for reactionType: CaptureReactionType) {}
    /// The reactions being performed: none.
    public var reactionEffectsInProgress: [CaptureReactionEffectState] { [] }
    /// Whether background replacement is on (set by the user): `false`.
    public static var isBackgroundReplacementEnabled: Bool { false }
    /// Whether background replacement is applied now: `false`.
    public var isBackgroundReplacementActive: Bool { false }

    /// How a microphone picks up sound (`AVCaptureDevice.MicrophoneMode`).
    public enum MicrophoneMode: Int, Sendable, Hashable {
        /// Standard.
        case standard = 0
        /// Wide spectrum.
        case wideSpectrum = 1
        /// Voice isolation.
        case voiceIsolation = 2
    }
    /// The microphone mode the user prefers: ``MicrophoneMode/standard`` (Linux has no system setting).
    public static var preferredMicrophoneMode: MicrophoneMode { .standard }
    /// The microphone mode in effect: ``MicrophoneMode/standard``.
    public static var activeMicrophoneMode: MicrophoneMode { .standard }

    /// System panels an app can show (`AVCaptureDevice.SystemUserInterface`).
    public enum SystemUserInterface: Int, Sendable, Hashable {
        /// Video effects.
        case videoEffects = 1
        /// Microphone modes.
        case microphoneModes = 2
    }
    /// Shows a system panel: does nothing (Linux has none).
    public static func showSystemUserInterface(_ systemUserInterface: SystemUserInterface) {}
}

/// A reaction effect (`AVCaptureReactionType`).
///
/// Thread safety: a value type; freely sendable.
public struct CaptureReactionType: RawRepresentable, Sendable, Hashable {
    /// The reaction's name.
    public let rawValue: String
    /// The reaction named `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Thumbs up.
    public static let thumbsUp = Self(rawValue: "thumbsUp")
    /// Thumbs down.
    public static let thumbsDown = Self(rawValue: "thumbsDown")
    /// Balloons.
    public static let balloons = Self(rawValue: "balloons")
    /// Hearts.
    public static let heart = Self(rawValue: "heart")
    /// Fireworks.
    public static let fireworks = Self(rawValue: "fireworks")
    /// Rain.
    public static let rain = Self(rawValue: "drop")
    /// Confetti.
    public static let confetti = Self(rawValue: "confetti")
    /// Lasers.
    public static let lasers = Self(rawValue: "lasers")
}

/// A reaction under way (`AVCaptureReactionEffectState`); never made on Linux.
///
/// Thread safety: immutable; freely sendable.
public final class CaptureReactionEffectState: Sendable {
    /// The reaction.
    public let reactionType: CaptureReactionType
    /// When it started.
    public let startTime: MediaTime
    /// When it ended (``MediaTime/invalid`` while under way).
    public let endTime: MediaTime
    init(reactionType: CaptureReactionType, startTime: MediaTime, endTime: MediaTime) {
        self.reactionType = reactionType
        self.startTime = startTime
        self.endTime = endTime
    }
}

// MARK: Cinematic video, dynamic aspect ratio, smart framing, lens smudge detection

extension CaptureDevice {
    /// How cinematic video holds focus (`AVCaptureDevice.CinematicVideoFocusMode`).
    public enum CinematicVideoFocusMode: Int, Sendable, Hashable {
        /// No cinematic focus.
        case none = 0
        /// Strong focus.
        case strong = 1
        /// Weak focus.
        case weak = 2
    }

    /// Tracks a detected object with cinematic focus: traps, as cinematic video is never on
    /// (``CaptureDeviceInput/isCinematicVideoCaptureSupported`` is `false`).
    public func setCinematicVideoTrackingFocus(detectedObjectID: Int, focusMode: CinematicVideoFocusMode) {
        Self.unsupported(true, "cinematic video", check: "CaptureDeviceInput.isCinematicVideoCaptureSupported")
    }
    /// Tracks what is at `point` with cinematic focus: traps (no cinematic video).
    public func setCinematicVideoTrackingFocus(at point: CGPoint, focusMode: CinematicVideoFocusMode) {
        Self.unsupported(true, "cinematic video", check: "CaptureDeviceInput.isCinematicVideoCaptureSupported")
    }
    /// Holds cinematic focus at `point`: traps (no cinematic video).
    public func setCinematicVideoFixedFocus(at point: CGPoint, focusMode: CinematicVideoFocusMode) {
        Self.unsupported(true, "cinematic video", check: "CaptureDeviceInput.isCinematicVideoCaptureSupported")
    }

    /// The aspect ratio frames are cropped to: the active format's (the nearest of
    /// ``CaptureAspectRatio``'s).
    public var dynamicAspectRatio: CaptureAspectRatio {
        let size = activeFormat.dimensions
        guard size.width > 0, size.height > 0 else { return .ratio4x3 }
        let ratio = Double(size.width) / Double(size.height)
        let known: [(CaptureAspectRatio, Double)] = [
            (.ratio16x9, 16 / 9), (.ratio9x16, 9 / 16), (.ratio4x3, 4 / 3), (.ratio3x4, 3 / 4), (.ratio1x1, 1),
        ]
        return known.min { abs($0.1 - ratio) < abs($1.1 - ratio) }!.0
    }
    /// Changes the aspect ratio while running: traps, as no format supports it
    /// (``Format/supportedDynamicAspectRatios`` is empty).
    public func setDynamicAspectRatio(
        _ dynamicAspectRatio: CaptureAspectRatio,
        completionHandler handler: ((MediaTime, (any Error)?) -> Void)?
    ) {
        Self.unsupported(true, "dynamic aspect ratio", check: "activeFormat.supportedDynamicAspectRatios")
    }
    /// The smart framing monitor: `nil` (no camera supports smart framing).
    public var smartFramingMonitor: CaptureSmartFramingMonitor? { nil }

    /// What lens smudge detection found (`AVCaptureDevice.CameraLensSmudgeDetectionStatus`).
    public enum CameraLensSmudgeDetectionStatus: Int, Sendable, Hashable {
        /// Detection is off.
        case disabled = 0
        /// No smudge.
        case smudgeNotDetected = 1
        /// The lens is smudged.
        case smudged = 2
        /// Not known yet.
        case unknown = 3
    }
    /// Whether lens smudge detection is on: `false`.
    public var isCameraLensSmudgeDetectionEnabled: Bool { false }
    /// Turns lens smudge detection on or off: turning it on traps (no format supports it).
    public func setCameraLensSmudgeDetectionEnabled(_ enabled: Bool, detectionInterval: MediaTime) {
        Self.unsupported(enabled, "lens smudge detection", check: "activeFormat.isCameraLensSmudgeDetectionSupported")
    }
    /// How often smudges are looked for: ``MediaTime/invalid`` (detection is off).
    public var cameraLensSmudgeDetectionInterval: MediaTime { .invalid }
    /// The last detection result: ``CameraLensSmudgeDetectionStatus/disabled``.
    public var cameraLensSmudgeDetectionStatus: CameraLensSmudgeDetectionStatus { .disabled }
    /// The lens's focal length as on 35 mm film: 0, unknown (webcams do not report it).
    public var nominalFocalLengthIn35mmFilm: Float { 0 }
}

/// An aspect ratio frames can be cropped to (`AVCaptureAspectRatio`).
///
/// Thread safety: a value type; freely sendable.
public struct CaptureAspectRatio: RawRepresentable, Sendable, Hashable {
    /// The ratio as "width:height".
    public let rawValue: String
    /// The ratio named `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// 16:9.
    public static let ratio16x9 = Self(rawValue: "16:9")
    /// 9:16.
    public static let ratio9x16 = Self(rawValue: "9:16")
    /// 4:3.
    public static let ratio4x3 = Self(rawValue: "4:3")
    /// 3:4.
    public static let ratio3x4 = Self(rawValue: "3:4")
    /// 1:1.
    public static let ratio1x1 = Self(rawValue: "1:1")
}

/// A framing a smart framing monitor recommends (`AVCaptureFraming`).
///
/// Thread safety: immutable; freely sendable.
public final class CaptureFraming: Sendable {
    /// The aspect ratio.
    public let aspectRatio: CaptureAspectRatio
    /// The zoom factor.
    public let zoomFactor: Float
    init(aspectRatio: CaptureAspectRatio, zoomFactor: Float) {
        self.aspectRatio = aspectRatio
        self.zoomFactor = zoomFactor
    }
}

/// Recommends framings from the scene (`AVCaptureSmartFramingMonitor`); no Linux camera has one
/// (``CaptureDevice/smartFramingMonitor`` is `nil`).
///
/// Thread safety: may be used from any thread.
public final class CaptureSmartFramingMonitor: Sendable {
    private let enabled = Mutex<[CaptureFraming]>([])
    init() {}
    /// The framings it can recommend: none.
    public var supportedFramings: [CaptureFraming] { [] }
    /// The framings it may recommend (a subset of ``supportedFramings``).
    public var enabledFramings: [CaptureFraming] {
        get { enabled.withLock { $0 } }
        set { enabled.withLock { $0 = newValue } }
    }
    /// The latest recommendation: `nil`.
    public var recommendedFraming: CaptureFraming? { nil }
    /// Whether it is monitoring: `false`.
    public var isMonitoring: Bool { false }
    /// Starts monitoring: throws ``CaptureError/Code/unsupportedControl`` (no camera supports it).
    public func startMonitoring() throws(CaptureError) {
        throw CaptureError(.unsupportedControl, "smart framing is not supported by Linux cameras")
    }
    /// Stops monitoring.
    public func stopMonitoring() {}
}

// MARK: Formats

extension CaptureDevice.Format {
    /// How a format's camera focuses (`AVCaptureDevice.Format.AutoFocusSystem`).
    public enum AutoFocusSystem: Int, Sendable, Hashable {
        /// Not known, or fixed focus.
        case none = 0
        /// Contrast detection.
        case contrastDetection = 1
        /// Phase detection.
        case phaseDetection = 2
    }

    /// The field of view after distortion correction: the same as ``videoFieldOfView``.
    public var geometricDistortionCorrectedVideoFieldOfView: Float { videoFieldOfView }
    /// Whether the sensor bins pixels for this format: `false` (not reported).
    public var isVideoBinned: Bool { false }
    /// Whether the format can stabilize video: `false`.
    public var isVideoStabilizationSupported: Bool { false }
    /// The size of high-resolution stills: the format's own (a photo is a frame of the stream).
    public var highResolutionStillImageDimensions: CaptureDevice.Dimensions { dimensions }
    /// The photo sizes ``CapturePhotoOutput/maxPhotoDimensions`` may be set to: the format's own
    /// size (a photo is a frame of the stream); none for audio formats.
    public var supportedMaxPhotoDimensions: [CaptureDevice.Dimensions] { mediaType == .video ? [dimensions] : [] }
    /// Whether `.quality` photos get extra processing: `false`.
    public var isHighPhotoQualitySupported: Bool { false }
    /// Whether this is the format with the best photo quality: `false`.
    public var isHighestPhotoQualitySupported: Bool { false }
    /// Whether the format can be used in a ``CaptureMultiCamSession``: `true` for video formats.
    public var isMultiCamSupported: Bool { mediaType == .video }
    /// The colour spaces the format captures in: sRGB.
    public var supportedColorSpaces: [CaptureColorSpace] { [.sRGB] }
    /// The focus system: ``AutoFocusSystem/none`` (not reported by V4L2).
    public var autoFocusSystem: AutoFocusSystem { .none }
    /// Whether global tone mapping is available: `false`.
    public var isGlobalToneMappingSupported: Bool { false }
    /// Whether video HDR is available: `false`.
    public var isVideoHDRSupported: Bool { false }
    /// Output classes that cannot run with this format: none.
    public var unsupportedCaptureOutputClasses: [AnyClass] { [] }
    /// Zoom factors at which the sensor's full resolution is used: none.
    public var secondaryNativeResolutionZoomFactors: [CGFloat] { [] }
    /// The largest digital zoom factor frames of this format take (``CaptureDevice/videoZoomFactor``
    /// on a camera without a zoom control): 16 for raw video formats (less for frames under 256
    /// pixels on their short side, so the centre kept is at least 16 pixels), 1 for Motion-JPEG
    /// and audio formats, which are not zoomed digitally.
    public var videoMaxZoomFactor: CGFloat { CGFloat(DigitalZoom.maximumFactor(for: self)) }
    /// The zoom factor from which frames are upscaled: 1.
    public var videoZoomFactorUpscaleThreshold: CGFloat { 1 }
    /// The zoom range the system recommends: `nil` (none).
    public var systemRecommendedVideoZoomRange: ZoomRange? { nil }
    /// Depth formats offered with this format: none.
    public var supportedDepthDataFormats: [CaptureDevice.Format] { [] }
    /// The smallest zoom factor with depth: 1 (no depth).
    public var videoMinZoomFactorForDepthDataDelivery: CGFloat { 1 }
    /// The largest zoom factor with depth: 1 (no depth).
    public var videoMaxZoomFactorForDepthDataDelivery: CGFloat { 1 }
    /// Zoom factors with depth: none.
    public var supportedVideoZoomFactorsForDepthDataDelivery: [CGFloat] { [] }
    /// Zoom ranges with depth: none.
    public var supportedVideoZoomRangesForDepthDataDelivery: [ZoomRange] { [] }
    /// Whether depth works outside those ranges: `false`.
    public var zoomFactorsOutsideOfVideoZoomRangesForDepthDeliverySupported: Bool { false }
    /// Whether portrait effects mattes come with photos: `false`.
    public var isPortraitEffectsMatteStillImageDeliverySupported: Bool { false }
    /// Whether Center Stage works in this format: `false`.
    public var isCenterStageSupported: Bool { false }
    /// The smallest zoom factor under Center Stage: 1.
    public var videoMinZoomFactorForCenterStage: CGFloat { 1 }
    /// The largest zoom factor under Center Stage: 1.
    public var videoMaxZoomFactorForCenterStage: CGFloat { 1 }
    /// Frame rates under Center Stage: `nil` (unsupported).
    public var videoFrameRateRangeForCenterStage: FrameRateRange? { nil }
    /// Whether the portrait effect works in this format: `false`.
    public var isPortraitEffectSupported: Bool { false }
    /// Frame rates with the portrait effect: `nil`.
    public var videoFrameRateRangeForPortraitEffect: FrameRateRange? { nil }
    /// Whether Studio Light works in this format: `false`.
    public var isStudioLightSupported: Bool { false }
    /// Frame rates with Studio Light: `nil`.
    public var videoFrameRateRangeForStudioLight: FrameRateRange? { nil }
    /// Whether reaction effects work in this format: `false`.
    public var reactionEffectsSupported: Bool { false }
    /// Frame rates while reactions play: `nil`.
    public var videoFrameRateRangeForReactionEffectsInProgress: FrameRateRange? { nil }
    /// Whether background replacement works in this format: `false`.
    public var isBackgroundReplacementSupported: Bool { false }
    /// Frame rates with background replacement: `nil`.
    public var videoFrameRateRangeForBackgroundReplacement: FrameRateRange? { nil }
    /// Whether spatial (stereo) video can be recorded: `false`.
    public var isSpatialVideoCaptureSupported: Bool { false }
    /// Whether cinematic video can be recorded: `false`.
    public var isCinematicVideoCaptureSupported: Bool { false }
    /// The default simulated aperture of cinematic video: 0 (unsupported).
    public var defaultSimulatedAperture: Float { 0 }
    /// The smallest simulated aperture: 0 (unsupported).
    public var minSimulatedAperture: Float { 0 }
    /// The largest simulated aperture: 0 (unsupported).
    public var maxSimulatedAperture: Float { 0 }
    /// The smallest zoom factor for cinematic video: 1.
    public var videoMinZoomFactorForCinematicVideo: CGFloat { 1 }
    /// The largest zoom factor for cinematic video: 1.
    public var videoMaxZoomFactorForCinematicVideo: CGFloat { 1 }
    /// Frame rates for cinematic video: `nil`.
    public var videoFrameRateRangeForCinematicVideo: FrameRateRange? { nil }
    /// The aspect ratios ``CaptureDevice/setDynamicAspectRatio(_:completionHandler:)`` takes: none.
    public var supportedDynamicAspectRatios: [CaptureAspectRatio] { [] }
    /// Whether smart framing works in this format: `false`.
    public var isSmartFramingSupported: Bool { false }
    /// Whether lens smudge detection works in this format: `false`.
    public var isCameraLensSmudgeDetectionSupported: Bool { false }
}

extension CaptureDevice.DiscoverySession {
    /// Sets of cameras a ``CaptureMultiCamSession`` can run together: each found camera alone
    /// (separate USB cameras share the bus's bandwidth; the session checks it when started).
    public var supportedMultiCamDeviceSets: [Set<CaptureDevice>] {
        devices.filter { $0.hasMediaType(.video) }.map { [$0] }
    }
}
