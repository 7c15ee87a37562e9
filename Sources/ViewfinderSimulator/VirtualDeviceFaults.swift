import Viewfinder

// Fault injection for the virtual devices lives in the test-only product, so an application that
// links only Viewfinder cannot make its own camera fail by accident.

extension VirtualCamera {
    /// Makes the running stream fail with `error` at its next frame, as a driver error would.
    public func simulateFailure(_ error: CaptureError) { injectFailure(error) }

    /// Unplugs the camera: a running stream fails with `deviceDisconnected` at its next frame, and
    /// the device reports itself disconnected until ``simulateReconnect()`` (a stopped camera is
    /// disconnected at once).
    public func simulateDisconnect() { injectDisconnect() }

    /// Plugs the camera back in: posts `CaptureDevice.wasConnectedNotification`, and a session
    /// interrupted by the unplug resumes.
    public func simulateReconnect() { injectReconnect() }
}

extension VirtualMicrophone {
    /// Makes the running stream fail with `error` at its next chunk.
    public func simulateFailure(_ error: CaptureError) { injectFailure(error) }

    /// Unplugs the microphone: the stream fails with `deviceDisconnected`.
    public func simulateDisconnect() { injectDisconnect() }

    /// Plugs the microphone back in: posts `CaptureDevice.wasConnectedNotification` for its
    /// device, and a session interrupted by the unplug resumes.
    public func simulateReconnect() { injectReconnect() }
}
