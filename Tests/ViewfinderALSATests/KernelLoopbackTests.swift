import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The kernel's snd-aloop driver as `Scripts/test.sh` loads it in the VM: what is played into
/// `hw:Loopback,0,N` is captured from `hw:Loopback,1,N`.
enum Loopback {
    static var isLoaded: Bool {
        ((try? String(contentsOfFile: "/proc/asound/cards", encoding: .utf8)) ?? "").contains("Loopback")
    }

    /// A 1 kHz sine at half scale, mono int16 little-endian, `seconds` long at `rate`.
    static func tone(rate: Int, seconds: Double, frequency: Double = 1000) -> [UInt8] {
        let count = Int(Double(rate) * seconds)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count * 2)
        for index in 0..<count {
            let value = Int16(16384 * sin(2 * Double.pi * frequency * Double(index) / Double(rate)))
            bytes.append(UInt8(truncatingIfNeeded: value))
            bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        }
        return bytes
    }

    /// Starts `aplay` playing `file` (mono int16 at `rate`) into the loopback's playback side.
    static func play(_ file: URL, rate: Int, device: String = "hw:Loopback,0,0") throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/aplay")
        process.arguments = ["-q", "-D", device, "-t", "raw", "-f", "S16_LE", "-c", "1", "-r", "\(rate)", file.path]
        try process.run()
        return process
    }

    /// The samples of int16 mono chunks, in order.
    static func samples(_ chunks: [RecordingAudioSink.Received]) -> [Int16] {
        chunks.flatMap { chunk in
            stride(from: 0, to: chunk.bytes.count - 1, by: 2).map {
                Int16(bitPattern: UInt16(chunk.bytes[$0]) | UInt16(chunk.bytes[$0 + 1]) << 8)
            }
        }
    }
}

/// ALSA capture against the kernel's snd-aloop card. Skipped outside the kernel VM; inside it,
/// a missing snd-aloop fails.
@Suite("Kernel snd-aloop", .serialized, .enabled(if: KernelVM.isInside, "runs in Scripts/kernel-vm.sh's VM"))
struct KernelLoopbackTests {
    @Test("snd-aloop is loaded: the VM has a Loopback card")
    func loaded() {
        #expect(Loopback.isLoaded, "modprobe snd-aloop (Scripts/test.sh)")
    }

    @Test("a 1 kHz tone played into the loopback is captured at its level and frequency, with no gap")
    func tone() throws {
        let rate = 48_000
        let file = try AudioTestSignal.temporaryFile(Loopback.tone(rate: rate, seconds: 3))
        defer { try? FileManager.default.removeItem(at: file) }
        let mic = ALSAMicrophone(pcmName: "hw:Loopback,1,0")
        let sink = RecordingAudioSink(framesWanted: rate * 4)
        // The capture side first: snd-aloop makes the playback side take its format.
        let format = try mic.startCapture(
            format: AudioFormat(sampleRate: rate, channelCount: 1, sampleFormat: .int16), framesPerChunk: 480,
            sink: sink)
        #expect(format == AudioFormat(sampleRate: rate, channelCount: 1, sampleFormat: .int16))
        let player = try Loopback.play(file, rate: rate)
        player.waitUntilExit()
        #expect(player.terminationStatus == 0)
        #expect(sink.enough.wait(timeout: .now() + 60) == .success)
        mic.stopCapture()
        #expect(sink.errors.isEmpty)
        #expect(sink.losses.isEmpty, "\(sink.losses)")
        let chunks = sink.chunks
        // No gap: each chunk starts where the one before ended.
        #expect(zip(chunks, chunks.dropFirst()).allSatisfy { $0.sampleIndex + UInt64($0.frameCount) == $1.sampleIndex })
        #expect(chunks.allSatisfy { $0.framesLostBefore == 0 })
        let samples = Loopback.samples(chunks)
        guard let first = samples.firstIndex(where: { abs(Int($0)) > 1000 }),
            let last = samples.lastIndex(where: { abs(Int($0)) > 1000 })
        else {
            Issue.record("the tone never arrived")
            return
        }
        // The middle of the tone (clear of its ends): level and frequency.
        let tone = Array(samples[(first + 480)..<(last - 480)])
        #expect(tone.count > rate * 2, "about 3 s of tone: \(tone.count) samples")
        let rms = (tone.map { Double($0) * Double($0) }.reduce(0, +) / Double(tone.count)).squareRoot()
        let peak = tone.map { abs(Int($0)) }.max() ?? 0
        #expect(abs(rms - 16384 / 2.0.squareRoot()) < 350, "RMS \(rms), peak \(peak)")
        #expect((16_200...16_384).contains(peak), "peak \(peak)")
        var crossings: [Int] = []
        for index in 1..<tone.count where tone[index - 1] < 0 && tone[index] >= 0 { crossings.append(index) }
        let periods = zip(crossings, crossings.dropFirst()).map { $1 - $0 }
        // 48 samples a period at 1 kHz; a lost or repeated stretch would break one period.
        #expect(periods.allSatisfy { (47...49).contains($0) }, "periods \(Set(periods))")
        let frequency = Double(rate) * Double(periods.count) / Double(crossings.last! - crossings.first!)
        #expect(abs(frequency - 1000) < 2, "\(frequency) Hz")
    }

    @Test("formats negotiated with the hardware agree with arecord --dump-hw-params and capture as asked")
    func negotiation() throws {
        let mic = ALSAMicrophone(pcmName: "hw:Loopback,1,1")
        let formats = try mic.probeFormats()
        let (_, dump) = try KernelVM.run(
            "arecord", ["-D", "hw:Loopback,1,1", "--dump-hw-params", "-d", "1", "-f", "S16_LE", "/dev/null"])
        func range(_ name: String) -> ClosedRange<Int>? {
            guard let line = dump.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return nil }
            let numbers = line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
            guard let low = numbers.first, let high = numbers.last else { return nil }
            return low...high
        }
        let rates = try #require(range("RATE"), "\(dump)")
        let channels = try #require(range("CHANNELS"), "\(dump)")
        let formatLine = dump.split(separator: "\n").first { $0.hasPrefix("FORMAT") } ?? ""
        #expect(!formats.isEmpty)
        #expect(formats.allSatisfy { rates.contains($0.sampleRate) && channels.contains($0.channelCount) })
        let names: [AudioFormat.SampleFormat: String] = [.int16: "S16_LE", .int32: "S32_LE", .float32: "FLOAT_LE"]
        for sampleFormat in [AudioFormat.SampleFormat.int16, .int32, .float32] {
            let offered = formatLine.contains(names[sampleFormat]!)
            #expect(formats.contains { $0.sampleFormat == sampleFormat } == offered, "\(sampleFormat): \(formatLine)")
        }
        for rate in ALSAMicrophone.standardRates where rates.contains(rate) {
            #expect(
                formats.contains(AudioFormat(sampleRate: rate, channelCount: 2, sampleFormat: .int16)), "\(rate) Hz")
        }
        for format in [
            AudioFormat(sampleRate: 44_100, channelCount: 2, sampleFormat: .float32),
            AudioFormat(sampleRate: 96_000, channelCount: 1, sampleFormat: .int32),
            AudioFormat(sampleRate: 8_000, channelCount: 2, sampleFormat: .int16),
        ] where formats.contains(format) {
            let sink = RecordingAudioSink(framesWanted: format.sampleRate / 10)
            let chosen = try mic.startCapture(format: format, framesPerChunk: format.sampleRate / 100, sink: sink)
            #expect(sink.enough.wait(timeout: .now() + 60) == .success)
            mic.stopCapture()
            #expect(chosen == format)
            #expect(sink.chunks.allSatisfy { $0.format == format })
            #expect(sink.errors.isEmpty)
        }
    }

    @Test("an overrun (the reader stalled until the kernel reports XRUN) is recovered and counted")
    func overrun() throws {
        let mic = ALSAMicrophone(pcmName: "hw:Loopback,1,0")
        let sink = StallingAudioSink(framesWanted: 4800)
        _ = try mic.startCapture(
            format: AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .int16), framesPerChunk: 480,
            sink: sink)
        #expect(sink.stalled.wait(timeout: .now() + 60) == .success)
        // The capture thread is held in the sink: wait for the kernel to say the buffer overran.
        let status = "/proc/asound/Loopback/pcm1c/sub0/status"
        let deadline = Date().addingTimeInterval(60)
        var state = ""
        while Date() < deadline {
            state = (try? String(contentsOfFile: status, encoding: .utf8)) ?? ""
            if state.contains("XRUN") { break }
            _ = DispatchSemaphore(value: 0).wait(timeout: .now() + 0.05)
        }
        #expect(state.contains("XRUN"), "\(state)")
        sink.release()
        #expect(sink.recording.enough.wait(timeout: .now() + 60) == .success)
        let counters = mic.statistics
        mic.stopCapture()
        #expect(counters?.overruns ?? 0 >= 1, "\(String(describing: counters))")
        #expect(sink.recording.losses.contains { $0.frames > 0 }, "the lost frames are reported")
        #expect(sink.recording.errors.isEmpty)
    }

    @Test("the card going away mid-capture ends the capture with deviceDisconnected")
    func cardRemoved() throws {
        let driver = "/sys/bus/platform/drivers/snd_aloop"
        let mic = ALSAMicrophone(pcmName: "hw:Loopback,1,0")
        let sink = RecordingAudioSink(framesWanted: .max)
        _ = try mic.startCapture(
            format: AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .int16), framesPerChunk: 480,
            sink: sink)
        let frames = { sink.state.withLock { $0.frames } }
        let deadline = Date().addingTimeInterval(60)
        while frames() < 4800, Date() < deadline { _ = sink.enough.wait(timeout: .now() + 0.05) }
        try "snd_aloop.0".write(toFile: "\(driver)/unbind", atomically: false, encoding: .utf8)
        defer { try? "snd_aloop.0".write(toFile: "\(driver)/bind", atomically: false, encoding: .utf8) }
        #expect(sink.enough.wait(timeout: .now() + 60) == .success)
        mic.stopCapture()
        #expect(sink.errors.first?.code == .deviceDisconnected, "\(sink.errors)")
    }
}

/// Holds the capture thread in its first delivery until released (so the kernel's buffer overruns).
final class StallingAudioSink: AudioStreamSink, @unchecked Sendable {  // unchecked: state is in a Mutex.
    let recording: RecordingAudioSink
    let stalled = DispatchSemaphore(value: 0)
    let released = DispatchSemaphore(value: 0)
    private let hasStalled = Mutex(false)

    init(framesWanted: Int) { recording = RecordingAudioSink(framesWanted: framesWanted) }

    func release() { released.signal() }

    func audioStreamDidCapture(_ chunk: AudioChunk) {
        let first = hasStalled.withLock { stalled in
            defer { stalled = true }
            return !stalled
        }
        if first {
            stalled.signal()
            _ = released.wait(timeout: .now() + 120)
        }
        recording.audioStreamDidCapture(chunk)
    }

    func audioStreamDidLose(frames: Int, reason: AudioLossReason) {
        recording.audioStreamDidLose(frames: frames, reason: reason)
    }

    func audioStreamDidFail(_ error: CaptureError) { recording.audioStreamDidFail(error) }
}
