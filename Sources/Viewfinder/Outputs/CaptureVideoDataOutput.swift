import Dispatch
import Foundation
import Synchronization

/// Delivers captured frames to a delegate on a queue you choose (the counterpart of
/// `AVCaptureVideoDataOutput`).
///
/// ```swift
/// let output = CaptureVideoDataOutput()
/// output.videoSettings = try VideoSettings(pixelFormat: .bgra)
/// output.alwaysDiscardsLateVideoFrames = true
/// output.setSampleBufferDelegate(myDelegate, queue: DispatchQueue(label: "frames"))
/// try session.addOutput(output)
/// ```
///
/// The delivery contract:
/// - Frames reach the delegate on the given queue one at a time, presentation timestamps strictly
///   increasing. A concurrent queue is fine: delivery goes through a serial queue that targets it.
/// - With ``alwaysDiscardsLateVideoFrames`` (the default), while the delegate is busy at most one
///   newer frame waits; a waiting frame replaced by a newer one is reported through
///   `captureOutput(_:didDrop:from:)` as ``DroppedFrameReason/frameWasLate``. Without it frames
///   queue up to ``bufferBudget``, then the newest drop as ``DroppedFrameReason/outOfBuffers``.
/// - Frames the device lost are reported as ``DroppedFrameReason/discontinuity``.
/// - Frames closer than ``minFrameDuration`` to the last accepted one are not delivered
///   (counted as rate-gated).
/// - Every frame is accounted for: see ``Statistics``.
/// - Drop decisions come before conversion: a frame that will be dropped is never converted.
///
/// Thread safety: every member may be used from any thread; changes apply between frames.
public final class CaptureVideoDataOutput: CaptureOutput, @unchecked Sendable {  // unchecked: state is in Mutexes.
    /// Frames in flight (waiting for, or held by, the delegate) before new ones drop as
    /// ``DroppedFrameReason/outOfBuffers``; also the size of the conversion pool.
    public let bufferBudget: Int

    /// The formats ``VideoSettings`` may ask for: every format the converter produces.
    static let deliverablePixelFormats: [PixelFormat] = PixelConverter.convertible

    struct Target {
        weak var delegate: (any CaptureVideoDataOutputSampleBufferDelegate)?
        var callbackQueue: DispatchQueue?
        var deliveryQueue: DispatchQueue?
        /// Wakes the delivery queue to drain; coalesces wake-ups and, unlike `async`, allocates
        /// nothing per frame.
        var wakeUp: WakeUp?
    }

    // unchecked: dispatch sources are thread-safe; the reference is set once.
    final class WakeUp: @unchecked Sendable {
        let source: any DispatchSourceUserDataAdd
        init(_ source: any DispatchSourceUserDataAdd) { self.source = source }
        func signal() { source.add(data: 1) }
        deinit { source.cancel() }
    }

    struct State {
        var target = Target()
        var settings = VideoSettings()
        var discardsLate = true
        var minFrameDuration = MediaTime.invalid {
            didSet { gateThreshold = Self.gateThreshold(for: minFrameDuration) }
        }
        /// `minFrameDuration` less the timestamp-jitter allowance.
        var gateThreshold = MediaTime.invalid

        static func gateThreshold(for duration: MediaTime) -> MediaTime {
            guard duration.isValid else { return .invalid }
            let allowance = min(duration.nanoseconds / 32, 2_000_000)
            return duration - MediaTime(value: allowance, timescale: 1_000_000_000)
        }
        var pipeline: DeliveryPipeline?
        var processors: [NamedProcessor] = []
        var streaming = false
        // Per stream:
        var queue = RingQueue<DeliveryEvent>(capacity: 32)
        var queuedDrops = 0
        var waitingFrame: Int?
        var drainScheduled = false
        var lastSequence: UInt64?
        var lastAcceptedTime: MediaTime?
        var statistics = Statistics()
        var latencies = LatencyWindow()
    }
    let state = Mutex(State())
    /// Serialises chain edits with each other and with negotiation (they call processors' code,
    /// so they cannot run under `state`).
    let chainEdits = NSLock()
    private static let queueKey = DispatchSpecificKey<ObjectIdentifier>()

    /// Drop reports queued beyond this many are merged into the last one (its
    /// ``SampleBuffer/AttachmentKey/droppedFrameCount`` grows), so a stalled delegate cannot make
    /// the queue grow without bound.
    static let dropReportLimit = 256

    /// An output that lets at most `bufferBudget` frames be in flight (at least 1; default 6).
    public init(bufferBudget: Int = 6) {
        self.bufferBudget = max(1, bufferBudget)
        super.init()
    }

    // MARK: Delegate

    /// Sets the delegate and the queue its methods run on. Pass `nil` for both to stop delivery.
    /// A `nil` queue with a delegate uses a private serial queue. The delegate is held weakly.
    public func setSampleBufferDelegate(
        _ delegate: (any CaptureVideoDataOutputSampleBufferDelegate)?, queue: DispatchQueue?
    ) {
        var target = Target()
        if let delegate {
            let callbackQueue = queue ?? DispatchQueue(label: "viewfinder.video-data-output.callbacks")
            // A serial queue of our own targeting the caller's: ordered even if theirs is concurrent.
            let delivery = DispatchQueue(label: "viewfinder.video-data-output.delivery", target: callbackQueue)
            delivery.setSpecific(key: Self.queueKey, value: ObjectIdentifier(self))
            let source = DispatchSource.makeUserDataAddSource(queue: delivery)
            source.setEventHandler { [weak self] in self?.drain() }
            source.activate()
            target = Target(
                delegate: delegate, callbackQueue: callbackQueue, deliveryQueue: delivery, wakeUp: WakeUp(source))
        }
        let wakeUp = target.wakeUp
        let pending = state.withLock { state in
            state.target = target
            // Events still queued are drained through the new queue.
            guard !state.queue.isEmpty, wakeUp != nil else { return false }
            state.drainScheduled = true
            return true
        }
        if pending { wakeUp?.signal() }
    }

    /// The delegate, if one is set and still alive.
    public var sampleBufferDelegate: (any CaptureVideoDataOutputSampleBufferDelegate)? {
        state.withLock { $0.target.delegate }
    }

    /// The queue the delegate is called on.
    public var sampleBufferCallbackQueue: DispatchQueue? { state.withLock { $0.target.callbackQueue } }

    // MARK: Settings

    /// The format and size to deliver. Empty settings (the default) deliver the device's native
    /// format zero-copy. Takes effect at the next configuration commit or session start.
    public var videoSettings: VideoSettings {
        get { state.withLock { $0.settings } }
        set { state.withLock { $0.settings = newValue } }
    }

    /// The pixel formats this output can deliver, from any camera format it can convert (all but
    /// compressed ones). Unlike AVFoundation's list it is not ordered by cost: the session picks
    /// the camera format that is cheapest to deliver whichever you ask for.
    public var availableVideoPixelFormatTypes: [PixelFormat] { Self.deliverablePixelFormats }

    /// Whether to drop frames that arrive while the delegate is still busy (keeping only the
    /// newest waiting). Default `true`.
    public var alwaysDiscardsLateVideoFrames: Bool {
        get { state.withLock { $0.discardsLate } }
        set { state.withLock { $0.discardsLate = newValue } }
    }

    /// The shortest time between delivered frames; `.invalid` (the default) for no limit.
    public var minFrameDuration: MediaTime { state.withLock { $0.minFrameDuration } }

    /// Sets ``minFrameDuration``: delivered frames will be at least `duration` apart in
    /// presentation time, less an allowance for timestamp jitter of 1/32 of `duration` (at most
    /// 2 ms) — so a camera running exactly at the limit, whose timestamps wobble by a little, is
    /// not halved. `.invalid` removes the limit. The device is asked for the nearest rate it
    /// supports; the output drops the rest. Throws ``CaptureError/Code/invalidArgument`` for zero
    /// or negative durations.
    public func setMinFrameDuration(_ duration: MediaTime) throws(CaptureError) {
        if duration.isValid && duration <= .zero {
            throw CaptureError(
                .invalidArgument, "minFrameDuration must be positive, got \(duration); use .invalid for no limit")
        }
        state.withLock { $0.minFrameDuration = duration }
    }

    /// The format and size frames are delivered in, once the session has negotiated.
    public var deliveredFormat: (pixelFormat: PixelFormat, size: CaptureDevice.Dimensions)? {
        state.withLock { state in state.pipeline.map { ($0.outputFormat, $0.outputSize) } }
    }

    /// Whether frames are delivered without conversion (the device's own buffers).
    public var isZeroCopy: Bool { state.withLock { $0.pipeline?.chain.isEmpty ?? true } }

    /// The engine of the first conversion, when frames are converted.
    public var conversionEngine: PixelConverter.Engine? { state.withLock { $0.pipeline?.chain.conversionEngine } }

    /// The negotiated pipeline, for tests.
    var pipelineForTesting: DeliveryPipeline? { state.withLock { $0.pipeline } }

    // MARK: Figures

    /// Counters since the session last started (kept across configuration commits and
    /// interruptions).
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// Capture-to-delegate latency over the last 1,024 delivered frames.
    public var deliveryLatency: LatencyStatistics { state.withLock { $0.latencies.summary() } }

    // MARK: Session hooks

    override var request: OutputRequest {
        state.withLock {
            OutputRequest(
                pixelFormat: $0.settings.pixelFormat, size: $0.settings.size, minFrameDuration: $0.minFrameDuration)
        }
    }

    override func prepareToStream(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError) {
        chainEdits.lock()
        defer { chainEdits.unlock() }
        let (settings, processors) = state.withLock { ($0.settings, $0.processors) }
        let pipeline = try DeliveryPipeline(
            deviceFormat: format, settings: settings, processors: try connectionProcessors() + processors,
            budget: FrameBudget(limit: bufferBudget))
        state.withLock { state in
            state.pipeline = pipeline
            state.streaming = true
            state.lastSequence = nil
            state.lastAcceptedTime = nil
        }
    }

    override func sessionWillStartRunning() {
        state.withLock { state in
            state.statistics = Statistics()
            state.latencies = LatencyWindow()
        }
    }

    override func receive(_ frame: CapturedFrame, from connection: CaptureConnection) {
        guard connection.isEnabled else {
            // Not this output's frame: remember where the device is, so re-enabling is no gap.
            state.withLock { $0.lastSequence = frame.sequenceNumber }
            return
        }
        let wakeUp: WakeUp? = state.withLock { state in
            guard state.target.delegate != nil, let wakeUp = state.target.wakeUp, let pipeline = state.pipeline
            else { return nil }
            accept(frame, pipeline: pipeline, connection: connection, state: &state)
            guard !state.drainScheduled, !state.queue.isEmpty else { return nil }
            state.drainScheduled = true
            return wakeUp
        }
        wakeUp?.signal()
    }

    /// The drop decisions, under the lock. Nothing here converts or calls out.
    private func accept(
        _ frame: CapturedFrame, pipeline: DeliveryPipeline, connection: CaptureConnection, state: inout State
    ) {
        state.statistics.captured += 1
        if let last = state.lastSequence, frame.sequenceNumber > last &+ 1 {
            let lost = frame.sequenceNumber - last - 1
            state.statistics.captured += Int(lost)
            state.statistics.droppedDiscontinuity += Int(lost)
            enqueueDrop(
                DropEvent(
                    reason: .discontinuity, presentationTime: frame.presentationTime - frame.duration * Int64(lost),
                    duration: frame.duration, sequenceNumber: last + 1, count: Int(lost), connection: connection),
                state: &state)
        }
        state.lastSequence = frame.sequenceNumber

        if state.minFrameDuration.isValid, let last = state.lastAcceptedTime,
            frame.presentationTime - last < state.gateThreshold
        {
            state.statistics.rateGated += 1
            return
        }
        guard pipeline.budget.tryAcquire() else {
            state.statistics.droppedOutOfBuffers += 1
            enqueueDrop(DropEvent(frame, reason: .outOfBuffers, connection: connection), state: &state)
            return
        }
        state.lastAcceptedTime = frame.presentationTime
        let event = FrameEvent(frame: frame, pipeline: pipeline, connection: connection)
        if state.discardsLate, let waiting = state.waitingFrame, state.queue.contains(position: waiting),
            case .frame(let old) = state.queue[position: waiting]
        {
            // The waiting frame never reached the delegate: it is late, and gives its slot back.
            state.statistics.droppedLate += 1
            old.pipeline.budget.release()
            let previous = waiting - 1
            if state.queuedDrops >= Self.dropReportLimit, state.queue.contains(position: previous),
                case .drop(var report) = state.queue[position: previous], report.reason == .frameWasLate
            {
                // Too many reports waiting: fold this one into the report before it and let the
                // new frame take the waiting place, so the queue stops growing.
                report.count += 1
                state.queue[position: previous] = .drop(report)
                state.queue[position: waiting] = .frame(event)
                return
            }
            // Report it late in its own place.
            state.queue[position: waiting] = .drop(
                DropEvent(old.frame, reason: .frameWasLate, connection: old.connection))
            state.queuedDrops += 1
        }
        state.waitingFrame = state.queue.append(.frame(event))
    }

    /// Events waiting for the delivery queue (frames and drop reports), for tests.
    var queuedEventCount: Int { state.withLock { $0.queue.count } }

    private func enqueueDrop(_ drop: DropEvent, state: inout State) {
        if state.queuedDrops >= Self.dropReportLimit, case .drop(var last) = state.queue.last,
            last.reason == drop.reason
        {
            last.count += drop.count
            state.queue[position: state.queue.endPosition - 1] = .drop(last)
            return
        }
        state.queuedDrops += 1
        state.queue.append(.drop(drop))
    }

    /// Hands queued events to the delegate, on the delivery queue, until none are left.
    private func drain() {
        let host = HostClock()
        while true {
            let next: (DeliveryEvent, (any CaptureVideoDataOutputSampleBufferDelegate)?)? = state.withLock { state in
                guard let event = state.queue.popFirst() else {
                    state.drainScheduled = false
                    return nil
                }
                if case .drop = event { state.queuedDrops -= 1 }
                return (event, state.target.delegate)
            }
            guard let (event, delegate) = next else { return }
            switch event {
            case .drop(let drop):
                report(drop, to: delegate)
            case .frame(let event):
                deliver(event, delegate: delegate, host: host)
            }
        }
    }

    private func deliver(
        _ event: FrameEvent, delegate: (any CaptureVideoDataOutputSampleBufferDelegate)?, host: HostClock
    ) {
        let frame = event.frame
        switch event.pipeline.chain.run(frame) {
        case .image(let image, let attachments):
            let buffer = SampleBuffer(
                imageBuffer: image, presentationTimeStamp: frame.presentationTime, duration: frame.duration,
                sequenceNumber: frame.sequenceNumber, attachments: attachments, budget: event.pipeline.budget)
            let latency = host.now() - frame.hostArrivalTime
            state.withLock { state in
                state.statistics.delivered += 1
                state.latencies.record(latency)
            }
            delegate?.captureOutput(self, didOutput: buffer, from: event.connection)
        case .drop(let reason):
            event.pipeline.budget.release()
            state.withLock { state in
                switch reason {
                case .outOfBuffers: state.statistics.droppedOutOfBuffers += 1
                default: state.statistics.droppedByProcessor += 1
                }
            }
            report(DropEvent(frame, reason: reason, connection: event.connection), to: delegate)
        }
    }

    /// Tells the delegate of a drop with a pixel-less sample buffer.
    private func report(_ drop: DropEvent, to delegate: (any CaptureVideoDataOutputSampleBufferDelegate)?) {
        guard let delegate else { return }
        let buffer = SampleBuffer(
            imageBuffer: nil, presentationTimeStamp: drop.presentationTime, duration: drop.duration,
            sequenceNumber: drop.sequenceNumber, droppedFrameReason: drop.reason,
            attachments: [.droppedFrameCount: drop.count])
        delegate.captureOutput(self, didDrop: buffer, from: drop.connection)
    }

    override func connectionSettingsDidChange() throws(CaptureError) {
        try renegotiateChain()
    }

    override func streamDidStop() {
        state.withLock { $0.streaming = false }
        // Bounded: a delegate stuck forever must not hang stopRunning().
        waitUntilDelivered(timeout: 5)
    }

    /// Waits until everything queued so far has been handed to the delegate. Returns at once
    /// when called from the delivery queue itself (waiting there would deadlock).
    @discardableResult
    func waitUntilDelivered(timeout: Double) -> Bool {
        guard let queue = state.withLock({ $0.target.deliveryQueue }) else { return true }
        if DispatchQueue.getSpecific(key: Self.queueKey) == ObjectIdentifier(self) { return false }
        let done = DispatchSemaphore(value: 0)
        queue.async { done.signal() }
        return done.wait(timeout: .now() + timeout) == .success
    }
}

/// The negotiated path from device frames to delivered frames for one configuration: the
/// processor chain (with its conversions), or nothing for zero-copy delivery, and the budget.
final class DeliveryPipeline: Sendable {
    let deviceFormat: CaptureDevice.Format
    let chain: ProcessorChain
    let budget: FrameBudget

    init(
        deviceFormat: CaptureDevice.Format, settings: VideoSettings, processors: [NamedProcessor], budget: FrameBudget
    ) throws(CaptureError) {
        self.deviceFormat = deviceFormat
        self.budget = budget
        chain = try ProcessorChain(
            deviceFormat: FrameFormat(
                pixelFormat: deviceFormat.pixelFormat, width: deviceFormat.dimensions.width,
                height: deviceFormat.dimensions.height),
            requestedFormat: settings.pixelFormat, requestedSize: settings.size, processors: processors,
            budget: budget.limit)
    }

    var outputFormat: PixelFormat { chain.outputFormat.pixelFormat }
    var outputSize: CaptureDevice.Dimensions { chain.outputFormat.size }
}

enum DeliveryEvent {
    case frame(FrameEvent)
    case drop(DropEvent)
}

struct FrameEvent {
    let frame: CapturedFrame
    let pipeline: DeliveryPipeline
    let connection: CaptureConnection
}

struct DropEvent {
    var reason: DroppedFrameReason
    var presentationTime: MediaTime
    var duration: MediaTime
    var sequenceNumber: UInt64
    var count: Int
    var connection: CaptureConnection

    init(
        reason: DroppedFrameReason, presentationTime: MediaTime, duration: MediaTime, sequenceNumber: UInt64,
        count: Int, connection: CaptureConnection
    ) {
        self.reason = reason
        self.presentationTime = presentationTime
        self.duration = duration
        self.sequenceNumber = sequenceNumber
        self.count = count
        self.connection = connection
    }

    init(_ frame: CapturedFrame, reason: DroppedFrameReason, connection: CaptureConnection) {
        self.init(
            reason: reason, presentationTime: frame.presentationTime, duration: frame.duration,
            sequenceNumber: frame.sequenceNumber, count: 1, connection: connection)
    }
}
