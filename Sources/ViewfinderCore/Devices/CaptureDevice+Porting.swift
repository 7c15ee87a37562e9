import Foundation
import Synchronization

/// The rest of `AVCaptureDevice`'s surface that ported code touches, answered honestly for
/// Linux cameras: what a webcam lacks (points of interest, flash, stabilization, adjusting
/// flags) reads `false`/`.off`, and settings that cannot take effect are kept but do nothing.
extension CaptureDevice {
    /// What a failed property set does: AVFoundation raises for misuse (no configuration lock,
    /// an unsupported mode, a value out of range), so those trap; a device failure (I/O, gone)
    /// is posted instead.
    package enum SettingFailure: Equatable {
        /// Misuse: trap with the message.
        case trap
        /// A device error: post it.
        case post
    }

    /// How a failed property set with `error` is handled.
    package static func disposition(of error: CaptureError) -> SettingFailure {
        switch error.code {
        case .configurationNotLocked, .unsupportedControl, .invalidArgument, .unsupportedFormat: return .trap
        default: return .post
        }
    }

    /// Runs a property setter's throwing form: misuse traps naming the fix (as AVFoundation
    /// raises an exception), other failures are posted as
    /// ``CaptureSession/runtimeErrorNotification`` by the one rule for setters' errors
    /// (``CaptureSession/postSettingFailure(_:from:object:)``).
    package func applySetting(_ throwingForm: String, _ body: () throws(CaptureError) -> Void) {
        do {
            try body()
        } catch {
            switch Self.disposition(of: error) {
            case .trap:
                preconditionFailure("\(error.message) (call \(throwingForm), which throws, to handle this as an error)")
            case .post:
                CaptureSession.postSettingFailure(error, from: streamingSession, object: self)
            }
        }
    }

    /// Traps, naming the fix, unless the configuration lock is held (as AVFoundation raises).
    package func requireLockOrTrap(_ action: String) {
        applySetting("lockForConfiguration()") { () throws(CaptureError) in try requireConfigurationLock(action) }
    }

    // MARK: Points of interest

    /// Whether the camera can focus on a point: `false` for UVC cameras (they have no focus
    /// region); `true` for the virtual camera, which keeps the point (see
    /// ``focusPointOfInterest``).
    public var isFocusPointOfInterestSupported: Bool { backend.supportsPointsOfInterest }

    /// The point focus aims at, (0,0) top left … (1,1) bottom right of the landscape frame.
    /// Kept but without effect on a UVC camera (no Linux camera control takes it); the virtual
    /// camera reports it supported and reads back what was set. Needs the configuration lock.
    public var focusPointOfInterest: CGPoint {
        get { extras.withLock { $0.focusPoint } }
        set {
            requireLockOrTrap("setting the focus point of interest")
            extras.withLock { $0.focusPoint = newValue }
            didChangeValue(for: \.focusPointOfInterest)
        }
    }

    /// Whether the camera can meter exposure at a point: `false`, but `true` for the virtual
    /// camera (as ``isFocusPointOfInterestSupported``).
    public var isExposurePointOfInterestSupported: Bool { backend.supportsPointsOfInterest }

    /// The point exposure is metered at. Kept but without effect, as ``focusPointOfInterest``.
    public var exposurePointOfInterest: CGPoint {
        get { extras.withLock { $0.exposurePoint } }
        set {
            requireLockOrTrap("setting the exposure point of interest")
            extras.withLock { $0.exposurePoint = newValue }
            didChangeValue(for: \.exposurePointOfInterest)
        }
    }

    /// Whether the camera is focusing now: `false` (webcam drivers do not report it).
    public var isAdjustingFocus: Bool { false }
    /// Whether the camera is changing exposure now: `false` (webcam drivers do not report it).
    public var isAdjustingExposure: Bool { false }
    /// Whether the camera is changing white balance now: `false` (webcam drivers do not report it).
    public var isAdjustingWhiteBalance: Bool { false }

    /// Whether to post subject-area-change notifications. Kept, but none are posted: Linux
    /// cameras do not detect subject changes. Needs the configuration lock.
    public var isSubjectAreaChangeMonitoringEnabled: Bool {
        get { extras.withLock { $0.subjectAreaMonitoring } }
        set {
            requireLockOrTrap("changing subject-area change monitoring")
            extras.withLock { $0.subjectAreaMonitoring = newValue }
            didChangeValue(for: \.isSubjectAreaChangeMonitoringEnabled)
        }
    }

    // MARK: Flash

    /// The flash modes of `AVCaptureDevice.FlashMode`. No Linux camera has a flash.
    public enum FlashMode: Int, Sendable, Hashable {
        /// No flash (the only mode here).
        case off = 0
        /// Always fire.
        case on = 1
        /// Fire when dark.
        case auto = 2
    }

    /// Whether the camera has a flash: `false`.
    public var hasFlash: Bool { false }
    /// Whether the flash can be used now: `false`.
    public var isFlashAvailable: Bool { false }
    /// Whether the flash is active: `false`.
    public var isFlashActive: Bool { false }
    /// Whether `mode` is supported: only ``FlashMode/off``.
    public func isFlashModeSupported(_ mode: FlashMode) -> Bool { mode == .off }

    /// The flash mode: always ``FlashMode/off``; setting another mode traps, as AVFoundation
    /// raises for unsupported modes.
    public var flashMode: FlashMode {
        get { .off }
        set {
            requireLockOrTrap("changing the flash mode")
            if newValue != .off {
                preconditionFailure("'\(localizedName)' has no flash: check isFlashModeSupported(_:) first")
            }
        }
    }

    // MARK: Torch extras

    /// Whether the torch can be used now: the same as ``hasTorch``.
    public var isTorchAvailable: Bool { hasTorch }
    /// Whether the torch is on.
    public var isTorchActive: Bool { torchMode == .on }
    /// The torch's brightness, 0 … 1: LED controls are on or off, so 1 when on, else 0.
    public var torchLevel: Float { isTorchActive ? 1 : 0 }

    // MARK: Low light

    /// Whether the camera can boost low light: `false`.
    public var isLowLightBoostSupported: Bool { false }
    /// Whether low-light boost is on: `false`.
    public var isLowLightBoostEnabled: Bool { false }

    /// Whether the camera is suspended (a privacy shutter the system reports): `false`.
    public var isSuspended: Bool { false }
}

/// Values the porting surface keeps per device (settings without a Linux effect).
package struct DeviceExtras: Sendable {
    package var focusPoint = CGPoint(x: 0.5, y: 0.5)
    package var exposurePoint = CGPoint(x: 0.5, y: 0.5)
    package var subjectAreaMonitoring = false
    /// Whether exposure was last set to locked (a driver's one manual mode serves locked and custom).
    package var exposureLocked = false
    /// Settings AVFoundation keeps that change nothing on Linux (`CaptureDevice+AVFoundation.swift`).
    package var faceDrivenAutoFocus = true
    package var automaticallyAdjustsFaceDrivenAutoFocus = true
    package var faceDrivenAutoExposure = true
    package var automaticallyAdjustsFaceDrivenAutoExposure = true
    package var automaticallyAdjustsVideoHDR = true
    package var activeMaxExposureDuration = MediaTime.invalid
    package var focusRect = CGRect(x: 0, y: 0, width: 1, height: 1)
    package var exposureRect = CGRect(x: 0, y: 0, width: 1, height: 1)
    /// The running zoom ramp, if any.
    package var zoomRamp: ZoomRamp?
    /// The digital zoom factor of a camera without a zoom control (``DigitalZoom``).
    package var digitalZoomFactor: Double = 1
}

/// A zoom ramp under way (``CaptureDevice/ramp(toVideoZoomFactor:withRate:)``): on a camera
/// with a zoom control, a timer stepping the control; on one zooming digitally, a ramp each
/// frame advances by its own timestamp (``CaptureDevice/digitalZoomFactor(forFrameAt:)``).
// unchecked: the timer is only resumed and cancelled; `begin` changes under the device's `extras` lock.
package final class ZoomRamp: @unchecked Sendable {
    package let timer: (any DispatchSourceTimer)?
    package let start: Double
    package let target: Double
    package let rate: Float
    /// The timestamp of the first frame the digital ramp zoomed (its time zero).
    package var begin: MediaTime?
    package init(timer: any DispatchSourceTimer) {
        self.timer = timer
        (start, target, rate) = (1, 1, 0)
    }
    /// A digital ramp from `start` to `target` at `rate` powers of two per second.
    package init(start: Double, target: Double, rate: Float) {
        timer = nil
        (self.start, self.target, self.rate) = (start, target, rate)
    }
}

extension CaptureDevice.Format {
    /// Whether the format supports video stabilization `mode`: only ``CaptureVideoStabilizationMode/off``.
    public func isVideoStabilizationModeSupported(_ mode: CaptureVideoStabilizationMode) -> Bool { mode == .off }
}

/// Video stabilization modes (the counterpart of `AVCaptureVideoStabilizationMode`). Linux
/// cameras do not stabilize: only ``off`` is ever active.
public enum CaptureVideoStabilizationMode: Int, Sendable, Hashable {
    /// No stabilization.
    case off = 0
    /// Standard stabilization.
    case standard = 1
    /// Cinematic stabilization.
    case cinematic = 2
    /// Extended cinematic stabilization.
    case cinematicExtended = 3
    /// Preview-optimized stabilization.
    case previewOptimized = 4
    /// Enhanced extended cinematic stabilization.
    case cinematicExtendedEnhanced = 5
    /// The system picks.
    case auto = -1
}
