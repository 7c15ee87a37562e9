import Dispatch
import Foundation
import Synchronization

/// Delivers a microphone's PCM to a delegate on a queue you choose (the counterpart of
/// `AVCaptureAudioDataOutput`).
///
/// ```swift
/// let output = CaptureAudioDataOutput()
/// output.audioSettings = try AudioSettings(sampleFormat: .float32, sampleRate: 48_000)  // or AudioSettings(): as captured
/// output.setSampleBufferDelegate(myDelegate, queue: DispatchQueue(label: "audio"))
/// try session.tryAddOutput(output)
/// // later: output.connection(with: .audio)?.audioChannels.map(\.averagePowerLevel)
/// ```
///
/// The delivery contract, through the same delivery engine as video:
/// - Buffers reach the delegate on the given queue one at a time, presentation timestamps
///   strictly increasing, each sample once.
/// - Audio is not thinned like video (there is no `alwaysDiscardsLate…`, as in AVFoundation):
///   while the delegate is busy buffers queue, up to ``bufferBudget`` in flight (queued or held
///   by the delegate); past that the newest drop as ``DroppedFrameReason/outOfBuffers``, reported
///   through `captureOutput(_:didDrop:from:)`. Audio the device lost (an overrun) is reported as
///   ``DroppedFrameReason/discontinuity``; both carry their sample-frame count
///   (``SampleBuffer/AttachmentKey/droppedAudioSampleCount``, and
///   ``CaptureOutput/Statistics/audioSamplesLost`` for the device's losses).
/// - Every buffer is accounted for: `delivered + dropped == captured` once stopped
///   (``CaptureOutput/statistics``).
/// - ``audioSettings`` convert through libswresample only when they ask for something the device
///   does not capture; a dropped buffer is never converted.
/// - The connection's ``CaptureConnection/audioChannels`` show the levels of the captured audio
///   (before conversion) as buffers are delivered: inside `captureOutput(_:didOutput:from:)` they
///   are the levels of the buffer at hand, as AVFoundation computes them per connection.
///
/// Thread safety: every member may be used from any thread; changes apply between buffers.
public final class CaptureAudioDataOutput: CaptureOutput, @unchecked Sendable {  // unchecked: state is in the core.
    /// Buffers in flight (waiting for, or held by, the delegate) before new ones drop as
    /// ``DroppedFrameReason/outOfBuffers``: with the session's 10 ms buffers, the default 16 lets
    /// the delegate fall 160 ms behind.
    public let bufferBudget: Int

    /// The output's job on the shared core: convert PCM where asked, meter it, hand sample
    /// buffers to the delegate. Audio queues rather than replacing late buffers.
    package struct Body: SampleBufferBody {
        package let buffers: Int
        /// Set when the budget is past ``maximumBufferBudget``: no stream is built with it.
        package let budgetRefusal: CaptureError?

        package var label: String { "audio-data-output" }
        package var acceptedMediaTypes: [MediaType] { [.audio] }
        package var initialSettings: AudioSettings { AudioSettings() }
        package var discardsLateSamplesByDefault: Bool { false }

        package func request(for settings: AudioSettings) -> OutputRequest { OutputRequest(audioSettings: settings) }

        package func makeContext(
            format: CaptureDevice.Format, frameDuration: MediaTime, settings: AudioSettings
        ) throws(CaptureError) -> AudioDeliveryContext {
            if let budgetRefusal { throw budgetRefusal }
            guard let deviceFormat = format.audioFormat else {
                throw CaptureError(
                    .unsupportedFormat, "an audio data output takes audio, but the device streams \(format)")
            }
            return try AudioDeliveryContext(deviceFormat: deviceFormat, settings: settings, buffers: buffers)
        }

        package func prepare(
            _ sample: CapturedSample, context: AudioDeliveryContext, budget: FrameBudget, connection: CaptureConnection
        ) -> DeliveryEngine<AudioDeliveryContext, SampleBuffer>.Preparation {
            guard let chunk = sample.audio else { return .dropped(.droppedByProcessor("not audio")) }
            connection.measureAudio(chunk)
            guard let delivered = context.deliver(chunk) else {
                return .dropped(.droppedByProcessor(AudioDeliveryContext.converterName))
            }
            return .ready(
                SampleBuffer(audio: delivered, sequenceNumber: sample.sequenceNumber, budget: budget), holdsSlot: true)
        }

        package typealias Delegate = any CaptureAudioDataOutputSampleBufferDelegate

        package func receiver(_ delegate: Delegate) -> any CaptureDataOutputSampleBufferDelegate { delegate }
        package var reportMediaType: MediaType { .audio }

        package func annotate(
            _ report: SampleBuffer, for drop: DeliveryEngine<AudioDeliveryContext, SampleBuffer>.DropReport
        ) {
            report.setAttachment(drop.mediaSampleCount, forKey: .droppedAudioSampleCount)
        }
    }

    package let core: EngineOutputCore<Body>

    /// The largest ``bufferBudget`` a session runs: buffers of at most 1 MiB (10 ms of 64 channels
    /// of 64-bit samples at 192 kHz is 0.98 MiB) within the memory budget of video pools
    /// (``PixelBufferPool/memoryBudget``, 4 GiB), as many as 4096.
    public static let maximumBufferBudget = PixelBufferPool.memoryBudget >> 20

    /// An output that lets at most `bufferBudget` buffers be in flight (at least 1; default 16;
    /// above ``maximumBufferBudget`` the session refuses to start, posting
    /// ``CaptureError/Code/invalidArgument``).
    public init(bufferBudget: Int = 16) {
        self.bufferBudget = max(1, bufferBudget)
        let refusal =
            bufferBudget <= Self.maximumBufferBudget
            ? nil
            : CaptureError(
                .invalidArgument,
                "an audio data output's bufferBudget of \(bufferBudget) buffers could hold more than the \(PixelBufferPool.memoryBudget >> 20) MiB memory budget: use at most \(Self.maximumBufferBudget)"
            )
        let bounded = min(self.bufferBudget, Self.maximumBufferBudget)
        core = EngineOutputCore(Body(buffers: bounded + 1, budgetRefusal: refusal), budgetLimit: bounded)
        super.init()
        adopt(core)
    }

    // MARK: Settings

    /// The PCM layout to deliver. Empty settings (the default) deliver what the device captures,
    /// unconverted. The session picks the device format that needs the least conversion (a
    /// microphone that captures the asked rate is not resampled). Applies when set; if the new
    /// settings cannot be delivered the old ones stay and the error is posted as
    /// ``CaptureSession/runtimeErrorNotification``; ``setAudioSettings(_:)`` throws it instead.
    public var audioSettings: AudioSettings {
        get { core.currentSettings }
        set { core.postingFailure { () throws(CaptureError) in try setAudioSettings(newValue) } }
    }

    /// Sets ``audioSettings``, throwing (and keeping the old settings) when a running session
    /// cannot deliver them.
    public func setAudioSettings(_ settings: AudioSettings) throws(CaptureError) {
        if let problem = settings.problem { throw CaptureError(.invalidArgument, problem) }
        try core.applyChange { current, _ in current = settings }
    }

    /// The PCM layout buffers are delivered in, once the session has negotiated.
    public var deliveredAudioFormat: AudioFormat? { core.context?.target }

    /// Whether buffers are delivered as the device captured them (no conversion).
    public var isConverting: Bool { core.context.map { $0.target != $0.deviceFormat } ?? false }

    // MARK: Delegate

    /// Sets the delegate and the queue its methods run on. Pass `nil` for both to stop delivery.
    /// A `nil` queue with a delegate uses a private serial queue. The delegate is held weakly.
    public func setSampleBufferDelegate(
        _ delegate: (any CaptureAudioDataOutputSampleBufferDelegate)?, queue: DispatchQueue?
    ) {
        core.setDelegate(delegate.map { delegate in { [weak delegate] in delegate } }, queue: queue)
    }

    /// The delegate, if one is set and still alive.
    public var sampleBufferDelegate: (any CaptureAudioDataOutputSampleBufferDelegate)? { core.delegate }

    /// The queue the delegate is called on.
    public var sampleBufferCallbackQueue: DispatchQueue? { core.callbackQueue }
}

/// What an audio output negotiated for one stream: the device's format, the format to deliver,
/// and the converter between them (libswresample) with a pool for its output, used one buffer at
/// a time on the delivery path.
// unchecked: the converter and pool are only used from the engine's delivery path, one sample at a time.
package final class AudioDeliveryContext: @unchecked Sendable {
    package static let converterName = "AudioConverter"

    package let deviceFormat: AudioFormat
    package let target: AudioFormat
    private let bufferCount: Int
    private var converter: AudioConverter?
    private var pool: PCMBufferPool?

    /// A context delivering `deviceFormat` as `settings` ask, converting into a pool of
    /// `buffers` buffers (the output's budget bounds how many are held at once).
    package init(deviceFormat: AudioFormat, settings: AudioSettings, buffers: Int) throws(CaptureError) {
        self.deviceFormat = deviceFormat
        target = settings.resolved(from: deviceFormat)
        bufferCount = max(1, buffers)
        try target.validate()
        if target != deviceFormat { converter = try AudioConverter(from: deviceFormat, to: target) }
    }

    /// `chunk` as delivered: itself when it is already in ``target``, else converted (a new
    /// converter if the device changed format) into a pooled buffer. `nil` when conversion
    /// failed or produced nothing yet.
    package func deliver(_ chunk: AudioChunk) -> AudioChunk? {
        if chunk.format == target { return chunk }
        do {
            if converter?.source != chunk.format { converter = try AudioConverter(from: chunk.format, to: target) }
            guard let converter else { return nil }
            let bytes =
                converter.maximumOutputFrames(forInputFrames: chunk.frameCount) * target.sampleFormat.bytesPerSample
                * target.channelCount
            if bytes > 0, (pool?.bytesPerBuffer ?? 0) < bytes {
                // Sized once for the stream's chunks, with room for the resampler's jitter.
                pool = try PCMBufferPool(bytesPerBuffer: bytes * 2, capacity: bufferCount)
            }
            // A pool with a free buffer cannot run dry before the converter takes it (buffers only
            // come back meanwhile); a pool with none would make the converter skip the chunk.
            let pooled = pool.flatMap { $0.buffersInUse < $0.capacity ? $0 : nil }
            return try converter.convert(chunk, pool: pooled)
        } catch {
            return nil
        }
    }
}
