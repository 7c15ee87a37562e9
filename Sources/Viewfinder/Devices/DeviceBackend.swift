/// A frame as a device backend hands it to the session, on the device's capture thread.
package struct CapturedFrame: Sendable {
    /// The pixels, in memory the backend owns (its ring); released back when the last reference goes.
    var buffer: PixelBuffer
    /// Capture time on the device's clock.
    var presentationTime: MediaTime
    /// The frame interval the device runs at.
    var duration: MediaTime
    /// The device's frame counter. Gaps mean frames the device lost.
    var sequenceNumber: UInt64
    /// When the frame reached user space, on the host's monotonic clock (for latency figures).
    var hostArrivalTime: MediaTime
}

/// Receives what a streaming device produces. Called on the device's capture thread, which
/// must never block: implementations queue work and return.
package protocol DeviceStreamSink: AnyObject, Sendable {
    /// A frame arrived.
    func deviceDidCapture(_ frame: CapturedFrame)
    /// The device failed; streaming has stopped. `isDisconnect` marks an unplugged device.
    func deviceDidFail(_ error: CaptureError)
}

/// What a kind of device (a camera family, a virtual camera) implements behind ``CaptureDevice``.
/// The session and outputs talk only to ``CaptureDevice``; backends never see them.
///
/// Thread safety: implementations must be callable from any thread; `startStreaming` and
/// `stopStreaming` are serialised by the owning ``CaptureDevice``.
package protocol DeviceBackend: AnyObject, Sendable {
    /// Stable across runs where the system allows (built from a bus path, say).
    var uniqueID: String { get }
    /// A name for people: the card name.
    var localizedName: String { get }
    /// The model (a driver name, say).
    var modelID: String { get }
    /// Who made it, if known.
    var manufacturer: String { get }
    /// The kind of device, for discovery sessions.
    var deviceType: CaptureDevice.DeviceType { get }
    /// Every format the device offers.
    var formats: [CaptureDevice.Format] { get }
    /// Whether the device is still there.
    var isConnected: Bool { get }

    /// Starts capturing in `format` with frames `frameDuration` apart, delivering to `sink` on
    /// the backend's own thread until ``stopStreaming()``. Returns the frame duration the
    /// hardware actually chose.
    func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: DeviceStreamSink
    ) throws(CaptureError) -> MediaTime

    /// Stops capturing and joins the capture thread: once this returns, the sink gets nothing
    /// more. Buffers still held by users stay valid until released.
    func stopStreaming()
}

extension DeviceBackend {
    /// The checks every backend makes before streaming: the device is still connected and
    /// offers `format`.
    func checkCanStream(_ format: CaptureDevice.Format) throws(CaptureError) {
        guard isConnected else {
            throw CaptureError(
                .deviceDisconnected, "'\(localizedName)' is disconnected: reconnect it before starting the session")
        }
        guard formats.contains(format) else {
            throw CaptureError(
                .unsupportedFormat, "'\(localizedName)' does not offer \(format): pick one of its `formats`")
        }
    }
}

/// Finds devices of one backend kind. Registered with ``DeviceRegistry``.
package protocol DeviceProvider: Sendable {
    /// The backends present now; the registry keeps one ``CaptureDevice`` per unique ID.
    func discoverBackends() -> [any DeviceBackend]
    /// Where this provider's devices sort: lower first (real cameras before virtual ones).
    var sortOrder: Int { get }
}
