import CFFmpeg
import CSwresample
import CSwscale
import Foundation
import Glibc
import ViewfinderCore

/// Writes a movie: encodes pixel buffers (H.264 through libx264, HEVC through libx265) or passes
/// Motion-JPEG frames through untouched, optionally adds an AAC audio track, and muxes them with
/// libavformat into a file (`.mov` by default, `.mp4`, `.mkv`) or a streaming URL (`srt://`,
/// `rtmp://`, `rtsp://`).
///
/// Use: make the writer (which creates the file, refusing to overwrite), add the streams, append
/// samples in presentation order, then ``finish()``. The header is written with the first sample.
///
/// - Crash-safe by default: MOV and MP4 are written fragmented (an empty `moov`, then a `moof` +
///   `mdat` pair every ``MovieWriterOptions/fragmentInterval``), so a process killed mid-recording
///   leaves a file playable up to the last complete fragment; Matroska is written cluster by
///   cluster. With an invalid interval one index is written at the end.
/// - Timestamps are the samples' own, shifted so the start time is 0, never squashed: each must
///   come after the previous one (``RecordingError/Code/invalidTimestamp`` otherwise; the writer
///   stays usable).
/// - The file is complete only when ``finish()`` returns: the encoders are drained, the trailer
///   written, the file fsynced and closed.
/// - A write that fails (a full disk: ``RecordingError/Code/diskFull``) fails the writer; what
///   reached the file before stays playable in the crash-safe layouts; ``bytesWritten`` and
///   ``durationWritten`` say how much.
///
/// Thread safety: not thread-safe. Use a writer from one serial queue (the movie file output's
/// encoding queue); it never calls out to user code.
package final class MovieFileWriter: @unchecked Sendable {  // unchecked: confined to one serial queue, see above.
    /// The destination.
    package let url: URL
    /// The container being written.
    package let container: MovieContainer
    /// The options the writer was made with.
    package let options: MovieWriterOptions

    private enum State {
        case configuring, writing, finished
        case failed(RecordingError)
    }
    private var state = State.configuring
    private var isWriting: Bool {
        if case .writing = state { return true }
        return false
    }
    private var context: UnsafeMutablePointer<AVFormatContext>?
    /// The local file, when writing one: its descriptor and the counting sink over it.
    private var fileDescriptor: Int32 = -1
    private var sink: UnsafeMutablePointer<VFFileSink>?
    private var video: VideoTrack?
    private var audio: AudioTrack?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// The time that is 0 in the file.
    private var origin: MediaTime?
    /// The end of the latest packet written, in seconds since the origin, as a MediaTime.
    private var writtenEnd = MediaTime.zero
    private var trailerWritten = false
    /// The container metadata: what the header is written with, and what later updates set.
    private var metadata: [String: String]
    /// Whether the metadata changed after the header was written.
    private var metadataChangedWhileWriting = false
    /// A fragmented local file: the bytes of its header (`ftyp` + the initial `moov`) and of the
    /// `free` box reserved after it, where a header with changed metadata is rewritten at the end.
    private var rewritableHeader: (headerBytes: Int64, reservedBytes: Int64)?

    /// Video packets handed to the muxer so far.
    package private(set) var videoFramesWritten = 0
    /// Payload bytes of all packets handed to the muxer so far. A fragmented file grows only when
    /// a fragment is complete, so ``bytesWritten`` lags by up to a fragment; this does not (it
    /// leaves out the container's few bytes of boxes per frame). For `maxRecordedFileSize`.
    package private(set) var bytesMuxed: Int64 = 0
    /// Audio samples per channel handed to the encoder so far.
    package private(set) var audioSamplesWritten: Int64 = 0

    /// The largest the closed file may be, in bytes (`maxRecordedFileSize`), `nil` for no limit;
    /// may change while writing (it applies from the next packet). Before every packet reaches
    /// the muxer the writer bounds the size the file would have once closed with it — the bytes
    /// muxed, the container's boxes per packet and fragment, and the index written at the end
    /// (``MovieSizeBudget``) — and withholds it, and every packet after it, when that would pass
    /// the limit: ``reachedSizeLimit`` turns true and appending throws
    /// ``RecordingError/Code/fileSizeLimitReached``. Before each frame it also keeps room for the
    /// frames the encoder holds (x264's lookahead: they come out when ``finish()`` drains it) and
    /// the audio that follows, so a recording normally stops with every frame it took in the file.
    /// The file ``finish()`` closes is playable and never larger than the limit.
    package var maxFileSize: Int64?
    /// Whether a packet was withheld for ``maxFileSize``; nothing more is written.
    package private(set) var reachedSizeLimit = false
    /// Packets withheld for ``maxFileSize`` (the frames the encoder still held when the limit
    /// came, whose packets did not fit after all).
    package private(set) var packetsWithheld = 0
    /// The size bound's figures: the container's layout, the header's bytes, what was muxed.
    private var sizeBudget: MovieSizeBudget
    private var packetsMuxed: Int64 = 0
    private var keyframesMuxed: Int64 = 0
    /// MOV/MP4 fragments completed (seen as the destination growing after a packet was muxed).
    private var fragmentsCompleted: Int64 = 0
    private var positionAfterLastPacket: Int64 = 0
    /// The sizes of the latest video packets (at most 64), for the room kept for the next frame
    /// and for the frames the encoder holds; the largest audio packet so far.
    /// (A ring allocated with the writer: nothing is allocated per packet.)
    private var recentVideoPackets = [Int64](repeating: 0, count: 64)
    private var recentVideoPacketCount = 0
    private var nextRecentVideoPacket = 0
    private var largestAudioPacket: Int64 = 0

    /// Creates the writer and its destination: a new file (never overwriting: an existing one
    /// fails with ``RecordingError/Code/fileAlreadyExists``), or a connection to a streaming
    /// server, opened when the header is written.
    package init(url: URL, options: MovieWriterOptions = MovieWriterOptions()) throws(RecordingError) {
        guard let container = options.container ?? MovieContainer(url: url) else {
            throw RecordingError(
                .unsupportedContainer,
                "cannot record to \(url.absoluteString): use a file URL (.mov, .mp4, .mkv) or an srt://, rtmp:// or rtsp:// URL"
            )
        }
        self.url = url
        self.container = container
        self.options = options
        self.metadata = options.metadata
        self.sizeBudget = MovieSizeBudget(
            container: container, fragmented: container.supportsFragments && options.fragmentInterval.isValid)
        if options.fragmentInterval.isValid, options.fragmentInterval <= .zero {
            throw RecordingError(
                .invalidArgument,
                "the movie fragment interval must be positive (or invalid for none), got \(options.fragmentInterval)")
        }
        var context: UnsafeMutablePointer<AVFormatContext>?
        let target = url.isFileURL ? url.path : url.absoluteString
        let status = avformat_alloc_output_context2(&context, nil, container.formatName, target)
        guard status >= 0, let context else {
            throw RecordingError.ffmpeg(
                status, "libavformat has no \(container.formatName) muxer", ffmpegCode: .unsupportedContainer)
        }
        self.context = context
        packet = av_packet_alloc()
        FFmpegLog.quiet

        if url.isFileURL {
            // Read and write: a fragmented file's header is read back before it is rewritten.
            let descriptor = open(url.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                let code = errno
                release()
                switch code {
                case EEXIST:
                    throw RecordingError(
                        .fileAlreadyExists,
                        "\(url.path) already exists: the recorder never overwrites; delete it or choose another name",
                        errno: code)
                case ENOENT:
                    throw RecordingError(
                        .ioError, "cannot create \(url.path): its folder does not exist", errno: code)
                case EACCES, EPERM, EROFS:
                    throw RecordingError(
                        .ioError, "cannot create \(url.path): permission denied; record to a writable folder",
                        errno: code)
                case ENOSPC, EDQUOT:
                    throw RecordingError(.diskFull, "cannot create \(url.path): the disk is full", errno: code)
                default:
                    throw RecordingError(
                        .ioError, "cannot create \(url.path): \(String(cString: strerror(code)))", errno: code)
                }
            }
            fileDescriptor = descriptor
            let sink = UnsafeMutablePointer<VFFileSink>.allocate(capacity: 1)
            sink.initialize(
                to: VFFileSink(fd: descriptor, position: 0, size: 0, limit: options.failAfterBytes ?? 0, error: 0))
            self.sink = sink
            guard let io = vf_file_sink_open(sink, 1 << 16) else {
                release()
                throw RecordingError(.ioError, "out of memory making the I/O context for \(url.path)")
            }
            context.pointee.pb = io
            context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        }
    }

    deinit {
        // Abandoned without finish(): close without a trailer (a crash-safe file stays readable).
        release()
    }

    // MARK: Streams

    /// Adds the video stream. Only before the first sample, and only once.
    ///
    /// Throws ``RecordingError/Code/unsupportedCodec`` when the encoder is missing from this
    /// FFmpeg build, ``RecordingError/Code/invalidArgument`` for sizes, rates or settings out of
    /// range and ``RecordingError/Code/unsupportedFormat`` for a source format the encoder cannot
    /// be fed.
    package func addVideoStream(_ settings: MovieVideoSettings) throws(RecordingError) {
        try requireConfiguring("add a video stream")
        guard video == nil else {
            throw RecordingError(.invalidState, "the movie already has a video stream; a writer records one")
        }
        guard let context else { throw RecordingError(.invalidState, "the writer is closed") }
        video = try VideoTrack(settings: settings, context: context)
    }

    /// Adds an AAC audio stream (FFmpeg's native encoder) of `channels` channels at `sampleRate`
    /// Hz, fed with ``appendAudio(_:format:presentationTime:)``. Only before the first sample.
    package func addAudioStream(sampleRate: Int, channels: Int, bitRate: Int = 128_000) throws(RecordingError) {
        try requireConfiguring("add an audio stream")
        guard audio == nil else {
            throw RecordingError(.invalidState, "the movie already has an audio stream; a writer records one")
        }
        guard let context else { throw RecordingError(.invalidState, "the writer is closed") }
        audio = try AudioTrack(sampleRate: sampleRate, channels: channels, bitRate: bitRate, context: context)
    }

    /// Whether the video stream passes Motion-JPEG through.
    package var isPassthrough: Bool { video?.settings.codec == .mjpegPassthrough }

    // MARK: Appending

    /// Encodes one frame shown at `presentationTime`. The buffer must have the stream's size and
    /// its ``MovieVideoSettings/sourcePixelFormat`` — or be a Motion-JPEG buffer for a
    /// passthrough stream, whose bytes are written as they are (without a copy).
    ///
    /// Throws ``RecordingError/Code/invalidTimestamp`` for a time that is invalid, before the
    /// start time, or not after the previous frame's (the writer stays usable), and the
    /// encoding or writing failure that fails the writer otherwise.
    package func append(_ buffer: PixelBuffer, presentationTime: MediaTime) throws(RecordingError) {
        guard let video else {
            throw RecordingError(.invalidState, "add a video stream before appending frames")
        }
        try requireWritable()
        if video.settings.codec == .mjpegPassthrough {
            guard buffer.pixelFormat == .mjpeg else {
                throw RecordingError(
                    .unsupportedFormat,
                    "a Motion-JPEG passthrough stream takes JPEG frames, got \(buffer.pixelFormat.name)")
            }
            let bytes = UnsafeRawBufferPointer(start: buffer.baseAddress, count: buffer.dataSize)
            // Zero copy only without audio: with two streams libavformat's interleaving holds video
            // packets until the audio (behind by the AAC encoder's delay) catches up, and packets
            // that referenced the camera's ring would starve it (measured: 548 of 824 frames of the
            // simulated UVC camera's 4-buffer ring lost). One copy of a JPEG frame is cheap.
            try writePassthrough(bytes, presentationTime: presentationTime, owner: audio == nil ? buffer : nil)
            return
        }
        guard buffer.width == video.settings.width, buffer.height == video.settings.height,
            buffer.pixelFormat == video.settings.sourcePixelFormat
        else {
            throw RecordingError(
                .unsupportedFormat,
                "the video stream takes \(video.settings.sourcePixelFormat.name) \(video.settings.width)x\(video.settings.height) frames, got \(buffer.pixelFormat.name) \(buffer.width)x\(buffer.height)"
            )
        }
        let ticks = try streamTicks(for: presentationTime, track: video.timing)
        try writeHeaderIfNeeded()
        try reserveRoomForFrame(nextFrameBytes: nil, held: video.framesHeld)
        do throws(RecordingError) {
            try video.encode(buffer, pts: ticks) { packet throws(RecordingError) in try self.writeVideoPacket(packet) }
            video.timing.accept(ticks)
        } catch {
            throw fail(error)
        }
    }

    /// Writes one Motion-JPEG frame (a complete JPEG image) of a passthrough stream as it is,
    /// shown at `presentationTime`. The bytes are copied once into the packet.
    package func appendVideoPacket(_ jpeg: UnsafeRawBufferPointer, presentationTime: MediaTime) throws(RecordingError) {
        guard isPassthrough else {
            throw RecordingError(.invalidState, "raw video packets need a Motion-JPEG passthrough video stream")
        }
        try requireWritable()
        try writePassthrough(jpeg, presentationTime: presentationTime, owner: nil)
    }

    /// Encodes interleaved PCM (`format`, the audio stream's channel count) whose first sample
    /// is heard at `presentationTime`. Samples follow on from the previous call's (the time of
    /// each later call is used only to check order).
    package func appendAudio(
        _ samples: UnsafeRawBufferPointer, format: MovieAudioSampleFormat, presentationTime: MediaTime
    ) throws(RecordingError) {
        guard let audio else {
            throw RecordingError(.invalidState, "add an audio stream before appending audio")
        }
        try requireWritable()
        guard presentationTime.isValid else {
            throw RecordingError(.invalidTimestamp, "an audio buffer needs a valid presentation time")
        }
        if origin == nil { origin = options.startTime ?? presentationTime }
        guard let origin, presentationTime >= origin else {
            throw RecordingError(
                .invalidTimestamp, "audio at \(presentationTime) comes before the recording's start time")
        }
        try writeHeaderIfNeeded()
        if reachedSizeLimit { throw sizeLimitError() }
        do throws(RecordingError) {
            let start = (presentationTime - origin).converted(toTimescale: Int32(audio.sampleRate)).value
            let count = try audio.encode(samples, format: format, startSample: start) {
                packet throws(RecordingError) in try self.writeAudioPacket(packet)
            }
            audioSamplesWritten += Int64(count)
        } catch {
            throw fail(error)
        }
    }

    // MARK: Metadata

    /// Replaces the container metadata (keys as in ``MovieWriterOptions/metadata``). Before the
    /// first sample it is what the header gets. Once writing, it reaches the file where the
    /// container allows (``metadataUpdatesReachFile``): an unfragmented MOV or MP4 writes it into
    /// the index at ``finish()``; a fragmented local MOV or MP4 file gets its header (`ftyp` +
    /// initial `moov`) rewritten at ``finish()`` into the space reserved after it
    /// (``MovieWriterOptions/metadataReserveBytes``), if the new header fits. Matroska and
    /// streams keep what the header was written with. ``metadataInFile`` says what the file holds.
    package func updateMetadata(_ metadata: [String: String]) {
        guard case .configuring = state else {
            guard isWriting, metadata != self.metadata else { return }
            self.metadata = metadata
            metadataChangedWhileWriting = true
            if let context { Self.setMetadata(metadata, on: context) }
            sizeBudget.indexBaseBytes = 0  // the final index holds the new metadata: measured again
            return
        }
        self.metadata = metadata
    }

    /// Whether a metadata change now would reach the file (see ``updateMetadata(_:)``; a
    /// fragmented file's still depends on the new header fitting its reserve).
    package var metadataUpdatesReachFile: Bool {
        switch state {
        case .configuring: return true
        case .writing:
            if container.supportsFragments, !options.fragmentInterval.isValid { return true }
            return rewritableHeader != nil
        default: return false
        }
    }

    /// The container metadata the file holds (once finished), or will hold if finished now.
    package private(set) var metadataInFile: [String: String] = [:]

    private static func setMetadata(_ metadata: [String: String], on context: UnsafeMutablePointer<AVFormatContext>) {
        av_dict_free(&context.pointee.metadata)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            av_dict_set(&context.pointee.metadata, key, value, 0)
        }
    }

    /// The muxer options of this writer's container and fragment interval.
    private func muxerOptions() -> OpaquePointer? {
        var dictionary: OpaquePointer?
        if container.supportsFragments, options.fragmentInterval.isValid {
            // Crash-safe: an empty moov, then self-contained fragments cut by duration. Never
            // frag_keyframe (an all-keyframe MJPEG stream would make every frame a fragment) and
            // never faststart (it rewrites the file at the end).
            av_dict_set(&dictionary, "movflags", "empty_moov+default_base_moof", 0)
            let micros = max(1, options.fragmentInterval.nanoseconds / 1000)
            av_dict_set(&dictionary, "frag_duration", String(micros), 0)
        }
        if container == .matroska, options.fragmentInterval.isValid {
            let millis = max(1, options.fragmentInterval.nanoseconds / 1_000_000)
            av_dict_set(&dictionary, "cluster_time_limit", String(millis), 0)
        }
        return dictionary
    }

    /// After the trailer of a fragmented local file whose metadata changed while writing: writes
    /// the header libavformat makes for the same streams with the current metadata over the old
    /// header and its reserve (the rest of the reserve stays a `free` box), in one write. Returns
    /// whether it did; leaves the file as it was when the new header does not fit or differs from
    /// the old in more than its `moov` (a file type of its own).
    private func rewriteFragmentedHeader() -> Bool {
        guard let reserve = rewritableHeader, fileDescriptor >= 0, let context, let io = context.pointee.pb else {
            return false
        }
        avio_flush(io)
        guard vf_avio_error(io) >= 0 else { return false }
        var dictionary = muxerOptions()
        defer { av_dict_free(&dictionary) }
        guard var header = freshHeader(options: &dictionary) else { return false }
        let count = Int64(header.count)
        let room = reserve.headerBytes + reserve.reservedBytes
        guard count > 8, count == room || count + 8 <= room else { return false }
        // The file type box must be the one already in the file.
        let typeSize = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard typeSize >= 8, typeSize < count else { return false }
        var present = [UInt8](repeating: 0, count: typeSize)
        guard pread(fileDescriptor, &present, typeSize, 0) == typeSize, present[...] == header[..<typeSize]
        else { return false }
        let leftover = room - count
        if leftover > 0 {
            header += [UInt8(leftover >> 24 & 0xFF), UInt8(leftover >> 16 & 0xFF), UInt8(leftover >> 8 & 0xFF)]
            header += [UInt8(leftover & 0xFF)] + Array("free".utf8)
        }
        return pwrite(fileDescriptor, header, header.count, 0) == header.count
    }

    /// The header libavformat writes for this writer's streams and current metadata with
    /// `options`, written to memory; `nil` when it cannot be made.
    private func freshHeader(options: inout OpaquePointer?) -> [UInt8]? {
        guard let context else { return nil }
        var fresh: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_alloc_output_context2(&fresh, nil, container.formatName, nil) >= 0, let fresh else {
            return nil
        }
        defer { avformat_free_context(fresh) }
        for index in 0..<Int(context.pointee.nb_streams) {
            guard let old = context.pointee.streams[index], let stream = avformat_new_stream(fresh, nil),
                avcodec_parameters_copy(stream.pointee.codecpar, old.pointee.codecpar) >= 0
            else { return nil }
            stream.pointee.time_base = old.pointee.time_base
            stream.pointee.avg_frame_rate = old.pointee.avg_frame_rate
            stream.pointee.disposition = old.pointee.disposition
            av_dict_copy(&stream.pointee.metadata, old.pointee.metadata, 0)
        }
        Self.setMetadata(metadata, on: fresh)
        var dynamic: UnsafeMutablePointer<AVIOContext>?
        guard avio_open_dyn_buf(&dynamic) >= 0, let dynamic else { return nil }
        fresh.pointee.pb = dynamic
        let status = avformat_write_header(fresh, &options)
        var bytes: UnsafeMutablePointer<UInt8>?
        let count = Int(avio_close_dyn_buf(dynamic, &bytes))
        fresh.pointee.pb = nil
        defer { av_free(bytes) }
        guard status >= 0, let bytes, count > 0 else { return nil }
        return [UInt8](UnsafeBufferPointer(start: bytes, count: count))
    }

    // MARK: Finishing

    /// Drains the encoders, writes the trailer (the final index), fsyncs and closes the file:
    /// only now is the file complete. A writer that never wrote a sample removes the empty file
    /// it created and reports nothing written. A writer that failed closes what it wrote and
    /// throws its failure again.
    @discardableResult
    package func finish() throws(RecordingError) -> MovieWriterSummary {
        switch state {
        case .finished:
            throw RecordingError(.invalidState, "the recording is already finished")
        case .failed(let error):
            closeDestination(sync: options.synchronizesOnFinish)
            release()
            throw error
        case .configuring:
            // Nothing was ever written: leave nothing behind.
            closeDestination(sync: false)
            if url.isFileURL { unlink(url.path) }
            release()
            state = .finished
            return summary
        case .writing:
            if reachedSizeLimit, packetsMuxed == 0 {
                // Not even the first packet fitted the limit: leave nothing behind.
                closeDestination(sync: false)
                if url.isFileURL { unlink(url.path) }
                release()
                state = .finished
                return summary
            }
        }
        do throws(RecordingError) {
            if let video {
                try video.drain { packet throws(RecordingError) in try self.writeVideoPacket(packet) }
            }
            if let audio {
                try audio.drain { packet throws(RecordingError) in try self.writeAudioPacket(packet) }
            }
            guard let context else { throw RecordingError(.invalidState, "the writer is closed") }
            let status = av_write_trailer(context)
            if status < 0 { throw ioFailure(status, "writing the movie's trailer") }
            trailerWritten = true
            if metadataChangedWhileWriting {
                if container.supportsFragments, !options.fragmentInterval.isValid {
                    metadataInFile = metadata  // the one index, written just now, holds it
                } else if rewriteFragmentedHeader() {
                    metadataInFile = metadata
                }
            }
            if let error = closeDestination(sync: options.synchronizesOnFinish) { throw error }
        } catch {
            _ = fail(error)
            closeDestination(sync: options.synchronizesOnFinish)
            release()
            throw error
        }
        let result = summary
        release()
        state = .finished
        return result
    }

    /// Bytes in the file so far (or sent to the server), buffered bytes not counted.
    package var bytesWritten: Int64 {
        if let sink { return sink.pointee.size }
        if let io = context?.pointee.pb { return io.pointee.bytes_written }
        return finalBytes
    }
    private var finalBytes: Int64 = 0

    /// The media time written so far: from the start time to the end of the last packet muxed.
    package var durationWritten: MediaTime { writtenEnd }

    /// Whether the writer failed (every later call throws the failure).
    package var failure: RecordingError? {
        if case .failed(let error) = state { return error }
        return nil
    }

    /// What the writer has written.
    package var summary: MovieWriterSummary {
        let headerWritten: Bool
        switch state {
        case .configuring: headerWritten = false
        default: headerWritten = true
        }
        let crashSafe =
            container.isInherentlyCrashSafe || (container.supportsFragments && options.fragmentInterval.isValid)
        return MovieWriterSummary(
            bytesWritten: bytesWritten, bytesMuxed: bytesMuxed, durationWritten: writtenEnd,
            videoFramesWritten: videoFramesWritten,
            audioSamplesWritten: audioSamplesWritten, isComplete: trailerWritten,
            isPlayable: trailerWritten
                || (crashSafe && headerWritten && videoFramesWritten + Int(audioSamplesWritten) > 0)
        )
    }

    // MARK: Internals

    private func requireConfiguring(_ what: String) throws(RecordingError) {
        guard case .configuring = state else {
            throw RecordingError(.invalidState, "cannot \(what) once writing has begun")
        }
    }

    private func requireWritable() throws(RecordingError) {
        switch state {
        case .configuring, .writing: return
        case .finished: throw RecordingError(.invalidState, "the recording is finished; start a new writer")
        case .failed(let error): throw error
        }
    }

    /// Marks the writer failed with `error` (the first failure sticks) and returns it.
    private func fail(_ error: RecordingError) -> RecordingError {
        if case .failed(let first) = state { return first }
        if error.code == .invalidTimestamp { return error }
        state = .failed(error)
        return error
    }

    /// `time` in ticks of the track's timescale since the origin; checks that it is valid, not
    /// before the origin and after the track's previous sample, in its own and the stream's time base.
    private func streamTicks(for time: MediaTime, track: TrackTiming) throws(RecordingError) -> Int64 {
        guard time.isValid else {
            throw RecordingError(.invalidTimestamp, "a frame needs a valid presentation time")
        }
        if origin == nil { origin = options.startTime ?? time }
        guard let origin, time >= origin else {
            throw RecordingError(
                .invalidTimestamp, "a frame at \(time) comes before the recording's start time \(origin ?? .invalid)")
        }
        let ticks = (time - origin).converted(toTimescale: track.timescale).value
        if let last = track.lastTicks, ticks <= last {
            throw RecordingError(
                .invalidTimestamp,
                "a frame at \(time) does not come after the previous one (\(last) ticks of 1/\(track.timescale) s): drop it or fix the clock"
            )
        }
        if let stream = track.stream, let last = track.lastTicks, isWriting {
            let base = AVRational(num: 1, den: track.timescale)
            if av_rescale_q(ticks, base, stream.pointee.time_base) <= av_rescale_q(last, base, stream.pointee.time_base)
            {
                throw RecordingError(
                    .invalidTimestamp,
                    "a frame at \(time) is too close to the previous one for the container's time base 1/\(stream.pointee.time_base.den)"
                )
            }
        }
        return ticks
    }

    private func writeHeaderIfNeeded() throws(RecordingError) {
        guard case .configuring = state else { return }
        guard let context else { throw RecordingError(.invalidState, "the writer is closed") }
        var dictionary = muxerOptions()
        defer { av_dict_free(&dictionary) }
        Self.setMetadata(metadata, on: context)
        if !url.isFileURL, context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
            var io: UnsafeMutablePointer<AVIOContext>?
            let status = avio_open2(&io, url.absoluteString, AVIO_FLAG_WRITE, nil, nil)
            guard status >= 0 else {
                throw fail(RecordingError.ffmpeg(status, "cannot connect to \(url.absoluteString)"))
            }
            context.pointee.pb = io
        }
        let status = avformat_write_header(context, &dictionary)
        guard status >= 0 else {
            throw fail(ioFailure(status, "writing the movie's header to \(url.absoluteString)"))
        }
        state = .writing
        metadataInFile = metadata
        let reserve = Int64(options.metadataReserveBytes)
        if container.supportsFragments, options.fragmentInterval.isValid, sink != nil, reserve >= 8,
            reserve <= Int64(UInt32.max), let io = context.pointee.pb
        {
            // Room for a header with changed metadata, rewritten at the end: a `free` box between
            // the initial moov and the first fragment (fragments address their data relative to
            // their own moof, so nothing points across it).
            let headerBytes = avio_tell(io)
            var box = [UInt8](repeating: 0, count: Int(reserve))
            box[0] = UInt8(reserve >> 24 & 0xFF)
            box[1] = UInt8(reserve >> 16 & 0xFF)
            box[2] = UInt8(reserve >> 8 & 0xFF)
            box[3] = UInt8(reserve & 0xFF)
            box.replaceSubrange(4..<8, with: Array("free".utf8))
            avio_write(io, box, Int32(box.count))
            rewritableHeader = (headerBytes, reserve)
        }
        if let io = context.pointee.pb {
            sizeBudget.headerBytes = avio_tell(io)
            positionAfterLastPacket = sizeBudget.headerBytes
        }
        sizeBudget.tracks = Int64(max(1, context.pointee.nb_streams))
    }

    private func writePassthrough(
        _ jpeg: UnsafeRawBufferPointer, presentationTime: MediaTime, owner: PixelBuffer?
    ) throws(RecordingError) {
        guard let video, let packet else { throw RecordingError(.invalidState, "no video stream") }
        guard jpeg.count > 4, let base = jpeg.baseAddress, jpeg[0] == 0xFF, jpeg[1] == 0xD8 else {
            throw RecordingError(.invalidArgument, "a Motion-JPEG frame must be a JPEG image (start with FF D8)")
        }
        let ticks = try streamTicks(for: presentationTime, track: video.timing)
        try writeHeaderIfNeeded()
        try reserveRoomForFrame(nextFrameBytes: Int64(jpeg.count), held: 0)
        av_packet_unref(packet)
        if let owner {
            // Zero copy: the packet references the buffer's memory and keeps the buffer alive.
            let retained = Unmanaged.passRetained(owner).toOpaque()
            guard
                let reference = av_buffer_create(
                    UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self)), jpeg.count,
                    { opaque, _ in if let opaque { Unmanaged<PixelBuffer>.fromOpaque(opaque).release() } },
                    retained, 0)
            else {
                Unmanaged<PixelBuffer>.fromOpaque(retained).release()
                throw fail(RecordingError(.encoderFailed, "out of memory wrapping a JPEG frame"))
            }
            packet.pointee.buf = reference
            packet.pointee.data = reference.pointee.data
            packet.pointee.size = Int32(jpeg.count)
        } else {
            let status = av_new_packet(packet, Int32(jpeg.count))
            guard status >= 0 else { throw fail(.ffmpeg(status, "allocating a JPEG packet")) }
            packet.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: jpeg.count)
        }
        packet.pointee.pts = ticks
        packet.pointee.dts = ticks
        packet.pointee.duration = video.nominalFrameTicks
        packet.pointee.flags |= AV_PKT_FLAG_KEY
        packet.pointee.time_base = AVRational(num: 1, den: video.timing.timescale)
        do throws(RecordingError) {
            try writeVideoPacket(packet)
            video.timing.accept(ticks)
        } catch {
            throw fail(error)
        }
    }

    /// Muxes a video packet whose times are in the track's timescale (consumes the packet).
    private func writeVideoPacket(_ packet: UnsafeMutablePointer<AVPacket>) throws(RecordingError) {
        guard let video, let stream = video.timing.stream else { return }
        if packet.pointee.duration <= 0 { packet.pointee.duration = video.nominalFrameTicks }
        let size = Int64(packet.pointee.size)
        let keyframe = packet.pointee.flags & AV_PKT_FLAG_KEY != 0
        guard try mux(packet, from: AVRational(num: 1, den: video.timing.timescale), to: stream, keyframe: keyframe)
        else { return }
        videoFramesWritten += 1
        recentVideoPackets[nextRecentVideoPacket] = size
        nextRecentVideoPacket = (nextRecentVideoPacket + 1) % recentVideoPackets.count
        recentVideoPacketCount = min(recentVideoPacketCount + 1, recentVideoPackets.count)
    }

    private func writeAudioPacket(_ packet: UnsafeMutablePointer<AVPacket>) throws(RecordingError) {
        guard let audio, let stream = audio.stream else { return }
        let size = Int64(packet.pointee.size)
        guard try mux(packet, from: AVRational(num: 1, den: Int32(audio.sampleRate)), to: stream, keyframe: false)
        else { return }
        largestAudioPacket = max(largestAudioPacket, size)
    }

    /// Hands `packet` to the muxer, or withholds it (returning `false`) when the closed file would
    /// then pass ``maxFileSize`` or an earlier packet was withheld. Consumes the packet.
    @discardableResult
    private func mux(
        _ packet: UnsafeMutablePointer<AVPacket>, from base: AVRational, to stream: UnsafeMutablePointer<AVStream>,
        keyframe: Bool
    ) throws(RecordingError) -> Bool {
        guard let context else { throw RecordingError(.invalidState, "the writer is closed") }
        let size = Int64(packet.pointee.size)
        if let limit = maxFileSize,
            reachedSizeLimit
                || projectedSize(extraBytes: size, extraPackets: 1, extraKeyframes: keyframe ? 1 : 0) > limit
        {
            reachedSizeLimit = true
            packetsWithheld += 1
            av_packet_unref(packet)
            return false
        }
        packet.pointee.stream_index = stream.pointee.index
        av_packet_rescale_ts(packet, base, stream.pointee.time_base)
        let end = packet.pointee.pts + max(0, packet.pointee.duration)
        let timeBase = stream.pointee.time_base
        let status = av_interleaved_write_frame(context, packet)
        if status < 0 { throw ioFailure(status, "writing to \(url.isFileURL ? url.path : url.absoluteString)") }
        bytesMuxed += size
        packetsMuxed += 1
        if keyframe { keyframesMuxed += 1 }
        if let io = context.pointee.pb {
            // A fragmented MOV/MP4 holds a fragment's packets in memory: the destination grows
            // when one is complete.
            let position = avio_tell(io)
            if position > positionAfterLastPacket {
                fragmentsCompleted += 1
                positionAfterLastPacket = position
            }
        }
        if timeBase.num > 0, timeBase.den > 0 {
            let endTime = MediaTime(value: end * Int64(timeBase.num), timescale: timeBase.den)
            if endTime > writtenEnd { writtenEnd = endTime }
        }
        return true
    }

    // MARK: The size limit

    /// The most the file would hold once closed, if `extraBytes` more payload in `extraPackets`
    /// packets were muxed (see ``MovieSizeBudget``).
    private func projectedSize(extraBytes: Int64, extraPackets: Int64, extraKeyframes: Int64) -> Int64 {
        if sizeBudget.container.supportsFragments, !sizeBudget.fragmented, sizeBudget.indexBaseBytes == 0 {
            sizeBudget.indexBaseBytes = emptyIndexBytes() ?? 4096
        }
        let data = bytesMuxed + extraBytes
        let keyframes = keyframesMuxed + extraKeyframes
        let seconds = max(0, writtenEnd.seconds)
        let fragments: Int64
        switch sizeBudget.container {
        case .quickTime, .mpeg4:
            // The fragment being filled, and one more should two complete within one packet.
            fragments = sizeBudget.fragmented ? fragmentsCompleted + 2 : 0
        case .matroska:
            // A cluster at most at every keyframe, every interval and every 5 MB (libavformat's
            // defaults), and the first.
            let interval = options.fragmentInterval.isValid ? max(0.001, options.fragmentInterval.seconds) : 5
            fragments = keyframes + Int64(seconds / interval) + data / 5_000_000 + 2
        default:
            fragments = 0
        }
        return sizeBudget.bound(
            data: data, packets: packetsMuxed + extraPackets, keyframes: keyframes, fragments: fragments,
            seconds: seconds)
    }

    /// Before a video frame: throws ``RecordingError/Code/fileSizeLimitReached`` (and stops
    /// writing) when the frame — `nextFrameBytes`, or for an encoder the largest of the latest
    /// packets, as the next may be a keyframe — with the `held` frames still in the encoder (each
    /// at half again the latest packets' mean) and the audio up to the next frame would not fit.
    private func reserveRoomForFrame(nextFrameBytes: Int64?, held: Int) throws(RecordingError) {
        guard let limit = maxFileSize else { return }
        if reachedSizeLimit { throw sizeLimitError() }
        let recent = recentVideoPackets.prefix(recentVideoPacketCount)
        let mean = recent.isEmpty ? 0 : recent.reduce(0, +) / Int64(recent.count)
        let next = nextFrameBytes ?? (recent.max() ?? 0)
        let heldBytes = Int64(held) * (mean + mean / 2)
        // The AAC encoder holds two frames and its FIFO one more; a frame's time brings two.
        let audioPackets: Int64 = audio == nil ? 0 : 6
        let audioBytes = audioPackets * max(largestAudioPacket, 512)
        let projected = projectedSize(
            extraBytes: next + heldBytes + audioBytes, extraPackets: 1 + Int64(held) + audioPackets,
            extraKeyframes: 1)
        if projected > limit {
            reachedSizeLimit = true
            throw sizeLimitError()
        }
    }

    private func sizeLimitError() -> RecordingError {
        RecordingError(
            .fileSizeLimitReached,
            "the file would grow past its limit of \(maxFileSize ?? 0) bytes (container and index included): finish it"
        )
    }

    /// The bytes of the header libavformat writes for these streams with an empty index (an
    /// unfragmented MOV/MP4's final moov without its sample tables), `nil` if it cannot say.
    private func emptyIndexBytes() -> Int64? {
        var dictionary: OpaquePointer?
        av_dict_set(&dictionary, "movflags", "empty_moov", 0)
        defer { av_dict_free(&dictionary) }
        return freshHeader(options: &dictionary).map { Int64($0.count) }
    }

    /// The error for a failed libavformat call, preferring the errno the file sink saw (a
    /// muxer may report a write failure as a generic I/O error).
    private func ioFailure(_ status: Int32, _ what: String) -> RecordingError {
        if let sink, sink.pointee.error != 0 {
            return RecordingError.ffmpeg(vf_averror(sink.pointee.error), what)
        }
        return RecordingError.ffmpeg(status, what)
    }

    /// Flushes, optionally fsyncs, and closes the destination. Returns a failure of those steps.
    @discardableResult
    private func closeDestination(sync: Bool) -> RecordingError? {
        guard let context else { return nil }
        var failure: RecordingError?
        if let io = context.pointee.pb {
            avio_flush(io)
            if vf_avio_error(io) < 0 {
                failure = ioFailure(vf_avio_error(io), "flushing \(url.path)")
            }
        }
        finalBytes = bytesWritten
        if sink != nil {
            vf_file_sink_close(&context.pointee.pb)
        } else if context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0, context.pointee.pb != nil {
            avio_closep(&context.pointee.pb)
        }
        if fileDescriptor >= 0 {
            if sync, fsync(fileDescriptor) != 0, failure == nil {
                failure = RecordingError(.ioError, "fsync of \(url.path) failed", errno: errno)
            }
            if close(fileDescriptor) != 0, failure == nil {
                failure = RecordingError(.ioError, "closing \(url.path) failed", errno: errno)
            }
            fileDescriptor = -1
        }
        return failure
    }

    /// Frees everything FFmpeg-side (closing the destination first if still open).
    private func release() {
        if context != nil { closeDestination(sync: false) }
        video = nil
        audio = nil
        if let sink {
            sink.deinitialize(count: 1)
            sink.deallocate()
            self.sink = nil
        }
        if packet != nil { av_packet_free(&packet) }
        if let context {
            avformat_free_context(context)
            self.context = nil
        }
    }
}

/// FFmpeg's global log level.
package enum FFmpegLog {
    /// FFmpeg logs to stderr at "info" by default (libx264's statistics, deprecation notes); a
    /// library keeps quiet except for errors. Evaluated once, by the first writer or reader.
    package static let quiet: Void = av_log_set_level(AV_LOG_ERROR)
}

/// The timing of one track: its timescale, stream, and last sample's ticks.
package final class TrackTiming {
    package let timescale: Int32
    package var stream: UnsafeMutablePointer<AVStream>?
    package private(set) var lastTicks: Int64?

    package init(timescale: Int32) { self.timescale = timescale }

    package func accept(_ ticks: Int64) { lastTicks = ticks }
}
