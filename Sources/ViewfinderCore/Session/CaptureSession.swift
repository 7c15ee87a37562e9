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
// Open, as AVFoundation's is: ``CaptureMultiCamSession`` and applications' session classes
// subclass it.
open class CaptureSession: @unchecked Sendable {
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

    struct State {
        var graph = Graph()
        var configurationDepth = 0
        var running = false
        var interrupted = false
        var streams: [DeviceStream] = []
        /// Changes to a running stream's outputs or device made inside a configuration block,
        /// for the outermost commit to apply: the stream, and the outputs whose settings changed.
        var deferred: [(stream: DeviceStream, outputs: [CaptureOutput])] = []
    }

    let state = Mutex(State())
    /// Serialises start, stop, commit and failure handling (they block on devices).
    let transition = NSRecursiveLock()
    /// How deep the thread holding `transition` is in it (guarded by `transition`).
    var transitionDepth = 0
    /// Notifications waiting to be posted once the outermost transition has let go of its lock.
    let pendingNotifications = Mutex<
        [(name: Notification.Name, error: CaptureError?, format: CaptureDevice.Format?)]
    >([])
    static let notificationQueueKey = DispatchSpecificKey<ObjectIdentifier>()
    /// Where notifications are posted from.
    let notificationQueue = DispatchQueue(label: "viewfinder.session.notifications")
    let notificationCenter: NotificationCenter
    /// While interrupted: the observer waiting for the lost device to come back.
    let reconnection = Mutex<ReconnectionObserver?>(nil)
    /// Key-value observers and the porting surface's settings (`Porting/KeyValueObserving+Capture.swift`).
    package let porting = PortingState(SessionExtras())
    /// Deferred start's setting, delegate and waiting outputs (`CaptureSession+DeferredStart.swift`).
    package let deferredStart = DeferredStartState()

    /// A session with no inputs and outputs and the ``Preset/high`` preset, posting to
    /// `NotificationCenter.default`. Designated, as `AVCaptureSession`'s is, so a subclass's
    /// `override init()` can call `super.init()`.
    public init() {
        self.notificationCenter = .default
        notificationQueue.setSpecific(key: Self.notificationQueueKey, value: ObjectIdentifier(self))
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

    var deviceInputs: [CaptureDeviceInput] { inputs.compactMap { $0 as? CaptureDeviceInput } }

    /// Whether `input` can be added: it is not in the session yet, its device is connected and no
    /// other input of this session uses the same device.
    public func canAddInput(_ input: CaptureInput) -> Bool { inputRefusal(input) == nil }

    func inputRefusal(_ input: CaptureInput) -> CaptureError? {
        Self.inputRefusal(input, in: inputs)
    }

    static func inputRefusal(_ input: CaptureInput, in current: [CaptureInput]) -> CaptureError? {
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

    func outputRefusal(_ output: CaptureOutput) -> CaptureError? {
        if outputs.contains(where: { $0 === output }) {
            return CaptureError(.cannotAddOutput, "this output is already in the session: add each output once")
        }
        if let owner = output.sessionID, owner != ObjectIdentifier(self) {
            return CaptureError(.cannotAddOutput, "this output belongs to another session: remove it there first")
        }
        return Self.unsupportedOutputRefusal(output)
    }

    /// Why an output no Linux device can feed cannot be added (a depth output), if it is one.
    static func unsupportedOutputRefusal(_ output: CaptureOutput) -> CaptureError? {
        guard output is CaptureDepthDataOutput else { return nil }
        return CaptureError(
            .cannotAddOutput,
            "no Linux camera delivers depth data (every format's supportedDepthDataFormats is empty): leave the depth output out"
        )
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
        if let refusal = Self.unsupportedOutputRefusal(output) { throw refusal }
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

    /// Why the session must not start, checked before any device streams (`nil`: it may). A
    /// ``CaptureMultiCamSession`` refuses costs above 1.
    package func refusalToStart() -> CaptureError? { nil }

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
        prepareDeferredStart()
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
        endDeferredStart()
        for output in outputs { output.sessionDidStopRunning(failure: nil) }
        post(Self.didStopRunningNotification)
    }
}

/// The `userInfo` key of ``CaptureSession/runtimeErrorNotification`` (and of
/// ``CaptureSession/wasInterruptedNotification``): the ``CaptureError``.
// swift-format-ignore: AlwaysUseLowerCamelCase
// The name ports AVFoundation code by deleting "AV".
public let CaptureSessionErrorKey = "ViewfinderCaptureSessionErrorKey"
