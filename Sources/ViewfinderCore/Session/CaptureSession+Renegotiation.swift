import Dispatch
import Foundation
import Synchronization

// Live changes: an output's request or a device's configuration changed on a running session;
// the device's outputs are asked again and the new streams installed between frames, or the
// device restarts (DESIGN.md, the one rule for settings).

extension CaptureSession {
    // MARK: Live output changes

    /// An output's request changed (its settings, processors or a connection setting). Not
    /// running, or inside a configuration block: nothing to do now (the next start or commit
    /// reads it). Running: renegotiates the output's device; if the device keeps its format and
    /// rate, only the output's new context is installed, between frames; otherwise the device's
    /// stream restarts. Throws, changing nothing, when the output's new configuration cannot run;
    /// a device that then fails to restart is posted and stops the session.
    package func outputRequestDidChange(_ output: CaptureOutput) throws(CaptureError) {
        try renegotiate(changed: output) { stream in stream.connections.contains { $0.output === output } }
    }

    /// A device's configuration changed under its lock (``CaptureDevice/setActiveFormat(_:)``,
    /// ``CaptureDevice/setActiveVideoMinFrameDuration(_:)``): by the same rule as an output's
    /// settings, a running session renegotiates that device's stream now, restarting it only when
    /// its format or rate changes. Throws, changing nothing, when an output cannot run on it.
    package func deviceConfigurationDidChange(_ device: CaptureDevice) throws(CaptureError) {
        try renegotiate(changed: nil) { $0.device === device }
    }

    /// The one path by which a change reaches a running stream: renegotiates the first stream
    /// `matches` picks; if its device keeps its format and rate, only `changed`'s new stream is
    /// installed, between frames; otherwise every output's stream is built first (so a
    /// configuration that cannot run is refused and nothing stops), then the device restarts.
    /// Inside a configuration block the change is noted for the outermost commit instead.
    func renegotiate(
        changed output: CaptureOutput?, matching matches: (DeviceStream) -> Bool
    ) throws(CaptureError) {
        enterTransition()
        defer { leaveTransition() }
        let (stream, preset) = state.withLock { state -> (DeviceStream?, Preset) in
            guard state.running, let stream = state.streams.first(where: matches) else {
                return (nil, state.graph.preset)
            }
            guard state.configurationDepth == 0 else {
                state.deferred.append((stream, output.map { [$0] } ?? []))
                return (nil, state.graph.preset)
            }
            return (stream, state.graph.preset)
        }
        guard let stream, let renegotiated = try reinstall(stream, preset: preset, changed: output.map { [$0] } ?? [])
        else { return }
        let (choice, prepared, plan) = renegotiated
        stream.stop()
        do {
            let restarted = try SharedDecodePlan.with(plan) { () throws(CaptureError) -> DeviceStream in
                try startStream(
                    device: stream.device, connections: stream.connections, preset: preset, choice: choice,
                    streams: prepared)
            }
            state.withLock { state in
                if let position = state.streams.firstIndex(where: { $0 === stream }) {
                    state.streams[position] = restarted
                }
            }
        } catch {
            state.withLock { $0.streams.removeAll { $0 === stream } }
            post(Self.runtimeErrorNotification, error: error)
            stopAfterFailure(error)
        }
    }

    /// Negotiates `stream`'s outputs again at `preset`. If the device keeps its format and rate,
    /// installs the new streams of the `changed` outputs between frames and returns `nil`;
    /// otherwise returns the new choice with every output's stream prepared for it (nothing is
    /// stopped: the caller restarts the device). Throws, changing nothing, when an output cannot
    /// run.
    func reinstall(
        _ stream: DeviceStream, preset: Preset, changed: [CaptureOutput]
    ) throws(CaptureError) -> (FormatNegotiator.Choice, [PreparedStream], SharedDecodePlan?)? {
        let outputs = stream.outputs
        let requests = outputs.map { $0.makeRequest() }
        let choice = try SharedDeviceStream.negotiate(
            device: stream.device, preset: preset, requests: requests, for: self)
        let plan = SharedDecodePlan(format: choice.format, requests: requests)
        if choice == stream.choice {
            // A change of the shared decode (another size or format) re-plans every output from it.
            let decoder = SharedDeviceStream.stream(on: stream.device)?.frameDecoder
            let replans = decoder != nil && decoder?.currentPlan != plan
            var prepared: [PreparedStream] = []
            try SharedDecodePlan.with(plan) { () throws(CaptureError) in
                for (output, request) in zip(outputs, requests)
                where replans || changed.contains(where: { $0 === output }) {
                    prepared.append(try request.prepare(choice.format, choice.frameDuration))
                }
            }
            if replans { decoder?.currentPlan = plan }
            for stream in prepared { stream.install(false) }
            return nil
        }
        // The device must change: check every output can run on the new format before stopping.
        var prepared: [PreparedStream] = []
        try SharedDecodePlan.with(plan) { () throws(CaptureError) in
            for request in requests { prepared.append(try request.prepare(choice.format, choice.frameDuration)) }
        }
        return (choice, prepared, plan)
    }

    /// Posts `error` as ``runtimeErrorNotification`` (for settings whose setters cannot throw).
    package func postRuntimeError(_ error: CaptureError) {
        post(Self.runtimeErrorNotification, error: error)
    }

    /// The one rule for the errors of property setters that cannot throw (an output's, a
    /// connection's, a device's): the session that runs the output or device posts
    /// ``runtimeErrorNotification`` on its notification centre and queue, with itself as the
    /// object, as AVFoundation's runtime errors come; with no session, it is posted on
    /// `NotificationCenter.default` with `object` (the output or device) as the object. Never lost.
    package static func postSettingFailure(_ error: CaptureError, from session: CaptureSession?, object: AnyObject) {
        if let session {
            session.postRuntimeError(error)
        } else {
            NotificationCenter.default.post(
                name: runtimeErrorNotification, object: object, userInfo: [CaptureSessionErrorKey: error])
        }
    }
}
