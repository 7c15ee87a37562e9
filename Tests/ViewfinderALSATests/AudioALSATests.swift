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

/// The production ALSA path without sound hardware: alsa-lib's `file` plug-in reads capture
/// samples from a raw file over a `null` slave, defined in configuration text parsed over the
/// system configuration for the one PCM (`snd_pcm_open_lconf`), so nothing global changes and
/// tests may run in parallel.
@Suite("ALSA capture")
struct AudioALSATests {
    static let pcmName = "viewfinder_file_test"

    func microphone(reading url: URL, bufferCount: Int = 8) -> ALSAMicrophone {
        ALSAMicrophone(
            pcmName: Self.pcmName, localizedName: "File Microphone",
            extraConfiguration: ALSAConfigurationText.fileCapture(pcmName: Self.pcmName, inputPath: url.path),
            bufferCount: bufferCount)
    }

    @Test("samples from a raw file arrive bit-exact, in order, stamped on the monotonic clock")
    func fileSamplesArriveBitExact() throws {
        let channels = 2
        let frames = 48_000
        let samples = AudioTestSignal.distinctiveInt16(frames: frames, channels: channels)
        let expected = AudioTestSignal.bytes(of: samples)
        let url = try AudioTestSignal.temporaryFile(expected)
        defer { try? FileManager.default.removeItem(at: url) }
        let mic = microphone(reading: url)
        let sink = RecordingAudioSink(framesWanted: frames)
        let before = HostClock().now()
        let format = try mic.startCapture(
            format: AudioFormat(sampleRate: 48_000, channelCount: channels, sampleFormat: .int16), framesPerChunk: 1024,
            sink: sink)
        #expect(sink.enough.wait(timeout: .now() + 20) == .success)
        mic.stopCapture()
        #expect(format == AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16))
        #expect(sink.errors.isEmpty)
        let chunks = sink.chunks
        try #require(!chunks.isEmpty)
        var received: [UInt8] = []
        var nextIndex: UInt64 = 0
        var lastTime = MediaTime.negativeInfinity
        for chunk in chunks {
            #expect(chunk.sampleIndex == nextIndex)
            #expect(chunk.framesLostBefore == 0)
            #expect(chunk.presentationTime > lastTime)
            #expect(chunk.bytes.count == chunk.frameCount * 4)
            nextIndex += UInt64(chunk.frameCount)
            lastTime = chunk.presentationTime
            received += chunk.bytes
        }
        #expect(received.count >= expected.count)
        #expect(Array(received.prefix(expected.count)) == expected)
        // Stamped on CLOCK_MONOTONIC: the first chunk lies near the moment capture started.
        let offset = (chunks[0].presentationTime - before).seconds
        #expect(abs(offset) < 1.0)
        let statistics = try #require(mic.statistics)
        #expect(statistics.overruns == 0)
        #expect(statistics.framesDelivered >= frames)
    }

    @Test("float32 mono passes through bit-exact too")
    func floatMonoBitExact() throws {
        let frames = 9_600
        let samples = AudioTestSignal.sine(frequency: 997, amplitude: 0.8, rate: 48_000, frames: frames)
        let expected = AudioTestSignal.bytes(of: samples)
        let url = try AudioTestSignal.temporaryFile(expected)
        defer { try? FileManager.default.removeItem(at: url) }
        let mic = microphone(reading: url)
        let sink = RecordingAudioSink(framesWanted: frames)
        _ = try mic.startCapture(
            format: AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .float32), framesPerChunk: 480,
            sink: sink)
        #expect(sink.enough.wait(timeout: .now() + 20) == .success)
        mic.stopCapture()
        let received = sink.chunks.flatMap(\.bytes)
        #expect(Array(received.prefix(expected.count)) == expected)
    }

    @Test("a file captured at 48 kHz and converted to 44.1 kHz keeps its tone within tolerance")
    func fileResampled() throws {
        let frames = 48_000
        let tone = AudioTestSignal.sine(frequency: 1000, amplitude: 0.5, rate: 48_000, frames: frames)
        let url = try AudioTestSignal.temporaryFile(AudioTestSignal.bytes(of: tone))
        defer { try? FileManager.default.removeItem(at: url) }
        let mic = microphone(reading: url)
        let sink = RecordingAudioSink(framesWanted: frames)
        let format = try mic.startCapture(
            format: AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .float32), framesPerChunk: 1024,
            sink: sink)
        #expect(sink.enough.wait(timeout: .now() + 20) == .success)
        mic.stopCapture()
        let target = AudioFormat(sampleRate: 44_100, channelCount: 1, sampleFormat: .int16)
        let converter = try AudioConverter(from: format, to: target)
        var output: [Float] = []
        for received in sink.chunks where received.sampleIndex < UInt64(frames) {
            let chunk = received.bytes.withUnsafeBytes { raw in
                AudioChunk(
                    buffer: PCMBuffer(copying: raw), frameCount: received.frameCount, format: format,
                    presentationTime: received.presentationTime, sampleIndex: received.sampleIndex,
                    framesLostBefore: 0, hostArrivalTime: received.presentationTime)
            }
            try converter.convert(chunk).map { out in
                out.withSamples(as: Int16.self) { output += $0.map { Float($0) / 32768 } }
            }
        }
        let steady = Array(output[4410..<39_690])
        #expect(abs(AudioAnalysis.frequency(of: steady, rate: 44_100) - 1000) < 0.5)
        #expect(abs(AudioAnalysis.rms(steady) - 0.5 / 2.0.squareRoot()) < 0.005)
    }

    @Test("a consumer holding every buffer loses whole periods, counted, and the index skips them")
    func exhaustedPoolCountsLostFrames() throws {
        let channels = 1
        let frames = 96_000
        let samples = AudioTestSignal.distinctiveInt16(frames: frames, channels: channels)
        let bytes = AudioTestSignal.bytes(of: samples)
        let url = try AudioTestSignal.temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(at: url) }
        let mic = microphone(reading: url, bufferCount: 2)
        let sink = RecordingAudioSink(framesWanted: 8 * 256, holdCount: 2)
        _ = try mic.startCapture(
            format: AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .int16), framesPerChunk: 256,
            sink: sink)
        #expect(sink.enough.wait(timeout: .now() + 20) == .success)
        mic.stopCapture()
        let losses = sink.losses
        try #require(!losses.isEmpty)
        #expect(losses[0].reason == .outOfBuffers)
        let chunks = sink.chunks
        // The chunk after the loss starts where the lost frames end, and still matches the file there.
        let gap = try #require(chunks.firstIndex { $0.framesLostBefore > 0 })
        #expect(gap == 2)
        let previous = chunks[gap - 1]
        let after = chunks[gap]
        #expect(
            after.sampleIndex == previous.sampleIndex + UInt64(previous.frameCount) + UInt64(after.framesLostBefore))
        // The held buffers come back at the first loss, so exactly one period was discarded.
        #expect(after.framesLostBefore == losses[0].frames)
        #expect(losses[0].frames == previous.frameCount)
        for chunk in chunks where chunk.sampleIndex + UInt64(chunk.frameCount) <= UInt64(frames) {
            let start = Int(chunk.sampleIndex) * 2
            #expect(chunk.bytes == Array(bytes[start..<(start + chunk.bytes.count)]))
        }
        let statistics = try #require(mic.statistics)
        #expect(statistics.framesLostToBuffers == chunks.map(\.framesLostBefore).reduce(0, +))
    }

    @Test("the file PCM's formats are listed from the device's own answers")
    func probedFormats() throws {
        let url = try AudioTestSignal.temporaryFile([0, 0, 0, 0])
        defer { try? FileManager.default.removeItem(at: url) }
        let formats = try microphone(reading: url).probeFormats()
        #expect(formats.contains(AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16)))
        #expect(formats.contains(AudioFormat(sampleRate: 44_100, channelCount: 1, sampleFormat: .float32)))
        #expect(Set(formats).count == formats.count)
    }

    @Test("an unknown PCM name is deviceNotFound, a missing input file a typed error, nothing crashes")
    func openErrors() throws {
        let missing = ALSAMicrophone(pcmName: "viewfinder_no_such_pcm")
        let sink = RecordingAudioSink(framesWanted: 1)
        #expect(throws: CaptureError.self) {
            try missing.startCapture(
                format: AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .int16), framesPerChunk: 256,
                sink: sink)
        }
        do {
            _ = try ALSAPCM(name: "viewfinder_no_such_pcm")
            Issue.record("opening a PCM that does not exist succeeded")
        } catch {
            #expect(error.code == .deviceNotFound)
            #expect(error.errno == ENOENT)
        }
        let noFile = microphone(reading: URL(fileURLWithPath: "/nonexistent/viewfinder.raw"))
        do {
            _ = try noFile.startCapture(
                format: AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .int16), framesPerChunk: 256,
                sink: sink)
            Issue.record("a file PCM without its input file opened")
        } catch {
            #expect(error.code == .deviceNotFound)
        }
        #expect(throws: CaptureError.self) {
            try noFile.startCapture(
                format: AudioFormat(sampleRate: 0, channelCount: 1, sampleFormat: .int16), framesPerChunk: 256,
                sink: sink)
        }
    }

    @Test(
        "errno values map to errors a user can act on",
        arguments: [
            (EBUSY, CaptureError.Code.deviceBusy), (EACCES, .permissionDenied), (ENODEV, .deviceDisconnected),
            (ENOENT, .deviceNotFound), (EIO, .ioError), (EINVAL, .unsupportedFormat),
        ])
    func errorMapping(errno: Int32, code: CaptureError.Code) {
        let error = CaptureError.alsa(-errno, "opening", name: "hw:1,0")
        #expect(error.code == code)
        #expect(error.errno == errno)
        #expect(error.message.contains("hw:1,0"))
        if code == .permissionDenied { #expect(error.message.contains("'audio' group")) }
    }

    @Test("enumeration lists default first and only capture-capable PCMs")
    func enumeration() {
        let devices = ALSADeviceDirectory.captureDevices()
        #expect(devices.first?.name == "default")
        #expect(!devices.contains { $0.name == "null" })
        #expect(Set(devices.map(\.name)).count == devices.count)
    }

    /// Whether this machine has an ALSA capture device node.
    static let hasSoundCard: Bool = {
        let nodes = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/snd")) ?? []
        return nodes.contains { $0.hasPrefix("pcmC") && $0.hasSuffix("c") }
    }()

    @Test(
        "a real sound card captures through 'default' (runs only where /dev/snd has a capture device)",
        .enabled(if: hasSoundCard))
    func hardwareDefault() throws {
        let mic = ALSAMicrophone(pcmName: "default")
        let sink = RecordingAudioSink(framesWanted: 4800)
        let format = try mic.startCapture(
            format: AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .int16), framesPerChunk: 480,
            sink: sink)
        #expect(sink.enough.wait(timeout: .now() + 10) == .success)
        mic.stopCapture()
        #expect(sink.errors.isEmpty)
        let chunks = sink.chunks
        #expect(chunks.allSatisfy { $0.format == format })
        let now = HostClock().now()
        #expect(chunks.allSatisfy { abs(($0.presentationTime - now).seconds) < 30 })
    }

    @Test("configuration strings are quoted safely")
    func quoting() {
        #expect(ALSAConfigurationText.quoted(#"a"b\c"#) == #""a\"b\\c""#)
    }
}

@Suite("Audio timeline")
struct AudioTimelineTests {
    @Test("device times within tolerance give a smooth sample-clock timeline")
    func smooth() {
        var timeline = AudioTimeline(sampleRate: 48_000)
        let first = timeline.place(frames: 480, measured: 1_000_000_000)
        let second = timeline.place(frames: 480, measured: 1_010_000_000 + 300_000)
        #expect(first.nanoseconds == 1_000_000_000)
        #expect(second.nanoseconds == 1_010_000_000)
        #expect(second.sampleIndex == 480)
        #expect(second.framesLost == 0)
    }

    @Test("after an overrun the lost frames are estimated from the device's time and skipped")
    func overrun() {
        var timeline = AudioTimeline(sampleRate: 48_000)
        _ = timeline.place(frames: 480, measured: 1_000_000_000)
        // 10 ms chunk, then 50 ms of audio lost.
        let after = timeline.place(frames: 480, measured: 1_060_000_000, afterOverrun: true)
        #expect(after.framesLost == 2400)
        #expect(after.sampleIndex == 480 + 2400)
        #expect(after.nanoseconds == 1_060_000_000)
    }

    @Test("times never go backwards, and drift beyond the tolerance is followed")
    func monotonic() {
        var timeline = AudioTimeline(sampleRate: 48_000, toleranceNanoseconds: 5_000_000)
        let a = timeline.place(frames: 480, measured: 2_000_000_000)
        let b = timeline.place(frames: 480, measured: 1_000_000_000)
        #expect(b.nanoseconds > a.nanoseconds)
        let c = timeline.place(frames: 480, measured: 3_000_000_000)
        #expect(c.nanoseconds == 3_000_000_000)
        #expect(c.sampleIndex == 960)
    }

    @Test("skipped frames advance the index and time")
    func skip() {
        var timeline = AudioTimeline(sampleRate: 1000)
        _ = timeline.place(frames: 10, measured: 0)
        timeline.skip(frames: 10, measured: nil)
        let next = timeline.place(frames: 10, measured: nil)
        #expect(next.sampleIndex == 20)
        #expect(next.nanoseconds == 20_000_000)
    }
}
