import Dispatch
import Foundation
import Synchronization
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

@Suite("Audio data output")
struct AudioDataOutputTests {
    static let stereo48k = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16)

    /// What `signal` renders for `frames` frames from `index` in `format`.
    static func expectedBytes(_ signal: VirtualMicrophoneSignal, from index: UInt64, frames: Int, format: AudioFormat)
        -> [UInt8]
    {
        var bytes = [UInt8](repeating: 0, count: frames * format.bytesPerFrame)
        bytes.withUnsafeMutableBytes {
            signal.render(from: index, frames: frames, format: format, into: $0.baseAddress!)
        }
        return bytes
    }

    @Test("virtual microphone → audio data output: every sample once, in order, read back from the markers")
    func everySampleOnceInOrder() throws {
        let clock = ManualClock(start: MediaTime(seconds: 3))
        let mic = VirtualMicrophone(configuration: .init(clock: clock, formats: [Self.stereo48k]))
        let device = mic.makeDevice()
        let delegate = RecordingAudioDelegate()
        let rig = try AudioRig(device: device, delegate: delegate)
        rig.start()
        rig.step(clock, by: .audioChunk, times: 30)
        rig.session.stopRunning()

        let buffers = delegate.buffers
        let signal = try #require(mic.source.signal)
        #expect(buffers.count == 30)
        var next: UInt64 = 0
        var lastTime = MediaTime.negativeInfinity
        for (k, buffer) in buffers.enumerated() {
            #expect(buffer.sequenceNumber == UInt64(k))
            #expect(buffer.numSamples == 480)
            #expect(buffer.mediaType == .audio && buffer.connectionMediaType == .audio)
            #expect(buffer.formatDescription == .audio(Self.stereo48k))
            #expect(buffer.formatDescription?.audioFormat == Self.stereo48k)
            #expect(buffer.presentationTime > lastTime)
            #expect(buffer.presentationTime == MediaTime(seconds: 3) + Self.stereo48k.duration(ofFrames: Int(next)))
            #expect(buffer.duration == Self.stereo48k.duration(ofFrames: 480))
            for channel in 0..<2 {
                #expect(VirtualMicrophoneSignal.readSampleIndex(from: buffer.samples(channel: channel)) == next)
            }
            #expect(buffer.bytes == Self.expectedBytes(signal, from: next, frames: 480, format: Self.stereo48k))
            next += UInt64(buffer.numSamples)
            lastTime = buffer.presentationTime
        }
        #expect(Int(next) == mic.framesProduced)
        #expect(delegate.drops.isEmpty)
        #expect(!delegate.sawOverlappingCalls)
        let stats = rig.output.statistics
        #expect(stats.captured == 30 && stats.delivered == 30 && stats.dropped == 0)
        #expect(rig.output.deliveredAudioFormat == Self.stereo48k)
        #expect(!rig.output.isConverting)
        #expect(device.activeFormat.audioFormat == Self.stereo48k)
    }

    @Test("a slow delegate: buffers queue up to the budget, the rest drop as outOfBuffers, reported and counted")
    func slowDelegateDrops() throws {
        let clock = ManualClock()
        let mic = VirtualMicrophone(configuration: .init(clock: clock, formats: [Self.stereo48k]))
        let delegate = RecordingAudioDelegate(blocksOnFirstBuffer: true)
        let rig = try AudioRig(device: mic.makeDevice(), bufferBudget: 4, delegate: delegate)
        rig.start()
        #expect(clock.waitUntilSleeping())
        clock.advance(by: .audioChunk)
        #expect(delegate.entered.wait(timeout: .now() + 10) == .success)
        // 20 more chunks while the delegate is stuck in the first.
        clock.advance(by: .audioChunk * 20)
        #expect(clock.waitUntilSleeping())
        let whileStuck = rig.output.statistics
        delegate.openGate()
        #expect(rig.output.waitUntilDelivered(timeout: 10))
        rig.session.stopRunning()

        #expect(whileStuck.captured == 21)
        #expect(whileStuck.droppedOutOfBuffers == 17, "1 in the delegate and 3 waiting fill the budget of 4")
        let buffers = delegate.buffers
        #expect(buffers.map(\.sequenceNumber) == [0, 1, 2, 3], "the oldest are kept: audio queues, it is not thinned")
        for buffer in buffers {
            #expect(
                VirtualMicrophoneSignal.readSampleIndex(from: buffer.samples()) == buffer.sequenceNumber * 480)
        }
        let drops = delegate.drops
        #expect(drops.allSatisfy { $0.reason == .outOfBuffers && !$0.hasData })
        #expect(drops.map(\.count).reduce(0, +) == 17)
        #expect(drops.map(\.sampleCount).reduce(0, +) == 17 * 480)
        #expect(drops.map(\.sequenceNumber) == (4...20).map { UInt64($0) })
        let stats = rig.output.statistics
        #expect(stats.captured == 21 && stats.delivered == 4 && stats.droppedOutOfBuffers == 17)
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
        #expect(stats.inFlight == 0)
    }

    @Test("audio the device lost is a discontinuity carrying its sample count; accounting balances")
    func deviceLossIsDiscontinuity() throws {
        let clock = ManualClock()
        let mic = VirtualMicrophone(configuration: .init(clock: clock, bufferCount: 2, formats: [Self.stereo48k]))
        let delegate = RecordingAudioDelegate(holdsBuffers: true)
        let rig = try AudioRig(device: mic.makeDevice(), delegate: delegate)
        rig.start()
        // The delegate holds chunks 0 and 1, the microphone's whole pool: 2, 3 and 4 are lost.
        rig.step(clock, by: .audioChunk, times: 5)
        delegate.releaseHeldBuffers()
        rig.step(clock, by: .audioChunk, times: 2)
        rig.session.stopRunning()

        let buffers = delegate.buffers
        #expect(buffers.map(\.sequenceNumber) == [0, 1, 5, 6])
        #expect(buffers.map { VirtualMicrophoneSignal.readSampleIndex(from: $0.samples()) } == [0, 480, 2400, 2880])
        let drops = delegate.drops
        #expect(drops.count == 1)
        let drop = try #require(drops.first)
        #expect(drop.reason == .discontinuity)
        #expect(drop.count == 3)
        #expect(drop.sampleCount == 1440)
        #expect(drop.sequenceNumber == 2)
        #expect(drop.presentationTime == Self.stereo48k.duration(ofFrames: 960), "the gap starts where chunk 2 would")
        let stats = rig.output.statistics
        #expect(stats.captured == 7 && stats.delivered == 4 && stats.droppedDiscontinuity == 3)
        #expect(stats.audioSamplesLost == 1440)
        #expect(stats.audioSamplesLost == mic.framesLost)
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
    }

    @Test(
        "level meters through the connection: full scale −3/0, a −20 dBFS tone −23/−20, silence −160",
        arguments: [(Float(0), Float(-3.01), Float(0)), (-20, -23.01, -20), (-200, -160, -160)])
    func levelMeters(toneLevel: Float, average: Float, peak: Float) throws {
        let clock = ManualClock()
        let mic = VirtualMicrophone(
            configuration: .init(clock: clock, toneLevel: toneLevel, hasMarkers: false, formats: [Self.stereo48k]))
        let delegate = RecordingAudioDelegate()
        let rig = try AudioRig(device: mic.makeDevice(), delegate: delegate)
        let connection = try #require(rig.output.connection(with: .audio))
        #expect(connection.audioChannels.isEmpty, "no channels before audio has passed")
        rig.start()
        rig.step(clock, by: .audioChunk, times: 5)
        let channels = connection.audioChannels
        rig.session.stopRunning()
        #expect(channels.count == 2)
        for channel in channels {
            #expect(abs(channel.averagePowerLevel - average) < 0.05)
            #expect(abs(channel.peakHoldLevel - peak) < 0.05)
        }
    }

    @Test("audio settings that match the device convert nothing; others go through the converter")
    func settingsNegotiate() throws {
        let clock = ManualClock()
        let mono44 = AudioFormat(sampleRate: 44_100, channelCount: 1, sampleFormat: .float32)
        let mic = VirtualMicrophone(configuration: .init(clock: clock))
        let device = mic.makeDevice()
        let delegate = RecordingAudioDelegate()
        // The microphone captures 44.1 kHz float mono itself: no conversion.
        let rig = try AudioRig(device: device, settings: try AudioSettings(format: mono44), delegate: delegate)
        rig.start()
        rig.step(clock, by: .audioChunk, times: 3)
        #expect(device.activeFormat.audioFormat == mono44)
        #expect(!rig.output.isConverting)
        // A rate it lacks: the device moves to its preferred int16 format (no sample-format
        // change left), the output resamples it.
        try rig.output.setAudioSettings(AudioSettings(sampleFormat: .int16, sampleRate: 22_050))
        #expect(rig.output.isConverting)
        let captured = try #require(device.activeFormat.audioFormat)
        #expect(captured.sampleFormat == .int16 && captured.sampleRate == 48_000)
        rig.step(clock, by: .audioChunk, times: 3)
        rig.session.stopRunning()
        let buffers = delegate.buffers
        #expect(buffers.prefix(3).allSatisfy { $0.format == mono44 && $0.numSamples == 441 })
        let converted = Array(buffers.dropFirst(3))
        #expect(!converted.isEmpty)
        let delivered = AudioFormat(sampleRate: 22_050, channelCount: captured.channelCount, sampleFormat: .int16)
        #expect(converted.allSatisfy { $0.format == delivered })
        #expect(rig.output.deliveredAudioFormat == delivered)
        // 30 ms at 22.05 kHz, less what the resampler still holds.
        let frames = converted.map(\.numSamples).reduce(0, +)
        #expect(frames <= 662 && frames > 560)
        let times = buffers.map(\.presentationTime)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
        #expect(throws: CaptureError.self) { try AudioSettings(sampleRate: 0) }
        #expect(throws: CaptureError.self) { try AudioSettings(channelCount: 65) }
    }

    @Test("AVFoundation's settings dictionary ports by deleting AV; what it cannot express is refused when set")
    func settingsDictionary() throws {
        let output = CaptureAudioDataOutput()
        output.audioSettings = [SampleRateKey: 44_100, NumberOfChannelsKey: 1, LinearPCMBitDepthKey: 16]
        #expect(output.audioSettings == (try AudioSettings(sampleFormat: .int16, sampleRate: 44_100, channelCount: 1)))
        let float: AudioSettings = [
            FormatIDKey: kAudioFormatLinearPCM, LinearPCMIsFloatKey: true, LinearPCMIsNonInterleaved: true,
            SampleRateKey: 48_000.0,
        ]
        #expect(float == (try AudioSettings(sampleFormat: .float32, sampleRate: 48_000, isInterleaved: false)))
        let refused: [AudioSettings] = [
            [LinearPCMBitDepthKey: 24], [LinearPCMIsFloatKey: true, LinearPCMBitDepthKey: 16],
            [SampleRateKey: "fast"], [FormatIDKey: UInt32(0x6161_6320)], [LinearPCMIsBigEndianKey: true],
            ["Quality": 1], [NumberOfChannelsKey: 0],
        ]
        for settings in refused {
            #expect(throws: CaptureError.self) { try output.setAudioSettings(settings) }
        }
        #expect(output.audioSettings.sampleRate == 44_100, "a refused setting keeps the old one")
        #expect(throws: CaptureError.self) { try AudioSettings(dictionary: [SampleRateKey: -1]) }
    }

    @Test("non-interleaved settings deliver one buffer per channel, the channels in order")
    func nonInterleaved() throws {
        let clock = ManualClock()
        let mic = VirtualMicrophone(configuration: .init(clock: clock, formats: [Self.stereo48k]))
        let delegate = RecordingAudioDelegate()
        let rig = try AudioRig(
            device: mic.makeDevice(), settings: try AudioSettings(sampleFormat: .float32, isInterleaved: false),
            delegate: delegate)
        rig.start()
        rig.step(clock, by: .audioChunk, times: 3)
        rig.session.stopRunning()
        let buffers = delegate.buffers
        try #require(buffers.count == 3)
        for buffer in buffers {
            let format = try #require(buffer.format)
            #expect(!format.isInterleaved && format.sampleFormat == .float32 && format.channelCount == 2)
            #expect(buffer.bytes.count == buffer.numSamples * 2 * 4)
            // Plane 0 then plane 1, each the same signal: the halves are equal.
            let half = buffer.bytes.count / 2
            #expect(Array(buffer.bytes[..<half]) == Array(buffer.bytes[half...]))
        }
        let first = try #require(buffers.first)
        let floats = first.bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self).prefix(first.numSamples)) }
        #expect(VirtualMicrophoneSignal.readSampleIndex(from: floats) != nil)
    }

    @Test("SampleBuffer's PCM accessors: typed samples, buffer list, data; nil for the wrong type and for video")
    func sampleBufferAccessors() throws {
        let format = AudioFormat(sampleRate: 8000, channelCount: 2, sampleFormat: .int16)
        let values: [Int16] = [1, -1, 2, -2, 3, -3]
        let chunk = values.withUnsafeBytes { raw in
            AudioChunk(
                buffer: PCMBuffer(copying: raw), frameCount: 3, format: format, presentationTime: .zero,
                sampleIndex: 0, framesLostBefore: 0, hostArrivalTime: .zero)
        }
        let buffer = SampleBuffer(audio: chunk, sequenceNumber: 7, budget: nil)
        #expect(buffer.numSamples == 3 && buffer.mediaType == .audio && buffer.dataIsReady)
        #expect(buffer.withAudioSamples(as: Int16.self) { Array($0) } == values)
        #expect(buffer.withAudioSamples(as: Float.self) { $0.count } == nil)
        #expect(buffer.withAudioBufferList { $0.map(\.numberChannels) } == [2])
        #expect(buffer.withAudioBufferList { $0.map(\.data.count) } == [12])
        #expect(buffer.audioData == Data(AudioTestSignal.bytes(of: values)))
        #expect(buffer.imageBuffer == nil)
        #expect(buffer.formatDescription?.pixelFormat == nil && buffer.formatDescription?.dimensions == nil)
        let pool = try PixelBufferPool(pixelFormat: .bgra, width: 2, height: 2, capacity: 1)
        let video = SampleBuffer(imageBuffer: try #require(pool.makePixelBuffer()), presentationTimeStamp: .zero)
        #expect(video.audioFormat == nil && video.audioData == nil && video.formatDescription?.audioFormat == nil)
    }
}
