import Foundation

extension CaptureDevice {
    /// Posted to `NotificationCenter.default` when a camera is plugged in (or comes back); the
    /// notification's `object` is the ``CaptureDevice``. A camera that returns with the same
    /// ``uniqueID`` is the same device object, and a session it was interrupted in resumes.
    /// Posted on the thread that noticed the change, never a capture thread.
    public static let wasConnectedNotification = Notification.Name("ViewfinderCaptureDeviceWasConnected")

    /// Posted to `NotificationCenter.default` when a camera is unplugged; the notification's
    /// `object` is the ``CaptureDevice``, whose ``isConnected`` is now `false`.
    public static let wasDisconnectedNotification = Notification.Name("ViewfinderCaptureDeviceWasDisconnected")
}
