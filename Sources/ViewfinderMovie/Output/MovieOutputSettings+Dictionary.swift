// swift-format-ignore-file: AlwaysUseLowerCamelCase

// AVCaptureMovieFileOutput's `setOutputSettings([AVVideoCodecKey: AVVideoCodecType.hevc], for:)`
// with "AV" deleted: the dictionary form, non-throwing as AVFoundation's, beside the typed
// `MovieOutputSettings` form that throws.
import ViewfinderCore

/// The compression property whose value is an average bit rate in bits per second (an `Int`), as
/// `AVVideoAverageBitRateKey`.
public let VideoAverageBitRateKey = "AverageBitRate"
/// The compression property whose value is the longest time between keyframes in seconds (a
/// `Double`), as `AVVideoMaxKeyFrameIntervalDurationKey`.
public let VideoMaxKeyFrameIntervalDurationKey = "MaxKeyFrameIntervalDuration"

extension MovieOutputSettings {
    /// Settings from AVFoundation's dictionary: ``VideoCodecKey`` (a ``VideoCodecType`` or its raw
    /// value) and ``VideoCompressionPropertiesKey`` with ``VideoAverageBitRateKey``,
    /// ``VideoQualityKey`` (0…1) and ``VideoMaxKeyFrameIntervalDurationKey`` (seconds). Throws
    /// ``CaptureError/Code/invalidArgument`` naming an unknown key or a value of the wrong type or
    /// range.
    public init(_ dictionary: [String: Any]) throws(CaptureError) {
        self.init()
        for key in dictionary.keys where key != VideoCodecKey && key != VideoCompressionPropertiesKey {
            throw CaptureError(
                .invalidArgument,
                "movie output settings key '\(key)' is not supported: use VideoCodecKey and VideoCompressionPropertiesKey"
            )
        }
        if let codec = dictionary[VideoCodecKey] {
            switch codec {
            case let type as VideoCodecType: self.codec = type
            case let name as String: self.codec = VideoCodecType(rawValue: name)
            default: throw CaptureError(.invalidArgument, "VideoCodecKey takes a VideoCodecType, not \(codec)")
            }
        }
        guard let properties = dictionary[VideoCompressionPropertiesKey] else { return }
        guard let properties = properties as? [String: Any] else {
            throw CaptureError(.invalidArgument, "VideoCompressionPropertiesKey takes a [String: Any] dictionary")
        }
        for (key, value) in properties {
            switch key {
            case VideoAverageBitRateKey:
                guard let rate = Self.number(value), rate.rounded() == rate, rate > 0, rate < 1e12 else {
                    throw CaptureError(
                        .invalidArgument, "VideoAverageBitRateKey takes a positive bit rate, not \(value)")
                }
                averageBitRate = Int(rate)
            case VideoQualityKey:
                guard let quality = Self.number(value) else {
                    throw CaptureError(.invalidArgument, "VideoQualityKey takes a number from 0 to 1, not \(value)")
                }
                self.quality = quality
            case VideoMaxKeyFrameIntervalDurationKey:
                guard let seconds = Self.number(value), seconds.isFinite, seconds > 0 else {
                    throw CaptureError(
                        .invalidArgument,
                        "VideoMaxKeyFrameIntervalDurationKey takes a positive number of seconds, not \(value)")
                }
                maxKeyFrameInterval = MediaTime(seconds: seconds, preferredTimescale: 600)
            default:
                throw CaptureError(
                    .invalidArgument,
                    "compression property '\(key)' is not supported: use VideoAverageBitRateKey, VideoQualityKey or VideoMaxKeyFrameIntervalDurationKey"
                )
            }
        }
        _ = try movieQuality()
    }

    private static func number(_ value: Any) -> Double? {
        switch value {
        case let d as Double: return d
        case let f as Float: return Double(f)
        case let i as Int: return Double(i)
        default: return nil
        }
    }

    /// AVFoundation's dictionary of these settings (what `outputSettings(for:)` returns there).
    public var dictionary: [String: Any] {
        var properties: [String: Any] = [VideoMaxKeyFrameIntervalDurationKey: maxKeyFrameInterval.seconds]
        if let averageBitRate { properties[VideoAverageBitRateKey] = averageBitRate }
        if let quality { properties[VideoQualityKey] = quality }
        return [VideoCodecKey: codec, VideoCompressionPropertiesKey: properties]
    }

    /// The value under `key` in ``dictionary`` (so `outputSettings(for: c)[VideoCodecKey]` ports).
    public subscript(key: String) -> Any? { dictionary[key] }
}

extension CaptureMovieFileOutput {
    /// Sets how `connection`'s video is encoded from AVFoundation's dictionary (see
    /// ``MovieOutputSettings/init(_:)``); `nil` restores the defaults. Non-throwing, as
    /// AVFoundation's: where AVFoundation raises — an unknown key, a bad value, a codec not in
    /// ``availableVideoCodecTypes``, a connection not this output's — this traps with a message
    /// naming the problem; a device failure while a running session renegotiates is posted as
    /// ``CaptureSession/runtimeErrorNotification``. The typed form, taking a
    /// ``MovieOutputSettings``, throws all of these instead.
    public func setOutputSettings(_ outputSettings: [String: Any]?, for connection: CaptureConnection) {
        do throws(CaptureError) {
            let typed = try outputSettings.map { (dictionary) throws(CaptureError) in
                try MovieOutputSettings(dictionary)
            }
            try setOutputSettings(typed, for: connection)
        } catch {
            switch error.code {
            case .invalidArgument, .unsupportedFormat:
                preconditionFailure(
                    "\(error.message) (call setOutputSettings(_:for:) with MovieOutputSettings, which throws, to handle this as an error)"
                )
            default:
                CaptureSession.postSettingFailure(error, from: session, object: self)
            }
        }
    }
}
