import CFFmpeg
import CSwresample
import CSwscale
import ViewfinderCore

/// The video codec a ``MovieFileWriter`` writes.
///
/// Thread safety: a value type; freely sendable.
package enum MovieVideoCodec: String, Sendable, Hashable, CaseIterable {
    /// H.264 through libx264.
    case h264
    /// HEVC (H.265) through libx265.
    case hevc
    /// Motion-JPEG passthrough: the caller's JPEG frames are written as they are, no decode and
    /// no re-encode (``MovieFileWriter/appendVideoPacket(_:presentationTime:)``).
    case mjpegPassthrough

    /// The libavcodec encoder's name, `nil` for passthrough.
    package var encoderName: String? {
        switch self {
        case .h264: return "libx264"
        case .hevc: return "libx265"
        case .mjpegPassthrough: return nil
        }
    }

    /// Whether this FFmpeg build can write the codec (passthrough always can).
    package var isAvailable: Bool {
        guard let encoderName else { return true }
        return avcodec_find_encoder_by_name(encoderName) != nil
    }
}

/// How hard the encoder works for quality: a bit rate or a constant quality.
///
/// Thread safety: a value type; freely sendable.
package enum MovieVideoQuality: Sendable, Hashable {
    /// An average bit rate in bits per second (x264/x265 ABR).
    case bitRate(Int)
    /// A constant rate factor (x264/x265 `crf`): 0 is lossless for H.264, 18 visually lossless,
    /// 23 the default, 51 worst.
    case constantRateFactor(Double)
    /// A constant quantiser (`qp`): 0 is lossless for H.264.
    case constantQuantizer(Int)
}

/// The video stream of a recording.
///
/// Thread safety: a value type; freely sendable.
package struct MovieVideoSettings: Sendable, Hashable {
    /// The codec. Default H.264.
    package var codec: MovieVideoCodec = .h264
    /// Frame width in pixels.
    package var width: Int
    /// Frame height in pixels.
    package var height: Int
    /// The pixel format of the buffers that will be appended (ignored for passthrough). NV12
    /// (either range) and I420 reach libx264 without a copy; BGRA and YUYV are converted to NV12
    /// first (I420 for libx265).
    package var sourcePixelFormat: PixelFormat = .nv12VideoRange
    /// Bit rate or constant quality. Default CRF 23.
    package var quality: MovieVideoQuality = .constantRateFactor(23)
    /// The x264/x265 speed preset. Default `veryfast`, measured to encode 1080p30 in real time on
    /// two cores.
    package var preset: String = "veryfast"
    /// An x264/x265 tune (`zerolatency`, `film`, …), `nil` for none.
    package var tune: String? = nil
    /// The longest time between keyframes. Default one second.
    package var keyframeInterval: MediaTime = MediaTime(value: 1, timescale: 1)
    /// The frame rate the camera delivers (sets the GOP length from ``keyframeInterval`` and the
    /// rate control's frame budget; timestamps still come from the frames). Default 30.
    package var nominalFrameRate: Double = 30
    /// Encoder threads. Default 2.
    package var threadCount: Int = 2
    /// Ticks per second of the stream's timestamps. Default 90 kHz (the MPEG clock).
    package var timescale: Int32 = 90_000

    /// Settings for `width` × `height` frames in `codec`, the rest defaults.
    package init(
        codec: MovieVideoCodec = .h264, width: Int, height: Int, sourcePixelFormat: PixelFormat = .nv12VideoRange
    ) {
        self.codec = codec
        self.width = width
        self.height = height
        self.sourcePixelFormat = sourcePixelFormat
    }
}

/// The interleaved PCM layouts ``MovieFileWriter/appendAudio(_:format:presentationTime:)`` takes.
///
/// Thread safety: a value type; freely sendable.
package enum MovieAudioSampleFormat: String, Sendable, Hashable {
    /// 32-bit float samples, channels interleaved.
    case float32Interleaved
    /// Signed 16-bit samples, channels interleaved.
    case int16Interleaved

    /// Bytes of one sample of one channel.
    package var bytesPerSample: Int { self == .float32Interleaved ? 4 : 2 }
}

/// Where and how a ``MovieFileWriter`` writes, beyond its streams.
///
/// Thread safety: a value type; freely sendable.
package struct MovieWriterOptions: Sendable, Hashable {
    /// How often a fragment (an index of what came before) is completed: a process killed
    /// mid-recording leaves a file playable up to the last complete fragment. ``MediaTime/invalid``
    /// writes one index at the end instead (the file is unreadable until ``MovieFileWriter/finish()``).
    /// Default 10 seconds (AVFoundation's `movieFragmentInterval`). For Matroska the interval
    /// bounds the cluster length.
    package var fragmentInterval: MediaTime = MediaTime(value: 10, timescale: 1)
    /// The container; `nil` picks it from the URL (``MovieContainer/init(url:)``).
    package var container: MovieContainer? = nil
    /// The time that becomes 0 in the file; `nil` takes the first appended sample's time.
    package var startTime: MediaTime? = nil
    /// Container metadata (`title`, `comment`, `creation_time` in ISO 8601, `location` in
    /// ISO 6709 such as `+48.8577+002.2950/`, …), written with the header; see
    /// ``MovieFileWriter/updateMetadata(_:)`` for changes while writing.
    package var metadata: [String: String] = [:]
    /// Bytes reserved (a `free` box) after the header of a fragmented MOV or MP4 file, so a header
    /// with metadata changed while recording can be rewritten in place at the end. Default 4096
    /// (a few hundred bytes of metadata more than at the start); 0 for none.
    package var metadataReserveBytes: Int = 4096
    /// For tests: a local file's writes fail with ENOSPC once it would grow past this many bytes,
    /// like a disk that fills up. `nil`: no limit.
    package var failAfterBytes: Int64? = nil
    /// Whether ``MovieFileWriter/finish()`` fsyncs the file before closing it. Default `true`.
    package var synchronizesOnFinish: Bool = true

    /// The defaults.
    package init() {}
}

/// What a finished (or failed) writer wrote.
///
/// Thread safety: a value type; freely sendable.
package struct MovieWriterSummary: Sendable, Hashable {
    /// Bytes in the file (or sent to the server).
    package var bytesWritten: Int64
    /// Payload bytes of the packets muxed (see ``MovieFileWriter/bytesMuxed``).
    package var bytesMuxed: Int64
    /// The media time written: from the start time to the end of the last packet.
    package var durationWritten: MediaTime
    /// Video frames (packets) handed to the muxer.
    package var videoFramesWritten: Int
    /// Audio samples per channel handed to the encoder.
    package var audioSamplesWritten: Int64
    /// Whether the trailer (final index) was written: the file is complete.
    package var isComplete: Bool
    /// Whether the file can be opened and played (complete, or cut off in a crash-safe layout
    /// after at least one frame).
    package var isPlayable: Bool
}
