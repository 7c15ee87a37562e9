// swift-format-ignore-file: AlwaysUseLowerCamelCase

// AVFoundation's Swift notification names with "AV" deleted (`.AVCaptureSessionRuntimeError` →
// `.CaptureSessionRuntimeError`), so ported observers compile unchanged. Each is the same name
// as the `CaptureSession`/`CaptureDevice` static it stands for.
import Foundation

extension Notification.Name {
    /// `.AVCaptureSessionRuntimeError`: ``CaptureSession/runtimeErrorNotification``.
    public static let CaptureSessionRuntimeError = CaptureSession.runtimeErrorNotification
    /// `.AVCaptureSessionDidStartRunning`: ``CaptureSession/didStartRunningNotification``.
    public static let CaptureSessionDidStartRunning = CaptureSession.didStartRunningNotification
    /// `.AVCaptureSessionDidStopRunning`: ``CaptureSession/didStopRunningNotification``.
    public static let CaptureSessionDidStopRunning = CaptureSession.didStopRunningNotification
    /// `.AVCaptureSessionWasInterrupted`: ``CaptureSession/wasInterruptedNotification``.
    public static let CaptureSessionWasInterrupted = CaptureSession.wasInterruptedNotification
    /// `.AVCaptureSessionInterruptionEnded`: ``CaptureSession/interruptionEndedNotification``.
    public static let CaptureSessionInterruptionEnded = CaptureSession.interruptionEndedNotification
    /// `.AVCaptureDeviceWasConnected`: ``CaptureDevice/wasConnectedNotification``.
    public static let CaptureDeviceWasConnected = CaptureDevice.wasConnectedNotification
    /// `.AVCaptureDeviceWasDisconnected`: ``CaptureDevice/wasDisconnectedNotification``.
    public static let CaptureDeviceWasDisconnected = CaptureDevice.wasDisconnectedNotification
    /// `.AVCaptureDeviceSubjectAreaDidChange`: never posted (Linux cameras do not detect it).
    public static let CaptureDeviceSubjectAreaDidChange = Notification.Name(
        "ViewfinderCaptureDeviceSubjectAreaDidChange")
}

extension CaptureDevice {
    /// `AVCaptureDevice.subjectAreaDidChangeNotification`: never posted here.
    public static let subjectAreaDidChangeNotification = Notification.Name.CaptureDeviceSubjectAreaDidChange
}
