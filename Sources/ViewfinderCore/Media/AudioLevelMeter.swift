import Foundation

/// One channel's levels as a level meter shows them, in dBFS from −160 (silence) to 0 (full
/// scale): the figures AVFoundation's `AVCaptureAudioChannel` reports.
package struct AudioChannelLevel: Sendable, Hashable {
    /// The RMS power of the last buffer, in dB relative to full scale: `10·log10(mean(x²))`.
    /// A full-scale sine reads −3.01, a sine peaking at −20 dBFS reads −23.01.
    package var averagePowerLevel: Float
    /// The highest absolute sample seen within the hold time, in dB relative to full scale:
    /// `20·log10(max |x|)`. A full-scale sine reads 0.
    package var peakHoldLevel: Float
}

/// Measures per-channel average power and held peak of PCM buffers, as
/// `AVCaptureAudioChannel`'s `averagePowerLevel` and `peakHoldLevel` do.
///
/// Integer samples are scaled by their full scale (32768 for int16, 2³¹ for int32); float
/// samples are taken as they are. Levels are clamped to −160…0 dBFS. The peak is held for
/// ``peakHoldFrames`` frames after it was seen (measured in sample time, so the meter is exact
/// under any clock), then falls to the newest buffer's peak.
///
/// Thread safety: a value type; one owner measures.
package struct AudioLevelMeter: Sendable {
    /// The lowest level reported: silence.
    package static let minimumLevel: Float = -160

    /// How long a peak is held, in frames.
    package let peakHoldFrames: Int
    private var held: [(peak: Float, age: Int)] = []

    /// A meter holding peaks for `peakHoldFrames` frames (0: each buffer's own peak).
    package init(peakHoldFrames: Int) {
        self.peakHoldFrames = max(0, peakHoldFrames)
    }

    /// A meter holding peaks for `peakHoldSeconds` (default 1 s) at `sampleRate`.
    package init(sampleRate: Int, peakHoldSeconds: Double = 1) {
        self.init(peakHoldFrames: Int((Double(max(0, sampleRate)) * max(0, peakHoldSeconds)).rounded()))
    }

    /// A linear amplitude ratio (1 = full scale) in dBFS, clamped to −160…0.
    package static func decibels(amplitude: Double) -> Float {
        guard amplitude > 0 else { return minimumLevel }
        return Float(min(0, max(Double(minimumLevel), 20 * log10(amplitude))))
    }

    /// A mean square (1 = full-scale DC) in dBFS, clamped to −160…0.
    package static func decibels(meanSquare: Double) -> Float {
        guard meanSquare > 0 else { return minimumLevel }
        return Float(min(0, max(Double(minimumLevel), 10 * log10(meanSquare))))
    }

    /// Measures `frameCount` interleaved frames of `format` at `bytes` and returns each
    /// channel's levels (average of this buffer, peak held across buffers). Non-interleaved or
    /// short input measures what is there; an empty buffer reads silence.
    package mutating func measure(_ bytes: UnsafeRawBufferPointer, format: AudioFormat, frameCount: Int)
        -> [AudioChannelLevel]
    {
        let channels = max(0, format.channelCount)
        let frames = max(
            0, min(frameCount, bytes.count / max(1, format.sampleFormat.bytesPerSample * max(1, channels))))
        if held.count != channels { held = Array(repeating: (0, Int.max / 2), count: channels) }
        var sums = [Double](repeating: 0, count: channels)
        var peaks = [Double](repeating: 0, count: channels)
        func accumulate(_ sample: (Int) -> Double) {
            for frame in 0..<frames {
                for channel in 0..<channels {
                    let value = sample(frame * channels + channel)
                    sums[channel] += value * value
                    peaks[channel] = max(peaks[channel], abs(value))
                }
            }
        }
        switch format.sampleFormat {
        case .int16:
            accumulate { Double(bytes.loadUnaligned(fromByteOffset: $0 * 2, as: Int16.self)) / 32768 }
        case .int32:
            accumulate { Double(bytes.loadUnaligned(fromByteOffset: $0 * 4, as: Int32.self)) / 2_147_483_648 }
        case .float32:
            accumulate { Double(bytes.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self)) }
        }
        var levels: [AudioChannelLevel] = []
        levels.reserveCapacity(channels)
        for channel in 0..<channels {
            let peak = Float(peaks[channel])
            var hold = held[channel]
            hold.age += frames
            if peak >= hold.peak || hold.age > peakHoldFrames {
                hold = (peak, 0)
            }
            held[channel] = hold
            let average = frames > 0 ? sums[channel] / Double(frames) : 0
            levels.append(
                AudioChannelLevel(
                    averagePowerLevel: Self.decibels(meanSquare: average),
                    peakHoldLevel: Self.decibels(amplitude: Double(hold.peak))))
        }
        return levels
    }

    /// Measures a chunk.
    package mutating func measure(_ chunk: AudioChunk) -> [AudioChannelLevel] {
        measure(chunk.bytes, format: chunk.format, frameCount: chunk.frameCount)
    }

    /// Forgets held peaks.
    package mutating func reset() { held = [] }
}
