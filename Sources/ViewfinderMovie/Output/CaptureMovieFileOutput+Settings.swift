import ViewfinderCore

extension VideoCodecType {
    /// The writer's codec for this type: H.264 through libx264, HEVC through libx265, and JPEG as
    /// Motion-JPEG passthrough (the camera's JPEG frames recorded as they are: no decode, no
    /// re-encode; only for cameras that deliver Motion-JPEG). `nil` for types movie outputs do not
    /// record.
    package var movieCodec: MovieVideoCodec? {
        switch self {
        case .h264: return .h264
        case .hevc: return .hevc
        case .jpeg: return .mjpegPassthrough
        default: return nil
        }
    }
}

/// How a ``CaptureMovieFileOutput`` encodes one connection's video (the counterpart of the
/// `AVVideoCodecKey` / `AVVideoCompressionPropertiesKey` dictionary of
/// `setOutputSettings(_:for:)`).
///
/// Thread safety: a value type; freely sendable.
public struct MovieOutputSettings: Sendable, Hashable {
    /// The codec. Default H.264.
    public var codec: VideoCodecType = .h264
    /// An average bit rate in bits per second (`AVVideoAverageBitRateKey`); `nil` (the default)
    /// encodes at a constant quality instead. Ignored for ``VideoCodecType/jpeg``.
    public var averageBitRate: Int?
    /// The constant quality from 0 (smallest) to 1 (lossless), used when ``averageBitRate`` is
    /// `nil` (`AVVideoQualityKey`). `nil` (the default) is x264's default quality (CRF 23);
    /// 1 is mathematically lossless (quantiser 0). Ignored for ``VideoCodecType/jpeg``.
    public var quality: Double?
    /// The longest time between keyframes. Default 1 second.
    public var maxKeyFrameInterval: MediaTime = MediaTime(value: 1, timescale: 1)
    /// The x264/x265 speed preset. Default `veryfast`, fast enough for 1080p30 on two cores.
    public var encoderPreset: String = "veryfast"

    /// Settings for `codec`, the rest defaults.
    public init(codec: VideoCodecType = .h264) {
        self.codec = codec
    }

    /// The writer's quality for these settings; throws for values out of range.
    package func movieQuality() throws(CaptureError) -> MovieVideoQuality {
        if let averageBitRate {
            guard averageBitRate > 0 else {
                throw CaptureError(.invalidArgument, "averageBitRate must be positive, got \(averageBitRate)")
            }
            return .bitRate(averageBitRate)
        }
        guard let quality else { return .constantRateFactor(23) }
        guard quality.isFinite, (0...1).contains(quality) else {
            throw CaptureError(.invalidArgument, "quality must lie within 0...1, got \(quality)")
        }
        if quality == 1 { return .constantQuantizer(0) }
        return .constantRateFactor(((1 - quality) * 51).rounded())
    }
}
