import Foundation
import ViewfinderCore

/// The virtual microphone's sound: a sine tone with, every ``markerInterval`` samples, a short
/// marker burst that spells the burst's number in binary, and full-scale clicks at chosen
/// sample positions. Every sample is a pure function of its index in the stream, so a reader
/// can tell exactly which samples arrived (``readSampleIndex(from:)``), and a test can compute
/// what any sample should be (``value(at:)``).
///
/// A marker starts at every multiple of ``markerInterval``: 4 sync samples (+½, −½, +½, −½),
/// then the marker number `index / markerInterval` as 32 bits, least significant first, each
/// bit two samples of +¼ (1) or −¼ (0). The tone never exceeds ``toneAmplitude`` (at most
/// 0.1, −20 dBFS, by default), so sync and bits stand clear of it; a click (+1.0 for
/// ``clickLength`` samples) stands clear of both. Any run of `markerInterval + markerLength`
/// samples holds one whole marker.
///
/// Thread safety: a value type; freely sendable.
package struct VirtualMicrophoneSignal: Sendable, Hashable {
    /// Samples from one marker's start to the next one's.
    package static let markerInterval = 256
    /// Samples in a marker: 4 sync samples and 2 per bit of a 32-bit number.
    package static let markerLength = 4 + 32 * 2
    /// Samples in a click.
    package static let clickLength = 48
    package static let syncLevel: Float = 0.5
    package static let bitLevel: Float = 0.25
    package static let clickLevel: Float = 1.0

    /// The tone's frequency in hertz.
    package var toneFrequency: Double
    /// The tone's peak amplitude (full scale 1).
    package var toneAmplitude: Float
    /// Whether the markers are mixed in (`false`: a pure tone, for level meters).
    package var hasMarkers: Bool
    /// Sample indices where clicks start, ascending.
    package var clickIndices: [UInt64]
    /// Frames per second.
    package var sampleRate: Int

    /// A tone of `toneFrequency` Hz at `toneLevel` dBFS peak (default 1 kHz at −20 dBFS), with
    /// markers unless told otherwise, and clicks starting at `clickIndices`.
    package init(
        sampleRate: Int, toneFrequency: Double = 1000, toneLevel: Float = -20, hasMarkers: Bool = true,
        clickIndices: [UInt64] = []
    ) {
        self.sampleRate = max(1, sampleRate)
        self.toneFrequency = toneFrequency
        let amplitude = Float(pow(10, Double(min(0, toneLevel)) / 20))
        self.toneAmplitude = hasMarkers ? min(0.1, amplitude) : amplitude
        self.hasMarkers = hasMarkers
        self.clickIndices = clickIndices.sorted()
    }

    /// The sample at stream position `index` (the same on every channel), nominally −1…1.
    package func value(at index: UInt64) -> Float {
        if isInClick(index) { return Self.clickLevel }
        if hasMarkers {
            let interval = UInt64(Self.markerInterval)
            let offset = Int(index % interval)
            if offset < Self.markerLength {
                if offset < 4 { return offset % 2 == 0 ? Self.syncLevel : -Self.syncLevel }
                let number = index / interval
                let bit = (offset - 4) / 2
                return (number >> UInt64(bit)) & 1 == 1 ? Self.bitLevel : -Self.bitLevel
            }
        }
        let phase = 2 * Double.pi * toneFrequency * Double(index % UInt64(sampleRate * 1000)) / Double(sampleRate)
        return toneAmplitude * Float(sin(phase))
    }

    private func isInClick(_ index: UInt64) -> Bool {
        guard !clickIndices.isEmpty else { return false }
        // The last click starting at or before `index`.
        var low = 0
        var high = clickIndices.count
        while low < high {
            let middle = (low + high) / 2
            if clickIndices[middle] <= index { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return false }
        return index - clickIndices[low - 1] < UInt64(Self.clickLength)
    }

    /// Fills `frames` frames starting at stream position `index` into `memory` in `format`
    /// (interleaved, every channel the same).
    package func render(from index: UInt64, frames: Int, format: AudioFormat, into memory: UnsafeMutableRawPointer) {
        let channels = format.channelCount
        for frame in 0..<frames {
            let sample = value(at: index + UInt64(frame))
            for channel in 0..<channels {
                let position = frame * channels + channel
                switch format.sampleFormat {
                case .float32:
                    memory.storeBytes(of: sample, toByteOffset: position * 4, as: Float.self)
                case .int16:
                    let scaled = Int16(clamping: Int((sample * 32767).rounded()))
                    memory.storeBytes(of: scaled, toByteOffset: position * 2, as: Int16.self)
                case .int32:
                    let scaled = Int32(clamping: Int64((Double(sample) * 2_147_483_647).rounded()))
                    memory.storeBytes(of: scaled, toByteOffset: position * 4, as: Int32.self)
                }
            }
        }
    }

    /// The stream position of `samples[0]`, read from the first whole marker in `samples` (one
    /// channel, −1…1); `nil` when no whole, well-formed marker is inside.
    package static func readSampleIndex(from samples: some RandomAccessCollection<Float>) -> UInt64? {
        let values = Array(samples)
        guard values.count >= markerLength else { return nil }
        let syncTolerance: Float = 0.1
        for start in 0...(values.count - markerLength) {
            let isSync = (0..<4).allSatisfy { step in
                let expected = step % 2 == 0 ? syncLevel : -syncLevel
                return abs(values[start + step] - expected) < syncTolerance
            }
            guard isSync else { continue }
            var number: UInt64 = 0
            var valid = true
            for bit in 0..<32 {
                let a = values[start + 4 + bit * 2]
                let b = values[start + 5 + bit * 2]
                guard abs(abs(a) - bitLevel) < 0.1, abs(abs(b) - bitLevel) < 0.1, (a > 0) == (b > 0) else {
                    valid = false
                    break
                }
                if a > 0 { number |= 1 << UInt64(bit) }
            }
            guard valid else { continue }
            let markerIndex = number * UInt64(markerInterval)
            guard markerIndex >= UInt64(start) else { continue }
            return markerIndex - UInt64(start)
        }
        return nil
    }

    /// The offset in `samples` (one channel, −1…1) of the first click sample, or `nil`.
    package static func firstClickOffset(in samples: some RandomAccessCollection<Float>) -> Int? {
        samples.firstIndex { $0 > 0.9 }.map { samples.distance(from: samples.startIndex, to: $0) }
    }

    /// Channel `channel` of interleaved `bytes` in `format`, as floats in −1…1 (full scale
    /// 32768 or 2³¹ for integers).
    package static func samples(of bytes: UnsafeRawBufferPointer, format: AudioFormat, channel: Int = 0) -> [Float] {
        let channels = format.channelCount
        guard channels > 0, (0..<channels).contains(channel) else { return [] }
        let frames = bytes.count / max(1, format.bytesPerFrame)
        return (0..<frames).map { frame in
            let position = frame * channels + channel
            switch format.sampleFormat {
            case .float32: return bytes.loadUnaligned(fromByteOffset: position * 4, as: Float.self)
            case .int16: return Float(bytes.loadUnaligned(fromByteOffset: position * 2, as: Int16.self)) / 32768
            case .int32:
                return Float(Double(bytes.loadUnaligned(fromByteOffset: position * 4, as: Int32.self)) / 2_147_483_648)
            }
        }
    }
}
