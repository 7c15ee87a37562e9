import Dispatch
import Foundation
import Synchronization

/// Coordinates the flow of frames from inputs to outputs (the counterpart of
/// `AVCaptureSession`).
///
/// ```swift
/// let session = CaptureSession()
/// session.beginConfiguration()
/// session.sessionPreset = .hd1280x720
/// let input = try CaptureDeviceInput(device: CaptureDevice.default(for: .video)!)
/// if session.canAddInput(input) { session.addInput(input) }
/// let output = CaptureVideoDataOutput()
/// output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "frames"))
/// if session.canAddOutput(output) { session.addOutput(output) }
/// session.commitConfiguration()
/// session.startRunning()   // blocks until frames flow; errors are posted, not thrown
/// ```
///
/// Configuration changes between ``beginConfiguration()`` and the outermost
/// ``commitConfiguration()`` apply together; outside such a pair each change is its own commit.
/// A running session applies a commit device by device: a device whose connections and preset
/// are unchanged keeps streaming untouched; one whose connections or preset changed restarts with
/// a new negotiation; a removed input's device stops and an added one's starts.
///
/// Errors after ``startRunning()`` is called (no inputs, a device that fails or disappears) are
/// posted as ``runtimeErrorNotification`` with the ``CaptureError`` under
/// ``CaptureSessionErrorKey``. Every notification is posted from the session's own serial
/// notification queue, in the order things happened — never on the caller's thread or a
/// device's capture thread, and never while the session holds a lock.
///
/// Settings changed on an output of a running session (``CaptureVideoProcessingOutput/videoSettings``,
/// its minimum frame duration, processors, a connection's rotation or mirroring) apply when set:
/// the session renegotiates between frames and restarts a device only when its format or frame
/// rate must change.
///
/// Thread safety: every member may be used from any thread. ``startRunning()`` and
/// ``stopRunning()`` block; call them off your UI thread, as with AVFoundation.
// unchecked: state is in a Mutex; transitions are serialised by `transition`.
// Not final: ``CaptureMultiCamSession`` is one.
public class CaptureSession: @unchecked Sendable {
    package struct Graph {
        package var inputs: [CaptureInput] = []
        package var outputs: [CaptureOutput] = []
        package var connections: [CaptureConnection] = []
        package var preset: Preset = .high
        /// Inputs and outputs added with no connections, and connections added by hand
        /// (`CaptureSession+Connections.swift`): automatic connection leaves them alone.
        package var unconnected: Set<ObjectIdentifier> = []
        package var manualConnections: [CaptureConnection] = []
    }

    private struct State {
        var graph = Graph()
        var configurationDepth = 0
        var running = false
        var interrupted = false
        var streams: [DeviceStream] = []
        /// Changes to a running stream's outputs or device made inside a configuration block,
        /// for the outermost commit to apply: the stream, and the outputs whose settings changed.
        var deferred: [(stream: DeviceStream, outputs: [CaptureOutput])] = []
    }

    private let state = Mutex(State())
    /// Serialises start, stop, commit and failure handling (they block on devices).
    private let transition = NSRecursiveLock()
    /// How deep the thread holding `transition` is in it (guarded by `transition`).
    private var transitionDepth = 0
    /// Notifications waiting to be posted once the outermost transition has let go of its lock.
    private let pendingNotifications = Mutex<
        [(name: Notification.Name, error: CaptureError?, format: CaptureDevice.Format?)]
    >([])
    private static let notificationQueueKey = DispatchSpecificKey<ObjectIdentifier>()
    /// Where notifications are posted from.
    private let notificationQueue = DispatchQueue(label: "viewfinder.session.notifications")
    private let notificationCenter: NotificationCenter
    /// While interrupted: the observer waiting for the lost device to come back.
    private let reconnection = Mutex<ReconnectionObserver?>(nil)
    /// Key-value observers and the porting surface's settings (`Porting/KeyValueObserving+Capture.swift`).
    package let porting = PortingState(SessionExtras())

    /// A session with no inputs and outputs and the ``Preset/high`` preset, posting to
    /// `NotificationCenter.default`.
    public convenience init() {
        self.init(notificationCenter: .default)
    }

    /// A session posting its notifications to `notificationCenter`.
    public init(notificationCenter: NotificationCenter) {
        self.notificationCenter = notificationCenter
        notificationQueue.setSpecific(key: Self.notificationQueueKey, value: ObjectIdentifier(self))
    }

    deinit {
        // A session dropped while running must not leave cameras capturing.
        for stream in state.withLock({ $0.streams }) { stream.stop() }
    }

    // MARK: Notifications

    /// Posted when a runtime error occurs; the ``CaptureError`` is under ``CaptureSessionErrorKey``.
    public static let runtimeErrorNotification = Notification.Name("ViewfinderCaptureSessionRuntimeError")
    /// Posted when the session starts running.
    public static let didStartRunningNotification = Notification.Name("ViewfinderCaptureSessionDidStartRunning")
    /// Posted when the session stops running.
    public static let didStopRunningNotification = Notification.Name("ViewfinderCaptureSessionDidStopRunning")
    /// Posted when a device is lost mid-run (unplugged); the session stays "running" but
    /// interrupted.
    public static let wasInterruptedNotification = Notification.Name("ViewfinderCaptureSessionWasInterrupted")
    /// Posted when an interruption ends and frames flow again.
    public static let interruptionEndedNotification = Notification.Name("ViewfinderCaptureSessionInterruptionEnded")

    // MARK: Graph

    /// The inputs, including changes not yet committed.
    public var inputs: [CaptureInput] { state.withLock { $0.graph.inputs } }
    /// The outputs, including changes not yet committed. Preview layers are not listed (as in
    /// AVFoundation), though their connections are in ``connections``.
    public var outputs: [CaptureOutput] { state.withLock { $0.graph.outputs }.filter { !($0 is PreviewOutput) } }
    /// The connections between inputs and outputs.
    public var connections: [CaptureConnection] { state.withLock { $0.graph.connections } }

    /// The session's quality level; applied at the next commit or start. A preset no input
    /// supports makes ``startRunning()`` post an error: check ``canSetSessionPreset(_:)``.
    public var sessionPreset: Preset {
        get { state.withLock { $0.graph.preset } }
        set { mutate { $0.preset = newValue } }
    }

    /// Whether every device input supports `preset` (true when there are no inputs).
    public func canSetSessionPreset(_ preset: Preset) -> Bool {
        deviceInputs.allSatisfy { $0.device.supportsSessionPreset(preset) }
    }

    private var deviceInputs: [CaptureDeviceInput] { inputs.compactMap { $0 as? CaptureDeviceInput } }

    /// Whether `input` can be added: it is not in the session yet, its device is connected and no
    /// other input of this session uses the same device.
    public func canAddInput(_ input: CaptureInput) -> Bool { inputRefusal(input) == nil }

    private func inputRefusal(_ input: CaptureInput) -> CaptureError? {
        Self.inputRefusal(input, in: inputs)
    }

    private static func inputRefusal(_ input: CaptureInput, in current: [CaptureInput]) -> CaptureError? {
        if input.ports.isEmpty {
            return CaptureError(.cannotAddInput, "this input has no ports: its device produces no media")
        }
        if current.contains(where: { $0 === input }) {
            return CaptureError(.cannotAddInput, "this input is already in the session")
        }
        if let deviceInput = input as? CaptureDeviceInput {
            if !deviceInput.device.isConnected {
                return CaptureError(.cannotAddInput, "'\(deviceInput.device.localizedName)' is not connected")
            }
            if current.contains(where: { ($0 as? CaptureDeviceInput)?.device === deviceInput.device }) {
                return CaptureError(
                    .cannotAddInput, "the session already has an input for '\(deviceInput.device.localizedName)'")
            }
        }
        return nil
    }

    /// Adds `input` and connects each of its ports to the outputs that take its media, as
    /// AVFoundation's plain call does: when ``canAddInput(_:)`` is false it traps with the reason
    /// (AVFoundation raises). ``tryAddInput(_:)`` throws instead.
    public func addInput(_ input: CaptureInput) {
        do throws(CaptureError) {
            try tryAddInput(input)
        } catch {
            preconditionFailure(
                "addInput(_:): \(error.message) (check canAddInput(_:) first, or call tryAddInput(_:), which throws)")
        }
    }

    /// Adds `input` like ``addInput(_:)``, throwing ``CaptureError/Code/cannotAddInput`` when
    /// ``canAddInput(_:)`` is false.
    public func tryAddInput(_ input: CaptureInput) throws(CaptureError) {
        try mutateChecked { (graph) throws(CaptureError) in
            if let refusal = Self.inputRefusal(input, in: graph.inputs) { throw refusal }
            graph.inputs.append(input)
            Self.connect(&graph)
        }
    }

    /// Removes `input` and its connections.
    public func removeInput(_ input: CaptureInput) {
        mutate { graph in
            graph.inputs.removeAll { $0 === input }
            Self.connect(&graph)
        }
    }

    /// Whether `output` can be added: it is in no session yet.
    public func canAddOutput(_ output: CaptureOutput) -> Bool { outputRefusal(output) == nil }

    private func outputRefusal(_ output: CaptureOutput) -> CaptureError? {
        if outputs.contains(where: { $0 === output }) {
            return CaptureError(.cannotAddOutput, "this output is already in the session: add each output once")
        }
        if let owner = output.sessionID, owner != ObjectIdentifier(self) {
            return CaptureError(.cannotAddOutput, "this output belongs to another session: remove it there first")
        }
        return nil
    }

    /// Adds `output` and connects it to the first input port of each media type it takes (an
    /// output whose media no input produces yet is connected when such an input is added), as
    /// AVFoundation's plain call does: when ``canAddOutput(_:)`` is false it traps with the reason
    /// (AVFoundation raises). ``tryAddOutput(_:)`` throws instead.
    public func addOutput(_ output: CaptureOutput) {
        do throws(CaptureError) {
            try tryAddOutput(output)
        } catch {
            preconditionFailure(
                "addOutput(_:): \(error.message) (check canAddOutput(_:) first, or call tryAddOutput(_:), which throws)"
            )
        }
    }

    /// Adds `output` like ``addOutput(_:)``, throwing ``CaptureError/Code/cannotAddOutput`` when
    /// ``canAddOutput(_:)`` is false.
    public func tryAddOutput(_ output: CaptureOutput) throws(CaptureError) {
        try mutateChecked { (graph) throws(CaptureError) in
            if graph.outputs.contains(where: { $0 === output }) {
                throw CaptureError(.cannotAddOutput, "this output is already in the session: add each output once")
            }
            // Claimed under the graph's lock: two sessions racing for one output cannot both win.
            guard output.claim(for: self) else {
                throw CaptureError(.cannotAddOutput, "this output belongs to another session: remove it there first")
            }
            graph.outputs.append(output)
            Self.connect(&graph)
        }
    }

    /// Removes `output` and its connections.
    public func removeOutput(_ output: CaptureOutput) {
        mutate { graph in
            guard graph.outputs.contains(where: { $0 === output }) else { return }
            graph.outputs.removeAll { $0 === output }
            Self.connect(&graph)
            output.setConnections([])
            output.attach(to: nil)
        }
    }

    /// Rebuilds connections, keeping existing ones (and their settings) where the port remains:
    /// each output gets one connection per media type it takes, from the first input port of
    /// that type.
    package static func connect(_ graph: inout Graph) {
        var connections: [CaptureConnection] = []
        let automatic = graph.inputs.filter { !graph.unconnected.contains(ObjectIdentifier($0)) }
        for output in graph.outputs where !graph.unconnected.contains(ObjectIdentifier(output)) {
            for mediaType in output.acceptedMediaTypes {
                let existing = graph.connections.first { connection in
                    connection.output === output && connection.mediaType == mediaType
                        && graph.inputs.contains { input in connection.inputPorts.contains { $0.input === input } }
                }
                if let existing {
                    connections.append(existing)
                } else if let port = automatic.lazy.compactMap({ $0.port(for: mediaType) }).first {
                    connections.append(CaptureConnection(inputPort: port, output: output))
                }
            }
        }
        graph.manualConnections.removeAll { connection in
            !graph.outputs.contains { $0 === connection.output }
                || !connection.inputPorts.allSatisfy { port in graph.inputs.contains { $0 === port.input } }
        }
        connections += graph.manualConnections
        graph.connections = connections
        for output in graph.outputs {
            output.setConnections(connections.filter { $0.output === output })
        }
    }

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

    private func mutate(_ change: (inout Graph) -> Void) {
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
    private func applyIfRunning() {
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
    private func applyGraph() -> Bool {
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
    private static func sameConnections(_ old: [CaptureConnection], _ new: [CaptureConnection]) -> Bool {
        old.count == new.count
            && old.allSatisfy { connection in
                new.contains { $0 === connection && $0.output === connection.output && $0.output != nil }
            }
    }

    /// The session cannot go on: it stops and says so.
    private func stopAfterFailure(_ failure: CaptureError? = nil) {
        stopStreams()
        state.withLock {
            $0.running = false
            $0.interrupted = false
        }
        reconnection.withLock { $0 = nil }
        for output in outputs { output.sessionDidStopRunning(failure: failure) }
        post(Self.didStopRunningNotification)
    }

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
    private func renegotiate(
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
        let (choice, prepared) = renegotiated
        stream.stop()
        do {
            let restarted = try startStream(
                device: stream.device, connections: stream.connections, preset: preset, choice: choice,
                streams: prepared)
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
    private func reinstall(
        _ stream: DeviceStream, preset: Preset, changed: [CaptureOutput]
    ) throws(CaptureError) -> (FormatNegotiator.Choice, [PreparedStream])? {
        let outputs = stream.outputs
        let requests = outputs.map { $0.makeRequest() }
        let choice = try SharedDeviceStream.negotiate(
            device: stream.device, preset: preset, requests: requests, for: self)
        if choice == stream.choice {
            var prepared: [PreparedStream] = []
            for (output, request) in zip(outputs, requests) where changed.contains(where: { $0 === output }) {
                prepared.append(try request.prepare(choice.format, choice.frameDuration))
            }
            for stream in prepared { stream.install(false) }
            return nil
        }
        // The device must change: check every output can run on the new format before stopping.
        var prepared: [PreparedStream] = []
        for request in requests { prepared.append(try request.prepare(choice.format, choice.frameDuration)) }
        return (choice, prepared)
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

    // MARK: Running

    /// Whether the session is running (it may still be interrupted).
    public var isRunning: Bool { state.withLock { $0.running } }

    /// Whether a device was lost while running; frames resume when it returns.
    public var isInterrupted: Bool { state.withLock { $0.interrupted } }

    /// The device streams running now, one per streaming device (a stream a commit kept is the
    /// same object before and after it).
    package var deviceStreams: [DeviceStream] { state.withLock { $0.streams } }

    /// Starts the flow of frames and returns once it is set up. Blocks. Problems (no inputs, a
    /// preset the device cannot meet, a device that fails to start) are posted as
    /// ``runtimeErrorNotification``, not thrown, and leave the session stopped.
    public func startRunning() {
        enterTransition()
        defer { leaveTransition() }
        guard !isRunning else { return }
        for output in outputs { output.sessionWillStartRunning() }
        _ = startStreams(postingStart: true)
    }

    /// Stops the flow of frames. Blocks until devices have stopped and frames already queued
    /// have been handed to delegates (unless called from a delegate's own queue).
    public func stopRunning() {
        enterTransition()
        defer { leaveTransition() }
        guard isRunning else { return }
        stopStreams()
        state.withLock {
            $0.running = false
            $0.interrupted = false
        }
        reconnection.withLock { $0 = nil }
        for output in outputs { output.sessionDidStopRunning(failure: nil) }
        post(Self.didStopRunningNotification)
    }

    /// Starts a stream for every device input; on failure posts the error, stops what started
    /// and returns `false`.
    private func startStreams(postingStart: Bool) -> Bool {
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
    private func refusalToStart(_ graph: Graph) -> CaptureError? {
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

    /// Why the session must not start, checked before any device streams (`nil`: it may). A
    /// ``CaptureMultiCamSession`` refuses costs above 1.
    package func refusalToStart() -> CaptureError? { nil }

    private static func connections(of input: CaptureInput, in graph: Graph) -> [CaptureConnection] {
        graph.connections.filter { connection in
            connection.inputPorts.contains { $0.input === input } && connection.output != nil
        }
    }

    /// Negotiates for the outputs on `connections`, builds their contexts, and starts the device.
    /// `preempting`: take the device from another session that streams it (interrupting that one).
    private func startStream(
        device: CaptureDevice, connections: [CaptureConnection], preset: Preset, preempting: Bool = true
    ) throws(CaptureError) -> DeviceStream {
        // Negotiating and starting (or joining) as one step: two sessions resuming at once must
        // not both negotiate before either stream is running, or the later could not join it.
        try SharedDeviceStream.serialized { () throws(CaptureError) -> DeviceStream in
            let outputs = DeviceStream.outputs(of: connections)
            let requests = outputs.map { $0.makeRequest() }
            let choice = try SharedDeviceStream.negotiate(
                device: device, preset: preset, requests: requests, for: self)
            var prepared: [PreparedStream] = []
            for request in requests { prepared.append(try request.prepare(choice.format, choice.frameDuration)) }
            do throws(CaptureError) {
                return try startStream(
                    device: device, connections: connections, preset: preset, choice: choice, streams: prepared,
                    preempting: preempting)
            } catch  where error.code == .insufficientBandwidth {
                // The preset lets the session choose: a format that fits what the bus has left.
                guard
                    let fallback = BandwidthFallback.choice(
                        device: device, preset: preset, requests: requests, failed: choice)
                else { throw error }
                var streams: [PreparedStream] = []
                for request in requests {
                    streams.append(try request.prepare(fallback.format, fallback.frameDuration))
                }
                let stream = try startStream(
                    device: device, connections: connections, preset: preset, choice: fallback, streams: streams,
                    preempting: preempting)
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
    private func startStream(
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

    private func stopStreams() {
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
    fileprivate func deviceDidFail(_ stream: DeviceStream, error: CaptureError) {
        enterTransition()
        defer { leaveTransition() }
        let isCurrent = state.withLock { $0.streams.contains { $0 === stream } }
        guard isCurrent else { return }
        stream.stop()
        post(Self.runtimeErrorNotification, error: error)
        if error.code == .deviceDisconnected {
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

    // MARK: Interruptions

    /// Waits for a lost device to return (``CaptureDevice/wasConnectedNotification`` for the same
    /// unique ID), then resumes. Checks once at once, in case it is already back.
    private func watchForReconnection() {
        let observer = ReconnectionObserver { [weak self] device in
            guard let self else { return }
            self.schedule { self.resumeInterruptedStreams(reconnected: device) }
        }
        reconnection.withLock { $0 = observer }
        resumeInterruptedStreams(reconnected: nil)
    }

    /// Restarts the streams of device inputs that have none, if their devices are connected again;
    /// posts ``interruptionEndedNotification`` once every input streams.
    private func resumeInterruptedStreams(reconnected: CaptureDevice?) {
        enterTransition()
        defer { leaveTransition() }
        let (graph, active, interrupted) = state.withLock { ($0.graph, $0.streams, $0.running && $0.interrupted) }
        guard interrupted else { return }
        let idle = graph.inputs.compactMap { $0 as? CaptureDeviceInput }.filter { input in
            !active.contains { $0.device === input.device }
        }
        var resumed: [DeviceStream] = []
        for input in idle where input.device.isConnected || input.device.uniqueID == reconnected?.uniqueID {
            do {
                resumed.append(
                    try startStream(
                        device: input.device, connections: Self.connections(of: input, in: graph),
                        preset: graph.preset, preempting: false))
            } catch  where error.code == .deviceBusy {
                input.device.addWaiter(self)  // another session still has it: wait for it again
            } catch {
                post(Self.runtimeErrorNotification, error: error)
            }
        }
        guard resumed.count == idle.count else {
            state.withLock { $0.streams.append(contentsOf: resumed) }
            return
        }
        state.withLock {
            $0.streams.append(contentsOf: resumed)
            $0.interrupted = false
        }
        reconnection.withLock { $0 = nil }
        post(Self.interruptionEndedNotification)
    }

    /// Another session of this process takes `device` (it started last): this session's stream
    /// on it stops at once and the session is interrupted with
    /// ``InterruptionReason/videoDeviceInUseByAnotherClient``; it resumes, posting
    /// ``interruptionEndedNotification``, when the other session lets the device go. Runs on
    /// the other session's thread without this session's transition lock (taking it could
    /// deadlock two sessions starting at once); the notification is posted from this session's
    /// queue.
    fileprivate func yieldDevice(_ device: CaptureDevice) {
        let stream = state.withLock { state -> DeviceStream? in
            guard state.running, let index = state.streams.firstIndex(where: { $0.device === device }) else {
                return nil
            }
            state.interrupted = true
            return state.streams.remove(at: index)
        }
        guard let stream else { return }
        stream.stop()
        device.addWaiter(self)
        let error = CaptureError(
            .sessionWasInterrupted,
            "'\(device.localizedName)' was taken by another capture session of this process: frames resume when that session stops"
        )
        // As on iOS, an interruption is not a runtime error: only wasInterrupted is posted.
        schedule { [self] in post(Self.wasInterruptedNotification, error: error) }
    }

    /// The device this session waited for is free again (called on the notification queue).
    fileprivate func deviceBecameAvailable() {
        resumeInterruptedStreams(reconnected: nil)
    }

    private func fail(_ error: CaptureError) {
        post(Self.runtimeErrorNotification, error: error)
    }

    private func enterTransition() {
        transition.lock()
        transitionDepth += 1
    }

    /// Enters a transition if no other thread is in one.
    private func tryEnterTransition() -> Bool {
        guard transition.try() else { return false }
        transitionDepth += 1
        return true
    }

    /// Leaves a transition; the outermost one posts what it queued, without the lock.
    private func leaveTransition() {
        transitionDepth -= 1
        let outermost = transitionDepth == 0
        transition.unlock()
        if outermost { flushNotifications() }
    }

    /// Queues a notification; it is posted from the notification queue, in order, once no lock
    /// of the session is held (at once when no transition is under way).
    private func post(_ name: Notification.Name, error: CaptureError? = nil, format: CaptureDevice.Format? = nil) {
        pendingNotifications.withLock { $0.append((name, error, format)) }
        if !isInsideTransition { flushNotifications() }
    }

    /// Whether this thread is inside a transition (another thread's does not count: its queued
    /// notifications are flushed by whoever comes first, in order).
    private var isInsideTransition: Bool {
        guard transition.try() else { return false }
        defer { transition.unlock() }
        return transitionDepth > 0
    }

    /// Posts every queued notification on the notification queue (synchronously, so the
    /// session is not kept alive by a block in flight).
    private func flushNotifications() {
        let deliver = { [self] in
            while true {
                let next = pendingNotifications.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                guard let next else { return }
                var userInfo: [AnyHashable: Any]? = next.error.map { [CaptureSessionErrorKey: $0] }
                if next.name == Self.wasInterruptedNotification, let reason = next.error.map(InterruptionReason.init) {
                    userInfo?[CaptureSessionInterruptionReasonKey] = reason
                }
                reportKeyValueChange(for: next.name)
                if let format = next.format { userInfo?[CaptureSessionFormatKey] = format }
                notificationCenter.post(name: next.name, object: self, userInfo: userInfo)
            }
        }
        if DispatchQueue.getSpecific(key: Self.notificationQueueKey) == ObjectIdentifier(self) {
            deliver()
        } else {
            notificationQueue.sync(execute: deliver)
        }
    }

    fileprivate func schedule(_ work: @escaping @Sendable () -> Void) {
        notificationQueue.async(execute: work)
    }
}

/// Observes ``CaptureDevice/wasConnectedNotification`` until released.
// unchecked: the token is only passed back to NotificationCenter.
private final class ReconnectionObserver: @unchecked Sendable {
    private let token: NSObjectProtocol

    init(_ handler: @escaping @Sendable (CaptureDevice) -> Void) {
        token = NotificationCenter.default.addObserver(
            forName: CaptureDevice.wasConnectedNotification, object: nil, queue: nil
        ) { notification in
            if let device = notification.object as? CaptureDevice { handler(device) }
        }
    }

    deinit {
        NotificationCenter.default.removeObserver(token)
    }
}

/// The `userInfo` key of ``CaptureSession/runtimeErrorNotification`` (and of
/// ``CaptureSession/wasInterruptedNotification``): the ``CaptureError``.
// swift-format-ignore: AlwaysUseLowerCamelCase
// The name ports AVFoundation code by deleting "AV".
public let CaptureSessionErrorKey = "ViewfinderCaptureSessionErrorKey"

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
