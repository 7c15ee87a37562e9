/// What a ``CaptureAudioDataOutput`` delivers: a sample format, sample rate, channel count and
/// interleaving, each optional (the counterpart of `audioSettings`' `AVLinearPCMBitDepthKey` /
/// `AVLinearPCMIsFloatKey`, `AVSampleRateKey`, `AVNumberOfChannelsKey` and
/// `AVLinearPCMIsNonInterleaved`). Empty settings deliver the device's own PCM, unconverted; a
/// setting the device cannot meet is converted by libswresample.
///
/// Settings are checked when made, so an output never holds settings it cannot honour.
///
/// Thread safety: a value type; freely sendable.
public struct AudioSettings: Sendable, Hashable, CustomStringConvertible {
    /// The sample format to deliver, or `nil` for the device's.
    public let sampleFormat: AudioFormat.SampleFormat?
    /// The sample rate to deliver in hertz, or `nil` for the device's.
    public let sampleRate: Int?
    /// The channel count to deliver, or `nil` for the device's.
    public let channelCount: Int?
    /// `false` to deliver one buffer per channel (`AVLinearPCMIsNonInterleaved`); `true` (the
    /// default, as devices capture) for channels side by side in one buffer.
    public let isInterleaved: Bool

    /// The device's own PCM, unconverted.
    public init() {
        sampleFormat = nil
        sampleRate = nil
        channelCount = nil
        isInterleaved = true
    }

    /// PCM in the given layout; what is `nil` stays as the device captures it.
    ///
    /// Throws ``CaptureError/Code/invalidArgument`` for a rate that is not 1 Hz…768 kHz or a
    /// channel count that is not 1…64.
    public init(
        sampleFormat: AudioFormat.SampleFormat? = nil, sampleRate: Int? = nil, channelCount: Int? = nil,
        isInterleaved: Bool = true
    ) throws(CaptureError) {
        if let sampleRate, !(1...768_000).contains(sampleRate) {
            throw CaptureError(
                .invalidArgument, "audio sample rate \(sampleRate) Hz is invalid: give 1…768000 Hz (48000 is usual)")
        }
        if let channelCount, !(1...64).contains(channelCount) {
            throw CaptureError(.invalidArgument, "audio channel count \(channelCount) is invalid: give 1…64")
        }
        self.sampleFormat = sampleFormat
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.isInterleaved = isInterleaved
    }

    /// Exactly `format`.
    public init(format: AudioFormat) throws(CaptureError) {
        try format.validate()
        try self.init(
            sampleFormat: format.sampleFormat, sampleRate: format.sampleRate, channelCount: format.channelCount,
            isInterleaved: format.isInterleaved)
    }

    /// Whether the settings ask for nothing (the device's PCM as it comes).
    public var isEmpty: Bool { sampleFormat == nil && sampleRate == nil && channelCount == nil && isInterleaved }

    /// What the settings make of a device's `format`.
    public func resolved(from format: AudioFormat) -> AudioFormat {
        AudioFormat(
            sampleRate: sampleRate ?? format.sampleRate, channelCount: channelCount ?? format.channelCount,
            sampleFormat: sampleFormat ?? format.sampleFormat, isInterleaved: isInterleaved)
    }

    public var description: String {
        guard !isEmpty else { return "native" }
        var parts: [String] = []
        if let sampleRate { parts.append("\(sampleRate) Hz") }
        if let channelCount { parts.append("\(channelCount) ch") }
        if let sampleFormat { parts.append(sampleFormat.rawValue) }
        if !isInterleaved { parts.append("non-interleaved") }
        return parts.joined(separator: ", ")
    }
}
