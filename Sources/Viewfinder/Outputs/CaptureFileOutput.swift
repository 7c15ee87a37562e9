import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An output that records to files (the counterpart of `AVCaptureFileOutput`): starting and
/// stopping recordings, their live figures and limits, and the recording delegate. Use the
/// concrete ``CaptureMovieFileOutput``.
///
/// The contract (AVFoundation's):
/// - ``startRecording(to:recordingDelegate:)`` never overwrites: an existing file ends the
///   recording with ``CaptureError/Code/fileAlreadyExists``.
/// - `didFinishRecordingTo` arrives exactly once per `startRecording`, also when nothing was
///   written (``CaptureError/Code/noDataCaptured``, and no file is left); `didStartRecordingTo`
///   only once the first sample is written. When `didFinishRecordingTo` arrives the file is
///   complete (trailer written, fsynced).
/// - Reaching ``maxRecordedDuration``, ``maxRecordedFileSize`` or ``minFreeDiskSpaceLimit`` ends
///   the recording with ``CaptureError/Code/maximumDurationReached``,
///   ``CaptureError/Code/maximumFileSizeReached`` or ``CaptureError/Code/diskFull``; an unplugged
///   camera with ``CaptureError/Code/deviceWasDisconnected``; the loss of another device of the
///   session (or a session stopped by a failure) with ``CaptureError/Code/sessionWasInterrupted``.
///   Each such error carries ``CaptureError/recordingSuccessfullyFinished``: true when the file
///   is playable. ``CaptureSession/stopRunning()`` finishes the recording without an error.
/// - Timestamps in the file are the frames' own (shifted to start at 0). Frames the encoder
///   cannot keep up with are dropped and counted (``CaptureOutput/Statistics/droppedOutOfBuffers``),
///   never queued without bound.
///
/// Encoding runs on the output's own serial recording queue, never on the capture thread or a
/// queue of yours; the delegate is called on ``delegateCallbackQueue``.
///
/// Thread safety: every member may be used from any thread.
// unchecked: state is in Mutexes or confined to `recordingQueue`.
public class CaptureFileOutput: CaptureOutput, @unchecked Sendable {
    /// Frames in flight (queued for, or inside, the encoder) before new ones drop as
    /// ``DroppedFrameReason/outOfBuffers``.
    public let bufferBudget: Int

    /// The serial queue the recording delegate is called on (AVFoundation leaves the queue
    /// unspecified; Viewfinder documents it: one private serial queue per output).
    public let delegateCallbackQueue = DispatchQueue(label: "viewfinder.file-output.delegate")

    /// Where encoding and writing run (the video engine's callback queue).
    let recordingQueue = DispatchQueue(label: "viewfinder.file-output.recording")

    struct Status {
        var pendingStarts = 0
        var isRecording = false
        var outputFileURL: URL?
        var recordedDuration = MediaTime.zero
        var recordedFileSize: Int64 = 0
        var recordedFrames = 0
        var maxRecordedDuration = MediaTime.invalid
        var maxRecordedFileSize: Int64 = 0
        var minFreeDiskSpaceLimit: Int64 = 0
    }
    let status = Mutex(Status())

    /// The format of the session's audio input while its stream runs, `nil` without one: a
    /// recording whose first frame comes while it is set gets an AAC track fed by
    /// ``recordAudio(_:)``. Set when the audio stream's context is installed.
    let audioTrackFormat = Mutex<AudioFormat?>(nil)

    /// The recording under way. Confined to `recordingQueue`.
    private var current: Recording?

    /// The video: its settings (each connection's encoding) and its engine, whose delivery
    /// writes each frame.
    let videoCore: EngineOutputCore<VideoBody>
    /// Delivers the microphone's buffers to the recording queue, in order, beside the video.
    let audioCore: EngineOutputCore<AudioBody>

    init(bufferBudget: Int = 6) {
        self.bufferBudget = max(1, bufferBudget)
        let link = OutputLink<CaptureFileOutput>()
        videoCore = EngineOutputCore(VideoBody(link: link), budgetLimit: self.bufferBudget)
        audioCore = EngineOutputCore(AudioBody(link: link), budgetLimit: 64)
        super.init()
        link.owner = self
        // The engines' deliveries run on the recording queue, which confines the recording.
        videoCore.setDelegate({ [weak self] in self }, queue: recordingQueue)
        audioCore.setDelegate({ [weak self] in self }, queue: recordingQueue)
        adopt(videoCore, audioCore)
    }

    // MARK: Recording

    /// Starts recording to `outputFileURL` — a file URL, whose extension picks the container
    /// (`.mov` (default), `.mp4`, `.mkv`), or a streaming server's `rtmp://` (FLV) or `srt://`
    /// (MPEG-TS) URL (both tested against ffmpeg listeners on loopback; `rtsp://` goes through
    /// libavformat the same way, untested here) — telling `delegate` when the recording starts and
    /// ends.
    /// A recording already under way is finished first (without error). Never overwrites: an
    /// existing file ends the new recording at once with ``CaptureError/Code/fileAlreadyExists``.
    /// The output holds `delegate` until its `didFinishRecordingTo` has been called.
    public func startRecording(
        to outputFileURL: URL, recordingDelegate delegate: any CaptureFileOutputRecordingDelegate
    ) {
        status.withLock { status in
            status.pendingStarts += 1
            status.isRecording = true
            status.outputFileURL = outputFileURL
            status.recordedDuration = .zero
            status.recordedFileSize = 0
            status.recordedFrames = 0
        }
        let connections = self.connections
        let delegate = RecordingDelegateBox(delegate)
        recordingQueue.async { [self] in
            if let current { finish(current, error: nil) }
            status.withLock { $0.pendingStarts -= 1 }
            let recording = Recording(url: outputFileURL, delegate: delegate, connections: connections)
            do throws(RecordingError) {
                recording.writer = try MovieFileWriter(url: outputFileURL, options: makeWriterOptions())
                current = recording
            } catch {
                current = recording
                finish(recording, error: Self.captureError(error, flag: false))
            }
        }
    }

    /// Finishes the recording under way: frames already queued are written, then the trailer,
    /// and the delegate's `didFinishRecordingTo` follows. Does nothing when not recording.
    public func stopRecording() {
        recordingQueue.async { [self] in
            if let current { finish(current, error: nil) }
        }
    }

    /// Whether a recording is under way (from ``startRecording(to:recordingDelegate:)`` until its
    /// end is being reported).
    public var isRecording: Bool { status.withLock { $0.isRecording } }

    /// The file of the current (or last) recording.
    public var outputFileURL: URL? { status.withLock { $0.outputFileURL } }

    /// The media time recorded so far: from the first frame's presentation time to the end of
    /// the last frame's.
    public var recordedDuration: MediaTime { status.withLock { $0.recordedDuration } }

    /// The bytes recorded so far: the media data handed to the muxer (a fragmented file reaches
    /// the disk fragment by fragment, so this runs ahead of the file by up to a fragment); once
    /// the recording has finished, the file's size.
    public var recordedFileSize: Int64 { status.withLock { $0.recordedFileSize } }

    /// Frames written to the current (or last) recording.
    public var recordedFrameCount: Int { status.withLock { $0.recordedFrames } }

    /// The longest recording; reaching it ends the recording with
    /// ``CaptureError/Code/maximumDurationReached`` (the last frame written is the last that ends
    /// within it). ``MediaTime/invalid`` (the default) for no limit. Applies from the next frame.
    public var maxRecordedDuration: MediaTime {
        get { status.withLock { $0.maxRecordedDuration } }
        set {
            status.withLock { $0.maxRecordedDuration = newValue.isNumeric && newValue > .zero ? newValue : .invalid }
        }
    }

    /// The largest file a recording may make, in bytes, as AVFoundation documents it: the file
    /// on disk, its container's boxes and final index included, never grows past it. Before
    /// every frame the output keeps room for the frame, the frames the encoder still holds, the
    /// audio up to the next frame and the index written at the end; when they would not fit, the
    /// recording ends with ``CaptureError/Code/maximumFileSizeReached`` (and
    /// ``CaptureError/recordingSuccessfullyFinished`` true): the file is closed, playable and at
    /// most this size. The room is bounded from above, so a file ends up somewhat below the limit
    /// (Motion-JPEG passthrough: within a frame and the index; H.264: within about the encoder's
    /// lookahead of frames). 0 (the default) for no limit. Applies from the next frame.
    public var maxRecordedFileSize: Int64 {
        get { status.withLock { $0.maxRecordedFileSize } }
        set { status.withLock { $0.maxRecordedFileSize = max(0, newValue) } }
    }

    /// The free space, in bytes, the file's disk must keep; when less is left the recording ends
    /// with ``CaptureError/Code/diskFull``. 0 (the default) for no limit (a full disk still ends
    /// it with ``CaptureError/Code/diskFull``). Checked at every frame.
    public var minFreeDiskSpaceLimit: Int64 {
        get { status.withLock { $0.minFreeDiskSpaceLimit } }
        set { status.withLock { $0.minFreeDiskSpaceLimit = max(0, newValue) } }
    }

    /// Hands `metadata` to the recording under way (if any) on the recording queue, after every
    /// frame queued before it: its writer puts it in the file where the container allows.
    func updateMetadataOfCurrentRecording(_ metadata: [String: String]) {
        recordingQueue.async { [self] in current?.writer?.updateMetadata(metadata) }
    }

    // MARK: Figures

    // MARK: What subclasses provide

    /// The writer's options for a new recording.
    func makeWriterOptions() -> MovieWriterOptions { MovieWriterOptions() }

    /// The video stream for frames of `format` from `context`; throws when it cannot be recorded.
    func videoSettings(for buffer: PixelBuffer, context: FileOutputStreamContext) throws(CaptureError)
        -> MovieVideoSettings
    {
        MovieVideoSettings(width: buffer.width, height: buffer.height, sourcePixelFormat: buffer.pixelFormat)
    }

    /// What a frame is written as: the frame itself, or (Motion-JPEG passthrough) the frame with
    /// whatever a player needs added.
    func frameToWrite(_ buffer: PixelBuffer, context: FileOutputStreamContext) -> PixelBuffer { buffer }

    // MARK: Bodies

    /// The video's job on the shared core: ask for what the chosen codec takes (Motion-JPEG for
    /// passthrough, NV12 for the encoders) and write each accepted frame in `prepare`, on the
    /// recording queue (nothing is left to hand over).
    struct VideoBody: OutputBody {
        let link: OutputLink<CaptureFileOutput>
        typealias Delegate = CaptureFileOutput

        var label: String { "movie-file-output" }
        var acceptedMediaTypes: [MediaType] { [.video] }
        var initialSettings: FileOutputSettings { FileOutputSettings() }
        var discardsLateSamplesByDefault: Bool { false }

        func resolve(_ settings: FileOutputSettings, for output: CaptureOutput) -> FileOutputSettings {
            var resolved = settings
            resolved.chosen =
                output.connection(with: .video).flatMap { settings.perConnection[ObjectIdentifier($0)] }
                ?? MovieOutputSettings()
            return resolved
        }

        func request(for settings: FileOutputSettings) -> OutputRequest {
            // Passthrough asks for Motion-JPEG natively (zero copy); encoders take NV12 without a copy.
            OutputRequest(pixelFormat: settings.chosen?.codec == .jpeg ? .mjpeg : .nv12VideoRange)
        }

        func makeContext(
            format: CaptureDevice.Format, frameDuration: MediaTime, settings: FileOutputSettings
        ) throws(CaptureError) -> FileOutputStreamContext {
            FileOutputStreamContext(format: format, frameDuration: frameDuration, settings: settings.chosen)
        }

        func prepare(
            _ sample: CapturedSample, context: FileOutputStreamContext, budget: FrameBudget,
            connection: CaptureConnection
        ) -> DeliveryEngine<FileOutputStreamContext, Void>.Preparation {
            link.owner?.record(sample, context: context, connection: connection) ?? .ready((), holdsSlot: false)
        }

        func sessionDidStopRunning(failure: CaptureError?, output: CaptureOutput) {
            link.owner?.sessionStopped(failure: failure)
        }

        func sessionWasInterrupted(lostDevice: CaptureDevice, error: CaptureError, output: CaptureOutput) {
            link.owner?.interrupted(lostDevice: lostDevice, error: error)
        }
    }

    /// The microphone's job: its buffers become the AAC track of recordings that start while its
    /// stream runs (interleaved 16-bit or float PCM), written in `prepare` on the recording queue.
    struct AudioBody: OutputBody {
        let link: OutputLink<CaptureFileOutput>
        typealias Delegate = CaptureFileOutput

        var label: String { "movie-file-output.audio" }
        var acceptedMediaTypes: [MediaType] { [.audio] }
        var discardsLateSamplesByDefault: Bool { false }

        func makeContext(
            format: CaptureDevice.Format, frameDuration: MediaTime, settings: Void
        ) throws(CaptureError) -> AudioFormat {
            guard let audio = format.audioFormat else {
                throw CaptureError(
                    .unsupportedFormat, "a movie's audio track takes audio, but the device streams \(format)")
            }
            return audio
        }

        func streamDidBegin(_ context: AudioFormat) { link.owner?.audioTrackFormat.withLock { $0 = context } }

        func streamDidEnd(mediaType: MediaType, output: CaptureOutput) {
            link.owner?.audioTrackFormat.withLock { $0 = nil }
        }

        func prepare(
            _ sample: CapturedSample, context: AudioFormat, budget: FrameBudget, connection: CaptureConnection
        ) -> DeliveryEngine<AudioFormat, Void>.Preparation {
            if let chunk = sample.audio { link.owner?.recordAudio(chunk) }
            return .ready((), holdsSlot: false)
        }
    }

    /// The session stopped (after `failure`, or asked to): the recording under way finishes.
    private func sessionStopped(failure: CaptureError?) {
        let error = failure.map {
            CaptureError(.sessionWasInterrupted, "the session stopped after a failure: \($0.message)", errno: $0.errno)
        }
        recordingQueue.async { [self] in
            if let current { finish(current, error: error) }
        }
    }

    /// The session lost `lostDevice`: the recording under way ends, saying whether it was ours.
    private func interrupted(lostDevice: CaptureDevice, error: CaptureError) {
        let ours = connections.contains { $0.device === lostDevice }
        let ending =
            ours
            ? CaptureError(
                .deviceWasDisconnected,
                "'\(lostDevice.localizedName)' was disconnected while recording: the file holds what came before",
                errno: error.errno)
            : CaptureError(
                .sessionWasInterrupted,
                "the session was interrupted ('\(lostDevice.localizedName)' was lost) while recording",
                errno: error.errno)
        recordingQueue.async { [self] in
            if let current { finish(current, error: ending) }
        }
    }

    // MARK: On the recording queue

    /// Writes one video frame to the current recording (on the recording queue, inside the
    /// engine's delivery).
    fileprivate func record(
        _ sample: CapturedSample, context: FileOutputStreamContext, connection: CaptureConnection
    ) -> DeliveryEngine<FileOutputStreamContext, Void>.Preparation {
        guard let recording = current, let writer = recording.writer else { return .ready((), holdsSlot: false) }
        guard var image = sample.image else { return .dropped(.droppedByProcessor("movie file output: not video")) }
        // A Motion-JPEG camera recorded with an encoder (H.264, HEVC): decoded here, once per
        // frame, into the encoder's own input format (full-range NV12, as JPEG is full range).
        if image.pixelFormat == .mjpeg, (context.settings ?? MovieOutputSettings()).codec != .jpeg {
            do throws(CaptureError) {
                image = try recording.decodeForEncoder(image)
            } catch {
                return .dropped(
                    .droppedByProcessor("movie file output: a Motion-JPEG frame did not decode: \(error.message)"))
            }
        }
        let limits = status.withLock { ($0.maxRecordedDuration, $0.maxRecordedFileSize, $0.minFreeDiskSpaceLimit) }
        // A recording takes the settings in force when its first frame comes: settings set just
        // before `startRecording` reach the stream at the next frame boundary, so a frame of the
        // stream they replace does not start it (a refused change is restored, so this ends).
        if !recording.hasVideoStream,
            context.settings
                != videoCore.currentSettings.perConnection[ObjectIdentifier(connection)] ?? MovieOutputSettings()
        {
            return .ready((), holdsSlot: false)
        }
        if !recording.hasVideoStream {
            do throws(CaptureError) {
                let settings = try videoSettings(for: image, context: context)
                try Self.mapping { () throws(RecordingError) in try writer.addVideoStream(settings) }
                recording.hasVideoStream = true
                if let audio = audioTrackFormat.withLock({ $0 }) {
                    try Self.mapping { () throws(RecordingError) in
                        try writer.addAudioStream(sampleRate: audio.sampleRate, channels: audio.channelCount)
                    }
                    recording.hasAudioStream = true
                }
            } catch {
                finish(recording, error: error)
                return .ready((), holdsSlot: false)
            }
        }
        if let first = recording.firstTime, limits.0.isNumeric,
            sample.presentationTime - first + sample.duration > limits.0 + MediaTime(value: 1, timescale: 1_000_000)
        {
            finish(
                recording,
                error: CaptureError(
                    .maximumDurationReached, "the recording reached its maximum duration of \(limits.0.seconds) s",
                    recordingSuccessfullyFinished: true))
            return .ready((), holdsSlot: false)
        }
        if limits.2 > 0, let free = Self.freeSpace(at: recording.url), free < limits.2 {
            finish(
                recording,
                error: CaptureError(
                    .diskFull,
                    "the disk of \(recording.url.path) has \(free) bytes free, less than minFreeDiskSpaceLimit \(limits.2)",
                    recordingSuccessfullyFinished: true))
            return .ready((), holdsSlot: false)
        }
        writer.maxFileSize = limits.1 > 0 ? limits.1 : nil
        do throws(RecordingError) {
            try writer.append(frameToWrite(image, context: context), presentationTime: sample.presentationTime)
        } catch {
            switch error.code {
            case .fileSizeLimitReached:
                finish(recording, error: Self.sizeLimitReached(limits.1))
            case .invalidTimestamp:
                return .dropped(.droppedByProcessor("movie file output: \(error.message)"))
            case .unsupportedFormat:
                finish(
                    recording,
                    error: CaptureError(
                        .unsupportedFormat,
                        "the camera's frames changed format mid-recording (\(error.message)): start a new recording"))
            default:
                finish(recording, error: Self.captureError(error, flag: nil))
            }
            return .ready((), holdsSlot: false)
        }
        if recording.firstTime == nil { recording.firstTime = sample.presentationTime }
        recording.frames += 1
        let duration = sample.presentationTime - (recording.firstTime ?? sample.presentationTime) + sample.duration
        let size = max(writer.bytesMuxed, writer.bytesWritten)
        status.withLock { status in
            status.recordedDuration = duration
            status.recordedFileSize = size
            status.recordedFrames = recording.frames
        }
        if !recording.didStart {
            recording.didStart = true
            let delegate = recording.delegate
            let url = recording.url
            let connections = recording.connections
            delegateCallbackQueue.async {
                delegate.delegate.fileOutput(self, didStartRecordingTo: url, from: connections)
            }
        }
        if writer.reachedSizeLimit { finish(recording, error: Self.sizeLimitReached(limits.1)) }
        return .ready((), holdsSlot: false)
    }

    /// Appends interleaved PCM (16-bit or float) to the current recording's audio track, on the
    /// recording queue, called by the audio engine for each microphone buffer.
    func recordAudio(_ chunk: AudioChunk) {
        guard let recording = current, let writer = recording.writer, recording.hasAudioStream,
            chunk.format.isInterleaved
        else { return }
        let format: MovieAudioSampleFormat
        switch chunk.format.sampleFormat {
        case .float32: format = .float32Interleaved
        case .int16: format = .int16Interleaved
        default: return
        }
        do throws(RecordingError) {
            try writer.appendAudio(chunk.bytes, format: format, presentationTime: chunk.presentationTime)
        } catch {
            switch error.code {
            case .invalidTimestamp: break
            case .fileSizeLimitReached:
                finish(recording, error: Self.sizeLimitReached(status.withLock { $0.maxRecordedFileSize }))
            default: finish(recording, error: Self.captureError(error, flag: nil))
            }
        }
    }

    /// The error that ends a recording at its ``maxRecordedFileSize``.
    private static func sizeLimitReached(_ limit: Int64) -> CaptureError {
        CaptureError(
            .maximumFileSizeReached,
            "the recording reached its maximum file size: the next frame would have made the file larger than \(limit) bytes",
            recordingSuccessfullyFinished: true)
    }

    /// Ends `recording` (if it is the current one) with `error`, and reports it once.
    private func finish(_ recording: Recording, error: CaptureError?) {
        guard current === recording else { return }
        current = nil
        var ending = error
        var playable = false
        var bytes: Int64 = 0
        if let writer = recording.writer {
            let truncated = writer.reachedSizeLimit
            do throws(RecordingError) {
                let summary = try writer.finish()
                playable = summary.isPlayable
                bytes = summary.bytesWritten
                // Frames the encoder held whose packets did not fit are not in the file.
                if truncated { recording.frames = summary.videoFramesWritten }
            } catch {
                let summary = writer.summary
                playable = summary.isPlayable && recording.frames > 0
                bytes = summary.bytesWritten
                if ending == nil || error.code == .diskFull { ending = Self.captureError(error, flag: playable) }
            }
            recording.writer = nil
        }
        if recording.frames == 0 {
            if ending == nil {
                ending = CaptureError(
                    .noDataCaptured,
                    "the recording to \(recording.url.lastPathComponent) ended before any frame arrived: is the session running?"
                )
            }
            playable = false
        }
        if var error = ending {
            error.recordingSuccessfullyFinished = playable
            ending = error
        }
        status.withLock { status in
            status.isRecording = status.pendingStarts > 0
            if recording.frames > 0 { status.recordedFileSize = bytes }
            if status.pendingStarts == 0 { status.recordedFrames = recording.frames }
        }
        let delegate = recording.delegate
        let url = recording.url
        let connections = recording.connections
        let reported = ending
        delegateCallbackQueue.async {
            delegate.delegate.fileOutput(self, didFinishRecordingTo: url, from: connections, error: reported)
        }
    }

    // MARK: Helpers

    /// Runs a writer call, turning its error into a ``CaptureError``.
    static func mapping(_ body: () throws(RecordingError) -> Void) throws(CaptureError) {
        do throws(RecordingError) {
            try body()
        } catch {
            throw captureError(error, flag: nil)
        }
    }

    /// The output's error for a writer's.
    static func captureError(_ error: RecordingError, flag: Bool?) -> CaptureError {
        let code: CaptureError.Code
        switch error.code {
        case .fileAlreadyExists: code = .fileAlreadyExists
        case .diskFull: code = .diskFull
        case .ioError: code = .ioError
        case .unsupportedContainer, .unsupportedCodec, .unsupportedFormat: code = .unsupportedFormat
        case .invalidArgument, .invalidTimestamp: code = .invalidArgument
        case .invalidState, .encoderFailed: code = .encodingFailed
        case .fileSizeLimitReached: code = .maximumFileSizeReached
        }
        return CaptureError(code, error.message, errno: error.errno, recordingSuccessfullyFinished: flag)
    }

    /// Free bytes for unprivileged users on the disk holding `url`.
    static func freeSpace(at url: URL) -> Int64? {
        var info = statvfs()
        guard statvfs(url.deletingLastPathComponent().path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }
}

/// What a file output's video is set to: each connection's encoding, and (once read for a
/// negotiation) the one chosen for its video connection.
struct FileOutputSettings: Sendable {
    var perConnection: [ObjectIdentifier: MovieOutputSettings] = [:]
    var chosen: MovieOutputSettings?
}

/// What a file output negotiated for a stream: the device's format and rate, and the settings
/// read for it.
struct FileOutputStreamContext: Sendable {
    var format: CaptureDevice.Format
    var frameDuration: MediaTime
    var settings: MovieOutputSettings?
}

/// One recording, from `startRecording` to `didFinishRecordingTo`.
///
/// Thread safety: confined to the output's recording queue.
final class Recording: @unchecked Sendable {  // unchecked: confined to the recording queue.
    let url: URL
    let delegate: RecordingDelegateBox
    let connections: [CaptureConnection]
    var writer: MovieFileWriter?
    var hasVideoStream = false
    var hasAudioStream = false
    var didStart = false
    var firstTime: MediaTime?
    var frames = 0

    init(url: URL, delegate: RecordingDelegateBox, connections: [CaptureConnection]) {
        self.url = url
        self.delegate = delegate
        self.connections = connections
    }

    /// The decoder and buffers for a Motion-JPEG camera recorded with an encoder (made at the first
    /// such frame, again when the size changes).
    private var decoder: JPEGDecoder?
    private var decoded: PixelBufferPool?

    /// `frame` (Motion-JPEG) decoded into full-range NV12, the encoder's input.
    func decodeForEncoder(_ frame: PixelBuffer) throws(CaptureError) -> PixelBuffer {
        if decoder?.width != frame.width || decoder?.height != frame.height {
            decoder = try JPEGDecoder(width: frame.width, height: frame.height, pixelFormat: .nv12FullRange)
            decoded = try PixelBufferPool(
                pixelFormat: .nv12FullRange, width: frame.width, height: frame.height, capacity: 2)
        }
        guard let output = decoded?.makePixelBuffer() else {
            throw CaptureError(.outOfBuffers, "the movie output's decoded frames are all in use")
        }
        try decoder?.decode(frame, into: output)
        return output
    }
}

/// Carries a recording delegate to the delegate queue. Delegates need not be `Sendable` (as in
/// AVFoundation, whose delegate protocols do not require it, so a ported class with mutable state
/// conforms unchanged).
// unchecked: the delegate is only ever called on the output's serial delegate queue, one call at
// a time, and the box never touches it otherwise.
final class RecordingDelegateBox: @unchecked Sendable {
    let delegate: any CaptureFileOutputRecordingDelegate
    init(_ delegate: any CaptureFileOutputRecordingDelegate) { self.delegate = delegate }
}
