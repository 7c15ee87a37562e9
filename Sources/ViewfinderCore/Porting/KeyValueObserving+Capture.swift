// Which capture properties key-value observation reports (Support/KeyValueObservation.swift), the
// properties AVCam-style code observes that have no other home, and the per-object state behind
// them. Each class holds one `porting` value; its setters call `didChangeValue(for:)`.
import Foundation
import Synchronization

/// An object's key-value observers and the porting surface's settings kept with them.
package final class PortingState<Extras: Sendable>: Sendable {
    package let observers = _KeyValueObservers()
    package let extras: Mutex<Extras>
    package init(_ extras: Extras) { self.extras = Mutex(extras) }
}

/// What a session keeps for the porting surface.
package struct SessionExtras: Sendable {
    package var multitaskingCameraAccessEnabled = false
    package var automaticallyConfiguresApplicationAudioSession = true
    package var usesApplicationAudioSession = true
    package var automaticallyConfiguresCaptureDeviceForWideColor = true
    package var mixesWithOthers = false
    package var bluetoothHighQualityRecording = false
    package var controlsDelegate: WeakReference<AnyObject>?
    package var controlsDelegateQueue: DispatchQueue?
}

/// What a photo output keeps for the porting surface.
package struct PhotoOutputExtras: Sendable {
    package var maxQualityPrioritization = CapturePhotoOutput.QualityPrioritization.balanced
    package var livePhotoCaptureEnabled = false
    package var highResolution = false
    package var preparedSettings: [CapturePhotoSettings] = []
    package var sceneMonitoringSettings: CapturePhotoSettings?
    package var requestedMaxPhotoDimensions: CaptureDevice.Dimensions?
}

/// What photo settings keep for the porting surface.
// unchecked: the format dictionaries are the caller's, kept under the settings' lock as given.
package struct PhotoSettingsExtras: @unchecked Sendable {
    package var highResolution = false
    package var autoRedEyeReduction = true
    package var autoStillImageStabilization = true
    package var autoVirtualDeviceFusion = true
    package var autoContentAwareDistortionCorrection = false
    package var shutterSoundSuppression = false
    package var previewPhotoFormat: [String: Any]?
    package var embeddedThumbnailPhotoFormat: [String: Any]?
    package var rawPhotoPixelFormatType: OSType = 0
    package var rawFileType: FileType?
    package var processedFileType: FileType?
    package var livePhotoMovieFileURL: URL?
}

/// What a device input keeps for the porting surface.
package struct DeviceInputExtras: Sendable {
    package var unifiedAutoExposureDefaults = true
    package var videoMinFrameDurationOverride = MediaTime.invalid
}

/// A device input's ``DeviceInputExtras`` under a lock. Not a `Mutex`: Swift 6.3.1's optimizer
/// crashes (CopyPropagation, "Found outside of lifetime use") on the deinit of a public final
/// class holding a `Mutex` of this trivial struct when it is compiled into another module with
/// `-O` (the release build of `viewfinder-bench`, so the allocation gate).
///
/// Thread safety: `value` is only touched under `lock`.
package final class DeviceInputPorting: @unchecked Sendable {  // unchecked: `value` only under `lock`.
    private let lock = NSLock()
    private var value = DeviceInputExtras()

    package init() {}

    /// Runs `body` on the extras under the lock.
    package func withLock<T>(_ body: (inout DeviceInputExtras) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

// MARK: Session

extension CaptureSession: _KeyValueObservable {
    /// The session's observers (see ``observe(_:options:changeHandler:)``).
    public var _keyValueObservers: _KeyValueObservers { porting.observers }

    /// Observable: ``isRunning`` and ``isInterrupted``, reported on the session's notification
    /// queue just before ``didStartRunningNotification`` / ``didStopRunningNotification`` and
    /// ``wasInterruptedNotification`` / ``interruptionEndedNotification``, in their order;
    /// ``isMultitaskingCameraAccessEnabled`` on the thread that sets it.
    public static var _observableKeyPaths: [AnyKeyPath: String] {
        [
            \CaptureSession.isRunning: "isRunning", \CaptureSession.isInterrupted: "isInterrupted",
            \CaptureSession.isMultitaskingCameraAccessEnabled: "isMultitaskingCameraAccessEnabled",
            // The same properties observed through a multi-camera session.
            \CaptureMultiCamSession.isRunning: "isRunning", \CaptureMultiCamSession.isInterrupted: "isInterrupted",
            \CaptureMultiCamSession.isMultitaskingCameraAccessEnabled: "isMultitaskingCameraAccessEnabled",
        ]
    }

    /// Reports the key-value change a notification about to be posted stands for (with the value
    /// it stands for, not the one read now: a later change may already have happened).
    package func reportKeyValueChange(for notification: Notification.Name) {
        switch notification {
        case Self.didStartRunningNotification: didChangeValue(for: \.isRunning, to: true)
        case Self.didStopRunningNotification: didChangeValue(for: \.isRunning, to: false)
        case Self.wasInterruptedNotification: didChangeValue(for: \.isInterrupted, to: true)
        case Self.interruptionEndedNotification: didChangeValue(for: \.isInterrupted, to: false)
        default: break
        }
    }

    /// Whether the session can keep the camera while the app shares the screen with others
    /// (iPad multitasking): `true` — Linux never takes a camera from an application for being in
    /// the background.
    public var isMultitaskingCameraAccessSupported: Bool { true }

    /// Whether to keep the camera while other apps are in the foreground. Default `false`, as in
    /// AVFoundation; kept, but it changes nothing: on Linux no session is interrupted for that
    /// reason, whatever it says. Observable.
    public var isMultitaskingCameraAccessEnabled: Bool {
        get { porting.extras.withLock { $0.multitaskingCameraAccessEnabled } }
        set {
            porting.extras.withLock { $0.multitaskingCameraAccessEnabled = newValue }
            didChangeValue(for: \.isMultitaskingCameraAccessEnabled)
        }
    }
}

// MARK: Device

extension CaptureDevice: _KeyValueObservable {
    /// The device's observers (see ``observe(_:options:changeHandler:)``).
    public var _keyValueObservers: _KeyValueObservers { porting.observers }

    /// Observable: ``activeFormat``, ``focusPointOfInterest``, ``exposurePointOfInterest`` and
    /// ``isSubjectAreaChangeMonitoringEnabled`` (reported on the thread that set them); and
    /// ``isAdjustingFocus``, ``isAdjustingExposure``, ``isAdjustingWhiteBalance`` and
    /// ``systemPressureState``, which Linux cameras never change (only `.initial` is ever
    /// reported for them).
    public static var _observableKeyPaths: [AnyKeyPath: String] {
        [
            \CaptureDevice.activeFormat: "activeFormat", \CaptureDevice.focusPointOfInterest: "focusPointOfInterest",
            \CaptureDevice.exposurePointOfInterest: "exposurePointOfInterest",
            \CaptureDevice.isSubjectAreaChangeMonitoringEnabled: "isSubjectAreaChangeMonitoringEnabled",
            \CaptureDevice.isAdjustingFocus: "isAdjustingFocus",
            \CaptureDevice.isAdjustingExposure: "isAdjustingExposure",
            \CaptureDevice.isAdjustingWhiteBalance: "isAdjustingWhiteBalance",
            \CaptureDevice.systemPressureState: "systemPressureState",
        ]
    }

    /// How hard the system is pushed (the counterpart of `AVCaptureDevice.SystemPressureState`).
    ///
    /// Thread safety: immutable; freely sendable.
    public final class SystemPressureState: Sendable {
        /// How much pressure (`AVCaptureDevice.SystemPressureState.Level`).
        public struct Level: RawRepresentable, Sendable, Hashable {
            /// The level's name.
            public let rawValue: String
            /// The level named `rawValue`.
            public init(rawValue: String) { self.rawValue = rawValue }
            /// Normal operation.
            public static let nominal = Level(rawValue: "nominal")
            /// Slightly raised: no action needed.
            public static let fair = Level(rawValue: "fair")
            /// Raised: lower the frame rate.
            public static let serious = Level(rawValue: "serious")
            /// High: lower the frame rate now.
            public static let critical = Level(rawValue: "critical")
            /// Capture has stopped.
            public static let shutdown = Level(rawValue: "shutdown")
        }

        /// What causes pressure (`AVCaptureDevice.SystemPressureState.Factors`).
        public struct Factors: OptionSet, Sendable, Hashable {
            public let rawValue: UInt
            /// Factors from their raw value.
            public init(rawValue: UInt) { self.rawValue = rawValue }
            /// The system's temperature.
            public static let systemTemperature = Factors(rawValue: 1 << 0)
            /// The battery's peak power.
            public static let peakPower = Factors(rawValue: 1 << 1)
            /// A depth module's temperature.
            public static let depthModuleTemperature = Factors(rawValue: 1 << 2)
            /// The camera module's temperature.
            public static let cameraTemperature = Factors(rawValue: 1 << 3)
        }

        /// The level.
        public let level: Level
        /// The causes (none at ``Level/nominal``).
        public let factors: Factors

        package init(level: Level, factors: Factors) {
            self.level = level
            self.factors = factors
        }

        package static let nominal = SystemPressureState(level: .nominal, factors: [])
    }

    /// The pressure the camera is under: always ``SystemPressureState/Level/nominal`` with no
    /// factors, since Linux reports no camera pressure. Observable (it never changes).
    public var systemPressureState: SystemPressureState { .nominal }
}

// MARK: Connection

extension CaptureConnection: _KeyValueObservable {
    /// The connection's observers (see ``observe(_:options:changeHandler:)``).
    public var _keyValueObservers: _KeyValueObservers { porting.observers }

    /// Observable: ``videoRotationAngle`` and ``isVideoMirrored``, reported on the thread that
    /// set them, after the output applied the change.
    public static var _observableKeyPaths: [AnyKeyPath: String] {
        [
            \CaptureConnection.videoRotationAngle: "videoRotationAngle",
            \CaptureConnection.isVideoMirrored: "isVideoMirrored",
        ]
    }
}

// MARK: Photo output

extension CapturePhotoOutput: _KeyValueObservable {
    /// The output's observers (see ``observe(_:options:changeHandler:)``).
    public var _keyValueObservers: _KeyValueObservers { porting.observers }

    /// Observable: ``maxPhotoQualityPrioritization`` and ``isLivePhotoCaptureEnabled``
    /// (reported on the thread that set them), ``captureReadiness`` (reported on the output's
    /// callback queue, in order), and ``isLivePhotoCaptureSupported``,
    /// ``isDepthDataDeliverySupported`` and ``isPortraitEffectsMatteDeliverySupported``, which
    /// never change.
    public static var _observableKeyPaths: [AnyKeyPath: String] {
        [
            \CapturePhotoOutput.maxPhotoQualityPrioritization: "maxPhotoQualityPrioritization",
            \CapturePhotoOutput.captureReadiness: "captureReadiness",
            \CapturePhotoOutput.isLivePhotoCaptureEnabled: "isLivePhotoCaptureEnabled",
            \CapturePhotoOutput.isLivePhotoCaptureSupported: "isLivePhotoCaptureSupported",
            \CapturePhotoOutput.isDepthDataDeliverySupported: "isDepthDataDeliverySupported",
            \CapturePhotoOutput.isPortraitEffectsMatteDeliverySupported: "isPortraitEffectsMatteDeliverySupported",
        ]
    }

    /// How much to favour quality over speed (`AVCapturePhotoOutput.QualityPrioritization`).
    public enum QualityPrioritization: Int, Sendable, Hashable, Comparable, CaseIterable {
        /// Fastest.
        case speed = 1
        /// A balance of speed and quality (the default).
        case balanced = 2
        /// Best quality.
        case quality = 3

        /// Orders by raw value (``speed`` < ``balanced`` < ``quality``), as AVFoundation compares them.
        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The highest ``CapturePhotoSettings/photoQualityPrioritization`` requests may ask for.
    /// Default ``QualityPrioritization/balanced``, as in AVFoundation. Kept, but every photo is one
    /// frame of the running stream whatever is asked, so it changes nothing. Observable.
    public var maxPhotoQualityPrioritization: QualityPrioritization {
        get { porting.extras.withLock { $0.maxQualityPrioritization } }
        set {
            porting.extras.withLock { $0.maxQualityPrioritization = newValue }
            didChangeValue(for: \.maxPhotoQualityPrioritization)
        }
    }

    /// Whether Live Photos can be taken: `false` (Linux has no Live Photo format). Observable.
    public var isLivePhotoCaptureSupported: Bool { false }

    /// Whether Live Photo capture is prepared: `false` unless set; setting it changes nothing, as
    /// ``isLivePhotoCaptureSupported`` is `false`. Observable.
    public var isLivePhotoCaptureEnabled: Bool {
        get { porting.extras.withLock { $0.livePhotoCaptureEnabled } }
        set {
            porting.extras.withLock { $0.livePhotoCaptureEnabled = newValue }
            didChangeValue(for: \.isLivePhotoCaptureEnabled)
        }
    }

    /// Whether depth data can be delivered: `false` (no Linux camera measures depth). Observable.
    public var isDepthDataDeliverySupported: Bool { false }

    /// Whether portrait effects mattes can be delivered: `false`. Observable.
    public var isPortraitEffectsMatteDeliverySupported: Bool { false }
}
