import Dispatch
import Foundation
import Synchronization
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// A file output's recordings, from `startRecording` to `didFinishRecordingTo`: the one under way,
/// its live figures and limits, and everything that writes to it. It is the body of the output's
/// video core (it asks for what the chosen codec takes and writes each accepted frame);
/// ``AudioTrack``, the audio core's body, hands it the microphone's buffers. The output's public
/// members read and set it.
///
/// Thread safety: ``status``, ``writerOptions``, ``audioTrackFormat`` and the installed video
/// settings are Mutexes; the recording under way is confined to ``queue``.
// unchecked: see above.
package final class MovieRecorder: @unchecked Sendable {
    /// What the output's figures and limits read and set.
    package struct Status {
        package var pendingStarts = 0
        package var isRecording = false
        package var outputFileURL: URL?
        package var recordedDuration = MediaTime.zero
        package var recordedFileSize: Int64 = 0
        package var recordedFrames = 0
        package var maxRecordedDuration = MediaTime.invalid
        package var maxRecordedFileSize: Int64 = 0
        package var minFreeDiskSpaceLimit: Int64 = 0
        /// Whether ``CaptureFileOutput/pauseRecording()`` holds the recording (until resumed).
        package var isPaused = false
    }
    package let status = Mutex(Status())

    /// The writer's options for the next recording: the movie output's fragment interval and
    /// metadata (and the tests' fault size).
    package let writerOptions = Mutex(MovieWriterOptions())

    /// The format of the session's audio input while its stream runs, `nil` without one: a
    /// recording whose first frame comes while it is set gets an AAC track fed by
    /// ``recordAudio(_:)``.
    package let audioTrackFormat = Mutex<AudioFormat?>(nil)

    /// The settings of the video stream installed last: a recording starts only at a frame of
    /// that stream, so settings set just before `startRecording` (which reach the stream at the
    /// next frame boundary) apply to it whole.
    private let installedVideoSettings = Mutex<MovieOutputSettings?>(nil)

    /// Where encoding and writing run (the engines' callback queue).
    package let queue = DispatchQueue(label: "viewfinder.file-output.recording")

    /// Where the recording delegate is called (the output's ``CaptureFileOutput/delegateCallbackQueue``).
    package let delegateQueue = DispatchQueue(label: "viewfinder.file-output.delegate")

    /// The recording under way. Confined to `queue`.
    private var current: Recording?

    // MARK: Starting and stopping

    /// Starts recording `output`'s connections to `url` (after finishing the one under way).
    package func start(to url: URL, delegate: RecordingDelegateBox, output: CaptureFileOutput) {
        status.withLock { status in
            status.pendingStarts += 1
            status.isRecording = true
            status.outputFileURL = url
            status.recordedDuration = .zero
            status.recordedFileSize = 0
            status.recordedFrames = 0
            status.isPaused = false
        }
        let recording = Recording(url: url, delegate: delegate, output: output, connections: output.connections)
        queue.async { [self] in
            if let current { finish(current, error: nil) }
            status.withLock { $0.pendingStarts -= 1 }
            current = recording
            do throws(RecordingError) {
                recording.writer = try MovieFileWriter(url: url, options: writerOptions.withLock { $0 })
            } catch {
                finish(recording, error: Self.captureError(error, flag: false))
            }
        }
    }

    /// Finishes the recording under way, after the frames already queued.
    package func stop() { end(with: nil) }

    /// Ends the recording under way (if any) with `error`, after everything queued before.
    private func end(with error: CaptureError?) {
        queue.async { [self] in
            if let current { finish(current, error: error) }
        }
    }

    /// Sets the metadata of the next recordings and hands it to the one under way, after every
    /// frame queued before it.
    package func setMetadata(_ metadata: [String: String]) {
        writerOptions.withLock { $0.metadata = metadata }
        queue.async { [self] in current?.writer?.updateMetadata(metadata) }
    }

    /// A video stream with `context` was installed.
    package func streamDidBegin(_ context: FileOutputStreamContext) {
        installedVideoSettings.withLock { $0 = context.settings ?? MovieOutputSettings() }
    }

    /// The session stopped (after `failure`, or asked to): the recording under way finishes.
    package func sessionDidStopRunning(failure: CaptureError?, output: CaptureOutput) {
        end(
            with: failure.map {
                CaptureError(
                    .sessionWasInterrupted, "the session stopped after a failure: \($0.message)", errno: $0.errno)
            })
    }

    /// The session lost `lostDevice`: the recording under way ends, saying whether it fed
    /// `output`.
    package func sessionWasInterrupted(lostDevice: CaptureDevice, error: CaptureError, output: CaptureOutput) {
        let ours = output.connections.contains { $0.device === lostDevice }
        end(
            with: ours
                ? CaptureError(
                    .deviceWasDisconnected,
                    "'\(lostDevice.localizedName)' was disconnected while recording: the file holds what came before",
                    errno: error.errno)
                : CaptureError(
                    .sessionWasInterrupted,
                    "the session was interrupted ('\(lostDevice.localizedName)' was lost) while recording",
                    errno: error.errno))
    }

    // MARK: On the recording queue

    /// Writes one video frame to the current recording (on the recording queue, inside the
    /// engine's delivery): nothing is left to hand over.
    package func prepare(
        _ sample: CapturedSample, context: FileOutputStreamContext, budget: FrameBudget, connection: CaptureConnection
    ) -> DeliveryEngine<FileOutputStreamContext, Void>.Preparation {
        guard let recording = current, let writer = recording.writer else { return .ready((), holdsSlot: false) }
        guard var image = sample.image else { return .dropped(.droppedByProcessor("movie file output: not video")) }
        let chosen = context.settings ?? MovieOutputSettings()
        // A Motion-JPEG camera recorded with an encoder (H.264, HEVC): decoded here, once per
        // frame, into the encoder's own input format (full-range NV12, as JPEG is full range).
        if image.pixelFormat == .mjpeg, chosen.codec != .jpeg {
            do throws(CaptureError) {
                // Every decoded buffer still held (by the encoder): a drop that costs nothing.
                guard let decoded = try recording.decodeForEncoder(image, shared: sample.decodedFrame) else {
                    return .dropped(.outOfBuffers)
                }
                image = decoded
            } catch {
                return .dropped(
                    .droppedByProcessor("movie file output: a Motion-JPEG frame did not decode: \(error.message)"))
            }
        }
        // Paused: frames are not written; at the first frame after resuming, the time spent
        // paused is taken off every later timestamp, so the file has no gap.
        let paused = status.withLock { $0.isPaused }
        if paused, recording.didStart {
            if recording.pausedAt == nil {
                recording.pausedAt = sample.presentationTime
                delegateQueue.async {
                    recording.delegate.delegate.fileOutput(
                        recording.output, didPauseRecordingTo: recording.url, from: recording.connections)
                }
            }
            return .ready((), holdsSlot: false)
        }
        if !paused, let pausedAt = recording.pausedAt {
            recording.pausedAt = nil
            recording.timeOffset = recording.timeOffset + (sample.presentationTime - pausedAt)
            delegateQueue.async {
                recording.delegate.delegate.fileOutput(
                    recording.output, didResumeRecordingTo: recording.url, from: recording.connections)
            }
        }
        let presentationTime = sample.presentationTime - recording.timeOffset
        let limits = status.withLock { ($0.maxRecordedDuration, $0.maxRecordedFileSize, $0.minFreeDiskSpaceLimit) }
        // A frame of a stream that settings set since have replaced does not start a recording
        // (a refused change is restored and its stream kept, so this ends).
        if !recording.hasVideoStream, chosen != installedVideoSettings.withLock({ $0 }) {
            return .ready((), holdsSlot: false)
        }
        if !recording.hasVideoStream {
            do throws(CaptureError) {
                let settings = try Self.videoSettings(for: image, context: context)
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
            presentationTime - first + sample.duration > limits.0 + MediaTime(value: 1, timescale: 1_000_000)
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
            try writer.append(Self.frameToWrite(image), presentationTime: presentationTime)
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
        if recording.firstTime == nil { recording.firstTime = presentationTime }
        recording.frames += 1
        let duration = presentationTime - (recording.firstTime ?? presentationTime) + sample.duration
        let size = max(writer.bytesMuxed, writer.bytesWritten)
        status.withLock { status in
            status.recordedDuration = duration
            status.recordedFileSize = size
            status.recordedFrames = recording.frames
        }
        if !recording.didStart {
            recording.didStart = true
            delegateQueue.async {
                recording.delegate.delegate.fileOutput(
                    recording.output, didStartRecordingTo: recording.url, from: recording.connections)
            }
        }
        if writer.reachedSizeLimit { finish(recording, error: Self.sizeLimitReached(limits.1)) }
        return .ready((), holdsSlot: false)
    }

    /// Appends interleaved PCM (16-bit or float) to the current recording's audio track, on the
    /// recording queue, called by the audio engine for each microphone buffer.
    package func recordAudio(_ chunk: AudioChunk) {
        guard let recording = current, let writer = recording.writer, recording.hasAudioStream,
            chunk.format.isInterleaved, recording.pausedAt == nil, !status.withLock({ $0.isPaused })
        else { return }
        let format: MovieAudioSampleFormat
        switch chunk.format.sampleFormat {
        case .float32: format = .float32Interleaved
        case .int16: format = .int16Interleaved
        default: return
        }
        do throws(RecordingError) {
            try writer.appendAudio(
                chunk.bytes, format: format, presentationTime: chunk.presentationTime - recording.timeOffset)
        } catch {
            switch error.code {
            case .invalidTimestamp: break
            case .fileSizeLimitReached:
                finish(recording, error: Self.sizeLimitReached(status.withLock { $0.maxRecordedFileSize }))
            default: finish(recording, error: Self.captureError(error, flag: nil))
            }
        }
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
        let reported = ending
        delegateQueue.async {
            recording.delegate.delegate.fileOutput(
                recording.output, didFinishRecordingTo: recording.url, from: recording.connections, error: reported)
        }
    }

    // MARK: What a frame is written as

    /// The video stream for frames like `buffer` from `context`; throws when it cannot be recorded.
    package static func videoSettings(for buffer: PixelBuffer, context: FileOutputStreamContext) throws(CaptureError)
        -> MovieVideoSettings
    {
        let chosen = context.settings ?? MovieOutputSettings()
        if chosen.codec == .jpeg, buffer.pixelFormat != .mjpeg {
            throw CaptureError(
                .unsupportedFormat,
                "Motion-JPEG passthrough needs a camera delivering Motion-JPEG, this one delivers \(buffer.pixelFormat.name): record H.264 instead"
            )
        }
        var video = MovieVideoSettings(
            codec: chosen.codec.movieCodec ?? .h264, width: buffer.width, height: buffer.height,
            sourcePixelFormat: buffer.pixelFormat)
        video.quality = try chosen.movieQuality()
        video.keyframeInterval = chosen.maxKeyFrameInterval
        video.preset = chosen.encoderPreset
        if context.frameDuration.isNumeric, context.frameDuration > .zero {
            video.nominalFrameRate = 1 / context.frameDuration.seconds
        }
        return video
    }

    /// What a frame is written as: the frame itself, or (Motion-JPEG passthrough) the frame with
    /// whatever a player needs added.
    package static func frameToWrite(_ buffer: PixelBuffer) -> PixelBuffer {
        guard buffer.pixelFormat == .mjpeg else { return buffer }
        // UVC Motion-JPEG frames often lack Huffman tables, which players other than FFmpeg's
        // need: add the standard ones. A frame that has its tables (or is no JPEG this can parse)
        // is written as it is, so passthrough stays byte-identical for complete JPEGs.
        let frame = UnsafeRawBufferPointer(start: buffer.baseAddress, count: buffer.dataSize)
        guard JPEGFrame.needsStandardHuffmanTables(frame) else { return buffer }
        let completed = JPEGFrame.withStandardHuffmanTables([UInt8](frame))
        return JPEGBytes.pixelBuffer(holding: Data(completed), width: buffer.width, height: buffer.height)
    }

    // MARK: Errors

    /// The error that ends a recording at its ``CaptureFileOutput/maxRecordedFileSize``.
    private static func sizeLimitReached(_ limit: Int64) -> CaptureError {
        CaptureError(
            .maximumFileSizeReached,
            "the recording reached its maximum file size: the next frame would have made the file larger than \(limit) bytes",
            recordingSuccessfullyFinished: true)
    }

    /// Runs a writer call, turning its error into a ``CaptureError``.
    package static func mapping(_ body: () throws(RecordingError) -> Void) throws(CaptureError) {
        do throws(RecordingError) {
            try body()
        } catch {
            throw captureError(error, flag: nil)
        }
    }

    /// The output's error for a writer's.
    package static func captureError(_ error: RecordingError, flag: Bool?) -> CaptureError {
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
    package static func freeSpace(at url: URL) -> Int64? {
        var info = statvfs()
        guard statvfs(url.deletingLastPathComponent().path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }
}

extension MovieRecorder: OutputBody {
    package var label: String { "movie-file-output" }
    package var acceptedMediaTypes: [MediaType] { [.video] }
    package var initialSettings: FileOutputSettings { FileOutputSettings() }
    package var discardsLateSamplesByDefault: Bool { false }

    /// The settings with the encoding chosen for the output's video connection.
    package func resolve(_ settings: FileOutputSettings, for output: CaptureOutput) -> FileOutputSettings {
        var resolved = settings
        resolved.chosen =
            output.connection(with: .video).flatMap { settings.perConnection[ObjectIdentifier($0)] }
            ?? MovieOutputSettings()
        return resolved
    }

    /// Passthrough asks for Motion-JPEG natively (zero copy); encoders take NV12 without a copy.
    package func request(for settings: FileOutputSettings) -> OutputRequest {
        OutputRequest(pixelFormat: settings.chosen?.codec == .jpeg ? .mjpeg : .nv12VideoRange)
    }

    package func makeContext(
        format: CaptureDevice.Format, frameDuration: MediaTime, settings: FileOutputSettings
    ) throws(CaptureError) -> FileOutputStreamContext {
        FileOutputStreamContext(format: format, frameDuration: frameDuration, settings: settings.chosen)
    }

    /// The microphone's job: its buffers become the AAC track of recordings that start while its
    /// stream runs (interleaved 16-bit or float PCM), written in `prepare` on the recording queue.
    package struct AudioTrack: OutputBody {
        package let recorder: MovieRecorder

        package var label: String { "movie-file-output.audio" }
        package var acceptedMediaTypes: [MediaType] { [.audio] }
        package var discardsLateSamplesByDefault: Bool { false }

        package func makeContext(
            format: CaptureDevice.Format, frameDuration: MediaTime, settings: Void
        ) throws(CaptureError) -> AudioFormat {
            guard let audio = format.audioFormat else {
                throw CaptureError(
                    .unsupportedFormat, "a movie's audio track takes audio, but the device streams \(format)")
            }
            return audio
        }

        package func streamDidBegin(_ context: AudioFormat) { recorder.audioTrackFormat.withLock { $0 = context } }

        package func streamDidEnd(mediaType: MediaType, output: CaptureOutput) {
            recorder.audioTrackFormat.withLock { $0 = nil }
        }

        package func prepare(
            _ sample: CapturedSample, context: AudioFormat, budget: FrameBudget, connection: CaptureConnection
        ) -> DeliveryEngine<AudioFormat, Void>.Preparation {
            if let chunk = sample.audio { recorder.recordAudio(chunk) }
            return .ready((), holdsSlot: false)
        }
    }
}

/// What a file output's video is set to: each connection's encoding, and (once read for a
/// negotiation) the one chosen for its video connection.
package struct FileOutputSettings: Sendable {
    package var perConnection: [ObjectIdentifier: MovieOutputSettings] = [:]
    package var chosen: MovieOutputSettings?
}

/// What a file output negotiated for a stream: the device's format and rate, and the settings
/// read for it.
package struct FileOutputStreamContext: Sendable {
    package var format: CaptureDevice.Format
    package var frameDuration: MediaTime
    package var settings: MovieOutputSettings?
}

/// One recording, from `startRecording` to `didFinishRecordingTo`. Holds its output until then,
/// so the delegate hears its end.
///
/// Thread safety: confined to the output's recording queue (its constants are read on the
/// delegate queue).
package final class Recording: @unchecked Sendable {  // unchecked: confined to the recording queue.
    package let url: URL
    package let delegate: RecordingDelegateBox
    package let output: CaptureFileOutput
    package let connections: [CaptureConnection]
    package var writer: MovieFileWriter?
    package var hasVideoStream = false
    package var hasAudioStream = false
    package var didStart = false
    package var firstTime: MediaTime?
    package var frames = 0
    /// The presentation time of the first frame not written since a pause, while paused.
    package var pausedAt: MediaTime?
    /// The time spent paused so far, taken off every timestamp written after it.
    package var timeOffset = MediaTime.zero

    package init(url: URL, delegate: RecordingDelegateBox, output: CaptureFileOutput, connections: [CaptureConnection])
    {
        self.url = url
        self.delegate = delegate
        self.output = output
        self.connections = connections
    }

    /// The decoder and buffers for a Motion-JPEG camera recorded with an encoder (made at the first
    /// such frame, again when the size changes).
    private var decoder: JPEGDecoder?
    private var decoded: PixelBufferPool?

    /// The format the device's shared decode gave the first frame, which later frames keep (the
    /// encoder's input converter is made for it).
    private var sharedFormat: FrameFormat?

    /// `frame` (Motion-JPEG) decoded into full-range NV12, the encoder's input; `nil` when every
    /// decoded buffer is still held (no error is made: it is the per-frame path). With the
    /// device's shared decode (`shared`), the image every output shares, in the format the
    /// session planned for them when it is whole-size (the encoder's input converter takes it).
    package func decodeForEncoder(_ frame: PixelBuffer, shared: DecodedFrame?) throws(CaptureError) -> PixelBuffer? {
        if let shared {
            let format = sharedFormat ?? shared.wholeFormat(of: frame, fallback: .nv12FullRange)
            sharedFormat = format
            switch shared.decoded(frame, as: format) {
            case .success(let image): return image
            case .failure(let drop):
                if case .outOfBuffers = drop.reason { return nil }
                throw CaptureError(.conversionFailed, "the frame did not decode (\(drop.reason))")
            }
        }
        if decoder?.width != frame.width || decoder?.height != frame.height {
            decoder = try JPEGDecoder(width: frame.width, height: frame.height, pixelFormat: .nv12FullRange)
            decoded = try PixelBufferPool(
                pixelFormat: .nv12FullRange, width: frame.width, height: frame.height, capacity: 2)
        }
        guard let output = decoded?.makePixelBuffer() else { return nil }
        try decoder?.decode(frame, into: output)
        return output
    }
}

/// Carries a recording delegate to the delegate queue. Delegates need not be `Sendable` (as in
/// AVFoundation, whose delegate protocols do not require it, so a ported class with mutable state
/// conforms unchanged).
// unchecked: the delegate is only ever called on the output's serial delegate queue, one call at
// a time, and the box never touches it otherwise.
package final class RecordingDelegateBox: @unchecked Sendable {
    package let delegate: any CaptureFileOutputRecordingDelegate
    package init(_ delegate: any CaptureFileOutputRecordingDelegate) { self.delegate = delegate }
}
