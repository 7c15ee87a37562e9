import Dispatch
import Foundation
import Synchronization
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

/// Microphones as devices (discovery, the ALSA `file`-PCM path through a session) and audio with
/// video in one session (A/V sync).
@Suite("Audio devices and sessions")
struct AudioSessionTests {
    static let pcmName = "viewfinder_session_file_test"

    /// A registry whose only microphones are a file-backed ALSA PCM reading `url` and the
    /// virtual microphone.
    static func fileMicrophoneRegistry(reading url: URL, bufferCount: Int) -> (DeviceRegistry, ALSAMicrophone) {
        let microphone = ALSAMicrophone(
            pcmName: pcmName, localizedName: "File Microphone",
            extraConfiguration: ALSAConfigurationText.fileCapture(pcmName: pcmName, inputPath: url.path),
            bufferCount: bufferCount)
        let backend = AudioDeviceBackend(source: microphone, modelID: "ALSA file", manufacturer: "")
        return (
            DeviceRegistry(providers: [TestMicrophoneProvider(backend: backend), VirtualMicrophoneProvider()]),
            microphone
        )
    }

    /// The buffers from the first, while their sequence numbers run without a gap.
    static func contiguousPrefix(_ buffers: [RecordingAudioDelegate.Buffer]) -> [RecordingAudioDelegate.Buffer] {
        Array(buffers.enumerated().prefix { $0.element.sequenceNumber == UInt64($0.offset) }.map(\.element))
    }

    @Test("microphones are devices: audio port, .microphone type, audio formats, the virtual one last")
    func discovery() throws {
        let url = try AudioTestSignal.temporaryFile([0, 0, 0, 0])
        defer { try? FileManager.default.removeItem(at: url) }
        let (registry, _) = Self.fileMicrophoneRegistry(reading: url, bufferCount: 8)
        try DeviceRegistry.$current.withValue(registry) {
            let microphones = CaptureDevice.devices(for: .audio)
            #expect(microphones.map(\.uniqueID) == ["alsa:\(Self.pcmName)", "viewfinder.virtual.microphone.0"])
            let first = try #require(CaptureDevice.default(for: .audio))
            #expect(first.uniqueID == "alsa:\(Self.pcmName)")
            #expect(first.mediaTypes == [.audio] && first.hasMediaType(.audio) && !first.hasMediaType(.video))
            #expect(first.deviceType == .microphone)
            #expect(!first.formats.isEmpty)
            #expect(first.formats.allSatisfy { $0.mediaType == .audio && $0.audioFormat != nil })
            #expect(
                first.formats.first?.audioFormat
                    == AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16))
            #expect(first.activeFormat == first.formats.first)
            #expect(first.formats.first?.description == "audio 48000 Hz, 2 ch, int16")
            let found = CaptureDevice.DiscoverySession(
                deviceTypes: [.microphone], mediaType: .audio, position: .unspecified
            ).devices
            #expect(found == microphones)
            #expect(CaptureDevice.devices(for: .video).allSatisfy { $0.deviceType != .microphone })
            let input = try CaptureDeviceInput(device: first)
            #expect(input.ports.map(\.mediaType) == [.audio])
            #expect(first.supportsSessionPreset(.hd1920x1080), "presets do not apply to microphones")
        }
    }

    @Test("an ALSA PCM that does not open is not listed: the virtual microphone is the default")
    func unusableALSAIsSkipped() {
        let provider = ALSADeviceProvider(list: { [ALSADeviceInfo(name: "viewfinder_no_such_pcm", description: "")] })
        #expect(provider.discoverBackends().isEmpty)
        let registry = DeviceRegistry(providers: [provider, VirtualMicrophoneProvider()])
        DeviceRegistry.$current.withValue(registry) {
            #expect(CaptureDevice.default(for: .audio)?.uniqueID == "viewfinder.virtual.microphone.0")
        }
    }

    @Test("the built-in default microphone is ALSA's default where it opens, else the virtual microphone")
    func builtInDefault() {
        let alsaDefault = ALSAMicrophone(pcmName: "default")
        let expected = ALSADeviceProvider.isUsable(alsaDefault) ? "alsa:default" : "viewfinder.virtual.microphone.0"
        #expect(CaptureDevice.default(for: .audio)?.uniqueID == expected)
        #expect(CaptureDevice.devices(for: .audio).last?.uniqueID == "viewfinder.virtual.microphone.0")
    }

    @Test("the ALSA file-PCM path through a session arrives bit-exact, in order, on the monotonic clock")
    func alsaFileThroughSession() throws {
        let frames = 48_000
        let expected = AudioTestSignal.bytes(of: AudioTestSignal.distinctiveInt16(frames: frames, channels: 2))
        let url = try AudioTestSignal.temporaryFile(expected)
        defer { try? FileManager.default.removeItem(at: url) }
        // The null slave is not paced: budget and pool hold the whole file (about 100 buffers of
        // 10 ms; more if the PCM picks a shorter period).
        let (registry, _) = Self.fileMicrophoneRegistry(reading: url, bufferCount: 320)
        let device = try #require(DeviceRegistry.$current.withValue(registry) { CaptureDevice.default(for: .audio) })
        let delegate = RecordingAudioDelegate()
        let rig = try AudioRig(device: device, bufferBudget: 256, delegate: delegate)
        let before = HostClock().now()
        rig.start()
        #expect(delegate.waitForFrames(frames))
        rig.session.stopRunning()

        let buffers = delegate.buffers
        let format = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16)
        #expect(buffers.allSatisfy { $0.format == format })
        // The buffers holding the file came without a gap.
        let received = Self.contiguousPrefix(buffers).flatMap(\.bytes)
        #expect(received.count >= expected.count)
        #expect(Array(received.prefix(expected.count)) == expected)
        #expect(zip(buffers, buffers.dropFirst()).allSatisfy { $0.presentationTime < $1.presentationTime })
        #expect(abs((try #require(buffers.first).presentationTime - before).seconds) < 1)
        let stats = rig.output.statistics
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
    }

    @Test("the ALSA file path resampled by audioSettings keeps its tone within tolerance")
    func alsaFileResampled() throws {
        let frames = 48_000
        let tone = AudioTestSignal.sine(frequency: 1000, amplitude: 0.5, rate: 48_000, frames: frames)
        let url = try AudioTestSignal.temporaryFile(AudioTestSignal.bytes(of: tone))
        defer { try? FileManager.default.removeItem(at: url) }
        let (registry, _) = Self.fileMicrophoneRegistry(reading: url, bufferCount: 320)
        let device = try #require(DeviceRegistry.$current.withValue(registry) { CaptureDevice.default(for: .audio) })
        // The file is 48 kHz float mono: fix the device to that, ask the output for 44.1 kHz int16.
        let captured = AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .float32)
        try device.lockForConfiguration()
        try device.setActiveFormat(try #require(device.formats.first { $0.audioFormat == captured }))
        device.unlockForConfiguration()
        let delegate = RecordingAudioDelegate()
        let rig = try AudioRig(
            device: device, settings: try AudioSettings(sampleFormat: .int16, sampleRate: 44_100), bufferBudget: 256,
            delegate: delegate)
        rig.start()
        #expect(delegate.waitForFrames(44_100))
        rig.session.stopRunning()
        #expect(device.activeFormat.audioFormat == captured)
        #expect(rig.output.isConverting)
        let target = AudioFormat(sampleRate: 44_100, channelCount: 1, sampleFormat: .int16)
        #expect(rig.output.deliveredAudioFormat == target)
        let file = Self.contiguousPrefix(delegate.buffers)
        #expect(file.allSatisfy { $0.format == target })
        let output = file.flatMap { $0.samples() }
        try #require(output.count >= 39_690)
        let steady = Array(output[4410..<39_690])
        #expect(abs(AudioAnalysis.frequency(of: steady, rate: 44_100) - 1000) < 0.5)
        #expect(abs(AudioAnalysis.rms(steady) - 0.5 / 2.0.squareRoot()) < 0.005)
    }

    @Test("a level meter on the ALSA path: a full-scale sine file reads −3 dBFS average, 0 dBFS peak")
    func alsaLevels() throws {
        let tone = AudioTestSignal.sine(frequency: 1000, amplitude: 1, rate: 48_000, frames: 4800)
        let url = try AudioTestSignal.temporaryFile(AudioTestSignal.bytes(of: tone))
        defer { try? FileManager.default.removeItem(at: url) }
        let (registry, _) = Self.fileMicrophoneRegistry(reading: url, bufferCount: 64)
        let device = try #require(DeviceRegistry.$current.withValue(registry) { CaptureDevice.default(for: .audio) })
        try device.lockForConfiguration()
        try device.setActiveFormat(
            try #require(
                device.formats.first {
                    $0.audioFormat == AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .float32)
                }))
        device.unlockForConfiguration()
        let levels = Mutex<[(Float, Float)]>([])
        let delegate = LevelReadingDelegate { connection in
            guard let channel = connection.audioChannels.first else { return }
            levels.withLock { $0.append((channel.averagePowerLevel, channel.peakHoldLevel)) }
        }
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let output = CaptureAudioDataOutput(bufferBudget: 64)
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "levels"))
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        try session.tryAddOutput(output)
        session.startRunning()
        #expect(delegate.arrived.wait(timeout: .now() + 20) == .success)
        session.stopRunning()
        // Read inside the first callback: the levels of that buffer.
        let first = try #require(levels.withLock { $0.first })
        #expect(abs(first.0 - -3.01) < 0.05)
        #expect(abs(first.1) < 0.05)
    }

    @Test("A/V sync: the virtual camera's flash and the virtual microphone's click at one instant arrive < 1 ms apart")
    func avSync() throws {
        let clock = ManualClock()
        let flashTime = MediaTime(value: 1, timescale: 10)
        let camera = VirtualCamera(
            configuration: .init(
                clock: clock,
                formats: [
                    CaptureDevice.Format(
                        pixelFormat: .nv12VideoRange, width: 640, height: 480,
                        frameRateRanges: [FrameRateRange(framesPerSecond: 30)])
                ], flashTimes: [flashTime]))
        let mono = AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .float32)
        let mic = VirtualMicrophone(configuration: .init(clock: clock, clickTimes: [flashTime], formats: [mono]))
        let microphone = mic.makeDevice()
        let flashes = Mutex<[MediaTime]>([])
        let video = RecordingDelegate(inspect: { buffer in
            if let image = buffer.imageBuffer, TestPattern.isFlash(image) {
                flashes.withLock { $0.append(buffer.presentationTimeStamp) }
            }
        })
        let audio = RecordingAudioDelegate()
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let videoOutput = CaptureVideoDataOutput()
        videoOutput.setSampleBufferDelegate(video, queue: video.queue)
        let audioOutput = CaptureAudioDataOutput()
        audioOutput.setSampleBufferDelegate(audio, queue: audio.queue)
        session.beginConfiguration()
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        try session.tryAddInput(try CaptureDeviceInput(device: microphone))
        try session.tryAddOutput(videoOutput)
        try session.tryAddOutput(audioOutput)
        session.commitConfiguration()
        #expect(session.connections.count == 2)
        session.startRunning()
        #expect(session.isRunning)
        #expect(clock.waitUntilSleeping(count: 2))
        for _ in 0..<20 {
            clock.advance(by: .audioChunk)
            #expect(clock.waitUntilSleeping(count: 2))
            #expect(videoOutput.waitUntilDelivered(timeout: 10) && audioOutput.waitUntilDelivered(timeout: 10))
        }
        #expect(videoOutput.waitUntilDelivered(timeout: 10))
        #expect(audioOutput.waitUntilDelivered(timeout: 10))
        let videoConnection = try #require(videoOutput.connection(with: .video))
        let audioConnection = try #require(audioOutput.connection(with: .audio))
        #expect(videoConnection.audioChannels.isEmpty, "level meters are for audio connections only")
        #expect(audioConnection.audioChannels.count == 1)
        session.stopRunning()

        #expect(video.frames.map(\.patternNumber) == (0...6).map { UInt64($0) })
        let flash = try #require(flashes.withLock { $0 }.first)
        #expect(flashes.withLock { $0.count } == 1)
        var clicks: [MediaTime] = []
        var previousWasClick = false
        for buffer in audio.buffers {
            for (offset, sample) in buffer.samples().enumerated() {
                let isClick = sample > 0.9
                if isClick, !previousWasClick {
                    clicks.append(buffer.presentationTime + mono.duration(ofFrames: offset))
                }
                previousWasClick = isClick
            }
        }
        #expect(clicks.count == 1)
        let click = try #require(clicks.first)
        #expect(abs((flash - click).seconds) < 0.001)
        #expect(flash == flashTime)
        for stats in [videoOutput.statistics, audioOutput.statistics] {
            #expect(stats.dropped == 0 && stats.delivered == stats.captured)
        }
        #expect(audioOutput.statistics.delivered == 20)
    }

    @Test("an unplugged microphone interrupts the session with deviceDisconnected; plugged back in, audio resumes")
    func microphoneUnplugged() throws {
        let clock = ManualClock()
        let mic = VirtualMicrophone(
            configuration: .init(
                clock: clock, formats: [AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .int16)]))
        let indices = Mutex<[UInt64?]>([])
        let delegate = LevelReadingDelegate { _ in }
        delegate.inspect = { buffer in indices.withLock { $0.append(VirtualMicrophone.sampleIndex(of: buffer)) } }
        let center = NotificationCenter()
        let session = CaptureSession(notificationCenter: center)
        let output = CaptureAudioDataOutput()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "unplug"))
        try session.tryAddInput(try CaptureDeviceInput(device: mic.device))
        try session.tryAddOutput(output)
        let errors = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: session, center: center)
        let interrupted = NotificationRecorder(
            CaptureSession.wasInterruptedNotification, object: session, center: center)
        let resumed = NotificationRecorder(
            CaptureSession.interruptionEndedNotification, object: session, center: center)
        session.startRunning()
        #expect(clock.waitUntilSleeping())
        clock.advance(by: .audioChunk)
        #expect(clock.waitUntilSleeping())
        mic.simulateDisconnect()
        clock.advance(by: .audioChunk)
        #expect(interrupted.wait())
        #expect(errors.lastError?.code == .deviceDisconnected)
        #expect(session.isInterrupted && session.isRunning)
        mic.simulateReconnect()
        #expect(resumed.wait())
        #expect(!session.isInterrupted)
        #expect(clock.waitUntilSleeping())
        clock.advance(by: .audioChunk)
        #expect(clock.waitUntilSleeping())
        #expect(output.waitUntilDelivered(timeout: 10))
        session.stopRunning()
        // Chunk 0 before the unplug, then the restarted stream's chunk 0 again.
        #expect(indices.withLock { $0 } == [0, 0])
    }

    @Test("a flash frame is detected in every pixel format and still carries its sequence number")
    func flashDetection() throws {
        for format in [PixelFormat.bgra, .nv12VideoRange, .nv12FullRange, .yuyv, .i420] {
            let pool = try PixelBufferPool(pixelFormat: format, width: 320, height: 240, capacity: 1)
            let buffer = try #require(pool.makePixelBuffer())
            TestPattern.render(sequenceNumber: 9, into: buffer)
            #expect(!TestPattern.isFlash(buffer), "\(format.name)")
            TestPattern.renderFlash(sequenceNumber: 12, into: buffer)
            #expect(TestPattern.isFlash(buffer), "\(format.name)")
            #expect(TestPattern.readSequenceNumber(from: buffer) == 12)
        }
        let start = MediaTime.zero
        #expect(
            VirtualCameraBackend.frameIndex(
                at: MediaTime(value: 1, timescale: 10), start: start, frameDuration: .fps(30)) == 3)
        #expect(
            VirtualCameraBackend.frameIndex(
                at: MediaTime(value: 101, timescale: 1000), start: start, frameDuration: .fps(30)) == 4)
        #expect(
            VirtualCameraBackend.frameIndex(
                at: MediaTime(value: -1, timescale: 10), start: start, frameDuration: .fps(30)) == nil)
    }
}

/// Reads the connection's levels at each buffer; signals once one arrived.
final class LevelReadingDelegate: CaptureAudioDataOutputSampleBufferDelegate {
    let read: @Sendable (CaptureConnection) -> Void
    private let inspection = Mutex<(@Sendable (SampleBuffer) -> Void)?>(nil)
    let arrived = DispatchSemaphore(value: 0)
    init(read: @escaping @Sendable (CaptureConnection) -> Void) { self.read = read }

    /// Called with each buffer.
    var inspect: (@Sendable (SampleBuffer) -> Void)? {
        get { inspection.withLock { $0 } }
        set { inspection.withLock { $0 = newValue } }
    }

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        read(connection)
        inspect?(sampleBuffer)
        arrived.signal()
    }
}
