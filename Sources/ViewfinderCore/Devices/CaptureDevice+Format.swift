extension CaptureDevice {
    /// One way a device can capture: a pixel format, a size, and the frame rates it supports at
    /// that size (the counterpart of `AVCaptureDevice.Format`). A microphone's formats have
    /// ``mediaType`` ``MediaType/audio`` and an ``audioFormat`` (sample rate, channels, sample
    /// format); their video properties are empty (no pixel format, 0x0, no frame rates).
    ///
    /// Thread safety: a value type; freely sendable.
    public struct Format: Sendable, Hashable, CustomStringConvertible {
        /// The media the format carries: ``MediaType/video`` or ``MediaType/audio``.
        public var mediaType: MediaType
        /// The PCM layout, for audio formats (`CMAudioFormatDescriptionGetStreamBasicDescription`);
        /// `nil` for video.
        public var audioFormat: AudioFormat?
        /// The pixel format frames arrive in.
        public var pixelFormat: PixelFormat
        /// Width and height in pixels.
        public var dimensions: Dimensions
        /// The frame rates the device supports in this format. A camera with discrete frame
        /// intervals lists one range per interval (minimum equal to maximum).
        public var videoSupportedFrameRateRanges: [FrameRateRange]
        /// `true` when the driver does not produce this format itself and a software layer
        /// (the system's format converter) makes it from another: it costs CPU, so negotiation prefers native
        /// formats.
        public var isEmulated: Bool
        /// The backend's own code for the format, opaque to everyone else: the backend sets it
        /// when it lists the format and reads it back when it streams in it.
        package var backendCode: UInt32
        /// What the backend knows of the format beyond V4L2's listing (field of view, automatic
        /// frame rate); left out of equality (`CaptureDevice+FormatTraits.swift`).
        package var traits = FormatTraits()

        /// A format of `pixelFormat` at `width` × `height` with the given frame-rate ranges.
        public init(
            pixelFormat: PixelFormat, width: Int, height: Int, frameRateRanges: [FrameRateRange],
            isEmulated: Bool = false
        ) {
            self.mediaType = .video
            self.audioFormat = nil
            self.pixelFormat = pixelFormat
            self.dimensions = Dimensions(width: width, height: height)
            self.videoSupportedFrameRateRanges = frameRateRanges
            self.isEmulated = isEmulated
            self.backendCode = pixelFormat.rawValue
        }

        /// An audio format: `audioFormat` PCM (a microphone's formats).
        public init(audioFormat: AudioFormat) {
            self.mediaType = .audio
            self.audioFormat = audioFormat
            self.pixelFormat = PixelFormat(rawValue: 0)
            self.dimensions = Dimensions(width: 0, height: 0)
            self.videoSupportedFrameRateRanges = []
            self.isEmulated = false
            self.backendCode = 0
        }

        /// The shortest frame duration (fastest rate) any range allows.
        public var minFrameDuration: MediaTime {
            videoSupportedFrameRateRanges.map(\.minFrameDuration).min() ?? .invalid
        }

        /// The longest frame duration (slowest rate) any range allows.
        public var maxFrameDuration: MediaTime {
            videoSupportedFrameRateRanges.map(\.maxFrameDuration).max() ?? .invalid
        }

        /// The highest frame rate the format supports.
        public var maxFrameRate: Double { videoSupportedFrameRateRanges.map(\.maxFrameRate).max() ?? 0 }

        /// Whether some range allows frames `duration` apart.
        public func supports(frameDuration duration: MediaTime) -> Bool {
            videoSupportedFrameRateRanges.contains { $0.contains(frameDuration: duration) }
        }

        /// The supported frame duration nearest to `duration` that is not longer than it (the
        /// slowest rate at least as fast as asked), or the longest supported if all are faster.
        package func nearestSupportedDuration(atMost duration: MediaTime) -> MediaTime {
            var best: MediaTime?
            for range in videoSupportedFrameRateRanges {
                let candidate: MediaTime
                if range.contains(frameDuration: duration) {
                    return duration
                } else if range.maxFrameDuration < duration {
                    candidate = range.maxFrameDuration
                } else {
                    continue
                }
                if best == nil || candidate > best! { best = candidate }
            }
            return best ?? maxFrameDuration
        }

        /// Throws ``CaptureError/Code/invalidArgument``, naming the bad value, unless a device can
        /// stream in the format: a video format needs a size of 1…``PixelBuffer/maximumDimension``
        /// a side and at least one frame-rate range, every range valid
        /// (``FrameRateRange/validate()``); an audio format needs a valid ``audioFormat``. Every
        /// backend checks it before it streams, so a format no camera could pace is refused
        /// instead of spinning.
        public func validate() throws(CaptureError) {
            if mediaType == .audio {
                guard let audioFormat else {
                    throw CaptureError(
                        .invalidArgument, "the audio format \(self) has no PCM layout: give it an AudioFormat")
                }
                try audioFormat.validate()
                return
            }
            let maximum = PixelBuffer.maximumDimension
            guard (1...maximum).contains(dimensions.pixelWidth), (1...maximum).contains(dimensions.pixelHeight) else {
                throw CaptureError(
                    .invalidArgument,
                    "the format \(self) is \(dimensions): each side must be 1…\(maximum) pixels")
            }
            guard !videoSupportedFrameRateRanges.isEmpty else {
                throw CaptureError(
                    .invalidArgument,
                    "the format \(pixelFormat.name) \(dimensions) has no frame rate: give it at least one FrameRateRange"
                )
            }
            for range in videoSupportedFrameRateRanges {
                do throws(CaptureError) {
                    try range.validate()
                } catch {
                    throw CaptureError(
                        .invalidArgument,
                        "the format \(pixelFormat.name) \(dimensions) has a bad rate: \(error.message)")
                }
            }
        }

        public var description: String {
            if let audioFormat { return "audio \(audioFormat)" }
            let rates = videoSupportedFrameRateRanges.map { $0.description }.joined(separator: ", ")
            return "\(pixelFormat.name) \(dimensions)\(isEmulated ? " (emulated)" : "") @ \(rates)"
        }
    }

    /// A width and a height in pixels, the counterpart of `CMVideoDimensions`: like Core Media's,
    /// the fields are `Int32`, so code that reads `dims.width` as an `Int32` ports unchanged.
    public struct Dimensions: Sendable, Hashable, CustomStringConvertible {
        /// Width in pixels.
        public var width: Int32
        /// Height in pixels.
        public var height: Int32
        /// `width` × `height`.
        public init(width: Int32, height: Int32) {
            self.width = width
            self.height = height
        }
        /// A size from `Int` width and height, which must fit an `Int32` (every camera size does).
        package init(width: Int, height: Int) {
            self.init(width: Int32(clamping: width), height: Int32(clamping: height))
        }
        /// Pixels in a frame.
        public var area: Int { Int(width) * Int(height) }
        /// The width as an `Int`, for index arithmetic.
        package var pixelWidth: Int { Int(width) }
        /// The height as an `Int`, for index arithmetic.
        package var pixelHeight: Int { Int(height) }
        public var description: String { "\(width)x\(height)" }
    }
}

/// A range of frame rates a format supports, the counterpart of `AVFrameRateRange`.
/// A discrete frame interval is a range whose minimum equals its maximum.
public struct FrameRateRange: Sendable, Hashable, CustomStringConvertible {
    /// The shortest time between frames (the fastest rate).
    public var minFrameDuration: MediaTime
    /// The longest time between frames (the slowest rate).
    public var maxFrameDuration: MediaTime

    /// A range from `minFrameDuration` (fastest) to `maxFrameDuration` (slowest).
    public init(minFrameDuration: MediaTime, maxFrameDuration: MediaTime) {
        self.minFrameDuration = minFrameDuration
        self.maxFrameDuration = maxFrameDuration
    }

    /// A single discrete frame interval.
    public init(frameDuration: MediaTime) {
        self.init(minFrameDuration: frameDuration, maxFrameDuration: frameDuration)
    }

    /// A single rate of `framesPerSecond` (as the interval `1/framesPerSecond`).
    public init(framesPerSecond: Int32) {
        self.init(frameDuration: MediaTime(value: 1, timescale: framesPerSecond))
    }

    /// The highest rate, in frames per second.
    public var maxFrameRate: Double { 1 / minFrameDuration.seconds }
    /// The lowest rate, in frames per second.
    public var minFrameRate: Double { 1 / maxFrameDuration.seconds }

    /// Whether the range can pace a camera: both durations finite and positive (a rate above 0
    /// and below infinity), the minimum not above the maximum.
    public var isValid: Bool {
        minFrameDuration.isNumeric && maxFrameDuration.isNumeric && minFrameDuration > .zero
            && minFrameDuration <= maxFrameDuration
    }

    /// Throws ``CaptureError/Code/invalidArgument``, naming the value, unless the range
    /// ``isValid``: a rate of zero, a negative or NaN rate (`FrameRateRange(framesPerSecond: 0)` is
    /// the invalid time 1/0, `-30` the invalid 1/-30), a zero or infinite duration, or a minimum
    /// above the maximum.
    public func validate() throws(CaptureError) {
        for (name, duration) in [("minFrameDuration", minFrameDuration), ("maxFrameDuration", maxFrameDuration)] {
            guard duration.isNumeric, duration > .zero else {
                throw CaptureError(
                    .invalidArgument,
                    "\(name) \(Self.describe(duration)) is not a positive time between frames (a rate of 0, below 0, infinite or NaN): give durations like 1/30 (30 fps)"
                )
            }
        }
        guard minFrameDuration <= maxFrameDuration else {
            throw CaptureError(
                .invalidArgument,
                "minFrameDuration \(Self.describe(minFrameDuration)) is longer than maxFrameDuration \(Self.describe(maxFrameDuration)): the minimum is the shortest interval (the fastest rate)"
            )
        }
    }

    /// A duration as its fields (`1/0`, `-1/30`), with its kind when that is not numeric.
    package static func describe(_ time: MediaTime) -> String {
        let fields = "\(time.value)/\(time.timescale)"
        return time.isNumeric ? fields : "\(fields) (\(time))"
    }

    /// Whether frames `duration` apart fall within the range.
    public func contains(frameDuration duration: MediaTime) -> Bool {
        duration >= minFrameDuration && duration <= maxFrameDuration
    }

    public var description: String {
        guard isValid else {
            return "invalid rate (\(Self.describe(minFrameDuration))–\(Self.describe(maxFrameDuration)) s)"
        }
        func rate(_ r: Double) -> String {
            r == r.rounded() ? String(Int(r)) : String(format3(r))
        }
        return minFrameDuration == maxFrameDuration
            ? "\(rate(maxFrameRate)) fps" : "\(rate(minFrameRate))–\(rate(maxFrameRate)) fps"
    }
}

package func format3(_ value: Double) -> String {
    let scaled = (value * 1000).rounded() / 1000
    return String(scaled)
}
