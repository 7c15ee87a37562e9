import Foundation
import Testing
import ViewfinderSimulator

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

@Suite("Virtual microphone")
struct AudioVirtualMicrophoneTests {
    static let mono48k = AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .float32)

    @Test(
        "paced by a manual clock: one chunk per chunk duration, every sample once, in order, read back from the markers"
    )
    func pacedEverySampleOnce() throws {
        let clock = ManualClock(start: MediaTime(seconds: 5))
        let mic = VirtualMicrophone(configuration: .init(clock: clock))
        let sink = RecordingAudioSink(framesWanted: .max)
        _ = try mic.source.startCapture(format: Self.mono48k, framesPerChunk: 480, sink: sink)
        defer { mic.source.stopCapture() }
        #expect(clock.waitUntilSleeping())
        #expect(sink.chunks.isEmpty)
        for step in 1...20 {
            clock.advance(by: MediaTime(value: 10, timescale: 1000))
            #expect(clock.waitUntilSleeping())
            #expect(sink.chunks.count == step)
        }
        let chunks = sink.chunks
        let signal = try #require(mic.source.signal)
        for (k, chunk) in chunks.enumerated() {
            #expect(chunk.sampleIndex == UInt64(k * 480))
            #expect(
                chunk.presentationTime == MediaTime(seconds: 5) + MediaTime(value: Int64(k * 480), timescale: 48_000))
            let samples = chunk.bytes.withUnsafeBytes { VirtualMicrophoneSignal.samples(of: $0, format: Self.mono48k) }
            #expect(VirtualMicrophoneSignal.readSampleIndex(from: samples) == chunk.sampleIndex)
            let expected = (0..<480).map { signal.value(at: chunk.sampleIndex + UInt64($0)) }
            #expect(samples == expected)
        }
    }

    @Test(
        "unpaced with a frame limit: all frames, decodable in every sample format and channel count",
        arguments: [AudioFormat.SampleFormat.int16, .int32, .float32], [1, 2])
    func unpacedAllFormats(sampleFormat: AudioFormat.SampleFormat, channels: Int) throws {
        let format = AudioFormat(sampleRate: 44_100, channelCount: channels, sampleFormat: sampleFormat)
        let mic = VirtualMicrophone(configuration: .init(isPaced: false, frameLimit: 44_100, bufferCount: 64))
        let sink = RecordingAudioSink(framesWanted: 44_100)
        _ = try mic.source.startCapture(format: format, framesPerChunk: 441, sink: sink)
        #expect(sink.enough.wait(timeout: .now() + 20) == .success)
        #expect(mic.waitUntilFinished(timeout: 20))
        mic.source.stopCapture()
        let chunks = sink.chunks
        #expect(chunks.map(\.frameCount).reduce(0, +) + mic.framesLost == 44_100)
        var next: UInt64 = 0
        for chunk in chunks {
            #expect(chunk.sampleIndex == next + UInt64(chunk.framesLostBefore))
            next = chunk.sampleIndex + UInt64(chunk.frameCount)
            for channel in 0..<channels {
                let samples = chunk.bytes.withUnsafeBytes {
                    VirtualMicrophoneSignal.samples(of: $0, format: format, channel: channel)
                }
                #expect(VirtualMicrophoneSignal.readSampleIndex(from: samples) == chunk.sampleIndex)
            }
        }
        #expect(next == 44_100)
    }

    @Test("the decoder finds nothing in a run too short for a marker or in plain tone, and never misreads")
    func decoderRejects() {
        let signal = VirtualMicrophoneSignal(sampleRate: 48_000)
        let short = (0..<40).map { signal.value(at: UInt64($0)) }
        #expect(VirtualMicrophoneSignal.readSampleIndex(from: short) == nil)
        let tone = VirtualMicrophoneSignal(sampleRate: 48_000, hasMarkers: false)
        #expect(VirtualMicrophoneSignal.readSampleIndex(from: (0..<2000).map { tone.value(at: UInt64($0)) }) == nil)
        for start in [UInt64(0), 1, 255, 256, 1_000_003, 4_294_967_296] {
            let run = (0..<400).map { signal.value(at: start + UInt64($0)) }
            #expect(VirtualMicrophoneSignal.readSampleIndex(from: run) == start)
        }
    }

    @Test("a click at time t starts at the first sample stamped at or after t")
    func clickAtTime() throws {
        let clock = ManualClock()
        let clickTime = MediaTime(value: 500_500_000, timescale: 1_000_000_000)  // 0.5005 s
        let mic = VirtualMicrophone(
            configuration: .init(clock: clock, isPaced: false, frameLimit: 48_000, clickTimes: [clickTime]))
        let sink = RecordingAudioSink(framesWanted: 48_000)
        let format = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16)
        _ = try mic.source.startCapture(format: format, framesPerChunk: 512, sink: sink)
        #expect(sink.enough.wait(timeout: .now() + 20) == .success)
        mic.source.stopCapture()
        // Click starts: a click sample after a non-click one (a click may straddle two chunks).
        var clickTimes: [MediaTime] = []
        var previousWasClick = false
        for chunk in sink.chunks {
            let samples = chunk.bytes.withUnsafeBytes { VirtualMicrophoneSignal.samples(of: $0, format: format) }
            for (offset, sample) in samples.enumerated() {
                let isClick = sample > 0.9
                if isClick, !previousWasClick {
                    clickTimes.append(chunk.presentationTime + format.duration(ofFrames: offset))
                }
                previousWasClick = isClick
            }
        }
        #expect(clickTimes.count == 1)
        let found = try #require(clickTimes.first)
        #expect(found >= clickTime)
        #expect((found - clickTime) < format.duration(ofFrames: 1))
    }

    @Test("a consumer holding every buffer loses chunks, counted, and the sample count moves on")
    func outOfBuffers() throws {
        let mic = VirtualMicrophone(configuration: .init(isPaced: false, frameLimit: 4800, bufferCount: 2))
        let sink = RecordingAudioSink(framesWanted: 4800, holdCount: 2)
        _ = try mic.source.startCapture(format: Self.mono48k, framesPerChunk: 480, sink: sink)
        #expect(mic.waitUntilFinished(timeout: 20))
        mic.source.stopCapture()
        let chunks = sink.chunks
        let lost = sink.losses.map(\.frames).reduce(0, +)
        #expect(lost > 0)
        #expect(lost == mic.framesLost)
        #expect(chunks.map(\.frameCount).reduce(0, +) + lost == 4800)
        #expect(sink.losses.allSatisfy { $0.reason == .outOfBuffers })
        for chunk in chunks {
            let samples = chunk.bytes.withUnsafeBytes { VirtualMicrophoneSignal.samples(of: $0, format: Self.mono48k) }
            #expect(VirtualMicrophoneSignal.readSampleIndex(from: samples) == chunk.sampleIndex)
        }
        #expect(chunks.map(\.framesLostBefore).reduce(0, +) == lost)
    }

    @Test("an unplugged microphone fails the stream with deviceDisconnected and refuses to start")
    func disconnect() throws {
        let clock = ManualClock()
        let mic = VirtualMicrophone(configuration: .init(clock: clock))
        let sink = RecordingAudioSink(framesWanted: .max)
        _ = try mic.source.startCapture(format: Self.mono48k, framesPerChunk: 480, sink: sink)
        #expect(clock.waitUntilSleeping())
        mic.simulateDisconnect()
        clock.advance(by: MediaTime(value: 10, timescale: 1000))
        #expect(sink.enough.wait(timeout: .now() + 20) == .success)
        mic.source.stopCapture()
        #expect(sink.errors.first?.code == .deviceDisconnected)
        #expect(!mic.isConnected)
        #expect(throws: CaptureError.self) {
            try mic.source.startCapture(format: Self.mono48k, framesPerChunk: 480, sink: sink)
        }
        mic.simulateReconnect()
        #expect(mic.isConnected)
    }

    @Test("formats it does not offer and empty chunks are refused")
    func badArguments() {
        let mic = VirtualMicrophone()
        let sink = RecordingAudioSink(framesWanted: 1)
        #expect(throws: CaptureError.self) {
            try mic.source.startCapture(
                format: AudioFormat(sampleRate: 12_345, channelCount: 1, sampleFormat: .int16), framesPerChunk: 480,
                sink: sink)
        }
        #expect(throws: CaptureError.self) {
            try mic.source.startCapture(format: Self.mono48k, framesPerChunk: 0, sink: sink)
        }
    }
}
