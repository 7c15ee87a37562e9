import Dispatch
import Foundation
import Synchronization

// Starting and stopping device streams: negotiation, sharing a running device with another
// session, preemption, and the USB bandwidth fallback.

extension CaptureSession {
    /// Starts a stream for every device input; on failure posts the error, stops what started
    /// and returns `false`.
    func startStreams(postingStart: Bool) -> Bool {
        let graph = state.withLock { $0.graph }
        let devices = graph.inputs.compactMap { ($0 as? CaptureDeviceInput) }
        if let refusal = refusalToStart(graph) {
            fail(refusal)
            return false
        }
        var started: [DeviceStream] = []
        for input in devices {
            do {
                started.append(
                    try startStream(
                        device: input.device, connections: Self.connections(of: input, in: graph),
                        preset: graph.preset))
            } catch {
                for stream in started { stream.stop() }
                fail(error)
                return false
            }
        }
        state.withLock {
            $0.streams = started
            $0.deferred = []
            $0.running = true
        }
        if postingStart { post(Self.didStartRunningNotification) }
        return true
    }

    /// Why the session must not run `graph` (no device input, no output, or what
    /// ``refusalToStart()`` says), checked at start and at every commit on a running session.
    func refusalToStart(_ graph: Graph) -> CaptureError? {
        guard graph.inputs.contains(where: { $0 is CaptureDeviceInput }) else {
            return CaptureError(
                .noInputs,
                "startRunning() found no inputs: add a CaptureDeviceInput (e.g. for CaptureDevice.default(for: .video)) before starting"
            )
        }
        guard !graph.outputs.isEmpty else {
            return CaptureError(
                .noOutputs, "startRunning() found no outputs: add a CaptureVideoDataOutput before starting")
        }
        return refusalToStart()
    }

    static func connections(of input: CaptureInput, in graph: Graph) -> [CaptureConnection] {
        graph.connections.filter { connection in
            connection.inputPorts.contains { $0.input === input } && connection.output != nil
        }
    }

    /// Negotiates for the outputs on `connections`, builds their contexts, and starts the device.
    /// `preempting`: take the device from another session that streams it (interrupting that one).
    func startStream(
        device: CaptureDevice, connections: [CaptureConnection], preset: Preset, preempting: Bool = true
    ) throws(CaptureError) -> DeviceStream {
        // Negotiating and starting (or joining) as one step: two sessions resuming at once must
        // not both negotiate before either stream is running, or the later could not join it.
        try SharedDeviceStream.serialized { () throws(CaptureError) -> DeviceStream in
            // Opening the device (no session streams it yet): its saved profile first, so the
            // first frame already has the saved values (the profile's format is then negotiated).
            if SharedDeviceStream.stream(on: device) == nil { device.applyAutomaticProfileIfNeeded() }
            let outputs = DeviceStream.outputs(of: connections)
            let requests = outputs.map { $0.makeRequest() }
            let choice = try SharedDeviceStream.negotiate(
                device: device, preset: preset, requests: requests, for: self)
            do throws(CaptureError) {
                // The outputs plan their chains from the device's one shared decode, and the
                // device's stream decodes for them.
                return try SharedDecodePlan.with(SharedDecodePlan(format: choice.format, requests: requests)) {
                    () throws(CaptureError) -> DeviceStream in
                    var prepared: [PreparedStream] = []
                    for request in requests {
                        prepared.append(try request.prepare(choice.format, choice.frameDuration))
                    }
                    return try startStream(
                        device: device, connections: connections, preset: preset, choice: choice, streams: prepared,
                        preempting: preempting)
                }
            } catch  where error.code == .insufficientBandwidth {
                // The preset lets the session choose: a format that fits what the bus has left.
                guard
                    let fallback = BandwidthFallback.choice(
                        device: device, preset: preset, requests: requests, failed: choice)
                else { throw error }
                let stream = try SharedDecodePlan.with(SharedDecodePlan(format: fallback.format, requests: requests)) {
                    () throws(CaptureError) -> DeviceStream in
                    var streams: [PreparedStream] = []
                    for request in requests {
                        streams.append(try request.prepare(fallback.format, fallback.frameDuration))
                    }
                    return try startStream(
                        device: device, connections: connections, preset: preset, choice: fallback, streams: streams,
                        preempting: preempting)
                }
                post(
                    Self.didFallBackToFormatNotification,
                    error: BandwidthFallback.notice(error, device: device, to: fallback), format: fallback.format)
                return stream
            }
        }
    }

    /// Claims the device, installs the outputs' contexts and starts the device's stream. A device
    /// another session of this process streams at `choice` is shared with it (macOS's rule: both
    /// get every frame, see ``SharedDeviceStream``). At another choice it is taken from every
    /// session streaming it when `preempting` (the formats cannot coexist: the later session
    /// gets the camera; the others are interrupted with
    /// ``InterruptionReason/videoDeviceInUseByAnotherClient`` and resume when it is free).
    func startStream(
        device: CaptureDevice, connections: [CaptureConnection], preset: Preset, choice: FormatNegotiator.Choice,
        streams: [PreparedStream], preempting: Bool = true
    ) throws(CaptureError) -> DeviceStream {
        if let shared = SharedDeviceStream.stream(on: device), shared.choice == choice,
            shared.hasOtherSessions(than: self)
        {
            for prepared in streams { prepared.install(true) }
            let stream = DeviceStream(
                session: self, device: device, connections: connections, choice: choice, preset: preset,
                shared: shared)
            if shared.join(stream) {
                for connection in connections { connection.setActive(true) }
                return stream
            }
            DeviceStream.streamsDidStop(connections)  // it stopped meanwhile: start it anew below
        }
        var holder = device.claim(for: self)
        if preempting, case .some(let owner?) = holder {
            // Take the claim first, so the sessions interrupted now wait for this one (none of
            // them is woken by the others' leaving), then interrupt every session on the device.
            device.transferClaim(from: ObjectIdentifier(owner), to: self)
            let sharing = SharedDeviceStream.stream(on: device)?.sessions() ?? []
            for other in sharing where other !== self { other.yieldDevice(device) }
            if !sharing.contains(where: { $0 === owner }) { owner.yieldDevice(device) }
            holder = device.claim(for: self)
        }
        guard holder == nil else {
            throw CaptureError(
                .deviceBusy, "'\(device.localizedName)' is in use by another running session: stop that session first")
        }
        do {
            for prepared in streams { prepared.install(true) }
            let shared = SharedDeviceStream(device: device, choice: choice)
            let stream = DeviceStream(
                session: self, device: device, connections: connections, choice: choice, preset: preset,
                shared: shared)
            let actual = try shared.start(with: stream)
            device.applyNegotiated(format: choice.format, frameDuration: actual)
            for connection in connections { connection.setActive(true) }
            return stream
        } catch {
            DeviceStream.streamsDidStop(connections)
            DeviceStream.release(device, from: ObjectIdentifier(self))
            throw error
        }
    }

    func stopStreams() {
        let streams = state.withLock { state in
            defer {
                state.streams = []
                state.deferred = []
            }
            return state.streams
        }
        for stream in streams { stream.stop() }
    }

    /// A device failed mid-stream (called on the notification queue, off the capture thread).
    func deviceDidFail(_ stream: DeviceStream, error: CaptureError) {
        enterTransition()
        defer { leaveTransition() }
        let isCurrent = state.withLock { $0.streams.contains { $0 === stream } }
        guard isCurrent else { return }
        stream.stop()
        post(Self.runtimeErrorNotification, error: error)
        if error.code == .deviceDisconnected {
            stream.device.profileNeedsReapplying()  // a camera that comes back forgot its settings
            state.withLock {
                $0.streams.removeAll { $0 === stream }
                $0.interrupted = true
            }
            post(Self.wasInterruptedNotification, error: error)
            for output in outputs { output.sessionWasInterrupted(lostDevice: stream.device, error: error) }
            watchForReconnection()
        } else {
            stopAfterFailure(error)
        }
    }
}
