/// The layout of linear PCM audio: sample rate, channel count, sample format and interleaving,
/// the counterpart of Core Audio's `AudioStreamBasicDescription` as a `CMAudioFormatDescription`
/// carries it (and of `AVAudioFormat`).
///
/// Samples are little-endian (the host order on every platform Viewfinder runs on). Integer
/// samples are signed and full scale is `Int16.max + 1` or `Int32.max + 1`; float samples are
/// nominally within −1…1.
///
/// ```swift
/// let format = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16)
/// format.bytesPerFrame  // 4
/// ```
///
/// Thread safety: a value type; freely sendable.
public struct AudioFormat: Sendable, Hashable, CustomStringConvertible {
    /// How one sample of one channel is stored.
    public enum SampleFormat: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Signed 16-bit integers (`kAudioFormatFlagIsSignedInteger`, 16 bits per channel; ALSA `S16_LE`).
        case int16
        /// Signed 32-bit integers (`kAudioFormatFlagIsSignedInteger`, 32 bits per channel; ALSA `S32_LE`).
        case int32
        /// 32-bit IEEE floats (`kAudioFormatFlagIsFloat`, 32 bits per channel; ALSA `FLOAT_LE`).
        case float32

        /// Bytes of one sample of one channel.
        public var bytesPerSample: Int {
            switch self {
            case .int16: return 2
            case .int32, .float32: return 4
            }
        }

        /// Bits of one sample of one channel (`mBitsPerChannel`).
        public var bitsPerSample: Int { bytesPerSample * 8 }

        /// Whether samples are floating point.
        public var isFloat: Bool { self == .float32 }

        public var description: String { rawValue }
    }

    /// Frames per second (`mSampleRate`). Viewfinder's rates are whole numbers of hertz.
    public var sampleRate: Int
    /// Channels per frame (`mChannelsPerFrame`).
    public var channelCount: Int
    /// How each sample is stored.
    public var sampleFormat: SampleFormat
    /// `true`: one buffer with the channels of each frame side by side (L R L R …). `false`: one
    /// buffer per channel (`kAudioFormatFlagIsNonInterleaved`).
    public var isInterleaved: Bool

    /// A linear PCM format; interleaved unless told otherwise.
    public init(sampleRate: Int, channelCount: Int, sampleFormat: SampleFormat, isInterleaved: Bool = true) {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.sampleFormat = sampleFormat
        self.isInterleaved = isInterleaved
    }

    /// Bytes of one frame in one buffer (`mBytesPerFrame`): all channels when interleaved,
    /// one channel otherwise.
    public var bytesPerFrame: Int { sampleFormat.bytesPerSample * (isInterleaved ? channelCount : 1) }

    /// Bytes of one packet (`mBytesPerPacket`); linear PCM has one frame per packet.
    public var bytesPerPacket: Int { bytesPerFrame }

    /// Frames per packet (`mFramesPerPacket`): always 1 for linear PCM.
    public var framesPerPacket: Int { 1 }

    /// Buffers one chunk of audio takes: 1 when interleaved, the channel count otherwise.
    public var bufferCount: Int { isInterleaved ? 1 : channelCount }

    /// Whether the format can describe real audio: a positive rate and 1…64 channels.
    public var isValid: Bool { sampleRate > 0 && (1...64).contains(channelCount) }

    /// The duration of `frames` frames, exact in the sample rate's timescale.
    public func duration(ofFrames frames: Int) -> MediaTime {
        guard isValid, sampleRate <= Int(Int32.max) else { return .invalid }
        return MediaTime(value: Int64(frames), timescale: Int32(sampleRate))
    }

    /// Throws ``CaptureError/Code/invalidArgument`` unless the format ``isValid``.
    public func validate() throws(CaptureError) {
        guard isValid else {
            throw CaptureError(
                .invalidArgument,
                "audio format \(self) is invalid: the sample rate must be positive and the channel count 1…64")
        }
    }

    public var description: String {
        "\(sampleRate) Hz, \(channelCount) ch, \(sampleFormat)\(isInterleaved ? "" : ", non-interleaved")"
    }
}
