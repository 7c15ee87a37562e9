// swift-format-ignore-file: AlwaysUseLowerCamelCase
// Core Media's C-style names with "CM" deleted (CMTimeMake → MediaTimeMake, CMSampleBuffer… →
// SampleBuffer…), so ported code compiles unchanged. Each forwards to the Swift API it names.

/// `kCMTimeZero`: zero seconds (``MediaTime/zero``).
public let kMediaTimeZero = MediaTime.zero
/// `kCMTimeInvalid`: an invalid time (``MediaTime/invalid``).
public let kMediaTimeInvalid = MediaTime.invalid
/// `kCMTimeIndefinite`: an indefinite time (``MediaTime/indefinite``).
public let kMediaTimeIndefinite = MediaTime.indefinite
/// `kCMTimePositiveInfinity`: +infinity (``MediaTime/positiveInfinity``).
public let kMediaTimePositiveInfinity = MediaTime.positiveInfinity
/// `kCMTimeNegativeInfinity`: -infinity (``MediaTime/negativeInfinity``).
public let kMediaTimeNegativeInfinity = MediaTime.negativeInfinity
/// `kCMTimeMaxTimescale`: the largest timescale arithmetic picks for a common timescale.
public let kMediaTimeMaxTimescale = MediaTime.maxTimescale

/// `CMTimeMake(value:timescale:)`: `value / timescale` seconds; invalid for a timescale ≤ 0.
public func MediaTimeMake(value: Int64, timescale: Int32) -> MediaTime {
    MediaTime(value: value, timescale: timescale)
}

/// `CMTimeMakeWithSeconds(_:preferredTimescale:)`: see ``MediaTime/init(seconds:preferredTimescale:)``.
public func MediaTimeMakeWithSeconds(_ seconds: Double, preferredTimescale: Int32) -> MediaTime {
    MediaTime(seconds: seconds, preferredTimescale: preferredTimescale)
}

/// `CMTimeGetSeconds(_:)`: NaN for invalid or indefinite, ±infinity for infinite times.
public func MediaTimeGetSeconds(_ time: MediaTime) -> Double {
    time.seconds
}

/// `CMTimeCompare(_:_:)`: -1, 0 or 1 in the order
/// `-infinity < numeric < indefinite < +infinity < invalid`.
public func MediaTimeCompare(_ time1: MediaTime, _ time2: MediaTime) -> Int32 {
    MediaTime.compare(time1, time2)
}

/// `CMTimeAdd(_:_:)`: the sum, by the rules in ``MediaTime``.
public func MediaTimeAdd(_ lhs: MediaTime, _ rhs: MediaTime) -> MediaTime {
    lhs + rhs
}

/// `CMTimeSubtract(_:_:)`: the difference, by the rules in ``MediaTime``.
public func MediaTimeSubtract(_ lhs: MediaTime, _ rhs: MediaTime) -> MediaTime {
    lhs - rhs
}

/// `CMTimeMultiply(_:multiplier:)`: the product, by the rules in ``MediaTime``.
public func MediaTimeMultiply(_ time: MediaTime, multiplier: Int32) -> MediaTime {
    time * multiplier
}

/// `CMTimeMultiplyByFloat64(_:multiplier:)`: the product, by the rules in ``MediaTime``.
public func MediaTimeMultiplyByFloat64(_ time: MediaTime, multiplier: Double) -> MediaTime {
    time * multiplier
}

/// `CMTimeConvertScale(_:timescale:method:)`: see ``MediaTime/convertScale(_:method:)``.
public func MediaTimeConvertScale(_ time: MediaTime, timescale: Int32, method: MediaTimeRoundingMethod)
    -> MediaTime
{
    time.convertScale(timescale, method: method)
}

/// `CMSampleBufferGetImageBuffer(_:)`: the buffer's image, if it carries one.
public func SampleBufferGetImageBuffer(_ sampleBuffer: SampleBuffer) -> PixelBuffer? {
    sampleBuffer.imageBuffer
}

/// `CMSampleBufferGetPresentationTimeStamp(_:)`: when the frame was captured.
public func SampleBufferGetPresentationTimeStamp(_ sampleBuffer: SampleBuffer) -> MediaTime {
    sampleBuffer.presentationTimeStamp
}

/// `CMSampleBufferGetDuration(_:)`: the frame's duration (``MediaTime/invalid`` when unknown).
public func SampleBufferGetDuration(_ sampleBuffer: SampleBuffer) -> MediaTime {
    sampleBuffer.duration
}
