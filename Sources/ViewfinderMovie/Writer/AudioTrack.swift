import CFFmpeg
import CSwresample
import CSwscale
import ViewfinderCore

/// The AAC audio stream of a ``MovieFileWriter``: FFmpeg's native AAC encoder fed from a FIFO
/// that cuts the caller's interleaved PCM into the encoder's 1024-sample frames.
///
/// Thread safety: owned by one writer, used on its queue.
package final class AudioTrack {
    package let sampleRate: Int
    package let channels: Int
    package let stream: UnsafeMutablePointer<AVStream>?

    private var encoder: UnsafeMutablePointer<AVCodecContext>?
    private var fifo: OpaquePointer?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private let frameSize: Int
    /// The sample number (since the origin) of the first sample in the FIFO.
    private var nextPts: Int64?
    /// Planar scratch for one call's samples, one run of floats per channel.
    private var planar: [Float] = []

    package init(sampleRate: Int, channels: Int, bitRate: Int, context: UnsafeMutablePointer<AVFormatContext>)
        throws(RecordingError)
    {
        guard sampleRate >= 8000, sampleRate <= 192_000, channels >= 1, channels <= 8, bitRate > 0 else {
            throw RecordingError(
                .invalidArgument,
                "an audio stream needs 8000...192000 Hz, 1...8 channels and a positive bit rate, got \(sampleRate) Hz, \(channels) channels, \(bitRate) bit/s"
            )
        }
        self.sampleRate = sampleRate
        self.channels = channels
        guard let codec = avcodec_find_encoder_by_name("aac") else {
            throw RecordingError(.unsupportedCodec, "this FFmpeg build has no native AAC encoder")
        }
        guard let stream = avformat_new_stream(context, nil), let encoder = avcodec_alloc_context3(codec) else {
            throw RecordingError(.encoderFailed, "out of memory adding the audio stream")
        }
        self.stream = stream
        self.encoder = encoder
        encoder.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
        encoder.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&encoder.pointee.ch_layout, Int32(channels))
        encoder.pointee.bit_rate = Int64(bitRate)
        encoder.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
        if context.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER != 0 {
            encoder.pointee.flags |= vf_codec_flag_global_header()
        }
        let status = avcodec_open2(encoder, codec, nil)
        guard status >= 0 else {
            throw RecordingError.ffmpeg(
                status, "cannot open the AAC encoder at \(sampleRate) Hz, \(channels) channels",
                errnoCode: .invalidArgument, ffmpegCode: .unsupportedCodec)
        }
        stream.pointee.time_base = encoder.pointee.time_base
        let copied = avcodec_parameters_from_context(stream.pointee.codecpar, encoder)
        guard copied >= 0 else { throw RecordingError.ffmpeg(copied, "describing the audio stream") }
        frameSize = max(1, Int(encoder.pointee.frame_size))
        fifo = av_audio_fifo_alloc(AV_SAMPLE_FMT_FLTP, Int32(channels), Int32(frameSize * 4))
        frame = av_frame_alloc()
        packet = av_packet_alloc()
        guard fifo != nil, frame != nil, packet != nil else {
            throw RecordingError(.encoderFailed, "out of memory making the audio FIFO")
        }
    }

    deinit {
        if let fifo { av_audio_fifo_free(fifo) }
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&encoder)
    }

    /// Queues interleaved `samples` whose first sample is number `startSample` since the origin,
    /// encodes every whole frame and hands the packets to `write`. Returns the samples taken.
    package func encode(
        _ samples: UnsafeRawBufferPointer, format: MovieAudioSampleFormat, startSample: Int64,
        write: (UnsafeMutablePointer<AVPacket>) throws(RecordingError) -> Void
    ) throws(RecordingError) -> Int {
        guard let fifo else { throw RecordingError(.invalidState, "the audio stream is closed") }
        let stride = format.bytesPerSample * channels
        guard samples.count % stride == 0 else {
            throw RecordingError(
                .invalidArgument,
                "interleaved \(format.rawValue) audio of \(channels) channels comes in multiples of \(stride) bytes, got \(samples.count)"
            )
        }
        let count = samples.count / stride
        guard count > 0 else { return 0 }
        if nextPts == nil || av_audio_fifo_size(fifo) == 0 {
            // Follow the caller's clock across gaps, never backwards.
            nextPts = max(startSample, nextPts ?? startSample)
        }
        // Deinterleave into planes (the encoder takes planar float).
        if planar.count < count * channels { planar = Array(repeating: 0, count: count * channels) }
        planar.withUnsafeMutableBufferPointer { planes in
            for channel in 0..<channels {
                let plane = planes.baseAddress! + channel * count
                switch format {
                case .float32Interleaved:
                    for index in 0..<count {
                        plane[index] = samples.loadUnaligned(
                            fromByteOffset: (index * channels + channel) * 4, as: Float.self)
                    }
                case .int16Interleaved:
                    for index in 0..<count {
                        let value = samples.loadUnaligned(
                            fromByteOffset: (index * channels + channel) * 2, as: Int16.self)
                        plane[index] = Float(value) / 32768
                    }
                }
            }
        }
        let written = planar.withUnsafeMutableBufferPointer { planes -> Int32 in
            var pointers = (0..<channels).map {
                UnsafeMutableRawPointer(planes.baseAddress! + $0 * count) as UnsafeMutableRawPointer?
            }
            return pointers.withUnsafeMutableBufferPointer {
                av_audio_fifo_write(fifo, $0.baseAddress, Int32(count))
            }
        }
        guard written == Int32(count) else { throw RecordingError(.encoderFailed, "out of memory queueing audio") }
        while Int(av_audio_fifo_size(fifo)) >= frameSize {
            try sendFrame(samples: frameSize, write: write)
        }
        return count
    }

    /// Encodes what is left in the FIFO (a short last frame) and flushes the encoder.
    package func drain(write: (UnsafeMutablePointer<AVPacket>) throws(RecordingError) -> Void) throws(RecordingError) {
        guard let encoder, let fifo else { return }
        let left = Int(av_audio_fifo_size(fifo))
        if left > 0 { try sendFrame(samples: left, write: write) }
        let status = avcodec_send_frame(encoder, nil)
        guard status >= 0 || status == vf_averror_eof() else {
            throw RecordingError.ffmpeg(status, "flushing the AAC encoder")
        }
        try receivePackets(write: write)
    }

    private func sendFrame(
        samples: Int, write: (UnsafeMutablePointer<AVPacket>) throws(RecordingError) -> Void
    ) throws(RecordingError) {
        guard let encoder, let fifo, let frame else { return }
        frame.pointee.nb_samples = Int32(samples)
        frame.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        frame.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_copy(&frame.pointee.ch_layout, &encoder.pointee.ch_layout)
        var status = av_frame_get_buffer(frame, 0)
        guard status >= 0 else { throw RecordingError.ffmpeg(status, "allocating an audio frame") }
        defer { av_frame_unref(frame) }
        guard av_audio_fifo_read(fifo, vf_frame_data(frame), Int32(samples)) == Int32(samples) else {
            throw RecordingError(.encoderFailed, "the audio FIFO ran short")
        }
        frame.pointee.pts = nextPts ?? 0
        nextPts = (nextPts ?? 0) + Int64(samples)
        status = avcodec_send_frame(encoder, frame)
        guard status >= 0 else { throw RecordingError.ffmpeg(status, "the AAC encoder refused a frame") }
        try receivePackets(write: write)
    }

    private func receivePackets(
        write: (UnsafeMutablePointer<AVPacket>) throws(RecordingError) -> Void
    ) throws(RecordingError) {
        guard let encoder, let packet else { return }
        while true {
            let status = avcodec_receive_packet(encoder, packet)
            if status == vf_averror_eagain() || status == vf_averror_eof() { return }
            guard status >= 0 else { throw RecordingError.ffmpeg(status, "the AAC encoder failed") }
            try write(packet)
            av_packet_unref(packet)
        }
    }
}
