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
@testable import ViewfinderSimulator
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

// The README's examples, kept compiling and working: if one of these must change, change the
// README with it.

private final class FrameHandler: CaptureVideoDataOutputSampleBufferDelegate {
    let frames = Mutex(0)
    let arrived = DispatchSemaphore(value: 0)

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        guard let image = sampleBuffer.imageBuffer else { return }
        _ = (image.baseAddress(ofPlane: 0), image.bytesPerRow(ofPlane: 0), image.width, image.height)
        frames.withLock { $0 += 1 }
        arrived.signal()
    }

    func captureOutput(_ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection)
    {
        _ = sampleBuffer.droppedFrameReason!
    }
}

private final class SoundHandler: CaptureAudioDataOutputSampleBufferDelegate {
    let levels = Mutex<[Float]>([])
    let arrived = DispatchSemaphore(value: 0)

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        _ = sampleBuffer.withAudioSamples(as: Float.self) { $0.count }
        for channel in connection.audioChannels {
            levels.withLock { $0.append(channel.averagePowerLevel) }
            _ = channel.peakHoldLevel
        }
        arrived.signal()
    }
}

private final class Brightness: FrameProcessor {
    var acceptedPixelFormats: [PixelFormat] { [.nv12VideoRange, .nv12FullRange] }

    func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        let luma = frame.image.bytes(ofPlane: 0)
        frame.setAttachment(Int(luma[luma.count / 2]), forKey: "brightness")
        return .keep
    }
}

@Suite("README examples")
struct ReadmeExampleTests {
    @Test("the capture example delivers BGRA frames with processors and rotation")
    func captureExample() throws {
        let session = CaptureSession(notificationCenter: NotificationCenter())
        session.beginConfiguration()
        session.sessionPreset = .hd1280x720

        let camera = VirtualCamera(configuration: .init(clock: ManualClock())).device
        let input = try CaptureDeviceInput(device: camera)
        if session.canAddInput(input) { session.addInput(input) }

        let output = CaptureVideoDataOutput()
        output.typedVideoSettings = try VideoSettings(pixelFormat: .bgra)
        output.alwaysDiscardsLateVideoFrames = true
        try output.setMinFrameDuration(MediaTime(value: 1, timescale: 15))
        let handler = FrameHandler()
        output.setSampleBufferDelegate(handler, queue: DispatchQueue(label: "frames"))
        if session.canAddOutput(output) { session.addOutput(output) }

        try output.addProcessor(try CropProcessor(x: 0, y: 0, width: 640, height: 360), named: "crop")
        try output.addProcessor(GrayscaleProcessor(), named: "gray", at: .after("crop"))
        try output.addProcessor(LumaStatisticsProcessor(), named: "stats", at: .last)
        try output.addProcessor(Brightness(), named: "brightness", at: .before("stats"))
        let connection = try #require(output.connection(with: .video))
        try connection.setVideoRotationAngle(90)
        connection.isVideoMirrored = true
        session.commitConfiguration()

        session.startRunning()
        #expect(handler.arrived.wait(timeout: .now() + 10) == .success)
        session.stopRunning()
        #expect(output.deliveredFormat?.pixelFormat == .bgra)
        #expect(output.deliveredFormat?.size == CaptureDevice.Dimensions(width: 640, height: 360))
        #expect(output.processors.map(\.name) == ["crop", "gray", "brightness", "stats"])
        #expect(output.statistics.delivered == handler.frames.withLock { $0 })
    }

    @Test("the device configuration example")
    func lockExample() throws {
        let camera = VirtualCamera(configuration: .init(clock: ManualClock())).device
        try camera.lockForConfiguration()
        try camera.setActiveFormat(camera.formats.first { $0.dimensions.width == 640 }!)
        try camera.setActiveVideoMinFrameDuration(MediaTime(value: 1, timescale: 30))
        camera.unlockForConfiguration()
        #expect(camera.activeVideoMinFrameDuration == MediaTime(value: 1, timescale: 30))
    }

    @Test("the simulated camera example finds the C920 through the real backend")
    func simulatedExample() throws {
        let camera = try SimulatedUVCCamera(
            configuration: .init(listing: SimulatedUVCCamera.c920Listing, clock: ManualClock()))
        let bus = SimulatedV4L2Bus()
        bus.plug(camera)
        try bus.withDiscovery {
            let device = try #require(CaptureDevice.default(for: .video))
            #expect(device.localizedName.contains("C920"))
            #expect(CaptureDevice.devices(for: .video).last?.deviceType == .virtual)
        }
    }

    @Test("the test-target example finds the simulated webcam and injects a fault")
    func simulatorProductExample() throws {
        let bus = SimulatedV4L2Bus()
        let webcam = try SimulatedUVCCamera(configuration: .init(listing: SimulatedUVCCamera.c920Listing))
        bus.plug(webcam)
        try bus.withDiscovery {
            let device = try #require(CaptureDevice.default(for: .video))  // the simulated C920
            #expect(device.localizedName == "HD Pro Webcam C920")
            webcam.injectFrameFaults([.errorFlag])  // fault injection
        }
        #expect(webcam.isPluggedIn)
    }
    @Test("the sound example delivers float PCM at 44.1 kHz and fills the level meters")
    func soundExample() throws {
        // Only the virtual microphone, so the example runs the same with or without a sound card.
        let registry = DeviceRegistry(providers: [VirtualMicrophoneProvider()])
        let microphone = try #require(
            DeviceRegistry.$current.withValue(registry) { CaptureDevice.default(for: .audio) })
        let session = CaptureSession(notificationCenter: NotificationCenter())
        try session.tryAddInput(try CaptureDeviceInput(device: microphone))
        let audio = CaptureAudioDataOutput()
        audio.audioSettings = try AudioSettings(sampleFormat: .float32, sampleRate: 44_100)
        let sound = SoundHandler()
        audio.setSampleBufferDelegate(sound, queue: DispatchQueue(label: "sound"))
        try session.tryAddOutput(audio)
        session.startRunning()
        #expect(sound.arrived.wait(timeout: .now() + 10) == .success)
        session.stopRunning()
        #expect(audio.deliveredAudioFormat?.sampleRate == 44_100)
        #expect(audio.deliveredAudioFormat?.sampleFormat == .float32)
        let levels = sound.levels.withLock { $0 }
        #expect(!levels.isEmpty && levels.allSatisfy { $0 > -160 && $0 < 0 })
    }

    @Test("the camera profiles example saves, applies, lists and removes profiles")
    func cameraProfiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vf-config-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        // The README's `CaptureDevice.default(for: .video)!`, with its profiles in a temporary XDG_CONFIG_HOME.
        let camera = VirtualCamera(configuration: .init(uniqueID: "virtual:readme-\(UUID().uuidString)")).device
        camera.profileStore = .standard(environment: ["XDG_CONFIG_HOME": directory.path])

        // Save what the camera is set to now (controls, format, frame rate) as its default profile:
        // it is put back whenever a session opens the camera, and after every replug.
        try camera.saveProfile()
        // Or keep several and pick one.
        try camera.saveProfile(named: "Evening")
        for problem in try camera.applyProfile(named: "Evening") {
            print("not applied: \(problem)")  // a value the camera refuses now
        }
        camera.automaticallyAppliedProfileName = "Evening"
        camera.automaticallyAppliesProfile = false  // or none at all
        print(camera.savedProfileNames)  // ["Evening", "default"]
        try camera.removeProfile(named: "Evening")

        #expect(camera.savedProfileNames == ["default"])
    }
}
