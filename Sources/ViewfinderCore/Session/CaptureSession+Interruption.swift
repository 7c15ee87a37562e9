extension CaptureSession {
    /// Why a session was interrupted (the counterpart of `AVCaptureSession.InterruptionReason`),
    /// under ``CaptureSessionInterruptionReasonKey`` in ``wasInterruptedNotification``'s
    /// `userInfo`.
    ///
    /// Two sessions of one process on one camera share its stream, as on macOS, when the later
    /// one can run on the format and rate the camera already runs at (each session's outputs
    /// convert to what they asked). When it cannot (its preset needs another size, it asks a
    /// faster rate, or an output cannot be served from that format), the session that starts
    /// (or commits) last gets the camera and every other is interrupted with
    /// ``videoDeviceInUseByAnotherClient``, resuming by itself — posting
    /// ``interruptionEndedNotification`` — once the camera is free again.
    public enum InterruptionReason: Int, Sendable, Hashable {
        /// Never reported on Linux (no background state).
        case videoDeviceNotAvailableInBackground = 1
        /// Another client (a microphone in use elsewhere).
        case audioDeviceInUseByAnotherClient = 2
        /// Another capture session of this process took the camera.
        case videoDeviceInUseByAnotherClient = 3
        /// Never reported on Linux.
        case videoDeviceNotAvailableWithMultipleForegroundApps = 4
        /// Never reported on Linux.
        case videoDeviceNotAvailableDueToSystemPressure = 5
        /// Viewfinder's addition: the camera was unplugged; the session resumes when it returns.
        case videoDeviceWasDisconnected = 100

        /// The reason an interruption with `error` has.
        package init(_ error: CaptureError) {
            self = error.code == .deviceDisconnected ? .videoDeviceWasDisconnected : .videoDeviceInUseByAnotherClient
        }
    }
}

/// The `userInfo` key of ``CaptureSession/wasInterruptedNotification`` whose value is the
/// ``CaptureSession/InterruptionReason`` (`AVCaptureSessionInterruptionReasonKey` without "AV").
// swift-format-ignore: AlwaysUseLowerCamelCase
public let CaptureSessionInterruptionReasonKey = "ViewfinderCaptureSessionInterruptionReasonKey"
