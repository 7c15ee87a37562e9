import CFFmpeg
import CSwresample
import CSwscale
import ViewfinderCore

/// The video stream of a ``MovieFileWriter``: the stream, and for encoded codecs the
/// libavcodec encoder and the converter that feeds it.
///
/// Thread safety: owned by one writer, used on its queue.
package final class VideoTrack {
    package let settings: MovieVideoSettings
    package let timing: TrackTiming
    /// One nominal frame duration in ticks (the duration of the last frame).
    package let nominalFrameTicks: Int64

    private var encoder: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// The format handed to the encoder: the source's when the encoder takes it as it is.
    private let encoderInput: PixelFormat
    /// The conversion into `encoderInput`, when the source is in another format.
    private let conversion: FrameConversion?
    /// Frames handed to the encoder and packets it returned: the difference is what it holds
    /// (x264's lookahead and frame threads), which comes out when it is drained.
    private var framesSent = 0
    private var packetsReceived = 0
    /// Frames inside the encoder, still to come out as packets.
    package var framesHeld: Int { max(0, framesSent - packetsReceived) }

    package init(settings: MovieVideoSettings, context: UnsafeMutablePointer<AVFormatContext>) throws(RecordingError) {
        guard settings.width > 0, settings.height > 0, settings.width <= 16384, settings.height <= 16384 else {
            throw RecordingError(
                .invalidArgument,
                "a video stream needs a size within 1...16384, got \(settings.width)x\(settings.height)")
        }
        guard settings.timescale > 0, settings.nominalFrameRate > 0, settings.nominalFrameRate.isFinite,
            settings.threadCount >= 1
        else {
            throw RecordingError(
                .invalidArgument,
                "video settings need a positive timescale, frame rate and thread count, got \(settings.timescale), \(settings.nominalFrameRate), \(settings.threadCount)"
            )
        }
        self.settings = settings
        timing = TrackTiming(timescale: settings.timescale)
        nominalFrameTicks = max(1, Int64((Double(settings.timescale) / settings.nominalFrameRate).rounded()))
        guard let stream = avformat_new_stream(context, nil) else {
            throw RecordingError(.encoderFailed, "out of memory adding the video stream")
        }
        timing.stream = stream
        stream.pointee.time_base = AVRational(num: 1, den: settings.timescale)
        stream.pointee.avg_frame_rate = Self.rational(settings.nominalFrameRate)

        guard let encoderName = settings.codec.encoderName else {
            // Passthrough: the stream describes the JPEG frames; no encoder.
            let parameters = stream.pointee.codecpar!
            parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
            parameters.pointee.codec_id = AV_CODEC_ID_MJPEG
            parameters.pointee.width = Int32(settings.width)
            parameters.pointee.height = Int32(settings.height)
            parameters.pointee.format = AV_PIX_FMT_YUVJ422P.rawValue
            parameters.pointee.color_range = AVCOL_RANGE_JPEG
            encoderInput = .mjpeg
            conversion = nil
            return
        }
        guard settings.width % 2 == 0, settings.height % 2 == 0 else {
            throw RecordingError(
                .invalidArgument,
                "\(settings.codec.rawValue) at 4:2:0 needs an even width and height, got \(settings.width)x\(settings.height)"
            )
        }
        guard let codec = avcodec_find_encoder_by_name(encoderName) else {
            throw RecordingError(
                .unsupportedCodec,
                "this FFmpeg build has no \(encoderName) encoder: install Debian's libavcodec59 (it includes libx264 and libx265)"
            )
        }
        // Which formats reach the encoder without conversion.
        let direct: [PixelFormat] =
            settings.codec == .h264 ? [.nv12VideoRange, .nv12FullRange, .i420] : [.i420]
        guard PixelConverter.convertible.contains(settings.sourcePixelFormat) else {
            throw RecordingError(
                .unsupportedFormat,
                "cannot encode \(settings.sourcePixelFormat.name) frames: give \(PixelConverter.convertible.map(\.name).joined(separator: ", "))"
            )
        }
        if direct.contains(settings.sourcePixelFormat) {
            encoderInput = settings.sourcePixelFormat
            conversion = nil
        } else {
            encoderInput = direct[0]
            let size = CaptureDevice.Dimensions(width: settings.width, height: settings.height)
            do {
                conversion = try FrameConversion(
                    from: settings.sourcePixelFormat, size: size, to: encoderInput, size: size, capacity: 3,
                    options: .init(threadCount: 1))
            } catch {
                throw RecordingError(.unsupportedFormat, "cannot convert frames for the encoder: \(error)")
            }
        }

        guard let encoder = avcodec_alloc_context3(codec) else {
            throw RecordingError(.encoderFailed, "out of memory making the \(encoderName) encoder")
        }
        self.encoder = encoder
        encoder.pointee.width = Int32(settings.width)
        encoder.pointee.height = Int32(settings.height)
        encoder.pointee.time_base = AVRational(num: 1, den: settings.timescale)
        encoder.pointee.framerate = Self.rational(settings.nominalFrameRate)
        encoder.pointee.pix_fmt = encoderInput == .i420 ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_NV12
        encoder.pointee.color_range = encoderInput.isFullRange ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG
        encoder.pointee.colorspace = AVCOL_SPC_SMPTE170M
        encoder.pointee.gop_size = Int32(
            max(1, (settings.keyframeInterval.seconds * settings.nominalFrameRate).rounded()))
        encoder.pointee.max_b_frames = 0
        encoder.pointee.thread_count = Int32(settings.threadCount)
        if context.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER != 0 {
            encoder.pointee.flags |= vf_codec_flag_global_header()
        }
        var dictionary: OpaquePointer?
        defer { av_dict_free(&dictionary) }
        av_dict_set(&dictionary, "preset", settings.preset, 0)
        if let tune = settings.tune { av_dict_set(&dictionary, "tune", tune, 0) }
        switch settings.quality {
        case .bitRate(let rate):
            guard rate > 0 else { throw RecordingError(.invalidArgument, "a bit rate must be positive, got \(rate)") }
            encoder.pointee.bit_rate = Int64(rate)
        case .constantRateFactor(let crf):
            guard crf >= 0, crf <= 51 else {
                throw RecordingError(.invalidArgument, "a constant rate factor must be within 0...51, got \(crf)")
            }
            av_dict_set(&dictionary, "crf", String(crf), 0)
        case .constantQuantizer(let qp):
            guard qp >= 0, qp <= 51 else {
                throw RecordingError(.invalidArgument, "a quantiser must be within 0...51, got \(qp)")
            }
            av_dict_set(&dictionary, "qp", String(qp), 0)
        }
        if settings.codec == .hevc { av_dict_set(&dictionary, "x265-params", "log-level=error:bframes=0", 0) }
        let status = avcodec_open2(encoder, codec, &dictionary)
        guard status >= 0 else {
            throw RecordingError.ffmpeg(
                status,
                "cannot open \(encoderName) with preset \(settings.preset)\(settings.tune.map { ", tune \($0)" } ?? "") and \(settings.quality)",
                errnoCode: .invalidArgument, ffmpegCode: .unsupportedCodec)
        }
        let copied = avcodec_parameters_from_context(stream.pointee.codecpar, encoder)
        guard copied >= 0 else { throw RecordingError.ffmpeg(copied, "describing the video stream") }
        frame = av_frame_alloc()
        packet = av_packet_alloc()
        guard frame != nil, packet != nil else {
            throw RecordingError(.encoderFailed, "out of memory making the video frame")
        }
    }

    deinit {
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&encoder)
    }

    /// Encodes `buffer` at `pts` ticks and hands every packet the encoder returns to `write`.
    package func encode(
        _ buffer: PixelBuffer, pts: Int64, write: (UnsafeMutablePointer<AVPacket>) throws(RecordingError) -> Void
    ) throws(RecordingError) {
        guard let encoder, let frame else { throw RecordingError(.invalidState, "the video stream has no encoder") }
        var input = buffer
        if let conversion {
            let converted: PixelBuffer?
            do throws(CaptureError) {
                converted = try conversion.convert(buffer)
            } catch {
                throw RecordingError(.encoderFailed, "converting a frame for the encoder failed: \(error)")
            }
            guard let converted else {
                throw RecordingError(.encoderFailed, "the encoder holds every conversion buffer")
            }
            input = converted
        }
        frame.pointee.width = Int32(settings.width)
        frame.pointee.height = Int32(settings.height)
        frame.pointee.format = (encoderInput == .i420 ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_NV12).rawValue
        frame.pointee.color_range = encoderInput.isFullRange ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG
        frame.pointee.colorspace = AVCOL_SPC_SMPTE170M
        frame.pointee.pts = pts
        for plane in 0..<input.planeCount {
            vf_frame_set_plane(
                frame, Int32(plane), input.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self),
                Int32(input.bytesPerRow(ofPlane: plane)))
        }
        // Reference-counted without a copy: the frame's buffer keeps the pixel buffer alive for
        // as long as the encoder holds it (libavcodec would copy a frame that is not refcounted).
        let retained = Unmanaged.passRetained(input).toOpaque()
        guard
            let reference = av_buffer_create(
                input.baseAddress.assumingMemoryBound(to: UInt8.self), input.dataSize,
                { opaque, _ in if let opaque { Unmanaged<PixelBuffer>.fromOpaque(opaque).release() } }, retained, 0)
        else {
            Unmanaged<PixelBuffer>.fromOpaque(retained).release()
            throw RecordingError(.encoderFailed, "out of memory wrapping a frame")
        }
        vf_frame_set_buffer(frame, reference)
        let status = avcodec_send_frame(encoder, frame)
        av_frame_unref(frame)
        guard status >= 0 else {
            throw RecordingError.ffmpeg(status, "the \(settings.codec.rawValue) encoder refused a frame")
        }
        framesSent += 1
        try receivePackets(write: write)
    }

    /// Flushes the encoder: every frame still inside it comes out through `write`.
    package func drain(write: (UnsafeMutablePointer<AVPacket>) throws(RecordingError) -> Void) throws(RecordingError) {
        guard let encoder else { return }
        let status = avcodec_send_frame(encoder, nil)
        guard status >= 0 || status == vf_averror_eof() else {
            throw RecordingError.ffmpeg(status, "flushing the \(settings.codec.rawValue) encoder")
        }
        try receivePackets(write: write)
    }

    private func receivePackets(
        write: (UnsafeMutablePointer<AVPacket>) throws(RecordingError) -> Void
    ) throws(RecordingError) {
        guard let encoder, let packet else { return }
        while true {
            let status = avcodec_receive_packet(encoder, packet)
            if status == vf_averror_eagain() || status == vf_averror_eof() { return }
            guard status >= 0 else {
                throw RecordingError.ffmpeg(status, "the \(settings.codec.rawValue) encoder failed")
            }
            packetsReceived += 1
            try write(packet)
            av_packet_unref(packet)
        }
    }

    /// A rational close to `rate` (exact for integer and NTSC rates).
    package static func rational(_ rate: Double) -> AVRational {
        av_d2q(rate, 1_000_000)
    }
}
