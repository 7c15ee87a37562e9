import Synchronization

/// A destination for captured media (the counterpart of `AVCaptureOutput`). Use a concrete
/// subclass such as ``CaptureVideoDataOutput``.
///
/// An output states which media it accepts (the session connects it only to input ports of those
/// media), what it asks of the device (format, size, frame rate, for negotiation), and handles the
/// hooks the session calls as streams start and stop. Outputs that deliver samples compose a
/// delivery engine, which gives them ordered delivery on the caller's queue, the late-frame and
/// out-of-buffers policies, drop reports and ``Statistics``.
///
/// Thread safety: may be used from any thread.
open class CaptureOutput: @unchecked Sendable {  // unchecked: mutable state lives in `links`, a Mutex.
    private struct Links {
        var connections: [CaptureConnection] = []
        var session: ObjectIdentifier?
        var sessionReference: WeakReference<CaptureSession>?
    }
    private let links = Mutex(Links())
    /// Deferred start: whether it is asked for, and this run's role (`CaptureSession+DeferredStart.swift`).
    private let deferredStartEnabled = Atomic<Bool>(false)
    private let waitsForDeferredStart = Atomic<Bool>(false)
    private let triggersDeferredStart = Atomic<Bool>(false)

    /// An output with no connections. A subclass outside the package makes its
    /// ``EngineOutputCore`` first and hands it to ``adopt(_:)`` (see "Writing an output").
    public init() {}

    /// The connections feeding this output.
    public var connections: [CaptureConnection] { links.withLock { $0.connections } }

    /// The first connection carrying `mediaType`, if any.
    public func connection(with mediaType: MediaType) -> CaptureConnection? {
        connections.first { $0.mediaType == mediaType }
    }

    package var sessionID: ObjectIdentifier? { links.withLock { $0.session } }

    /// The session the output belongs to, while it is alive.
    package var session: CaptureSession? { links.withLock { $0.sessionReference?.value } }

    package func attach(to session: CaptureSession?) {
        links.withLock {
            $0.session = session.map(ObjectIdentifier.init)
            $0.sessionReference = session.map(WeakReference.init)
        }
    }

    /// Claims the output for `session` if no session has it; `false` when one does.
    package func claim(for session: CaptureSession) -> Bool {
        links.withLock { links in
            if let owner = links.session, owner != ObjectIdentifier(session) { return false }
            links.session = ObjectIdentifier(session)
            links.sessionReference = WeakReference(session)
            return true
        }
    }

    package func setConnections(_ connections: [CaptureConnection]) { links.withLock { $0.connections = connections } }

    // MARK: What every output declares

    /// The typed core behind an engine-backed output (``EngineOutputCore``), which answers the
    /// hooks below; outputs that drive the session's hooks themselves leave it `nil`.
    package private(set) var driver: (any OutputDriver)?

    /// Makes `core` answer this output's hooks. Called once, from the output's `init`.
    public func adopt<Body: OutputBody>(_ core: EngineOutputCore<Body>) {
        core.attach(to: self)
        driver = core
    }

    /// Makes `video` answer this output's video hooks and `audio` its audio hooks (an output fed
    /// by a camera and a microphone: ``MediaRoutedDriver``). Called once, from the output's `init`.
    package func adopt<Video: OutputBody, Audio: OutputBody>(
        _ video: EngineOutputCore<Video>, _ audio: EngineOutputCore<Audio>
    ) {
        video.attach(to: self)
        audio.attach(to: self)
        driver = MediaRoutedDriver(video: video, audio: audio)
    }

    /// The media types the output takes; the session connects it to the first input port of each.
    package var acceptedMediaTypes: [MediaType] { driver?.acceptedMediaTypes ?? [] }

    /// What this output wants from the device now, read once per negotiation, with the
    /// ``OutputRequest/prepare`` that builds the output's stream from the settings read for it:
    /// a change made in between cannot split one negotiation across two settings.
    package func makeRequest() -> OutputRequest { driver?.makeRequest() ?? OutputRequest() }

    /// Reads the request, builds the stream for `format` and installs it as a new stream — what
    /// the session does at start, done by hand (tests feed outputs this way).
    package func prepareToStream(format: CaptureDevice.Format, frameDuration: MediaTime) throws(CaptureError) {
        try makeRequest().prepare(format, frameDuration).install(true)
    }

    // MARK: Hooks the session drives

    /// The session is about to start running (not called when it restarts streams for a commit
    /// or after an interruption).
    package func sessionWillStartRunning() { driver?.sessionWillStartRunning() }

    /// A sample from `connection`, on the device's capture thread. Must not block. An output
    /// waiting for the session's deferred start skips it (uncounted).
    package func receive(_ sample: CapturedSample, from connection: CaptureConnection) {
        if waitsForDeferredStart.load(ordering: .acquiring) { return }
        if triggersDeferredStart.load(ordering: .relaxed),
            triggersDeferredStart.exchange(false, ordering: .acquiringAndReleasing)
        {
            session?.outputReceivedFirstFrame()
        }
        driver?.receive(sample, from: connection)
    }

    // MARK: Deferred start

    /// Whether the output can start with the session's deferred start: `true`.
    open var isDeferredStartSupported: Bool { true }

    /// Whether the output starts only once the session's other outputs have their first frame
    /// (`AVCaptureOutput.isDeferredStartEnabled`, iOS 26): until the session runs its deferred
    /// start (``CaptureSession/automaticallyRunsDeferredStart``,
    /// ``CaptureSession/runDeferredStartWhenNeeded()``) it gets no frames. It is negotiated with
    /// the others (the camera's format does not change when it starts); what it makes on its
    /// first frame (a movie file, a photo's ring) waits. A capture asked of it (a photo) runs
    /// the deferred start at once. When every output of the session has the same value nothing
    /// is deferred. Default `false` (AVFoundation's default for photo and file outputs linked
    /// against iOS 26 is `true`); set it before ``CaptureSession/startRunning()``.
    public var isDeferredStartEnabled: Bool {
        get { deferredStartEnabled.load(ordering: .relaxed) }
        set {
            precondition(
                !newValue || isDeferredStartSupported,
                "deferred start is not supported by this output: check isDeferredStartSupported first (it is false)")
            deferredStartEnabled.store(newValue, ordering: .relaxed)
        }
    }

    /// Whether the output waits for this run's deferred start.
    package var isWaitingForDeferredStart: Bool { waitsForDeferredStart.load(ordering: .acquiring) }

    /// This run's role: waiting for the deferred start, or telling the session of its first frame.
    package func setDeferredStartRole(waits: Bool, triggers: Bool) {
        triggersDeferredStart.store(triggers, ordering: .releasing)
        waitsForDeferredStart.store(waits, ordering: .releasing)
    }

    /// The stream carrying `mediaType` to this output stopped: no more samples of it will arrive.
    /// Waits (bounded) for queued samples to be handed over, unless called from inside this
    /// output's own callbacks.
    package func streamDidStop(mediaType: MediaType) { driver?.streamDidStop(mediaType: mediaType) }

    /// The session stopped running — ``CaptureSession/stopRunning()``, or because of `failure` —
    /// after every stream stopped (not called for the restarts of a commit).
    package func sessionDidStopRunning(failure: CaptureError?) { driver?.sessionDidStopRunning(failure: failure) }

    /// A device of the session was lost mid-run (unplugged): its stream has stopped and the session
    /// is interrupted. Called on every output of the session, fed by that device or not.
    package func sessionWasInterrupted(lostDevice: CaptureDevice, error: CaptureError) {
        driver?.sessionWasInterrupted(lostDevice: lostDevice, error: error)
    }

    // MARK: Figures

    /// What happened to every sample since the session last started (kept across configuration
    /// commits and interruptions): see ``Statistics``. A movie file output counts its video
    /// frames: recorded, or passed by while not recording, as delivered; an audio data output its
    /// buffers (``Statistics/audioSamplesLost`` in sample frames); a photo output the frames it
    /// took photos from (it skips the others uncounted). All zero for an output with no core.
    public var statistics: Statistics { driver?.statistics ?? Statistics() }

    /// Capture-to-hand-over latency (to the delegate, the file, the consumer) over the last
    /// 1,024 samples handed over.
    public var deliveryLatency: LatencyStatistics {
        driver?.latency ?? LatencyStatistics(count: 0, p50: 0, p99: 0, max: 0, mean: 0)
    }

    /// Waits up to `timeout` seconds until everything queued so far has been handed over;
    /// `false` if it has not been by then. Returns at once when called from one of the output's
    /// own callbacks (waiting there would deadlock).
    @discardableResult
    public func waitUntilDelivered(timeout: Double) -> Bool { driver?.waitUntilDelivered(timeout: timeout) ?? true }

    // MARK: Settings

    /// Applies a change of what the output asks (its settings, processors or connection settings)
    /// through the session: renegotiated between samples while running, restarting the device
    /// only when its format or rate must change; kept for the next start otherwise. Throws when
    /// the new configuration cannot run; the caller then restores the old one.
    package func requestDidChange() throws(CaptureError) {
        try session?.outputRequestDidChange(self)
    }
}

/// What an output asks of the device, for negotiation, together with the output's settings as
/// read for it.
public struct OutputRequest: Sendable {
    /// The pixel format wanted; `nil` for whatever the device captures.
    public var pixelFormat: PixelFormat?
    /// The size wanted; `nil` for the device's size.
    public var size: CaptureDevice.Dimensions?
    /// The shortest time between delivered frames; `.invalid` for no limit.
    public var minFrameDuration: MediaTime = .invalid
    /// The formats the output's first processor takes (empty: any), so negotiation counts the
    /// conversion a processor forces.
    public var processorFormats: [PixelFormat] = []
    /// The PCM layout wanted from a microphone; `nil` (video outputs) for whatever it captures.
    public var audioSettings: AudioSettings?
    /// Whether the output's format and size shape a Motion-JPEG device's one shared decode
    /// (``SharedDecodePlan``); `false` for outputs that ask nothing of the device (photo,
    /// preview, metadata), which take the shared image when it is large enough.
    package var sharesDecode = true
    /// Builds the output's stream for the negotiated format and frame duration from the settings
    /// this request was read from (captured, typed), without changing the output; throws when the
    /// output cannot run that way.
    public var prepare:
        @Sendable (_ format: CaptureDevice.Format, _ frameDuration: MediaTime) throws(CaptureError) -> PreparedStream

    /// A request for these fields (an output built on ``EngineOutputCore`` leaves `prepare` to the
    /// core).
    public init(
        pixelFormat: PixelFormat? = nil, size: CaptureDevice.Dimensions? = nil, minFrameDuration: MediaTime = .invalid,
        processorFormats: [PixelFormat] = [], audioSettings: AudioSettings? = nil,
        prepare: @escaping @Sendable (CaptureDevice.Format, MediaTime) throws(CaptureError) -> PreparedStream = {
            _, _ in
            .none
        }
    ) {
        self.audioSettings = audioSettings
        self.pixelFormat = pixelFormat
        self.size = size
        self.minFrameDuration = minFrameDuration
        self.processorFormats = processorFormats
        self.prepare = prepare
    }
}
