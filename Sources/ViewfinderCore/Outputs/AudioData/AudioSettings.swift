/// What a ``CaptureAudioDataOutput`` delivers: a sample format, sample rate, channel count and
/// interleaving, each optional (the counterpart of `audioSettings`' `AVLinearPCMBitDepthKey` /
/// `AVLinearPCMIsFloatKey`, `AVSampleRateKey`, `AVNumberOfChannelsKey` and
/// `AVLinearPCMIsNonInterleaved`). Empty settings deliver the device's own PCM, unconverted; a
/// setting the device cannot meet is converted by libswresample.
///
/// Settings are checked when made, so an output never holds settings it cannot honour.
///
/// Thread safety: a value type; freely sendable.
public struct AudioSettings: Sendable, Hashable, CustomStringConvertible, ExpressibleByDictionaryLiteral {
    /// The sample format to deliver, or `nil` for the device's.
    public let sampleFormat: AudioFormat.SampleFormat?
    /// The sample rate to deliver in hertz, or `nil` for the device's.
    public let sampleRate: Int?
    /// The channel count to deliver, or `nil` for the device's.
    public let channelCount: Int?
    /// `false` to deliver one buffer per channel (`AVLinearPCMIsNonInterleaved`); `true` (the
    /// default, as devices capture) for channels side by side in one buffer.
    public let isInterleaved: Bool
    /// Why a dictionary literal could not be honoured (``CaptureAudioDataOutput/setAudioSettings(_:)``
    /// throws it); `nil` for valid settings.
    package let problem: String?

    /// The device's own PCM, unconverted.
    public init() {
        sampleFormat = nil
        sampleRate = nil
        channelCount = nil
        isInterleaved = true
        problem = nil
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
        self.problem = nil
    }

    /// Exactly `format`.
    public init(format: AudioFormat) throws(CaptureError) {
        try format.validate()
        try self.init(
            sampleFormat: format.sampleFormat, sampleRate: format.sampleRate, channelCount: format.channelCount,
            isInterleaved: format.isInterleaved)
    }

    /// Settings written as AVFoundation's dictionary (keys ``SampleRateKey``,
    /// ``NumberOfChannelsKey``, ``LinearPCMBitDepthKey``, ``LinearPCMIsFloatKey``,
    /// ``LinearPCMIsNonInterleaved``, ``LinearPCMIsBigEndianKey``, ``FormatIDKey``), so ported
    /// code reads `output.audioSettings = [SampleRateKey: 44_100, NumberOfChannelsKey: 1]`.
    /// A literal cannot throw: settings it cannot express are refused when set
    /// (``CaptureAudioDataOutput/setAudioSettings(_:)`` throws ``CaptureError/Code/invalidArgument``).
    public init(dictionaryLiteral elements: (String, any Sendable)...) {
        var values: [String: any Sendable] = [:]
        for (key, value) in elements { values[key] = value }
        self = Self.parse(values)
    }

    /// Settings from an AVFoundation-style dictionary (see ``init(dictionaryLiteral:)``).
    /// Throws ``CaptureError/Code/invalidArgument`` for keys or values it cannot honour.
    public init(dictionary: [String: any Sendable]) throws(CaptureError) {
        let parsed = Self.parse(dictionary)
        if let problem = parsed.problem { throw CaptureError(.invalidArgument, problem) }
        self = parsed
    }

    /// Settings that cannot be honoured, for `problem`.
    private init(problem: String) {
        sampleFormat = nil
        sampleRate = nil
        channelCount = nil
        isInterleaved = true
        self.problem = problem
    }

    private static func parse(_ values: [String: any Sendable]) -> AudioSettings {
        func integer(_ key: String) -> Int?? {
            guard let value = values[key] else { return .some(nil) }
            switch value {
            case let value as Int: return value
            case let value as UInt32: return Int(value)
            case let value as Double where value == value.rounded() && abs(value) < 1e9: return Int(value)
            default: return nil
            }
        }
        func flag(_ key: String) -> Bool?? {
            guard let value = values[key] else { return .some(nil) }
            return (value as? Bool).map { $0 }
        }
        let known: Set = [
            FormatIDKey, SampleRateKey, NumberOfChannelsKey, LinearPCMBitDepthKey, LinearPCMIsFloatKey,
            LinearPCMIsNonInterleaved, LinearPCMIsBigEndianKey,
        ]
        if let unknown = values.keys.first(where: { !known.contains($0) }) {
            return AudioSettings(problem: "audio setting '\(unknown)' is not supported: use \(known.sorted())")
        }
        guard let formatID = integer(FormatIDKey), let rate = integer(SampleRateKey),
            let channels = integer(NumberOfChannelsKey), let depth = integer(LinearPCMBitDepthKey),
            let isFloat = flag(LinearPCMIsFloatKey), let nonInterleaved = flag(LinearPCMIsNonInterleaved),
            let bigEndian = flag(LinearPCMIsBigEndianKey)
        else {
            return AudioSettings(
                problem: "audio settings need numbers for rates, channels, bit depth and format ID, and Bools for flags"
            )
        }
        if let formatID, formatID != Int(kAudioFormatLinearPCM) {
            return AudioSettings(
                problem: "an audio data output delivers linear PCM (kAudioFormatLinearPCM), not format \(formatID)")
        }
        if bigEndian == true { return AudioSettings(problem: "audio is delivered little-endian") }
        let sampleFormat: AudioFormat.SampleFormat?
        switch (isFloat, depth) {
        case (true, nil), (true, 32): sampleFormat = .float32
        case (true, let other?): return AudioSettings(problem: "float samples are 32-bit, not \(other)-bit")
        case (_, 16): sampleFormat = .int16
        case (_, 32): sampleFormat = .int32
        case (_, nil): sampleFormat = nil
        case (_, let other?): return AudioSettings(problem: "integer samples are 16- or 32-bit, not \(other)-bit")
        }
        do {
            return try AudioSettings(
                sampleFormat: sampleFormat, sampleRate: rate, channelCount: channels,
                isInterleaved: !(nonInterleaved ?? false))
        } catch {
            return AudioSettings(problem: error.message)
        }
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
