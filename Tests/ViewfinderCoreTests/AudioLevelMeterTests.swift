import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

@Suite("Audio level meter")
struct AudioLevelMeterTests {
    /// `frames` of a 1 kHz sine (100 whole cycles in 4800 frames at 48 kHz) with peak `amplitude`,
    /// as interleaved bytes of `format` (every channel the same).
    static func sineBytes(amplitude: Double, format: AudioFormat, frames: Int = 4800) -> [UInt8] {
        let sine = AudioTestSignal.sine(frequency: 1000, amplitude: amplitude, rate: format.sampleRate, frames: frames)
        let interleaved = sine.flatMap { Array(repeating: $0, count: format.channelCount) }
        switch format.sampleFormat {
        case .float32: return AudioTestSignal.bytes(of: interleaved)
        case .int16: return AudioTestSignal.bytes(of: interleaved.map { Int16(clamping: Int(($0 * 32767).rounded())) })
        case .int32:
            return AudioTestSignal.bytes(
                of: interleaved.map { Int32(clamping: Int64((Double($0) * 2_147_483_647).rounded())) })
        }
    }

    static func levels(_ bytes: [UInt8], format: AudioFormat, meter: inout AudioLevelMeter) -> [AudioChannelLevel] {
        bytes.withUnsafeBytes { meter.measure($0, format: format, frameCount: bytes.count / format.bytesPerFrame) }
    }

    @Test("a full-scale sine reads -3 dBFS average and 0 dBFS peak", arguments: AudioFormat.SampleFormat.allCases)
    func fullScale(sampleFormat: AudioFormat.SampleFormat) throws {
        let format = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: sampleFormat)
        var meter = AudioLevelMeter(sampleRate: 48_000)
        let levels = Self.levels(Self.sineBytes(amplitude: 1, format: format), format: format, meter: &meter)
        try #require(levels.count == 2)
        for level in levels {
            #expect(abs(level.averagePowerLevel - (-3.0103)) < 0.01)
            #expect(abs(level.peakHoldLevel) < 0.01)
        }
    }

    @Test("a -20 dBFS tone reads -23 / -20", arguments: AudioFormat.SampleFormat.allCases)
    func minusTwenty(sampleFormat: AudioFormat.SampleFormat) throws {
        let format = AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: sampleFormat)
        var meter = AudioLevelMeter(sampleRate: 48_000)
        let level = try #require(
            Self.levels(Self.sineBytes(amplitude: 0.1, format: format), format: format, meter: &meter).first)
        #expect(abs(level.averagePowerLevel - (-23.0103)) < 0.01)
        #expect(abs(level.peakHoldLevel - (-20)) < 0.01)
    }

    @Test("silence reads -160, and so does an empty buffer")
    func silence() throws {
        let format = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16)
        var meter = AudioLevelMeter(sampleRate: 48_000)
        let levels = Self.levels([UInt8](repeating: 0, count: 4800 * 4), format: format, meter: &meter)
        #expect(levels == Array(repeating: AudioChannelLevel(averagePowerLevel: -160, peakHoldLevel: -160), count: 2))
        var fresh = AudioLevelMeter(sampleRate: 48_000)
        #expect(Self.levels([], format: format, meter: &fresh).allSatisfy { $0.averagePowerLevel == -160 })
    }

    @Test("channels are measured apart")
    func channelsApart() throws {
        let format = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .float32)
        let left = AudioTestSignal.sine(frequency: 1000, amplitude: 1, rate: 48_000, frames: 4800)
        let interleaved = left.flatMap { sample -> [Float] in [sample, 0] }
        var meter = AudioLevelMeter(sampleRate: 48_000)
        let levels = Self.levels(AudioTestSignal.bytes(of: interleaved), format: format, meter: &meter)
        #expect(abs(levels[0].averagePowerLevel - (-3.0103)) < 0.01)
        #expect(levels[1] == AudioChannelLevel(averagePowerLevel: -160, peakHoldLevel: -160))
    }

    @Test("the peak is held for the hold time in sample time, then falls to the newest buffer's")
    func peakHold() throws {
        let format = AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .float32)
        var meter = AudioLevelMeter(sampleRate: 48_000, peakHoldSeconds: 0.25)  // 12 000 frames
        let loud = Self.sineBytes(amplitude: 1, format: format)  // 4800 frames
        let quiet = Self.sineBytes(amplitude: 0.1, format: format)
        _ = Self.levels(loud, format: format, meter: &meter)
        let first = try #require(Self.levels(quiet, format: format, meter: &meter).first)  // 4800 frames old
        #expect(abs(first.peakHoldLevel) < 0.01)
        #expect(abs(first.averagePowerLevel - (-23.0103)) < 0.01)
        let second = try #require(Self.levels(quiet, format: format, meter: &meter).first)  // 9600 frames old
        #expect(abs(second.peakHoldLevel) < 0.01)
        let third = try #require(Self.levels(quiet, format: format, meter: &meter).first)  // 14 400: released
        #expect(abs(third.peakHoldLevel - (-20)) < 0.01)
    }

    @Test("overs clamp to 0 dBFS and decibel conversion is exact at known points")
    func clampAndConversions() {
        #expect(AudioLevelMeter.decibels(amplitude: 2) == 0)
        #expect(AudioLevelMeter.decibels(amplitude: 0) == -160)
        #expect(AudioLevelMeter.decibels(amplitude: 1e-12) == -160)
        #expect(abs(AudioLevelMeter.decibels(amplitude: 0.5) - (-6.0206)) < 0.001)
        #expect(abs(AudioLevelMeter.decibels(meanSquare: 0.01) - (-20)) < 0.001)
    }

    @Test("the virtual microphone's pure tone meters at its configured level")
    func virtualMicrophoneTone() throws {
        let mic = VirtualMicrophone(
            configuration: .init(isPaced: false, frameLimit: 4800, toneLevel: -6, hasMarkers: false))
        let sink = RecordingAudioSink(framesWanted: 4800)
        let format = AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .float32)
        _ = try mic.source.startCapture(format: format, framesPerChunk: 4800, sink: sink)
        #expect(sink.enough.wait(timeout: .now() + 20) == .success)
        mic.source.stopCapture()
        let chunk = try #require(sink.chunks.first)
        var meter = AudioLevelMeter(sampleRate: 48_000)
        let level = try #require(Self.levels(chunk.bytes, format: format, meter: &meter).first)
        #expect(abs(level.peakHoldLevel - (-6)) < 0.01)
        #expect(abs(level.averagePowerLevel - (-9.0103)) < 0.01)
    }
}
