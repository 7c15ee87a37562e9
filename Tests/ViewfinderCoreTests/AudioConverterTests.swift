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

@Suite("Audio converter (libswresample)")
struct AudioConverterTests {
    /// The frequency of a sine (``AudioAnalysis/frequency(of:rate:)``).
    static func frequency(of samples: [Float], rate: Int) -> Double { AudioAnalysis.frequency(of: samples, rate: rate) }

    /// The root mean square of `samples`.
    static func rms(_ samples: [Float]) -> Double { AudioAnalysis.rms(samples) }

    /// Converts `input` (interleaved bytes of `from`) in one go plus a flush; returns the output bytes.
    static func convertAll(_ input: [UInt8], from: AudioFormat, to: AudioFormat) throws -> [UInt8] {
        let converter = try AudioConverter(from: from, to: to)
        let frames = input.count / from.bytesPerFrame
        let capacity = converter.maximumOutputFrames(forInputFrames: frames) + 64
        var output = [UInt8](repeating: 0, count: capacity * to.bytesPerFrame)
        var written = 0
        try input.withUnsafeBytes { raw in
            try output.withUnsafeMutableBytes { out in
                written = try converter.convert(
                    raw.baseAddress!, frames: frames, into: out.baseAddress!, capacity: capacity)
                written += try converter.flush(
                    into: out.baseAddress! + written * to.bytesPerFrame, capacity: capacity - written)
            }
        }
        return Array(output.prefix(written * to.bytesPerFrame))
    }

    @Test("int16 to float32 at the same rate maps every sample to x / 32768")
    func sampleFormatOnly() throws {
        let from = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16)
        let to = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .float32)
        let samples = AudioTestSignal.distinctiveInt16(frames: 1000, channels: 2)
        let output = try Self.convertAll(AudioTestSignal.bytes(of: samples), from: from, to: to)
        let floats = output.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(floats.count == samples.count)
        #expect(floats == samples.map { Float($0) / 32768 })
    }

    @Test(
        "resampling keeps a sine's frequency and amplitude",
        arguments: [(48_000, 44_100), (44_100, 48_000), (48_000, 16_000), (16_000, 48_000)])
    func resampledSine(fromRate: Int, toRate: Int) throws {
        let from = AudioFormat(sampleRate: fromRate, channelCount: 1, sampleFormat: .float32)
        let to = AudioFormat(sampleRate: toRate, channelCount: 1, sampleFormat: .int16)
        let input = AudioTestSignal.sine(frequency: 1000, amplitude: 0.5, rate: fromRate, frames: fromRate)
        let output = try Self.convertAll(AudioTestSignal.bytes(of: input), from: from, to: to)
        let samples = output.withUnsafeBytes { $0.bindMemory(to: Int16.self).map { Float($0) / 32768 } }
        // One second in, one second out (within the filter's edge).
        #expect(abs(samples.count - toRate) <= 64)
        let steady = Array(samples[(toRate / 10)..<(toRate * 9 / 10)])
        #expect(abs(Self.frequency(of: steady, rate: toRate) - 1000) < 0.5)
        #expect(abs(Self.rms(steady) - 0.5 / 2.0.squareRoot()) < 0.005)
    }

    @Test("mono to stereo puts the signal on both channels; stereo to mono keeps its frequency")
    func channelCounts() throws {
        let mono = AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .float32)
        let stereo = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .float32)
        let input = AudioTestSignal.sine(frequency: 440, amplitude: 0.5, rate: 48_000, frames: 48_000)
        let up = try Self.convertAll(AudioTestSignal.bytes(of: input), from: mono, to: stereo)
        let upSamples = up.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(upSamples.count == 96_000)
        let left = stride(from: 0, to: upSamples.count, by: 2).map { upSamples[$0] }
        let right = stride(from: 1, to: upSamples.count, by: 2).map { upSamples[$0] }
        #expect(left == right)
        #expect(abs(Self.frequency(of: left, rate: 48_000) - 440) < 0.5)
        // FFmpeg mixes a centre channel into left and right at -3 dB at most.
        let ratio = Self.rms(left) / Self.rms(input)
        #expect(ratio > 0.7 && ratio <= 1.0001)
        let down = try Self.convertAll(up, from: stereo, to: mono)
        let downSamples = down.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(downSamples.count == 48_000)
        #expect(abs(Self.frequency(of: downSamples, rate: 48_000) - 440) < 0.5)
    }

    @Test("non-interleaved output gets one plane per channel")
    func planarOutput() throws {
        let from = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16)
        let to = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16, isInterleaved: false)
        let samples = AudioTestSignal.distinctiveInt16(frames: 100, channels: 2)
        let converter = try AudioConverter(from: from, to: to)
        var output = [Int16](repeating: 0, count: 200)
        let written = try samples.withUnsafeBytes { raw in
            try output.withUnsafeMutableBytes { out in
                try converter.convert(raw.baseAddress!, frames: 100, into: out.baseAddress!, capacity: 100)
            }
        }
        #expect(written == 100)
        #expect(Array(output[0..<100]) == stride(from: 0, to: 200, by: 2).map { samples[$0] })
        #expect(Array(output[100..<200]) == stride(from: 1, to: 200, by: 2).map { samples[$0] })
    }

    @Test("chunk conversion keeps timestamps increasing and the output sample index continuous")
    func chunks() throws {
        let mic = VirtualMicrophone(configuration: .init(isPaced: false, frameLimit: 48_000, hasMarkers: false))
        let sink = RecordingAudioSink(framesWanted: 48_000)
        let from = AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .float32)
        _ = try mic.source.startCapture(format: from, framesPerChunk: 480, sink: sink)
        #expect(sink.enough.wait(timeout: .now() + 20) == .success)
        mic.source.stopCapture()
        let to = AudioFormat(sampleRate: 44_100, channelCount: 1, sampleFormat: .float32)
        let converter = try AudioConverter(from: from, to: to)
        var next: UInt64 = 0
        var last = MediaTime.negativeInfinity
        var total = 0
        var converted: [Float] = []
        for received in sink.chunks {
            let chunk = received.bytes.withUnsafeBytes { raw in
                AudioChunk(
                    buffer: PCMBuffer(copying: raw), frameCount: received.frameCount, format: from,
                    presentationTime: received.presentationTime, sampleIndex: received.sampleIndex,
                    framesLostBefore: received.framesLostBefore, hostArrivalTime: received.presentationTime)
            }
            guard let out = try converter.convert(chunk) else { continue }
            #expect(out.format == to)
            #expect(out.sampleIndex == next)
            #expect(out.presentationTime > last)
            // The output's first frame is never stamped after the input's.
            #expect(out.presentationTime <= chunk.presentationTime)
            next += UInt64(out.frameCount)
            last = out.presentationTime
            total += out.frameCount
            out.withSamples(as: Float.self) { converted += $0 }
        }
        #expect(abs(total - 44_100) < 100)
        let steady = Array(converted[4410..<(converted.count - 4410)])
        #expect(abs(Self.frequency(of: steady, rate: 44_100) - 1000) < 0.5)
        #expect(abs(Self.rms(steady) - 0.1 / 2.0.squareRoot()) < 0.002)
    }

    @Test("an invalid format is refused with a typed error")
    func invalid() {
        #expect(throws: CaptureError.self) {
            try AudioConverter(
                from: AudioFormat(sampleRate: 0, channelCount: 1, sampleFormat: .int16),
                to: AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .int16))
        }
        #expect(throws: CaptureError.self) {
            try AudioConverter(
                from: AudioFormat(sampleRate: 48_000, channelCount: 0, sampleFormat: .int16),
                to: AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .int16))
        }
    }
}
