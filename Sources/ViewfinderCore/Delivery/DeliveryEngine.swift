import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The ordered, budgeted, drop-reporting delivery every output composes: it decides on the
/// device's capture thread which samples go on (rate gate, late-frame and out-of-buffers policy,
/// discontinuities), queues them with their drop reports, and hands them one at a time, in order,
/// to the output's consumer on a private serial delivery queue. The consumer (a delegate call, an
/// encoder, a JPEG writer) runs inside the queue the caller chose (`setCallbackQueue(_:)`).
///
/// An output owns one engine and gives it three closures: `prepare`, which turns an accepted
/// sample into the `Product` the output hands over (converting only then, so a dropped sample
/// costs nothing), `consume`, which hands it over, and `reportDrop`, which tells the consumer of
/// drops. The engine keeps the counters
/// (``CaptureOutput/Statistics``): every sample that reaches it is delivered, dropped by reason
/// or rate-gated.
///
/// `Context` is whatever the output negotiated for a stream (for video: the processor chain);
/// each accepted sample keeps the context it was accepted under, so a context swapped between
/// samples never meets a sample of the old format.
///
/// An engine may also be given a *staging* step (``Staging``, e.g. decoding Motion-JPEG) that
/// runs before `prepare` on up to two lanes, so two consecutive samples stage on two cores at
/// once while hand-over keeps their order. The sample after the one being staged may start
/// staging too (on the other lane); it is then in delivery, no longer a waiting sample that a
/// newer one could replace as late — so staging ahead happens only while the sample before it is
/// still staging (a backlog of work, not a busy consumer), and at most two staged samples are
/// outstanding. Staging runs only for samples that will be handed over (drop decisions first).
///
/// Thread safety: every member may be used from any thread. The consumer closures run on the
/// delivery queue, never under the engine's lock, one at a time. Staging runs on the lanes'
/// serial queues, one sample at a time per lane.
// unchecked: state is in a Mutex; the handlers are set once.
public final class DeliveryEngine<Context: Sendable, Product>: @unchecked Sendable {
    /// What `prepare` made of a sample.
    public enum Preparation {
        /// Ready to hand over. With `holdsSlot`, the sample's budget slot now belongs to the
        /// product (a sample buffer gives it back when it goes); otherwise the engine gives it back
        /// once the product is consumed.
        case ready(Product, holdsSlot: Bool)
        /// Not to be delivered, for `reason`; the engine gives the slot back and counts it.
        case dropped(DroppedFrameReason)
    }

    /// A drop to tell the consumer of.
    public struct DropReport: Sendable {
        /// Why the samples were dropped.
        public var reason: DroppedFrameReason
        /// The (first) dropped sample's presentation time.
        public var presentationTime: MediaTime
        /// How long the dropped samples last.
        public var duration: MediaTime
        /// The (first) dropped sample's sequence number.
        public var sequenceNumber: UInt64
        /// How many samples the report stands for.
        public var count: Int
        /// For audio: the sample frames those samples held (lost ones as the device counted
        /// them); 0 for video.
        public var mediaSampleCount: Int
        /// The connection the samples came from.
        public var connection: CaptureConnection

        package init(_ sample: CapturedSample, reason: DroppedFrameReason, connection: CaptureConnection) {
            self.init(
                reason: reason, presentationTime: sample.presentationTime, duration: sample.duration,
                sequenceNumber: sample.sequenceNumber, count: 1, mediaSampleCount: sample.mediaSampleCount,
                connection: connection)
        }

        package init(
            reason: DroppedFrameReason, presentationTime: MediaTime, duration: MediaTime, sequenceNumber: UInt64,
            count: Int, mediaSampleCount: Int = 0, connection: CaptureConnection
        ) {
            self.reason = reason
            self.presentationTime = presentationTime
            self.duration = duration
            self.sequenceNumber = sequenceNumber
            self.count = count
            self.mediaSampleCount = mediaSampleCount
            self.connection = connection
        }
    }

    package typealias Prepare =
        @Sendable (
            _ sample: CapturedSample, _ context: Context, _ budget: FrameBudget, _ connection: CaptureConnection
        ) -> Preparation
    package typealias Consume = @Sendable (_ product: Product, _ connection: CaptureConnection) -> Void
    /// Given each product once its consumer returned and the engine let go of its own
    /// references: may reuse it if it holds the last one. Leaves `nil`.
    package typealias Recycle = @Sendable (_ product: inout Product?) -> Void

    /// What staging made of a sample.
    public enum StageOutcome: Sendable {
        /// The sample to prepare instead (e.g. with its frame decoded).
        case staged(CapturedSample)
        /// Not to be delivered, for `reason`.
        case dropped(DroppedFrameReason)
    }

    /// A step that runs before `prepare`, on lanes of its own (see the type's summary).
    public struct Staging: Sendable {
        /// How many lanes samples of a context use: 2 to stage on two lanes; fewer means the
        /// context's samples are not staged (`prepare` does all the work).
        public var lanes: @Sendable (_ context: Context) -> Int
        /// Stages `sample` on lane `lane` (0 or 1), on that lane's serial queue.
        public var run: @Sendable (_ sample: CapturedSample, _ context: Context, _ lane: Int) -> StageOutcome

        /// Staging on `lanes(context)` lanes by `run`.
        public init(
            lanes: @escaping @Sendable (_ context: Context) -> Int,
            run: @escaping @Sendable (_ sample: CapturedSample, _ context: Context, _ lane: Int) -> StageOutcome
        ) {
            self.lanes = lanes
            self.run = run
        }
    }

    /// The staging of one sample: its lane, and the outcome once the lane is done. Kept for reuse
    /// once the sample is handed over (``State/spareTickets``), so staging allocates nothing per
    /// sample: each use signals `done` once and waits for it once.
    private final class StageTicket: @unchecked Sendable {
        // unchecked: `lane` is set under the engine's lock before the ticket is handed to a lane;
        // `outcome` is written before `done` is signalled and read (and cleared) after waiting.
        var lane: Int
        var outcome: StageOutcome?
        let finished = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        init(lane: Int) { self.lane = lane }
    }

    /// The most samples staged (or staging) and not yet handed over.
    private static var stagingLimit: Int { 2 }
    package typealias ReportDrop = @Sendable (DropReport) -> Void

    /// Drop reports queued beyond this many are merged into the last one (its count grows), so a
    /// stalled consumer cannot make the queue grow without bound.
    package static var dropReportLimit: Int { 256 }

    private struct Accepted {
        let sample: CapturedSample
        let context: Context
        let budget: FrameBudget
        let connection: CaptureConnection
        /// Set once staging of this sample has started.
        var ticket: StageTicket?
    }

    private enum Event {
        case sample(Accepted)
        case drop(DropReport)
    }

    private struct State {
        var callbackQueue: DispatchQueue?
        /// The context of the current stream, kept after it ends (for what it negotiated).
        var context: Context?
        var streaming = false
        var budget: FrameBudget?
        var discardsLate = true
        var minFrameDuration = MediaTime.invalid {
            didSet { gateThreshold = Self.gateThreshold(for: minFrameDuration) }
        }
        /// `minFrameDuration` less the timestamp-jitter allowance.
        var gateThreshold = MediaTime.invalid
        var queue = RingQueue<Event>(capacity: 32)
        var queuedDrops = 0
        var waitingSample: Int?
        var drainScheduled = false
        var lastSequence: UInt64?
        /// What is added to the device's sequence numbers after its counter stepped back, so
        /// delivered numbers keep increasing.
        var sequenceOffset: UInt64 = 0
        var lastAcceptedTime: MediaTime?
        /// The (adjusted) time of the last sample seen, and what is added to the device's times
        /// after it stepped back, so delivered times keep increasing.
        var lastTime: MediaTime?
        var timeOffset = MediaTime.zero
        var statistics = CaptureOutput.Statistics()
        var latencies = LatencyWindow()
        /// Staging: which lanes run a sample now, how many staged samples are not handed over
        /// yet, and whether the sample being handed over is still staging.
        var laneBusy = [false, false]
        var stagedOutstanding = 0
        var headStaging = false
        /// The job each lane runs next (set with its lane busy, taken by the lane's handler).
        var laneJobs: [StageJob?] = [nil, nil]
        /// Tickets of samples handed over, for reuse (storage reserved up front).
        var spareTickets: [StageTicket] = {
            var spares: [StageTicket] = []
            spares.reserveCapacity(4)
            return spares
        }()

        /// A ticket for a sample staging on `lane`: a spare one when kept.
        mutating func makeTicket(lane: Int) -> StageTicket {
            guard let ticket = spareTickets.popLast() else { return StageTicket(lane: lane) }
            ticket.lane = lane
            ticket.finished.store(false, ordering: .relaxed)
            return ticket
        }

        static func gateThreshold(for duration: MediaTime) -> MediaTime {
            guard duration.isNumeric else { return .invalid }
            let allowance = min(duration.nanoseconds / 32, 2_000_000)
            return duration - MediaTime(value: allowance, timescale: 1_000_000_000)
        }
    }

    private let state = Mutex(State())
    private let deliveryQueue: DispatchQueue
    /// Wakes the delivery queue; coalesces wake-ups and, unlike `async`, allocates nothing per
    /// sample.
    private let wakeUp: any DispatchSourceUserDataAdd
    /// The thread running a consumer callback now (0 when none), so waiting for delivery from
    /// inside a callback returns instead of deadlocking.
    private let deliveringThread = Atomic<UInt>(0)
    private let prepare: Prepare
    private let consume: Consume
    private let reportDrop: ReportDrop
    private let recycle: Recycle?
    /// The work item the delivery queue runs inside the callback queue for every event (made
    /// once, so a hand-off allocates nothing), and the event it runs: both touched only by the
    /// delivery queue and, during its `sync`, by the callback queue.
    private var runner: DispatchWorkItem!
    private var job: Job?
    /// The product handed over by the last job, kept (on the delivery queue) until the job is
    /// over, then given to `recycle`.
    private var handedProduct: Product?
    private let staging: Staging?
    /// One serial queue per staging lane, and the source that wakes each (like ``wakeUp``, it
    /// allocates nothing per sample, unlike `async` with a closure).
    private let lanes: [DispatchQueue]
    private let laneSignals: [any DispatchSourceUserDataAdd]

    /// An engine whose queue is labelled after `label`, staging samples with `staging` (if
    /// given), preparing them with `prepare`, handing them to `consume` and drops to
    /// `reportDrop`.
    package init(
        label: String, staging: Staging? = nil, prepare: @escaping Prepare, consume: @escaping Consume,
        reportDrop: @escaping ReportDrop, recycle: Recycle? = nil
    ) {
        self.prepare = prepare
        self.consume = consume
        self.reportDrop = reportDrop
        self.recycle = recycle
        self.staging = staging
        lanes =
            staging == nil
            ? [] : (0..<Self.stagingLimit).map { DispatchQueue(label: "viewfinder.\(label).stage\($0)") }
        laneSignals = lanes.map { DispatchSource.makeUserDataAddSource(queue: $0) }
        deliveryQueue = DispatchQueue(label: "viewfinder.\(label).delivery")
        wakeUp = DispatchSource.makeUserDataAddSource(queue: deliveryQueue)
        runner = DispatchWorkItem { [unowned self] in runJob() }
        wakeUp.setEventHandler { [weak self] in self?.drain() }
        wakeUp.activate()
        for (lane, signal) in laneSignals.enumerated() {
            signal.setEventHandler { [weak self] in self?.runLane(lane) }
            signal.activate()
        }
    }

    deinit {
        wakeUp.cancel()
        for signal in laneSignals { signal.cancel() }
    }

    // MARK: Configuration

    /// Where consumer callbacks run; `nil` stops accepting samples (those queued are still
    /// handed over, on the new queue if one is set later). One serial delivery queue serves every
    /// callback queue the output ever has, so changing it while samples flow never runs two
    /// callbacks at once or out of order.
    package func setCallbackQueue(_ queue: DispatchQueue?) {
        let pending = state.withLock { state -> Bool in
            state.callbackQueue = queue
            guard queue != nil, !state.queue.isEmpty, !state.drainScheduled else { return false }
            state.drainScheduled = true
            return true
        }
        if pending { wakeUp.add(data: 1) }
    }

    /// The queue consumer callbacks run on.
    package var callbackQueue: DispatchQueue? { state.withLock { $0.callbackQueue } }

    /// Whether to replace a waiting sample by a newer one (``DroppedFrameReason/frameWasLate``)
    /// rather than queueing up to the budget.
    public var discardsLateSamples: Bool {
        get { state.withLock { $0.discardsLate } }
        set { state.withLock { $0.discardsLate = newValue } }
    }

    /// The shortest time between accepted samples; `.invalid` for no limit. Applies from the next
    /// sample.
    public var minFrameDuration: MediaTime {
        get { state.withLock { $0.minFrameDuration } }
        set { state.withLock { $0.minFrameDuration = newValue } }
    }

    // MARK: Streams

    /// A stream starts with `context`: a fresh budget of `budgetLimit` slots, no sequence history.
    package func beginStream(context: Context, budgetLimit: Int) {
        state.withLock { state in
            state.context = context
            state.streaming = true
            state.budget = FrameBudget(limit: budgetLimit)
            state.lastSequence = nil
            state.lastAcceptedTime = nil
            state.lastTime = nil
            state.timeOffset = .zero
            state.sequenceOffset = 0
        }
    }

    /// Swaps the context between samples of a running stream (the budget stays).
    package func replaceContext(_ context: Context) {
        state.withLock { $0.context = context }
    }

    /// The context of the current (or last) stream.
    package var context: Context? { state.withLock { $0.context } }

    /// The budget of the current (or last) stream.
    package var budget: FrameBudget? { state.withLock { $0.budget } }

    /// Whether a stream is set up (between ``beginStream(context:budgetLimit:)`` and
    /// ``endStream(waitingUpTo:)``).
    package var isStreaming: Bool { state.withLock { $0.streaming } }

    /// The stream stopped: accepts nothing more, then waits (at most `timeout` seconds) until what
    /// is queued has been handed over, unless called from inside a consumer callback.
    package func endStream(waitingUpTo timeout: Double) {
        state.withLock { $0.streaming = false }
        waitUntilDelivered(timeout: timeout)
    }

    /// Zeroes the counters (a session starting anew).
    package func resetStatistics() {
        state.withLock { state in
            state.statistics = CaptureOutput.Statistics()
            state.latencies = LatencyWindow()
        }
    }

    /// Counters since the last reset.
    package var statistics: CaptureOutput.Statistics { state.withLock { $0.statistics } }

    /// Capture-to-consumer latency over the last 1,024 delivered samples.
    package var latency: LatencyStatistics { state.withLock { $0.latencies.summary() } }

    /// Events (samples and drop reports) waiting for the delivery queue.
    package var queuedEventCount: Int { state.withLock { $0.queue.count } }

    // MARK: Capture thread

    /// A sample from `connection`, on the device's capture thread: decides under the lock, queues,
    /// wakes the delivery queue. Never blocks, converts or calls out.
    package func receive(_ sample: CapturedSample, from connection: CaptureConnection) {
        var jobs: LaneSet = []
        // The pixels of a waiting sample this one replaced as late: recycled outside the lock.
        var replaced: PixelBuffer?
        let wake = state.withLock { state -> Bool in
            guard state.streaming, connection.passesSamples, state.callbackQueue != nil, let context = state.context,
                let budget = state.budget
            else {
                // Not delivering now: remember where the device is, so resuming is no gap.
                state.lastSequence = sample.sequenceNumber &+ state.sequenceOffset
                return false
            }
            Self.accept(
                sample, context: context, budget: budget, connection: connection, state: &state, replaced: &replaced)
            jobs = stageAhead(&state)
            guard !state.drainScheduled, !state.queue.isEmpty else { return false }
            state.drainScheduled = true
            return true
        }
        start(jobs)
        if wake { wakeUp.add(data: 1) }
        PixelBuffer.recycle(&replaced)
    }

    /// A sample the output does not want (a photo output between requests): not counted, never
    /// queued, but remembered, so the next sample it does pass on is no sequence gap.
    package func skip(_ sample: CapturedSample) {
        state.withLock { $0.lastSequence = sample.sequenceNumber }
    }

    // MARK: Staging

    private typealias StageJob = (accepted: Accepted, ticket: StageTicket)

    /// Lanes given a job to run (a set, so starting them allocates nothing).
    private struct LaneSet: OptionSet {
        let rawValue: UInt8
        static func lane(_ lane: Int) -> LaneSet { LaneSet(rawValue: 1 << UInt8(lane)) }
    }

    /// Gives `accepted` (at queue position `position`, or the head being handed over when `nil`)
    /// to a free lane: its ticket, the lane busy, the job in the lane's slot. Under the lock.
    private func assign(_ accepted: inout Accepted, lane: Int, state: inout State) -> LaneSet {
        let ticket = state.makeTicket(lane: lane)
        accepted.ticket = ticket
        state.laneBusy[lane] = true
        state.stagedOutstanding += 1
        state.laneJobs[lane] = (accepted, ticket)
        return .lane(lane)
    }

    /// Starts staging queued samples, oldest first, while the sample being handed over is still
    /// staging, a lane is free and fewer than two staged samples are outstanding. A sample that
    /// starts staging stops being the waiting (replaceable) sample. Under the lock; returns the
    /// lanes to wake.
    private func stageAhead(_ state: inout State) -> LaneSet {
        guard let staging, state.headStaging else { return [] }
        var jobs: LaneSet = []
        var position = state.queue.startPosition
        while position < state.queue.endPosition, state.stagedOutstanding < Self.stagingLimit,
            let lane = state.laneBusy.firstIndex(of: false)
        {
            defer { position += 1 }
            guard case .sample(var accepted) = state.queue[position: position], accepted.ticket == nil else { continue }
            guard staging.lanes(accepted.context) >= Self.stagingLimit else { break }
            jobs.formUnion(assign(&accepted, lane: lane, state: &state))
            state.queue[position: position] = .sample(accepted)
            if state.waitingSample == position { state.waitingSample = nil }
        }
        return jobs
    }

    /// Wakes the lanes given jobs (outside the lock).
    private func start(_ jobs: LaneSet) {
        for lane in laneSignals.indices where jobs.contains(.lane(lane)) { laneSignals[lane].add(data: 1) }
    }

    /// Runs the job in `lane`'s slot, on that lane's queue. The lane is marked free before the
    /// ticket is signalled, so the sample handed over next always finds one; the job's sample is
    /// let go of before, so the delivery queue holds the last reference to its images and can
    /// recycle them.
    private func runLane(_ lane: Int) {
        guard let staging else { return }
        let ticket: StageTicket
        do {
            // The job's scope: its sample is let go of at the end of it.
            let taken = state.withLock { state -> StageJob? in
                defer { state.laneJobs[lane] = nil }
                return state.laneJobs[lane]
            }
            guard let job = taken else { return }
            ticket = job.ticket
            ticket.outcome = staging.run(job.accepted.sample, job.accepted.context, lane)
        }
        ticket.finished.store(true, ordering: .releasing)
        let more = state.withLock { state -> LaneSet in
            state.laneBusy[lane] = false
            return stageAhead(&state)
        }
        ticket.done.signal()
        start(more)
    }

    /// The drop decisions, under the lock.
    private static func accept(
        _ incoming: CapturedSample, context: Context, budget: FrameBudget, connection: CaptureConnection,
        state: inout State, replaced: inout PixelBuffer?
    ) {
        state.statistics.captured += 1
        var sample = incoming
        sample.sequenceNumber &+= state.sequenceOffset
        guard keepTimeIncreasing(&sample, state: &state) else {
            // A device clock that stepped back, or a sample without a time: never passed on as
            // time going backwards. Reported, and later samples continue from the last time.
            state.statistics.droppedDiscontinuity += 1
            state.lastSequence = sample.sequenceNumber
            enqueueDrop(DropReport(sample, reason: .discontinuity, connection: connection), state: &state)
            return
        }
        if let last = state.lastSequence, sample.sequenceNumber <= last {
            // The device's counter repeated or stepped back (reset, or misbehaving): like time
            // stepping back, reported and dropped; later samples are numbered on from the last.
            state.sequenceOffset &+= (last &+ 1) &- sample.sequenceNumber
            sample.sequenceNumber = last &+ 1
            state.statistics.droppedDiscontinuity += 1
            state.lastSequence = sample.sequenceNumber
            enqueueDrop(DropReport(sample, reason: .discontinuity, connection: connection), state: &state)
            return
        }
        // Samples lost since the last one, or (first sample of a stream) skipped before it.
        let lost: UInt64
        if let last = state.lastSequence {
            lost = sample.sequenceNumber &- last &- 1
        } else if let first = sample.streamStartSequenceNumber, first < sample.sequenceNumber {
            lost = sample.sequenceNumber - first
        } else {
            lost = 0
        }
        if lost > 0 {
            let count = Int(clamping: lost)
            let gap = sample.gap(sequencesLost: lost)
            state.statistics.captured += count
            state.statistics.droppedDiscontinuity += count
            state.statistics.audioSamplesLost += gap.mediaSamples
            enqueueDrop(
                DropReport(
                    reason: .discontinuity, presentationTime: gap.presentationTime, duration: gap.duration,
                    sequenceNumber: sample.sequenceNumber - lost, count: count, mediaSampleCount: gap.mediaSamples,
                    connection: connection),
                state: &state)
        }
        state.lastSequence = sample.sequenceNumber

        if state.gateThreshold.isNumeric, let last = state.lastAcceptedTime,
            sample.presentationTime - last < state.gateThreshold
        {
            state.statistics.rateGated += 1
            return
        }
        guard budget.tryAcquire() else {
            state.statistics.droppedOutOfBuffers += 1
            enqueueDrop(DropReport(sample, reason: .outOfBuffers, connection: connection), state: &state)
            return
        }
        state.lastAcceptedTime = sample.presentationTime
        let accepted = Accepted(sample: sample, context: context, budget: budget, connection: connection)
        if state.discardsLate, let waiting = state.waitingSample, state.queue.contains(position: waiting),
            case .sample(let old) = state.queue[position: waiting]
        {
            // The waiting sample never reached the consumer: it is late, and gives its slot back.
            state.statistics.droppedLate += 1
            old.budget.release()
            replaced = old.sample.image
            let previous = waiting - 1
            if state.queuedDrops >= dropReportLimit, state.queue.contains(position: previous),
                case .drop(var report) = state.queue[position: previous], report.reason == .frameWasLate
            {
                // Too many reports waiting: fold this one into the report before it and let the
                // new sample take the waiting place, so the queue stops growing.
                report.count += 1
                report.mediaSampleCount += old.sample.mediaSampleCount
                state.queue[position: previous] = .drop(report)
                state.queue[position: waiting] = .sample(accepted)
                return
            }
            state.queue[position: waiting] = .drop(
                DropReport(old.sample, reason: .frameWasLate, connection: old.connection))
            state.queuedDrops += 1
        }
        state.waitingSample = state.queue.append(.sample(accepted))
    }

    /// Shifts `sample` onto the engine's time line; `false` (the sample is to be dropped) when
    /// its time is not numeric or not after the last sample's: the offset then moves so the next
    /// samples continue one duration after the last.
    private static func keepTimeIncreasing(_ sample: inout CapturedSample, state: inout State) -> Bool {
        let raw = sample.presentationTime
        guard raw.isNumeric else { return false }
        let adjusted = raw + state.timeOffset
        guard let last = state.lastTime, adjusted <= last else {
            sample.presentationTime = adjusted
            state.lastTime = adjusted
            return true
        }
        let step =
            sample.duration.isNumeric && sample.duration > .zero
            ? sample.duration : MediaTime(value: 1, timescale: 1_000_000_000)
        let slot = last + step
        state.timeOffset = slot - raw
        state.lastTime = slot
        sample.presentationTime = slot
        return false
    }

    private static func enqueueDrop(_ drop: DropReport, state: inout State) {
        if state.queuedDrops >= dropReportLimit, case .drop(var last) = state.queue.last, last.reason == drop.reason {
            last.count += drop.count
            last.mediaSampleCount += drop.mediaSampleCount
            state.queue[position: state.queue.endPosition - 1] = .drop(last)
            return
        }
        state.queuedDrops += 1
        state.queue.append(.drop(drop))
    }

    // MARK: Delivery queue

    /// What the delivery queue hands into the callback queue next: set right before the hop,
    /// taken inside it.
    private enum Job {
        /// A drop to report.
        case drop(DropReport)
        /// An accepted sample to prepare and hand over: `sample` is the accepted one, or what
        /// staging made of it.
        case sample(Accepted, CapturedSample)
        /// An accepted sample that staging dropped, for `reason`.
        case stagingDropped(Accepted, DroppedFrameReason)
    }

    /// Hands queued events over, on the delivery queue, until none are left (or no callback queue
    /// is set: they wait for one).
    private func drain() {
        while true {
            // The device's pixels of the sample handed over, held across the hop so that they can
            // be recycled once every other reference is gone (the product's, the job's).
            var image: PixelBuffer?
            var decoded: DecodedFrame?
            guard deliverNext(keeping: &image, decoded: &decoded) else { return }
            if let recycle { recycle(&handedProduct) } else { handedProduct = nil }
            // The shared decode first: it may hold the last reference to a decoded image.
            DeviceFrameDecoder.recycle(&decoded)
            PixelBuffer.recycle(&image)
        }
    }

    /// Takes the next event and runs it inside the callback queue; `false` when none is waiting.
    private func deliverNext(keeping image: inout PixelBuffer?, decoded: inout DecodedFrame?) -> Bool {
        let next: (Event, DispatchQueue, LaneSet)? = state.withLock { state in
            guard let queue = state.callbackQueue, var event = state.queue.popFirst() else {
                state.drainScheduled = false
                return nil
            }
            var jobs: LaneSet = []
            switch event {
            case .drop:
                state.queuedDrops -= 1
            case .sample(var accepted):
                if let staging, accepted.ticket == nil, staging.lanes(accepted.context) >= Self.stagingLimit {
                    // Lanes are free here: every earlier sample was handed over.
                    jobs = assign(&accepted, lane: state.laneBusy.firstIndex(of: false) ?? 0, state: &state)
                    event = .sample(accepted)
                }
                if let ticket = accepted.ticket {
                    state.headStaging = !ticket.finished.load(ordering: .acquiring)
                    jobs.formUnion(stageAhead(&state))
                }
            }
            return (event, queue, jobs)
        }
        guard let (event, queue, jobs) = next else { return false }
        start(jobs)
        switch event {
        case .drop(let drop):
            job = .drop(drop)
        case .sample(let accepted):
            image = accepted.sample.image
            decoded = accepted.sample.decodedFrame
            job = stagedJob(for: accepted)
        }
        // A work item made once: `sync` with it allocates nothing, unlike a closure.
        queue.sync(execute: runner)
        return true
    }

    /// The job for an accepted sample: waits for its staging (if it was staged) and takes what
    /// staging made of it.
    private func stagedJob(for accepted: Accepted) -> Job {
        guard let ticket = accepted.ticket else { return .sample(accepted, accepted.sample) }
        ticket.done.wait()
        var outcome: StageOutcome?
        swap(&outcome, &ticket.outcome)
        state.withLock { state in
            state.headStaging = false
            state.stagedOutstanding -= 1
            // The lane signalled and is done with the ticket: it can stage another sample.
            if state.spareTickets.count < state.spareTickets.capacity { state.spareTickets.append(ticket) }
        }
        switch outcome {
        case .staged(let staged)?: return .sample(accepted, staged)
        case .dropped(let reason)?: return .stagingDropped(accepted, reason)
        case nil: return .stagingDropped(accepted, .droppedByProcessor("staging"))
        }
    }

    /// Runs the pending ``job`` inside the callback queue (the body of ``runner``), marking this
    /// thread as the one delivering.
    private func runJob() {
        deliveringThread.store(Self.currentThread, ordering: .relaxed)
        let outer = pthread_getspecific(deliveringKey)
        pthread_setspecific(deliveringKey, UnsafeRawPointer(bitPattern: 1))
        defer {
            pthread_setspecific(deliveringKey, outer)
            deliveringThread.store(0, ordering: .relaxed)
        }
        var pending: Job?
        swap(&pending, &job)
        switch pending {
        case .drop(let drop)?:
            reportDrop(drop)
        case .stagingDropped(let accepted, let reason)?:
            countDrop(accepted, reason: reason)
        case .sample(let accepted, let sample)?:
            switch prepare(sample, accepted.context, accepted.budget, accepted.connection) {
            case .ready(let product, let holdsSlot):
                let latency = HostClock().now() - sample.hostArrivalTime
                state.withLock { state in
                    state.statistics.delivered += 1
                    state.latencies.record(latency)
                }
                handedProduct = product
                consume(product, accepted.connection)
                if !holdsSlot { accepted.budget.release() }
            case .dropped(let reason):
                countDrop(accepted, reason: reason)
            }
        case nil:
            break
        }
    }

    /// Gives the slot of a sample not handed over back, counts it and reports it.
    private func countDrop(_ accepted: Accepted, reason: DroppedFrameReason) {
        accepted.budget.release()
        state.withLock { state in
            switch reason {
            case .outOfBuffers: state.statistics.droppedOutOfBuffers += 1
            case .frameWasLate: state.statistics.droppedLate += 1
            case .discontinuity: state.statistics.droppedDiscontinuity += 1
            case .droppedByProcessor: state.statistics.droppedByProcessor += 1
            }
        }
        reportDrop(DropReport(accepted.sample, reason: reason, connection: accepted.connection))
    }

    private static var currentThread: UInt { UInt(pthread_self()) }

    /// Waits until everything queued so far has been handed over. Returns `false` at once when
    /// called from inside a consumer callback (waiting there would deadlock), or after `timeout`.
    @discardableResult
    package func waitUntilDelivered(timeout: Double) -> Bool {
        if deliveringThread.load(ordering: .relaxed) == Self.currentThread { return false }
        let done = DispatchSemaphore(value: 0)
        deliveryQueue.async { done.signal() }
        return done.wait(timeout: .now() + timeout) == .success
    }
}

/// Marks threads inside a consumer callback of any engine.
private let deliveringKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

/// Whether the calling thread is inside a consumer callback (a delegate) of some output: such a
/// thread must not block on work that waits for deliveries to finish.
package var isInsideDeliveryCallback: Bool { pthread_getspecific(deliveringKey) != nil }
