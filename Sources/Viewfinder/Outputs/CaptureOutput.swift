import Synchronization

/// A destination for captured media (the counterpart of `AVCaptureOutput`). Use its concrete
/// subclass ``CaptureVideoDataOutput``.
///
/// Thread safety: may be used from any thread.
public class CaptureOutput: @unchecked Sendable {  // unchecked: mutable state lives in `links`, a Mutex.
    private struct Links {
        var connections: [CaptureConnection] = []
        var session: ObjectIdentifier?
    }
    private let links = Mutex(Links())

    init() {}

    /// The connections feeding this output.
    public var connections: [CaptureConnection] { links.withLock { $0.connections } }

    /// The first connection carrying `mediaType`, if any.
    public func connection(with mediaType: MediaType) -> CaptureConnection? {
        connections.first { $0.inputPorts.contains { $0.mediaType == mediaType } }
    }

    var sessionID: ObjectIdentifier? { links.withLock { $0.session } }

    func attach(to session: ObjectIdentifier?) { links.withLock { $0.session = session } }

    func setConnections(_ connections: [CaptureConnection]) { links.withLock { $0.connections = connections } }

    // MARK: Hooks the session drives (overridden by concrete outputs)

    /// What this output wants from the device, for format negotiation.
    var request: OutputRequest { OutputRequest() }

    /// Gets ready for frames of `format` arriving `frameDuration` apart. Called before streaming
    /// starts, never while frames flow.
    func prepareToStream(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError) {}

    /// The session is about to start running (not called when it restarts streams for a commit
    /// or after an interruption).
    func sessionWillStartRunning() {}

    /// A frame from `connection`, on the device's capture thread. Must not block.
    func receive(_ frame: CapturedFrame, from connection: CaptureConnection) {}

    /// A connection's rotation or mirroring changed: renegotiate if streaming.
    func connectionSettingsDidChange() throws(CaptureError) {}

    /// The stream stopped: no more frames will arrive. Waits (bounded) for queued frames to be
    /// handed over, unless called from this output's own delivery queue.
    func streamDidStop() {}
}

/// What an output asks of the device, for negotiation.
struct OutputRequest: Sendable, Hashable {
    /// The pixel format wanted; `nil` for whatever the device captures.
    var pixelFormat: PixelFormat?
    /// The size wanted; `nil` for the device's size.
    var size: CaptureDevice.Dimensions?
    /// The shortest time between delivered frames; `.invalid` for no limit.
    var minFrameDuration: MediaTime = .invalid
}
