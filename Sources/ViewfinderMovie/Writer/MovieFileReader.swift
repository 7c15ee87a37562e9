import CFFmpeg
import CSwresample
import CSwscale
import Foundation
import ViewfinderCore

/// Reads the video stream of any file libavformat opens (`.y4m`, `.mp4`, `.mov`, `.mkv`,
/// Motion-JPEG `.avi`, …): frames decoded into pixel buffers (NV12, I420 or BGRA, converted by
/// libswscale) with their presentation times — or, for a Motion-JPEG stream read as
/// ``PixelFormat/mjpeg``, its JPEG frames as they are stored, undecoded — or the stream's packets
/// (to check a Motion-JPEG passthrough).
///
/// Use either ``nextFrame()`` or ``nextPacket()`` on one reader, not both; ``rewind()`` starts
/// over (for looping replay).
///
/// Thread safety: not thread-safe; use a reader from one thread or serial queue. The buffers it
/// returns are ordinary pool buffers and may go anywhere.
package final class MovieFileReader: @unchecked Sendable {  // unchecked: confined to one queue, see above.
    /// What the file's video stream holds.
    package struct VideoTrackInfo: Sendable, Hashable {
        /// libavcodec's codec name (`h264`, `hevc`, `mjpeg`, `rawvideo`, …).
        package var codecName: String
        /// Frame width in pixels.
        package var width: Int
        /// Frame height in pixels.
        package var height: Int
        /// The stream's average frame rate, when the file says.
        package var frameRate: Double?
        /// The stream's duration (or the file's), ``MediaTime/invalid`` when unknown.
        package var duration: MediaTime
        /// The frame count the container declares, `nil` when it does not.
        package var declaredFrameCount: Int?
    }

    /// One stored packet of the video stream.
    package struct Packet: Sendable, Hashable {
        /// The packet's bytes as stored (for Motion-JPEG one JPEG image).
        package var data: [UInt8]
        /// When it is shown.
        package var presentationTime: MediaTime
        /// Whether it is a keyframe.
        package var isKeyframe: Bool
    }

    /// The file.
    package let url: URL
    /// Its video stream.
    package let video: VideoTrackInfo
    /// The pixel format of the decoded frames.
    package let outputPixelFormat: PixelFormat

    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var decoder: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private let streamIndex: Int32
    private let timeBase: AVRational
    private let pool: PixelBufferPool?
    /// Motion-JPEG frames handed out and still alive (``PixelFormat/mjpeg`` output), so at most
    /// `poolCapacity` are out at once, as with decoded frames.
    private var jpegFramesOut: [WeakPixelBuffer] = []
    private let poolCapacity: Int
    private var scaler: OpaquePointer?
    private var scalerSource: (format: Int32, width: Int32, height: Int32, fullRange: Bool)?
    private var endOfFile = false

    /// Opens `url` and its best video stream, decoding into `outputPixelFormat` (NV12 either
    /// range, I420 or BGRA) through a pool of `poolCapacity` buffers; ``PixelFormat/mjpeg`` (for a
    /// Motion-JPEG stream only) hands out its JPEG frames undecoded, at most `poolCapacity` alive
    /// at once.
    ///
    /// Throws ``CaptureError/Code/ioError`` when the file cannot be opened or parsed,
    /// ``CaptureError/Code/unsupportedFormat`` when it has no video stream or no decoder for it,
    /// ``CaptureError/Code/unsupportedPixelFormat`` for another output format, or Motion-JPEG
    /// output from a stream of another codec.
    package init(url: URL, outputPixelFormat: PixelFormat = .nv12VideoRange, poolCapacity: Int = 4)
        throws(CaptureError)
    {
        guard [.nv12VideoRange, .nv12FullRange, .i420, .bgra, .mjpeg].contains(outputPixelFormat) else {
            throw CaptureError(
                .unsupportedPixelFormat,
                "a movie reader decodes into NV12, I420 or BGRA (or hands out Motion-JPEG as it is), not \(outputPixelFormat.name)"
            )
        }
        self.poolCapacity = max(1, poolCapacity)
        FFmpegLog.quiet
        self.url = url
        self.outputPixelFormat = outputPixelFormat
        let target = url.isFileURL ? url.path : url.absoluteString
        var format: UnsafeMutablePointer<AVFormatContext>?
        var status = avformat_open_input(&format, target, nil, nil)
        guard status >= 0, let format else {
            throw Self.error(status, .ioError, "cannot open \(target)")
        }
        self.format = format
        status = avformat_find_stream_info(format, nil)
        guard status >= 0 else {
            avformat_close_input(&self.format)
            throw Self.error(status, .ioError, "cannot read the streams of \(target)")
        }
        var codec: UnsafePointer<AVCodec>?
        let index = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0)
        guard index >= 0, let codec, let stream = format.pointee.streams[Int(index)] else {
            avformat_close_input(&self.format)
            throw CaptureError(.unsupportedFormat, "\(target) has no video stream this FFmpeg build can decode")
        }
        streamIndex = index
        timeBase = stream.pointee.time_base
        let parameters = stream.pointee.codecpar!
        let rate = stream.pointee.avg_frame_rate
        var duration = MediaTime.invalid
        if stream.pointee.duration != vf_nopts_value(), stream.pointee.duration > 0 {
            duration = MediaTime(value: stream.pointee.duration * Int64(timeBase.num), timescale: timeBase.den)
        } else if format.pointee.duration != vf_nopts_value(), format.pointee.duration > 0 {
            duration = MediaTime(value: format.pointee.duration, timescale: 1_000_000)
        }
        video = VideoTrackInfo(
            codecName: String(cString: avcodec_get_name(parameters.pointee.codec_id)),
            width: Int(parameters.pointee.width), height: Int(parameters.pointee.height),
            frameRate: rate.num > 0 && rate.den > 0 ? Double(rate.num) / Double(rate.den) : nil,
            duration: duration,
            declaredFrameCount: stream.pointee.nb_frames > 0 ? Int(stream.pointee.nb_frames) : nil)
        if outputPixelFormat == .mjpeg {
            guard parameters.pointee.codec_id == AV_CODEC_ID_MJPEG else {
                avformat_close_input(&self.format)
                throw CaptureError(
                    .unsupportedPixelFormat,
                    "\(target) holds \(video.codecName), not Motion-JPEG: read it as NV12, I420 or BGRA")
            }
            pool = nil
        } else {
            do {
                pool = try PixelBufferPool(
                    pixelFormat: outputPixelFormat, width: video.width, height: video.height, capacity: poolCapacity)
            } catch {
                avformat_close_input(&self.format)
                throw error
            }
        }
        decoder = avcodec_alloc_context3(codec)
        frame = av_frame_alloc()
        packet = av_packet_alloc()
        guard let decoder, frame != nil, packet != nil else {
            throw CaptureError(.outOfBuffers, "out of memory opening a decoder for \(target)")
        }
        avcodec_parameters_to_context(decoder, parameters)
        decoder.pointee.pkt_timebase = timeBase
        decoder.pointee.thread_count = 2
        status = avcodec_open2(decoder, codec, nil)
        guard status >= 0 else {
            throw Self.error(status, .unsupportedFormat, "cannot open the \(video.codecName) decoder for \(target)")
        }
    }

    deinit {
        if let scaler { sws_freeContext(scaler) }
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&decoder)
        avformat_close_input(&format)
    }

    /// The next decoded frame and its presentation time, `nil` at the end of the stream.
    /// Throws ``CaptureError/Code/outOfBuffers`` while every buffer of the pool is held (the
    /// frame is not lost: the next call returns it).
    package func nextFrame() throws(CaptureError) -> (buffer: PixelBuffer, presentationTime: MediaTime)? {
        guard let pool else { return try nextJPEGFrame() }
        guard let decoder, let frame, let packet, let format else { return nil }
        guard let buffer = pool.makePixelBuffer() else {
            throw CaptureError(
                .outOfBuffers, "all \(pool.capacity) decoded frames of \(url.lastPathComponent) are still held")
        }
        while true {
            let status = avcodec_receive_frame(decoder, frame)
            if status >= 0 {
                defer { av_frame_unref(frame) }
                var pts = frame.pointee.best_effort_timestamp
                if pts == vf_nopts_value() { pts = frame.pointee.pts }
                let time =
                    pts == vf_nopts_value()
                    ? MediaTime.invalid : MediaTime(value: pts * Int64(timeBase.num), timescale: timeBase.den)
                try convert(frame, into: buffer)
                return (buffer, time)
            }
            if status == vf_averror_eof() { return nil }
            guard status == vf_averror_eagain() else {
                throw Self.error(status, .ioError, "decoding \(url.lastPathComponent) failed")
            }
            if endOfFile {
                return nil
            }
            let read = av_read_frame(format, packet)
            if read < 0 {
                guard read == vf_averror_eof() else {
                    throw Self.error(read, .ioError, "reading \(url.lastPathComponent) failed")
                }
                endOfFile = true
                avcodec_send_packet(decoder, nil)
                continue
            }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex else { continue }
            let sent = avcodec_send_packet(decoder, packet)
            guard sent >= 0 || sent == vf_averror_eagain() else {
                throw Self.error(sent, .ioError, "decoding \(url.lastPathComponent) failed")
            }
        }
    }

    /// The next stored packet of the video stream, undecoded, `nil` at the end of the file.
    package func nextPacket() throws(CaptureError) -> Packet? {
        guard let packet, let format else { return nil }
        while true {
            let read = av_read_frame(format, packet)
            if read == vf_averror_eof() { return nil }
            guard read >= 0 else { throw Self.error(read, .ioError, "reading \(url.lastPathComponent) failed") }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex else { continue }
            let pts = packet.pointee.pts != vf_nopts_value() ? packet.pointee.pts : packet.pointee.dts
            let time =
                pts == vf_nopts_value()
                ? MediaTime.invalid : MediaTime(value: pts * Int64(timeBase.num), timescale: timeBase.den)
            let data = Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
            return Packet(data: data, presentationTime: time, isKeyframe: packet.pointee.flags & AV_PKT_FLAG_KEY != 0)
        }
    }

    /// The next Motion-JPEG frame as stored, in a buffer of its own (``PixelFormat/mjpeg`` output).
    private func nextJPEGFrame() throws(CaptureError) -> (buffer: PixelBuffer, presentationTime: MediaTime)? {
        guard let packet, let format, !endOfFile else { return nil }
        jpegFramesOut.removeAll { $0.buffer == nil }
        guard jpegFramesOut.count < poolCapacity else {
            throw CaptureError(
                .outOfBuffers, "all \(poolCapacity) Motion-JPEG frames of \(url.lastPathComponent) are still held")
        }
        while true {
            let read = av_read_frame(format, packet)
            if read == vf_averror_eof() {
                endOfFile = true
                return nil
            }
            guard read >= 0 else { throw Self.error(read, .ioError, "reading \(url.lastPathComponent) failed") }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex, packet.pointee.size > 0, let data = packet.pointee.data
            else { continue }
            let pts = packet.pointee.pts != vf_nopts_value() ? packet.pointee.pts : packet.pointee.dts
            let time =
                pts == vf_nopts_value()
                ? MediaTime.invalid : MediaTime(value: pts * Int64(timeBase.num), timescale: timeBase.den)
            let bytes = Data(bytesNoCopy: data, count: Int(packet.pointee.size), deallocator: .none)
            let buffer = JPEGBytes.pixelBuffer(holding: bytes, width: video.width, height: video.height)
            jpegFramesOut.append(WeakPixelBuffer(buffer))
            return (buffer, time)
        }
    }

    /// Starts over from the first frame.
    package func rewind() throws(CaptureError) {
        guard let format else { return }
        let status = av_seek_frame(format, streamIndex, Int64.min, AVSEEK_FLAG_BACKWARD)
        if status < 0 {
            let fallback = avformat_seek_file(format, -1, Int64.min, 0, 0, 0)
            guard fallback >= 0 else { throw Self.error(fallback, .ioError, "cannot rewind \(url.lastPathComponent)") }
        }
        if let decoder { avcodec_flush_buffers(decoder) }
        endOfFile = false
    }

    private func convert(_ frame: UnsafeMutablePointer<AVFrame>, into buffer: PixelBuffer) throws(CaptureError) {
        let sourceFormat = frame.pointee.format
        let yuvj = [AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ444P].map(\.rawValue)
        let fullRange = frame.pointee.color_range == AVCOL_RANGE_JPEG || yuvj.contains(sourceFormat)
        let source = (sourceFormat, frame.pointee.width, frame.pointee.height, fullRange)
        if scaler == nil || scalerSource.map({ $0 != source }) ?? true {
            if let scaler { sws_freeContext(scaler) }
            let destination: AVPixelFormat =
                outputPixelFormat == .i420
                ? AV_PIX_FMT_YUV420P : outputPixelFormat == .bgra ? AV_PIX_FMT_BGRA : AV_PIX_FMT_NV12
            scaler = sws_getContext(
                source.1, source.2, AVPixelFormat(rawValue: sourceFormat), Int32(video.width), Int32(video.height),
                destination, SWS_BILINEAR | SWS_ACCURATE_RND, nil, nil, nil)
            guard let scaler else {
                throw CaptureError(
                    .conversionFailed, "libswscale cannot convert the decoded frames of \(url.lastPathComponent)")
            }
            let table = sws_getCoefficients(SWS_CS_ITU601)
            let destinationFull: Int32 = outputPixelFormat.isFullRange || outputPixelFormat == .bgra ? 1 : 0
            sws_setColorspaceDetails(scaler, table, fullRange ? 1 : 0, table, destinationFull, 0, 1 << 16, 1 << 16)
            scalerSource = source
        }
        var planes: [UnsafeMutablePointer<UInt8>?] = [nil, nil, nil, nil]
        var strides: [Int32] = [0, 0, 0, 0]
        for plane in 0..<buffer.planeCount {
            planes[plane] = buffer.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self)
            strides[plane] = Int32(buffer.bytesPerRow(ofPlane: plane))
        }
        let rows = sws_scale(
            scaler, vf_frame_planes(frame), vf_frame_linesizes(frame), 0, frame.pointee.height, planes, strides)
        guard rows > 0 else {
            throw CaptureError(.conversionFailed, "libswscale failed on a frame of \(url.lastPathComponent)")
        }
    }

    private static func error(_ status: Int32, _ code: CaptureError.Code, _ what: String) -> CaptureError {
        let text = RecordingError.ffmpegErrorText(status)
        let errno = vf_avunerror(status)
        return CaptureError(code, "\(what): \(text)", errno: errno > 0 && errno < 4096 ? errno : nil)
    }
}

/// A pixel buffer handed out, without keeping it alive.
private struct WeakPixelBuffer {
    weak var buffer: PixelBuffer?
    init(_ buffer: PixelBuffer) { self.buffer = buffer }
}
