// swift-format-ignore-file: AlwaysUseLowerCamelCase

import Foundation
import Synchronization

// The rest of `AVCaptureSession`, `AVCaptureConnection`, `AVCaptureInput`/`AVCaptureDeviceInput`
// and `AVCaptureVideoDataOutput`: audio-session flags (Linux has no application audio session),
// the iOS 18 capture controls (no Linux device has a Camera Control button), preview-layer
// connections, input ports by device, and the features no Linux camera has, answering as
// AVFoundation does without them.

// MARK: Session

/// The ``CaptureDevice/SystemPressureState`` behind an interruption for system pressure, in
/// ``CaptureSession/wasInterruptedNotification``'s user info (never posted on Linux).
public let CaptureSessionInterruptionSystemPressureStateKey = "AVCaptureSessionInterruptionSystemPressureStateKey"

extension CaptureSession {
    /// Whether the session configures the app's audio session (iOS's `AVAudioSession`). Kept
    /// (default `true`); Linux has no application audio session, so it changes nothing.
    public var automaticallyConfiguresApplicationAudioSession: Bool {
        get { porting.extras.withLock { $0.automaticallyConfiguresApplicationAudioSession } }
        set { porting.extras.withLock { $0.automaticallyConfiguresApplicationAudioSession = newValue } }
    }
    /// Whether the session records through the app's audio session. Kept (default `true`); changes nothing.
    public var usesApplicationAudioSession: Bool {
        get { porting.extras.withLock { $0.usesApplicationAudioSession } }
        set { porting.extras.withLock { $0.usesApplicationAudioSession = newValue } }
    }
    /// Whether the app's audio session mixes with other apps' audio. Kept (default `false`); changes nothing.
    public var configuresApplicationAudioSessionToMixWithOthers: Bool {
        get { porting.extras.withLock { $0.mixesWithOthers } }
        set { porting.extras.withLock { $0.mixesWithOthers = newValue } }
    }
    /// Whether Bluetooth microphones record in high quality. Kept (default `false`); changes
    /// nothing (PipeWire and ALSA pick the Bluetooth profile).
    public var configuresApplicationAudioSessionForBluetoothHighQualityRecording: Bool {
        get { porting.extras.withLock { $0.bluetoothHighQualityRecording } }
        set { porting.extras.withLock { $0.bluetoothHighQualityRecording = newValue } }
    }
    /// Whether the session picks wide-colour formats by itself. Kept (default `true`); Linux
    /// cameras capture sRGB only, so it changes nothing.
    public var automaticallyConfiguresCaptureDeviceForWideColor: Bool {
        get { porting.extras.withLock { $0.automaticallyConfiguresCaptureDeviceForWideColor } }
        set { porting.extras.withLock { $0.automaticallyConfiguresCaptureDeviceForWideColor = newValue } }
    }
    /// The clock sample timestamps are on: the host's monotonic clock.
    public var synchronizationClock: (any CaptureClock)? { HostClock() }
    /// The clock sample timestamps are on (the earlier name of ``synchronizationClock``).
    public var masterClock: (any CaptureClock)? { synchronizationClock }

    // MARK: Capture controls (iOS 18)

    /// Whether the session can show capture controls (the iPhone's Camera Control button):
    /// `false` — no Linux device has one.
    public var supportsControls: Bool { false }
    /// How many controls can be added: 0.
    public var maxControlsCount: Int { 0 }
    /// The controls added: none.
    public var controls: [CaptureControl] { [] }
    /// Whether `control` can be added: `false` (``supportsControls`` is `false`).
    public func canAddControl(_ control: CaptureControl) -> Bool { false }
    /// Adds a control: traps, as AVFoundation raises when ``canAddControl(_:)`` is `false`.
    public func addControl(_ control: CaptureControl) {
        preconditionFailure(
            "this session cannot show capture controls: check canAddControl(_:) first (supportsControls is false)")
    }
    /// Removes a control: does nothing (none can be added).
    public func removeControl(_ control: CaptureControl) {}
    /// Sets who hears about the controls' appearance, on `controlsDelegateCallbackQueue`. Kept;
    /// never called (no controls are shown).
    public func setControlsDelegate(
        _ controlsDelegate: (any CaptureSessionControlsDelegate)?, queue controlsDelegateCallbackQueue: DispatchQueue?
    ) {
        porting.extras.withLock {
            $0.controlsDelegate = controlsDelegate.map { WeakReference($0 as AnyObject) }
            $0.controlsDelegateQueue = controlsDelegateCallbackQueue
        }
    }
    /// The controls delegate (held weakly).
    public var controlsDelegate: (any CaptureSessionControlsDelegate)? {
        porting.extras.withLock { $0.controlsDelegate?.value } as? any CaptureSessionControlsDelegate
    }
    /// The queue the controls delegate is called on.
    public var controlsDelegateCallbackQueue: DispatchQueue? { porting.extras.withLock { $0.controlsDelegateQueue } }
}

/// Hears when a session's capture controls appear and go (`AVCaptureSessionControlsDelegate`);
/// never called on Linux.
public protocol CaptureSessionControlsDelegate: AnyObject {
    /// The controls became active.
    func sessionControlsDidBecomeActive(_ session: CaptureSession)
    /// The controls are about to fill the screen.
    func sessionControlsWillEnterFullscreenAppearance(_ session: CaptureSession)
    /// The controls are about to leave full screen.
    func sessionControlsWillExitFullscreenAppearance(_ session: CaptureSession)
    /// The controls became inactive.
    func sessionControlsDidBecomeInactive(_ session: CaptureSession)
}

extension CaptureSessionControlsDelegate {
    /// Does nothing.
    public func sessionControlsWillEnterFullscreenAppearance(_ session: CaptureSession) {}
    /// Does nothing.
    public func sessionControlsWillExitFullscreenAppearance(_ session: CaptureSession) {}
}

/// A capture control (`AVCaptureControl`): the base of sliders and pickers shown by the Camera
/// Control button. Controls can be made and set, but no Linux session shows them
/// (``CaptureSession/supportsControls`` is `false`).
///
/// Thread safety: may be used from any thread.
open class CaptureControl: @unchecked Sendable {  // unchecked: state under `controlLock`.
    let controlLock = NSLock()
    private var enabled = true
    init() {}
    /// Whether the control can be used (default `true`).
    public var isEnabled: Bool {
        get { controlLock.withLock { enabled } }
        set { controlLock.withLock { enabled = newValue } }
    }
}

/// A slider control (`AVCaptureSlider`).
public final class CaptureSlider: CaptureControl, @unchecked Sendable {
    private var current: Float
    private var valueFormat = "%@"
    private var prominent: [Float] = []
    private var identifier: String?
    private var action: (queue: DispatchQueue, body: @Sendable (Float) -> Void)?
    private let allowed: (range: ClosedRange<Float>, step: Float?, values: [Float]?)

    /// The slider's title.
    public let localizedTitle: String
    /// The SF Symbol shown with it.
    public let symbolName: String

    /// A slider over `range`.
    public init(_ localizedTitle: String, symbolName: String, in range: ClosedRange<Float>) {
        self.localizedTitle = localizedTitle
        self.symbolName = symbolName
        self.allowed = (range, nil, nil)
        self.current = range.lowerBound
    }
    /// A slider over `range` in steps of `step`.
    public init(_ localizedTitle: String, symbolName: String, in range: ClosedRange<Float>, step: Float) {
        self.localizedTitle = localizedTitle
        self.symbolName = symbolName
        self.allowed = (range, step, nil)
        self.current = range.lowerBound
    }
    /// A slider over the given values.
    public init(_ localizedTitle: String, symbolName: String, values: [Float]) {
        self.localizedTitle = localizedTitle
        self.symbolName = symbolName
        let sorted = values.sorted()
        self.allowed = ((sorted.first ?? 0)...(sorted.last ?? 0), nil, sorted)
        self.current = sorted.first ?? 0
    }

    /// The value; setting one the slider does not allow traps, as AVFoundation raises.
    public var value: Float {
        get { controlLock.withLock { current } }
        set {
            let ok = allowed.values?.contains(newValue) ?? allowed.range.contains(newValue)
            precondition(ok, "\(newValue) is not a value of the slider '\(localizedTitle)'")
            controlLock.withLock { current = newValue }
        }
    }
    /// How the value is shown (a format with one `%@`).
    public var localizedValueFormat: String? {
        get { controlLock.withLock { valueFormat } }
        set { controlLock.withLock { valueFormat = newValue ?? "%@" } }
    }
    /// Values to mark.
    public var prominentValues: [Float] {
        get { controlLock.withLock { prominent } }
        set { controlLock.withLock { prominent = newValue } }
    }
    /// An accessibility identifier.
    public var accessibilityIdentifier: String? {
        get { controlLock.withLock { identifier } }
        set { controlLock.withLock { identifier = newValue } }
    }
    /// Where and what to call when the user moves the slider (never, on Linux: no control is shown).
    public func setActionQueue(_ actionQueue: DispatchQueue, action: @escaping @Sendable (Float) -> Void) {
        controlLock.withLock { self.action = (actionQueue, action) }
    }
}

/// A picker control (`AVCaptureIndexPicker`).
public final class CaptureIndexPicker: CaptureControl, @unchecked Sendable {
    private var selected = 0
    private var identifier: String?
    private var action: (queue: DispatchQueue, body: @Sendable (Int) -> Void)?

    /// The picker's title.
    public let localizedTitle: String
    /// The SF Symbol shown with it.
    public let symbolName: String
    /// How many choices it has.
    public let numberOfIndexes: Int
    /// The choices' titles.
    public let localizedIndexTitles: [String]

    /// A picker of `numberOfIndexes` choices titled by `localizedTitleTransform`.
    public init(
        _ localizedTitle: String, symbolName: String, numberOfIndexes: Int,
        localizedTitleTransform: @escaping (Int) -> String = { String($0) }
    ) {
        self.localizedTitle = localizedTitle
        self.symbolName = symbolName
        self.numberOfIndexes = numberOfIndexes
        self.localizedIndexTitles = (0..<max(numberOfIndexes, 0)).map(localizedTitleTransform)
    }
    /// A picker of the given titles.
    public init(_ localizedTitle: String, symbolName: String, localizedIndexTitles: [String]) {
        self.localizedTitle = localizedTitle
        self.symbolName = symbolName
        self.numberOfIndexes = localizedIndexTitles.count
        self.localizedIndexTitles = localizedIndexTitles
    }

    /// The chosen index; setting one out of range traps, as AVFoundation raises.
    public var selectedIndex: Int {
        get { controlLock.withLock { selected } }
        set {
            precondition((0..<numberOfIndexes).contains(newValue), "\(newValue) is not an index of '\(localizedTitle)'")
            controlLock.withLock { selected = newValue }
        }
    }
    /// An accessibility identifier.
    public var accessibilityIdentifier: String? {
        get { controlLock.withLock { identifier } }
        set { controlLock.withLock { identifier = newValue } }
    }
    /// Where and what to call when the user picks (never, on Linux).
    public func setActionQueue(_ actionQueue: DispatchQueue, action: @escaping @Sendable (Int) -> Void) {
        controlLock.withLock { self.action = (actionQueue, action) }
    }
}

/// The system's zoom slider for a device (`AVCaptureSystemZoomSlider`).
public final class CaptureSystemZoomSlider: CaptureControl, @unchecked Sendable {
    /// The device it zooms.
    public let device: CaptureDevice
    private let action: (@Sendable (CGFloat) -> Void)?
    /// A zoom slider for `device`.
    public init(device: CaptureDevice) {
        self.device = device
        self.action = nil
    }
    /// A zoom slider for `device` calling `action` with each factor the user picks.
    public init(device: CaptureDevice, action: @escaping @Sendable (CGFloat) -> Void) {
        self.device = device
        self.action = action
    }
}

/// The system's exposure-bias slider for a device (`AVCaptureSystemExposureBiasSlider`).
public final class CaptureSystemExposureBiasSlider: CaptureControl, @unchecked Sendable {
    /// The device it adjusts.
    public let device: CaptureDevice
    private let action: (@Sendable (Float) -> Void)?
    /// An exposure-bias slider for `device`.
    public init(device: CaptureDevice) {
        self.device = device
        self.action = nil
    }
    /// An exposure-bias slider for `device` calling `action` with each bias the user picks.
    public init(device: CaptureDevice, action: @escaping @Sendable (Float) -> Void) {
        self.device = device
        self.action = action
    }
}

// MARK: Connections

extension CaptureConnection {
    /// A connection from `port` to `layer`, for ``CaptureSession/addConnection(_:)`` after
    /// ``CaptureVideoPreviewLayer/init(sessionWithNoConnection:)``.
    public convenience init(inputPort port: CaptureInput.Port, videoPreviewLayer layer: CaptureVideoPreviewLayer) {
        self.init(inputPorts: [port], output: layer.output)
    }

    /// The preview layer the connection feeds, if it feeds one.
    public var videoPreviewLayer: CaptureVideoPreviewLayer? {
        (output as? PreviewOutput)?.owningLayer.withLock { $0?.value }
    }

    /// Whether ``videoMinFrameDuration`` can be set: `false` (set the device's
    /// ``CaptureDevice/activeVideoMinFrameDuration``).
    public var isVideoMinFrameDurationSupported: Bool { false }
    /// The connection's own frame-duration limit: ``MediaTime/invalid`` (the device's applies).
    public var videoMinFrameDuration: MediaTime {
        get { .invalid }
        set {
            CaptureDevice.unsupported(
                newValue.isValid, "a connection's frame duration", check: "isVideoMinFrameDurationSupported")
        }
    }
    /// Whether ``videoMaxFrameDuration`` can be set: `false`.
    public var isVideoMaxFrameDurationSupported: Bool { false }
    /// The connection's own frame-duration limit: ``MediaTime/invalid``.
    public var videoMaxFrameDuration: MediaTime {
        get { .invalid }
        set {
            CaptureDevice.unsupported(
                newValue.isValid, "a connection's frame duration", check: "isVideoMaxFrameDurationSupported")
        }
    }
    /// The largest scale-and-crop factor: 1 (zoom with the device's ``CaptureDevice/videoZoomFactor``).
    public var videoMaxScaleAndCropFactor: CGFloat { 1 }
    /// The scale-and-crop factor: 1; setting another traps (out of range, as AVFoundation raises).
    public var videoScaleAndCropFactor: CGFloat {
        get { 1 }
        set {
            CaptureDevice.unsupported(
                newValue != 1, "a connection's scale and crop", check: "videoMaxScaleAndCropFactor")
        }
    }
    /// Whether camera intrinsics can come with frames: `false`.
    public var isCameraIntrinsicMatrixDeliverySupported: Bool { false }
    /// Whether camera intrinsics come with frames: `false`; setting `true` traps.
    public var isCameraIntrinsicMatrixDeliveryEnabled: Bool {
        get { false }
        set {
            CaptureDevice.unsupported(newValue, "camera intrinsics", check: "isCameraIntrinsicMatrixDeliverySupported")
        }
    }
    /// Whether stabilization is on (the flag before ``activeVideoStabilizationMode``): `false`.
    public var isVideoStabilizationEnabled: Bool { activeVideoStabilizationMode != .off }
    /// Whether to stabilize when possible (the flag before ``preferredVideoStabilizationMode``):
    /// `true` when the preferred mode is not ``CaptureVideoStabilizationMode/off``.
    public var enablesVideoStabilizationWhenAvailable: Bool {
        get { preferredVideoStabilizationMode != .off }
        set { preferredVideoStabilizationMode = newValue ? .standard : .off }
    }
}

// MARK: Inputs

extension CaptureInput.Port {
    /// Posted when a port's format changes (never on Linux: a port's media type is fixed).
    public static let formatDescriptionDidChangeNotification = Notification.Name(
        "AVCaptureInputPortFormatDescriptionDidChangeNotification")
    /// The clock the port's samples are timed on: the host clock.
    public var clock: (any CaptureClock)? { HostClock() }
    /// The type of camera the port's media comes from, for a device input's port.
    public var sourceDeviceType: CaptureDevice.DeviceType? { (input as? CaptureDeviceInput)?.device.deviceType }
    /// The position of the camera the port's media comes from, for a device input's port.
    public var sourceDevicePosition: CaptureDevice.Position {
        (input as? CaptureDeviceInput)?.device.position ?? .unspecified
    }
}

/// A multichannel audio mode (`AVCaptureMultichannelAudioMode`).
public enum CaptureMultichannelAudioMode: Int, Sendable, Hashable {
    /// The microphone's own channels.
    case none = 0
    /// Stereo.
    case stereo = 1
    /// First-order ambisonics.
    case firstOrderAmbisonics = 2
}

extension CaptureDeviceInput {
    /// The ports carrying `mediaType` from a camera of `sourceDeviceType` at
    /// `sourceDevicePosition` (`nil` and `.unspecified` match any); empty when the input's device
    /// is not such a camera.
    public func ports(
        for mediaType: MediaType?, sourceDeviceType: CaptureDevice.DeviceType?,
        sourceDevicePosition: CaptureDevice.Position
    ) -> [CaptureInput.Port] {
        if let sourceDeviceType, sourceDeviceType != device.deviceType { return [] }
        if sourceDevicePosition != .unspecified, sourceDevicePosition != device.position { return [] }
        return ports.filter { mediaType == nil || $0.mediaType == mediaType }
    }

    /// Whether exposure defaults follow the session's preset (as AVFoundation's). Kept (default
    /// `true`); changes nothing.
    public var unifiedAutoExposureDefaultsEnabled: Bool {
        get { porting.withLock { $0.unifiedAutoExposureDefaults } }
        set { porting.withLock { $0.unifiedAutoExposureDefaults = newValue } }
    }
    /// A frame-duration limit for this input's session: kept (default ``MediaTime/invalid``);
    /// set the device's ``CaptureDevice/activeVideoMinFrameDuration`` to change the rate.
    public var videoMinFrameDurationOverride: MediaTime {
        get { porting.withLock { $0.videoMinFrameDurationOverride } }
        set { porting.withLock { $0.videoMinFrameDurationOverride = newValue } }
    }
    /// Whether `multichannelAudioMode` is available: only ``CaptureMultichannelAudioMode/none``.
    public func isMultichannelAudioModeSupported(_ multichannelAudioMode: CaptureMultichannelAudioMode) -> Bool {
        multichannelAudioMode == .none
    }
    /// The multichannel audio mode: ``CaptureMultichannelAudioMode/none``; setting another traps.
    public var multichannelAudioMode: CaptureMultichannelAudioMode {
        get { .none }
        set {
            CaptureDevice.unsupported(
                newValue != .none, "multichannel audio", check: "isMultichannelAudioModeSupported(_:)")
        }
    }
    /// Whether wind noise can be removed: `false`.
    public var isWindNoiseRemovalSupported: Bool { false }
    /// Whether wind noise is removed: `false`; setting `true` traps.
    public var isWindNoiseRemovalEnabled: Bool {
        get { false }
        set { CaptureDevice.unsupported(newValue, "wind noise removal", check: "isWindNoiseRemovalSupported") }
    }
    /// Whether cinematic video can be recorded: `false`.
    public var isCinematicVideoCaptureSupported: Bool { false }
    /// Whether cinematic video is recorded: `false`; setting `true` traps.
    public var isCinematicVideoCaptureEnabled: Bool {
        get { false }
        set { CaptureDevice.unsupported(newValue, "cinematic video", check: "isCinematicVideoCaptureSupported") }
    }
    /// The simulated aperture of cinematic video: 0; setting another traps (no cinematic video).
    public var simulatedAperture: Float {
        get { 0 }
        set { CaptureDevice.unsupported(newValue != 0, "cinematic video", check: "isCinematicVideoCaptureSupported") }
    }
}

// MARK: Errors

extension CaptureError.Code {
    /// The session's configuration changed while recording (`AVError.Code.sessionConfigurationChanged`).
    public static let sessionConfigurationChanged = CaptureError.Code(rawValue: "sessionConfigurationChanged")
    /// The media changed while recording (`AVError.Code.mediaChanged`).
    public static let mediaChanged = CaptureError.Code(rawValue: "mediaChanged")
    /// A discontinuity in the media (`AVError.Code.mediaDiscontinuity`).
    public static let mediaDiscontinuity = CaptureError.Code(rawValue: "mediaDiscontinuity")
    /// The file format's sample limit was reached (`AVError.Code.maximumNumberOfSamplesForFileFormatReached`).
    public static let maximumNumberOfSamplesForFileFormatReached = CaptureError.Code(
        rawValue: "maximumNumberOfSamplesForFileFormatReached")
    /// The session's hardware cost is too high (`AVError.Code.sessionHardwareCostOverage`); a
    /// multi-camera session reports ``multiCamCostExceeded``.
    public static let sessionHardwareCostOverage = CaptureError.Code(rawValue: "sessionHardwareCostOverage")
}

/// The device an error is about, in an error's user info (`AVErrorDeviceKey`).
public let ErrorDeviceKey = "AVErrorDeviceKey"
/// The time an error happened at (`AVErrorTimeKey`).
public let ErrorTimeKey = "AVErrorTimeKey"
/// The file size an error happened at (`AVErrorFileSizeKey`).
public let ErrorFileSizeKey = "AVErrorFileSizeKey"
/// The process an error is about (`AVErrorPIDKey`).
public let ErrorPIDKey = "AVErrorPIDKey"
/// The media type an error is about (`AVErrorMediaTypeKey`).
public let ErrorMediaTypeKey = "AVErrorMediaTypeKey"
/// The file type an error is about (`AVErrorFileTypeKey`).
public let ErrorFileTypeKey = "AVErrorFileTypeKey"
