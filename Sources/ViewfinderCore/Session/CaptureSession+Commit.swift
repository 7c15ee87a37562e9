import Dispatch
import Foundation
import Synchronization

// Configuration transactions and the graph commit: `beginConfiguration`/`commitConfiguration`
// and what a commit does to a running session (the graph family of the one rule for settings).

extension CaptureSession {
    // MARK: Configuration transactions

    /// Starts a batch of configuration changes; they apply together at the outermost
    /// ``commitConfiguration()``. Calls nest.
    public func beginConfiguration() {
        state.withLock { $0.configurationDepth += 1 }
    }

    /// Ends a batch begun by ``beginConfiguration()``. The outermost commit applies every change
    /// at once. On a running session only the devices the changes touch restart: those whose
    /// connections (an output added, removed or moved) or preset changed; a removed input's device
    /// stops, an added input's starts, and every other device keeps streaming, its outputs'
    /// settings changed inside the batch applied between frames (restarting the device only if its
    /// format or rate must change).
    public func commitConfiguration() {
        let outermost = state.withLock { state -> Bool in
            guard state.configurationDepth > 0 else { return false }
            state.configurationDepth -= 1
            return state.configurationDepth == 0
        }
        if outermost { applyIfRunning() }
    }

    func mutate(_ change: (inout Graph) -> Void) {
        let immediate = state.withLock { state -> Bool in
            change(&state.graph)
            return state.configurationDepth == 0
        }
        if immediate { applyIfRunning() }
    }

    /// Checks and changes the graph under one lock, so two threads cannot both pass a check
    /// that only one change may pass.
    package func mutateChecked(_ change: (inout Graph) throws(CaptureError) -> Void) throws(CaptureError) {
        let immediate = try state.withLock { (state) throws(CaptureError) -> Bool in
            try change(&state.graph)
            return state.configurationDepth == 0
        }
        if immediate { applyIfRunning() }
    }

    /// A commit on a running session: applies the committed graph device by device (see
    /// ``applyGraph()``). If that fails the error is posted and the session stops
    /// (``didStopRunningNotification``).
    func applyIfRunning() {
        // From a delegate's callback while another thread holds the transition (a stop or commit
        // that waits for this very callback to return): apply once it is done, instead of waiting.
        if isInsideDeliveryCallback, !tryEnterTransition() {
            schedule { [weak self] in self?.applyIfRunning() }
            return
        }
        if !isInsideDeliveryCallback { enterTransition() }
        defer { leaveTransition() }
        guard isRunning else { return }
        if !applyGraph() {
            stopAfterFailure(
                CaptureError(
                    .sessionWasInterrupted, "the session could not restart its devices after a configuration change"))
        }
    }

    /// Brings the running streams in line with the committed graph, restarting only the devices
    /// that must: a stream whose device input remains, with the same connections (and outputs)
    /// and preset, keeps running (settings changed inside the configuration block are applied to
    /// it as `renegotiate(changed:matching:)` would); a stream whose connections or preset
    /// changed restarts; a removed input's stream stops; an added input's starts. On an
    /// interrupted session, inputs with no stream are left to resume as the interruption ends.
    /// On failure posts the error and returns `false` (the caller stops the session).
    func applyGraph() -> Bool {
        let (graph, streams, deferred, interrupted) = state.withLock { state in
            defer { state.deferred = [] }
            return (state.graph, state.streams, state.deferred, state.interrupted)
        }
        let devices = graph.inputs.compactMap { $0 as? CaptureDeviceInput }
        var retired: [DeviceStream] = []
        var restarting: [CaptureDeviceInput] = []
        for stream in streams {
            guard let input = devices.first(where: { $0.device === stream.device }) else {
                retired.append(stream)
                continue
            }
            var keeps =
                stream.preset == graph.preset
                && Self.sameConnections(stream.connections, Self.connections(of: input, in: graph))
            let changes = deferred.filter { $0.stream === stream }
            if keeps, !changes.isEmpty {
                do {
                    keeps = try reinstall(stream, preset: graph.preset, changed: changes.flatMap(\.outputs)) == nil
                } catch {
                    fail(error)
                    return false
                }
            }
            if !keeps {
                retired.append(stream)
                restarting.append(input)
            }
        }
        state.withLock { state in state.streams.removeAll { stream in retired.contains { $0 === stream } } }
        // Every stream that goes stops before any starts: an output moved from one device to
        // another must see its old stream end before its new one begins.
        for stream in retired { stream.stop() }
        if let refusal = refusalToStart(graph) {
            fail(refusal)
            return false
        }
        let added = devices.filter { input in !streams.contains { $0.device === input.device } }
        let starting = devices.filter { input in
            restarting.contains { $0 === input } || (!interrupted && added.contains { $0 === input })
        }
        for input in starting {
            do {
                let stream = try startStream(
                    device: input.device, connections: Self.connections(of: input, in: graph), preset: graph.preset)
                state.withLock { $0.streams.append(stream) }
            } catch {
                fail(error)
                return false
            }
        }
        if interrupted { resumeInterruptedStreams(reconnected: nil) }
        return true
    }

    /// Whether two lists of connections are the same connections to the same outputs, in any order.
    static func sameConnections(_ old: [CaptureConnection], _ new: [CaptureConnection]) -> Bool {
        old.count == new.count
            && old.allSatisfy { connection in
                new.contains { $0 === connection && $0.output === connection.output && $0.output != nil }
            }
    }

    /// The session cannot go on: it stops and says so.
    func stopAfterFailure(_ failure: CaptureError? = nil) {
        stopStreams()
        state.withLock {
            $0.running = false
            $0.interrupted = false
        }
        reconnection.withLock { $0 = nil }
        endDeferredStart()
        for output in outputs { output.sessionDidStopRunning(failure: failure) }
        post(Self.didStopRunningNotification)
    }
}
