import Dispatch
import Foundation
import Synchronization

/// One running device and the connections it feeds; the device's sink.
package final class DeviceStream: DeviceStreamSink {
    private let sessionReference: WeakReference<CaptureSession>
    /// The session's identity, which keeps the device's claim even after the session is gone.
    package let sessionID: ObjectIdentifier
    private var session: CaptureSession? { sessionReference.value }
    /// The session this stream feeds, while it exists.
    package var owningSession: CaptureSession? { session }
    /// The device's one backend stream, which this stream subscribes to (with other sessions').
    package let shared: SharedDeviceStream
    package let device: CaptureDevice
    package let connections: [CaptureConnection]
    /// The format and rate negotiated for the stream.
    package let choice: FormatNegotiator.Choice
    /// The session preset the stream was negotiated for.
    package let preset: CaptureSession.Preset
    private let stopped = Atomic<Bool>(false)
    /// Frames the device skipped since the last one it handed on (see ``StreamStallWatch``).
    private let stall = Mutex(StreamStallWatch())
    /// Whether the device skipped a frame since the last one it handed on: the one check the
    /// capture path makes per frame.
    private let skipping = Atomic<Bool>(false)

    package init(
        session: CaptureSession, device: CaptureDevice, connections: [CaptureConnection],
        choice: FormatNegotiator.Choice, preset: CaptureSession.Preset, shared: SharedDeviceStream
    ) {
        self.sessionReference = WeakReference(session)
        self.sessionID = ObjectIdentifier(session)
        self.shared = shared
        self.device = device
        self.connections = connections
        self.choice = choice
        self.preset = preset
    }

    /// The outputs of `connections`, each once, in connection order.
    package static func outputs(of connections: [CaptureConnection]) -> [CaptureOutput] {
        var outputs: [CaptureOutput] = []
        for case let output? in connections.map(\.output) where !outputs.contains(where: { $0 === output }) {
            outputs.append(output)
        }
        return outputs
    }

    /// The outputs this stream feeds.
    package var outputs: [CaptureOutput] { Self.outputs(of: connections) }

    package func deviceDidCapture(_ sample: CapturedSample) {
        if skipping.load(ordering: .relaxed) {
            // A frame got through: any stall is over, and the next one is reported again.
            skipping.store(false, ordering: .relaxed)
            stall.withLock { $0.recover() }
        }
        let mediaType = sample.mediaType
        for connection in connections where connection.mediaType == mediaType {
            connection.output?.receive(sample, from: connection)
        }
    }

    package func deviceDidFail(_ error: CaptureError) {
        guard let session else { return }
        // Never handle failures (or run observers) on the capture thread.
        session.schedule { [self] in session.deviceDidFail(self, error: error) }
    }

    /// Counts a frame the device skipped; once only skips have come for the watch's bound, posts
    /// one runtime error (the stream keeps running).
    package func deviceDidSkipFrame(_ cause: SkippedFrameCause) {
        skipping.store(true, ordering: .relaxed)
        let now = HostClock().now()
        let duration = device.activeVideoMinFrameDuration
        let name = device.localizedName
        let report = stall.withLock { $0.skip(cause, now: now, frameDuration: duration, deviceName: name) }
        guard let report, let session else { return }
        // Posted from the notification queue, never on the capture thread.
        session.schedule { [self] in
            guard !stopped.load(ordering: .acquiring) else { return }
            session.postRuntimeError(report)
        }
    }

    /// Leaves the device's shared stream; the last to leave stops the device. Waits for outputs
    /// to hand over what is queued; the last releases the device — also when the session itself
    /// is already gone (a session dropped while running).
    package func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let last = shared.leave(self)
        if last { device.backend.stopStreaming() }
        for connection in connections { connection.setActive(false) }
        Self.streamsDidStop(connections)
        if last { Self.release(device, from: sessionID) }
    }

    /// Tells each output of `connections` that its stream of each media type stopped (once per
    /// output and media type).
    package static func streamsDidStop(_ connections: [CaptureConnection]) {
        var told: [(CaptureOutput, MediaType)] = []
        for connection in connections {
            guard let output = connection.output,
                !told.contains(where: { $0.0 === output && $0.1 == connection.mediaType })
            else { continue }
            told.append((output, connection.mediaType))
            output.streamDidStop(mediaType: connection.mediaType)
        }
    }

    /// Releases `device` from the session with identity `sessionID` and lets the sessions that
    /// were waiting for it resume, each on its own notification queue.
    package static func release(_ device: CaptureDevice, from sessionID: ObjectIdentifier) {
        for waiter in device.release(from: sessionID) where ObjectIdentifier(waiter) != sessionID {
            waiter.schedule { waiter.deviceBecameAvailable() }
        }
    }
}
