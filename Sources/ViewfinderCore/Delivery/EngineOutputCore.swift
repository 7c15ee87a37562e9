import Dispatch
import Foundation
import Synchronization

/// An output's job, without its plumbing: what it asks of the device, the context it builds for a
/// stream, how it turns an accepted sample into what it hands over, and how it hands that (and
/// drop reports) to its delegate. ``EngineOutputCore`` does everything else — the engine, the
/// delegate and its queue, install / receive / restart / stop / reset, settings changes — the same
/// way for every output built on it.
///
/// Every type is the output's own: the settings snapshot read for a negotiation comes back to
/// ``makeContext(format:frameDuration:settings:)`` as `Settings`, and the engine keeps `Context`;
/// nothing is type-erased, so no sample can vanish in a failed cast.
public protocol OutputBody: Sendable {
    /// What the output is set to, read once per negotiation.
    associatedtype Settings: Sendable
    /// What one stream negotiated (for video: the processor chain).
    associatedtype Context: Sendable
    /// What `prepare` hands to `consume` (a sample buffer, an encoded frame).
    associatedtype Product
    /// The delegate the output calls (an existential of its delegate protocol); `Void` (the
    /// default) for an output that tells no one (it finishes each sample in `prepare`).
    associatedtype Delegate = Void

    /// Names the output's queues (`viewfinder.<label>.delivery`).
    var label: String { get }
    /// The media the output takes; the session connects it to the first input port of each.
    var acceptedMediaTypes: [MediaType] { get }
    /// The settings a new output starts with.
    var initialSettings: Settings { get }
    /// Whether a newer sample replaces a waiting one (video) rather than queueing (audio).
    var discardsLateSamplesByDefault: Bool { get }
    /// Staging lanes for samples that need them (Motion-JPEG decoding), or `nil`.
    var staging: DeliveryEngine<Context, Product>.Staging? { get }

    /// The settings as read for one negotiation: `settings` with whatever the output's
    /// connections add (a connection's rotation and mirroring, say). By default `settings`.
    func resolve(_ settings: Settings, for output: CaptureOutput) -> Settings

    /// What to ask of the device for `settings`: the negotiation fields of an
    /// ``OutputRequest`` (the core fills in its minimum frame duration, the engine's rate gate,
    /// and its `prepare`).
    func request(for settings: Settings) -> OutputRequest

    /// The context for a stream of `format` frames `frameDuration` apart, as `settings` ask;
    /// throws the reason it cannot run. Must not change the output.
    func makeContext(
        format: CaptureDevice.Format, frameDuration: MediaTime, settings: Settings
    ) throws(CaptureError) -> Context

    /// An accepted sample made ready to hand over, on the delivery queue (convert here, so a
    /// dropped sample costs nothing).
    func prepare(
        _ sample: CapturedSample, context: Context, budget: FrameBudget, connection: CaptureConnection
    ) -> DeliveryEngine<Context, Product>.Preparation

    /// Hands `product` to `delegate`, on the delegate's queue.
    func consume(
        _ product: Product, from connection: CaptureConnection, output: CaptureOutput, delegate: Delegate)

    /// Tells `delegate` of a drop, on the delegate's queue.
    func reportDrop(_ drop: DeliveryEngine<Context, Product>.DropReport, output: CaptureOutput, delegate: Delegate)

    /// Given each product once it was consumed and the engine let go of it; may reuse it if it
    /// holds the last reference. Leaves `nil`.
    func recycle(_ product: inout Product?)

    /// Whether the engine takes `sample` at all, on the capture thread (must not block). A sample
    /// it does not take is skipped: not counted, its sequence number kept so no gap is reported
    /// (a photo output takes only the frames requests wait for). By default every sample.
    func admits(_ sample: CapturedSample, from connection: CaptureConnection) -> Bool

    /// A stream with `context` was installed (new, or replacing the running one).
    func streamDidBegin(_ context: Context)

    /// The stream carrying `mediaType` stopped and everything it queued was handed over.
    func streamDidEnd(mediaType: MediaType, output: CaptureOutput)

    /// The session stopped running (for `failure`, or `nil` when asked to), after every stream.
    func sessionDidStopRunning(failure: CaptureError?, output: CaptureOutput)

    /// The session lost `lostDevice` mid-run with `error` (whether it fed this output or not).
    func sessionWasInterrupted(lostDevice: CaptureDevice, error: CaptureError, output: CaptureOutput)
}

extension OutputBody {
    /// By default `settings` as they are.
    public func resolve(_ settings: Settings, for output: CaptureOutput) -> Settings { settings }
    /// Video-like by default: a newer sample replaces a waiting one.
    public var discardsLateSamplesByDefault: Bool { true }
    /// No staging by default.
    public var staging: DeliveryEngine<Context, Product>.Staging? { nil }
    /// Lets go of the product by default.
    public func recycle(_ product: inout Product?) { product = nil }
    /// Every sample by default.
    public func admits(_ sample: CapturedSample, from connection: CaptureConnection) -> Bool { true }
    /// Nothing by default.
    public func streamDidBegin(_ context: Context) {}
    /// Nothing by default.
    public func streamDidEnd(mediaType: MediaType, output: CaptureOutput) {}
    /// Nothing by default.
    public func sessionDidStopRunning(failure: CaptureError?, output: CaptureOutput) {}
    /// Nothing by default.
    public func sessionWasInterrupted(lostDevice: CaptureDevice, error: CaptureError, output: CaptureOutput) {}
}

extension OutputBody where Settings == Void {
    /// A body with nothing to set starts with nothing.
    public var initialSettings: Void { () }
    /// A body with nothing to set asks nothing of the device: it takes what the other outputs'
    /// requests negotiate.
    public func request(for settings: Void) -> OutputRequest {
        var request = OutputRequest()
        request.sharesDecode = false
        return request
    }
}

extension OutputBody where Product == Void {
    /// A body that finishes each sample in `prepare` (it writes it to a file, or publishes it)
    /// hands nothing over.
    public func consume(_ product: Void, from connection: CaptureConnection, output: CaptureOutput, delegate: Delegate)
    {}

    /// A body that finishes each sample in `prepare` has no one to tell of drops: they are
    /// counted in the output's ``CaptureOutput/statistics``.
    public func reportDrop(_ drop: DeliveryEngine<Context, Void>.DropReport, output: CaptureOutput, delegate: Delegate)
    {
    }
}

/// The plumbing every engine-backed output shares, written once: it owns the output's
/// ``DeliveryEngine``, its settings (with one ``applyChange(_:)`` for every setter), its delegate
/// and callback queue, and answers the session's hooks (the request, sample
/// receipt, stream stop, statistics reset). An output makes one in its `init` and hands it to
/// ``CaptureOutput/adopt(_:)``.
///
/// Thread safety: every member may be used from any thread; the body's closures run on the
/// engine's delivery queue inside the delegate's queue, one at a time.
// unchecked: mutable state is in Mutexes; `edits` serialises setters; the owner is set once.
public final class EngineOutputCore<Body: OutputBody>: OutputDriver, @unchecked Sendable {
    /// The output's job.
    public let body: Body
    /// The most samples in flight (queued, being prepared or held as products).
    public let budgetLimit: Int
    /// The engine the core runs.
    public private(set) var engine: DeliveryEngine<Body.Context, Body.Product>!
    private let settings: Mutex<Body.Settings>
    private let delegateSlot = Mutex<DelegateSlot?>(nil)
    /// Serialises setters with each other: each renegotiates through the session, which calls
    /// the output's code, so they cannot run under `settings`.
    private let edits = NSLock()
    private weak var owner: CaptureOutput?
    /// Watches for an output that delivers nothing while every frame drops for one cause.
    private let stall = Mutex(DeliveryStallWatch())

    /// Reads the delegate: a closure holding it weakly, made where its concrete type is known.
    // unchecked: the closure is made once and only reads a weak reference.
    private final class DelegateSlot: @unchecked Sendable {
        let read: () -> Body.Delegate?
        init(_ read: @escaping () -> Body.Delegate?) { self.read = read }
    }

    /// A core for `body` with `budgetLimit` samples in flight at most; `label` names its queues
    /// (the body's label by default).
    public convenience init(_ body: Body, budgetLimit: Int, label: String? = nil) {
        self.init(body, budgetLimit: budgetLimit, label: label, deliveringOn: nil)
    }

    /// A core for `body` whose deliveries (each `prepare`) run on `queue` with no delegate: for a
    /// body that finishes each sample in `prepare` (a `Void` product: it writes the sample to a
    /// file, or publishes it) and so has no one to hand it to. ``setDelegate(_:queue:)`` replaces
    /// the queue.
    public init(_ body: Body, budgetLimit: Int, label: String? = nil, deliveringOn queue: DispatchQueue?) {
        self.body = body
        self.budgetLimit = max(1, budgetLimit)
        settings = Mutex(body.initialSettings)
        engine = DeliveryEngine(
            label: label ?? body.label, staging: body.staging,
            prepare: { sample, context, budget, connection in
                body.prepare(sample, context: context, budget: budget, connection: connection)
            },
            consume: { [weak self] product, connection in
                guard let self else { return }
                self.stall.withLock { $0.delivered() }
                guard let output = self.owner, let delegate = self.delegate else { return }
                self.body.consume(product, from: connection, output: output, delegate: delegate)
            },
            reportDrop: { [weak self] drop in
                guard let self else { return }
                self.watchForStall(drop)
                guard let output = self.owner, let delegate = self.delegate else { return }
                self.body.reportDrop(drop, output: output, delegate: delegate)
            },
            recycle: { product in body.recycle(&product) })
        engine.discardsLateSamples = body.discardsLateSamplesByDefault
        if let queue { engine.setCallbackQueue(queue) }
    }

    /// Called once by ``CaptureOutput/adopt(_:)``.
    package func attach(to output: CaptureOutput) { owner = output }

    // MARK: Delegate

    /// Sets the delegate (read through `read`, which holds it weakly) and the queue it is called
    /// on; `nil` for both stops delivery. A delegate without a queue gets a private serial queue.
    public func setDelegate(_ read: (() -> Body.Delegate?)?, queue: DispatchQueue?) {
        let callbackQueue = read == nil ? nil : queue ?? DispatchQueue(label: "viewfinder.\(body.label).callbacks")
        delegateSlot.withLock { $0 = read.map(DelegateSlot.init) }
        engine.setCallbackQueue(callbackQueue)
    }

    /// The delegate, if one is set and still alive.
    public var delegate: Body.Delegate? { delegateSlot.withLock { $0 }?.read() }

    /// The queue the delegate is called on.
    public var callbackQueue: DispatchQueue? { engine.callbackQueue }

    // MARK: Settings

    /// The settings now.
    public var currentSettings: Body.Settings { settings.withLock { $0 } }

    /// Applies `edit` by the one rule for settings: the new settings apply at the next frame
    /// boundary they can — on a running session the session renegotiates, installing the output's
    /// new context between samples, restarting the device only when its format or rate must
    /// change. When the new configuration cannot run, the old settings stay and the error is
    /// thrown. Engine-local state (the late-frame policy, the rate gate) is changed inside `edit`
    /// through `engine` and restored the same way.
    public func applyChange(
        _ edit: (inout Body.Settings, DeliveryEngine<Body.Context, Body.Product>) throws(CaptureError) -> Void
    )
        throws(CaptureError)
    {
        edits.lock()
        defer { edits.unlock() }
        var changed = currentSettings
        let previous = changed
        let previousGate = engine.minFrameDuration
        try edit(&changed, engine)
        settings.withLock { $0 = changed }
        do {
            try owner?.requestDidChange()
        } catch {
            settings.withLock { $0 = previous }
            engine.minFrameDuration = previousGate
            throw error
        }
    }

    /// Runs a setter that throws and, from a property's `set` (which cannot throw), posts its
    /// error instead by the one rule (as `runtimeErrorNotification`, the session's `postSettingFailure`).
    public func postingFailure(_ change: () throws(CaptureError) -> Void) {
        do throws(CaptureError) {
            try change()
        } catch {
            if let owner { CaptureSession.postSettingFailure(error, from: owner.session, object: owner) }
        }
    }

    /// Counts `drop` toward a stall and, the first time every frame for ``DeliveryStallWatch/bound``
    /// has dropped for the same cause with nothing delivered, posts one runtime error saying which
    /// cause, with the counts (a delivered frame clears it).
    private func watchForStall(_ drop: DeliveryEngine<Body.Context, Body.Product>.DropReport) {
        let report = stall.withLock { $0.dropped(drop.reason, count: drop.count, at: drop.presentationTime) }
        guard let report, let owner else { return }
        let error = DeliveryStallWatch.error(for: report, output: String(describing: type(of: owner)))
        CaptureSession.postSettingFailure(error, from: owner.session, object: owner)
    }

    // MARK: Session hooks (OutputDriver)

    package var acceptedMediaTypes: [MediaType] { body.acceptedMediaTypes }

    package func makeRequest() -> OutputRequest {
        guard let owner else { return OutputRequest() }
        let snapshot = body.resolve(currentSettings, for: owner)
        var request = body.request(for: snapshot)
        request.minFrameDuration = engine.minFrameDuration
        request.prepare = { [weak self, body] format, frameDuration throws(CaptureError) in
            let context = try body.makeContext(format: format, frameDuration: frameDuration, settings: snapshot)
            let core = self
            return PreparedStream { isRestart in core?.install(context, isRestart: isRestart) }
        }
        return request
    }

    /// A new stream (`isRestart`, or none running) begins with `context`; otherwise the context
    /// replaces the running one between samples.
    package func install(_ context: Body.Context, isRestart: Bool) {
        if isRestart || !engine.isStreaming {
            engine.beginStream(context: context, budgetLimit: budgetLimit)
        } else {
            engine.replaceContext(context)
        }
        body.streamDidBegin(context)
    }

    package func sessionWillStartRunning() {
        engine.resetStatistics()
        stall.withLock { $0.delivered() }
    }

    package func receive(_ sample: CapturedSample, from connection: CaptureConnection) {
        if body.admits(sample, from: connection) {
            engine.receive(sample, from: connection)
        } else {
            engine.skip(sample)
        }
    }

    package func streamDidStop(mediaType: MediaType) {
        // Bounded: a delegate stuck forever must not hang stopRunning().
        engine.endStream(waitingUpTo: 5)
        if let owner { body.streamDidEnd(mediaType: mediaType, output: owner) }
    }

    package func sessionDidStopRunning(failure: CaptureError?) {
        if let owner { body.sessionDidStopRunning(failure: failure, output: owner) }
    }

    package func sessionWasInterrupted(lostDevice: CaptureDevice, error: CaptureError) {
        if let owner { body.sessionWasInterrupted(lostDevice: lostDevice, error: error, output: owner) }
    }

    // MARK: Figures

    /// The engine's counters since the session last started.
    public var statistics: CaptureOutput.Statistics { engine.statistics }
    /// Capture-to-hand-over latency over the last 1,024 products.
    public var latency: LatencyStatistics { engine.latency }
    /// The running stream's context, if a stream runs.
    public var context: Body.Context? { engine.context }

    /// Waits until everything queued so far has been handed over. Returns at once when called
    /// from a delegate callback (waiting there would deadlock).
    @discardableResult
    public func waitUntilDelivered(timeout: Double) -> Bool { engine.waitUntilDelivered(timeout: timeout) }
}

/// What the session drives on an output: the hooks ``CaptureOutput`` forwards to the core it
/// adopted. Non-generic, so the session holds every output alike; the core behind it is typed.
package protocol OutputDriver: AnyObject, Sendable {
    var acceptedMediaTypes: [MediaType] { get }
    func makeRequest() -> OutputRequest
    func sessionWillStartRunning()
    func receive(_ sample: CapturedSample, from connection: CaptureConnection)
    func streamDidStop(mediaType: MediaType)
    func sessionDidStopRunning(failure: CaptureError?)
    func sessionWasInterrupted(lostDevice: CaptureDevice, error: CaptureError)
    var statistics: CaptureOutput.Statistics { get }
    var latency: LatencyStatistics { get }
    func waitUntilDelivered(timeout: Double) -> Bool
}

/// Drives an output fed by a camera and a microphone through one core per media (the movie file
/// output: its video and its audio each have an engine), routing each hook by media type: a
/// negotiated audio format goes to the audio core's stream, any other to the video core's.
package final class MediaRoutedDriver: OutputDriver {
    package let video: any OutputDriver
    package let audio: any OutputDriver

    package init(video: any OutputDriver, audio: any OutputDriver) {
        self.video = video
        self.audio = audio
    }

    package var acceptedMediaTypes: [MediaType] { video.acceptedMediaTypes + audio.acceptedMediaTypes }

    package func makeRequest() -> OutputRequest {
        var request = video.makeRequest()
        let videoStream = request.prepare
        let audioStream = audio.makeRequest().prepare
        request.prepare = { format, frameDuration throws(CaptureError) in
            try format.audioFormat == nil ? videoStream(format, frameDuration) : audioStream(format, frameDuration)
        }
        return request
    }

    package func sessionWillStartRunning() {
        video.sessionWillStartRunning()
        audio.sessionWillStartRunning()
    }

    package func receive(_ sample: CapturedSample, from connection: CaptureConnection) {
        switch connection.mediaType {
        case .video: video.receive(sample, from: connection)
        case .audio: audio.receive(sample, from: connection)
        default: break
        }
    }

    package func streamDidStop(mediaType: MediaType) {
        if mediaType == .audio {
            audio.streamDidStop(mediaType: mediaType)
        } else {
            video.streamDidStop(mediaType: mediaType)
        }
    }

    package func sessionDidStopRunning(failure: CaptureError?) {
        video.sessionDidStopRunning(failure: failure)
        audio.sessionDidStopRunning(failure: failure)
    }

    package func sessionWasInterrupted(lostDevice: CaptureDevice, error: CaptureError) {
        video.sessionWasInterrupted(lostDevice: lostDevice, error: error)
        audio.sessionWasInterrupted(lostDevice: lostDevice, error: error)
    }

    /// The video frames' counters: a movie counts its frames (its audio is written as it comes).
    package var statistics: CaptureOutput.Statistics { video.statistics }
    package var latency: LatencyStatistics { video.latency }

    package func waitUntilDelivered(timeout: Double) -> Bool {
        video.waitUntilDelivered(timeout: timeout) && audio.waitUntilDelivered(timeout: timeout)
    }
}

/// Lets a body reach the output it works for: a body is made before its output exists, so the
/// output sets ``owner`` once, at the end of its `init`, before any stream.
// unchecked: `owner` is written once, before the output is shared, and only read afterwards.
package final class OutputLink<Owner: AnyObject>: @unchecked Sendable {
    /// The output, while it is alive.
    package weak var owner: Owner?

    /// A link with no output yet.
    package init() {}
}

/// An output's stream, built for a negotiated format without changing the output (so a
/// configuration that cannot run is refused before anything stops), installed later.
public struct PreparedStream: Sendable {
    /// Installs the stream. `isRestart` is `false` when the device keeps running and only this
    /// output changed: the new context then applies between samples.
    package let install: @Sendable (_ isRestart: Bool) -> Void

    /// A stream with nothing to install.
    public static let none = PreparedStream { _ in }
}

/// Watches an output for a stream that delivers nothing while its frames keep dropping for one
/// cause that means something is wrong (every buffer held, every frame lost by the device, every
/// frame failing to decode), so that this is said once instead of only counted. A busy delegate's
/// late frames are its choice (a slow analysis keeps the newest frame by design), and drops a
/// user's processor decides are its own business: neither counts. The built-in decoder's and
/// converter's drops do.
package struct DeliveryStallWatch {
    /// How much stream time may pass with every frame dropped for one cause before it is said.
    package static let bound = MediaTime(value: 2, timescale: 1)

    /// A stall to report: its cause, the frames it dropped, the stream time it spans.
    package struct Report: Equatable {
        package var reason: DroppedFrameReason
        package var frames: Int
        package var seconds: Double
    }

    private var reason: DroppedFrameReason?
    private var frames = 0
    private var first: MediaTime?
    private var reported = false

    /// A frame was delivered: any stall is over.
    package mutating func delivered() { self = DeliveryStallWatch() }

    /// `count` frames dropped for `reason` at stream time `time`; the report to post when this
    /// crosses the bound for the first time since the last delivered frame.
    package mutating func dropped(_ reason: DroppedFrameReason, count: Int, at time: MediaTime) -> Report? {
        guard Self.counts(reason), time.isNumeric else { return nil }
        if reason != self.reason {
            // A stall is one cause throughout; another cause starts the watch over.
            self = DeliveryStallWatch()
            self.reason = reason
            first = time
        }
        frames += count
        guard !reported, let first, frames >= 2, time - first >= Self.bound else { return nil }
        reported = true
        return Report(reason: reason, frames: frames, seconds: (time - first).seconds)
    }

    private static func counts(_ reason: DroppedFrameReason) -> Bool {
        switch reason {
        case .frameWasLate: false
        case .outOfBuffers, .discontinuity: true
        case .droppedByProcessor(let name):
            name == MJPEGDecodeStep.dropName || name == AudioDeliveryContext.converterName
        }
    }

    /// The error that says what the stall is and what to do.
    package static func error(for report: Report, output: String) -> CaptureError {
        let seconds = (report.seconds * 10).rounded() / 10
        let what =
            "\(output) delivered nothing for \(seconds) s: all \(report.frames) frames dropped as \(report.reason)"
        switch report.reason {
        case .outOfBuffers:
            return CaptureError(
                .outOfBuffers,
                "\(what) — the delegate holds every buffer: let go of sample buffers once used, or raise bufferBudget")
        case .frameWasLate:
            return CaptureError(.noDataCaptured, "\(what) — the delegate has not returned since")
        case .discontinuity:
            return CaptureError(.ioError, "\(what) — the device loses every frame: check its connection and bandwidth")
        case .droppedByProcessor(let name):
            return CaptureError(
                .conversionFailed, "\(what) — the \(name) fails on every frame: the device's data may be damaged")
        }
    }
}
