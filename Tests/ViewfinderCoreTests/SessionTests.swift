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

@Suite("Session graph and configuration")
struct SessionTests {
    @Test("addInput/addOutput connect them; removing disconnects")
    func graph() throws {
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let output = CaptureVideoDataOutput()
        try session.tryAddOutput(output)
        #expect(session.connections.isEmpty, "no input yet")
        let camera = VirtualCamera(configuration: .init(clock: ManualClock()))
        let input = try CaptureDeviceInput(device: camera.device)
        try session.tryAddInput(input)
        let connection = try #require(session.connections.first)
        #expect(connection.output === output)
        #expect(connection.inputPorts.first?.input === input)
        #expect(connection.inputPorts.first?.mediaType == .video)
        #expect(output.connection(with: .video) === connection)
        #expect(output.connection(with: .audio) == nil)
        #expect(connection.isEnabled && !connection.isActive)
        session.removeInput(input)
        #expect(session.connections.isEmpty && output.connections.isEmpty)
    }

    @Test("nested begin/commit applies nothing until the outermost commit")
    func atomicConfiguration() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate()
        let rig = try Rig(
            camera: .init(clock: clock), settings: try VideoSettings(pixelFormat: .bgra), delegate: delegate)
        rig.start()
        rig.settle(clock)
        #expect(rig.output.deliveredFormat?.size == .init(width: 640, height: 480))

        rig.session.beginConfiguration()
        rig.session.sessionPreset = .hd1280x720
        rig.session.beginConfiguration()
        rig.output.typedVideoSettings = try VideoSettings(pixelFormat: .nv12VideoRange)
        rig.session.commitConfiguration()
        // Inner commit: the running pipeline is untouched.
        rig.step(clock, by: .fps(60))
        #expect(rig.output.deliveredFormat?.pixelFormat == .bgra)
        #expect(rig.camera.device.activeFormat.dimensions.width == 640)
        #expect(delegate.frames.last?.pixelFormat == .bgra)

        rig.session.commitConfiguration()
        // Outermost commit: both changes at once, between frames.
        #expect(rig.session.isRunning)
        #expect(rig.camera.device.activeFormat.dimensions == .init(width: 1280, height: 720))
        #expect(rig.camera.device.activeFormat.pixelFormat == .nv12VideoRange, "native match chosen")
        #expect(rig.output.isZeroCopy)
        rig.step(clock, by: .fps(60))
        let last = try #require(delegate.frames.last)
        #expect(last.pixelFormat == .nv12VideoRange && last.width == 1280)
        rig.session.stopRunning()
    }

    @Test(
        "presets pick the matching device format",
        arguments: [
            (CaptureSession.Preset.vga640x480, 640), (.hd1280x720, 1280), (.hd1920x1080, 1920), (.high, 1920),
            (.medium, 640), (.low, 640),
        ])
    func presets(preset: CaptureSession.Preset, width: Int) throws {
        let rig = try Rig(camera: .init(clock: ManualClock()), preset: preset, delegate: RecordingDelegate())
        rig.start()
        #expect(rig.camera.device.activeFormat.dimensions.width == width)
        rig.session.stopRunning()
    }

    @Test("presets over a real camera's shapes prefer sizes that run smoothly")
    func presetOverCameraListing() {
        // Raw 4:2:2 capped at 5 fps at 1080p (USB 2), 30 fps up to 640x480.
        let formats = [
            CaptureDevice.Format(
                pixelFormat: .yuyv, width: 1920, height: 1080, frameRateRanges: [.init(framesPerSecond: 5)]),
            CaptureDevice.Format(
                pixelFormat: .yuyv, width: 1280, height: 720, frameRateRanges: [.init(framesPerSecond: 10)]),
            CaptureDevice.Format(
                pixelFormat: .yuyv, width: 640, height: 480, frameRateRanges: [.init(framesPerSecond: 30)]),
            CaptureDevice.Format(
                pixelFormat: .yuyv, width: 160, height: 90, frameRateRanges: [.init(framesPerSecond: 30)]),
            CaptureDevice.Format(
                pixelFormat: .mjpeg, width: 1920, height: 1080, frameRateRanges: [.init(framesPerSecond: 30)]),
        ]
        #expect(CaptureSession.Preset.high.bestFormat(in: formats)?.dimensions.width == 640)
        #expect(CaptureSession.Preset.low.bestFormat(in: formats)?.dimensions.width == 160)
        #expect(CaptureSession.Preset.hd1920x1080.bestFormat(in: formats)?.pixelFormat == .yuyv, "never compressed")
    }

    @Test("negotiation prefers zero-copy, then libyuv, and never an emulated format when a native one serves")
    func negotiation() throws {
        let rates = [FrameRateRange(framesPerSecond: 30)]
        let yuyv = CaptureDevice.Format(pixelFormat: .yuyv, width: 640, height: 480, frameRateRanges: rates)
        let nv12 = CaptureDevice.Format(pixelFormat: .nv12VideoRange, width: 640, height: 480, frameRateRanges: rates)
        let emulatedBGRA = CaptureDevice.Format(
            pixelFormat: .bgra, width: 640, height: 480, frameRateRanges: rates, isEmulated: true)
        let device = VirtualCamera(configuration: .init(clock: ManualClock(), formats: [yuyv, nv12, emulatedBGRA]))
            .device
        func pick(_ format: PixelFormat?) throws -> PixelFormat {
            try FormatNegotiator.negotiate(
                device: device, preset: .vga640x480, requests: [OutputRequest(pixelFormat: format)]
            ).format.pixelFormat
        }
        #expect(try pick(.nv12VideoRange) == .nv12VideoRange)
        #expect(try pick(.yuyv) == .yuyv)
        #expect(try pick(.bgra) == .nv12VideoRange, "one libyuv pass from native NV12 beats an emulated BGRA")
        #expect(try pick(nil) == .nv12VideoRange, "native delivery: the fewest bytes")
        #expect(try pick(.i420) == .nv12VideoRange)
    }

    @Test("start, stop and connection state are reported")
    func notifications() throws {
        let clock = ManualClock()
        let rig = try Rig(camera: .init(clock: clock), delegate: RecordingDelegate())
        let started = rig.record(CaptureSession.didStartRunningNotification)
        let stopped = rig.record(CaptureSession.didStopRunningNotification)
        rig.start()
        #expect(started.next().received)
        let connection = try #require(rig.output.connection(with: .video))
        #expect(connection.isActive)
        connection.isEnabled = false
        #expect(!connection.isActive)
        connection.isEnabled = true
        rig.session.stopRunning()
        #expect(stopped.next().received)
        #expect(!connection.isActive)
        #expect(!rig.session.isRunning)
    }

    @Test("a disabled connection delivers nothing and counts nothing")
    func disabledConnection() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate()
        let rig = try Rig(camera: .init(clock: clock), delegate: delegate)
        rig.start()
        rig.settle(clock)
        let connection = try #require(rig.output.connection(with: .video))
        connection.isEnabled = false
        rig.step(clock, by: .fps(60), times: 5)
        #expect(delegate.frames.count == 1)
        connection.isEnabled = true
        rig.step(clock, by: .fps(60), times: 2)
        rig.session.stopRunning()
        #expect(delegate.frames.count == 3)
        let stats = rig.output.statistics
        #expect(stats.captured == 3 && stats.delivered == 3)
    }

    @Test("devices: the virtual camera is the default when there is no camera, and listed last")
    func discovery() throws {
        let devices = CaptureDevice.devices(for: .video)
        let virtual = try #require(devices.last)
        #expect(virtual.deviceType == .virtual)
        #expect(virtual.localizedName == "Test Pattern Camera")
        #expect(CaptureDevice.devices(for: .audio).last?.uniqueID == "viewfinder.virtual.microphone.0")
        #expect(!CaptureDevice.devices(for: .audio).contains(virtual), "a camera is no audio device")
        if devices.count == 1 {
            #expect(CaptureDevice.default(for: .video) === virtual)
        }
        #expect(CaptureDevice.device(withUniqueID: virtual.uniqueID) === virtual, "one object per camera")
        let discovery = CaptureDevice.DiscoverySession(
            deviceTypes: [.virtual], mediaType: .video, position: .unspecified)
        #expect(discovery.devices.map(\.uniqueID) == [virtual.uniqueID])
        let formats = virtual.formats
        #expect(formats.count == 9)
        #expect(Set(formats.map(\.pixelFormat)) == [.yuyv, .nv12VideoRange, .bgra])
        #expect(formats.allSatisfy { $0.videoSupportedFrameRateRanges.map(\.maxFrameRate).sorted() == [15, 30, 60] })
    }
}

@Suite("Session lifetime")
struct SessionLifetimeTests {
    @Test("a running session that is dropped stops its camera and releases it")
    func droppedWhileRunning() throws {
        let clock = ManualClock()
        let camera = VirtualCamera(configuration: .init(clock: clock))
        let delegate = RecordingDelegate()
        do {
            let session = CaptureSession(notificationCenter: NotificationCenter())
            try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
            let output = CaptureVideoDataOutput()
            output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "lifetime"))
            try session.tryAddOutput(output)
            session.startRunning()
            #expect(session.isRunning)
            #expect(delegate.waitForFrames(1))
        }
        // The camera thread has ended: it no longer waits on the clock, and another session can
        // claim the camera.
        #expect(!clock.waitUntilSleeping(timeout: 0.2))
        let other = CaptureSession(notificationCenter: NotificationCenter())
        try other.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let output = CaptureVideoDataOutput()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "lifetime.2"))
        try other.tryAddOutput(output)
        other.startRunning()
        #expect(other.isRunning)
        other.stopRunning()
    }
}

@Suite("Connection rotation and mirroring")
struct ConnectionOrientationTests {
    @Test("rotation and mirroring set on the connection apply between frames, also while running")
    func rotateAndMirror() throws {
        let clock = ManualClock()
        let latest = Mutex<PixelBuffer?>(nil)
        let delegate = RecordingDelegate { buffer in latest.withLock { $0 = buffer.imageBuffer } }
        let rig = try Rig(
            camera: .init(clock: clock, formats: virtualFormats(.bgra)),
            settings: try VideoSettings(pixelFormat: .bgra),
            delegate: delegate)
        let connection = try #require(rig.output.connection(with: .video))
        #expect(throws: CaptureError.self) { try connection.setVideoRotationAngle(45) }
        rig.start()
        rig.settle(clock)
        #expect(delegate.frames.last?.width == 640 && delegate.frames.last?.height == 480)

        try connection.setVideoRotationAngle(90)
        rig.step(clock, by: .fps(60))
        #expect(delegate.frames.last?.width == 480 && delegate.frames.last?.height == 640)
        // A quarter turn clockwise puts the left edge (bar 0, 75 % grey) at the top.
        let rotated = try #require(latest.withLock { $0 })
        let rows = TestPattern.barRows(height: 480)
        let column = 480 - 1 - (rows.lowerBound + rows.upperBound) / 2
        let top = Reference.sample(rotated, x: column, y: 10)
        #expect(top == (191, 191, 191))

        try connection.setVideoRotationAngle(0)
        connection.isVideoMirrored = true
        rig.step(clock, by: .fps(60))
        let mirrored = try #require(latest.withLock { $0 })
        #expect(mirrored.width == 640)
        // Mirrored: bar 7 (black) is on the left, bar 0 (grey) on the right.
        let y = (rows.lowerBound + rows.upperBound) / 2
        #expect(Reference.sample(mirrored, x: 10, y: y) == (0, 0, 0))
        #expect(Reference.sample(mirrored, x: 630, y: y) == (191, 191, 191))
        #expect(connection.isVideoMirrored && connection.videoRotationAngle == 0)
        rig.session.stopRunning()
    }
}

@Suite("Negotiation with scaling")
struct NegotiationScalingTests {
    @Test("a scaled request prefers the camera format that needs no conversion, only scaling")
    func scaledRequestsKeepTheFormat() throws {
        let device = VirtualCamera(configuration: .init(clock: ManualClock())).device
        func pick(_ format: PixelFormat, _ width: Int, _ height: Int) throws -> PixelFormat {
            try FormatNegotiator.negotiate(
                device: device, preset: .hd1920x1080,
                requests: [OutputRequest(pixelFormat: format, size: .init(width: width, height: height))]
            ).format.pixelFormat
        }
        #expect(try pick(.nv12VideoRange, 640, 360) == .nv12VideoRange, "scale only, no conversion")
        #expect(try pick(.nv12VideoRange, 960, 540) == .nv12VideoRange)
        #expect(try pick(.bgra, 640, 360) == .bgra)
        #expect(try pick(.i420, 960, 540) == .nv12VideoRange, "one fused libyuv pass from the smallest native format")
    }
}
