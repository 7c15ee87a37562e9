import Foundation
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

@Suite("V4L2 discovery and formats")
struct V4L2DiscoveryTests {
    @Test("discovery keeps the capture node, skips the metadata node, and names the camera from QUERYCAP")
    func discovery() throws {
        let rig = try SimulatedRig()
        #expect(rig.bus.openDescriptorCount == 0, "discovery closes what it opens")
        let devices = rig.bus.devices
        try #require(devices.count == 1)
        let device = devices[0]
        #expect(device.localizedName == "HD Pro Webcam C920")
        #expect(device.modelID == "uvcvideo")
        #expect(device.uniqueID == "v4l2:\(rig.camera.busInfo)")
        #expect(device.deviceType == .external)
        #expect(device.devicePath == "/dev/video0")
        #expect(device.isConnected)
    }

    @Test("the unique ID comes from the bus info, so it survives a move to another node")
    func stableUniqueID() throws {
        let rig = try SimulatedRig()
        let before = try rig.device
        rig.bus.unplug(rig.camera)
        #expect(rig.bus.devices.isEmpty)
        #expect(!before.isConnected)
        rig.bus.plug(rig.camera, at: "/dev/video7")
        let after = try rig.device
        #expect(after === before, "the same camera is the same device object")
        #expect(after.isConnected)
        #expect(after.devicePath == "/dev/video7")
    }

    @Test("the C920 listing gives 19 YUYV and 17 MJPG formats in the driver's order")
    func c920Formats() throws {
        let formats = try SimulatedRig().device.formats
        let yuyv = formats.filter { $0.pixelFormat == .yuyv }
        let mjpeg = formats.filter { $0.pixelFormat == .mjpeg }
        #expect(yuyv.count == 19)
        #expect(mjpeg.count == 17)
        #expect(formats.count == 36)
        #expect(formats.allSatisfy { !$0.isEmulated })
        #expect(yuyv.first?.dimensions == .init(width: 640, height: 480))
        #expect(yuyv.last?.dimensions == .init(width: 2304, height: 1536))
        let vga = try #require(yuyv.first)
        #expect(
            vga.videoSupportedFrameRateRanges.map(\.minFrameDuration) == [
                MediaTime(value: 1, timescale: 30), MediaTime(value: 1, timescale: 24),
                MediaTime(value: 1, timescale: 20),
                MediaTime(value: 1, timescale: 15), MediaTime(value: 1, timescale: 10),
                MediaTime(value: 2, timescale: 15),
                MediaTime(value: 1, timescale: 5),
            ])
        #expect(vga.videoSupportedFrameRateRanges.allSatisfy { $0.minFrameDuration == $0.maxFrameDuration })
        #expect(vga.backendCode == V4L2FourCC.code("YUYV"))
    }

    @Test(
        "per-size frame rates follow the listing",
        arguments: [
            (PixelFormat.yuyv, 640, 480, 30.0, 5.0), (.yuyv, 800, 600, 24, 5), (.yuyv, 960, 720, 15, 5),
            (.yuyv, 1280, 720, 10, 5), (.yuyv, 1920, 1080, 5, 5), (.yuyv, 2304, 1536, 2, 2),
            (.mjpeg, 1920, 1080, 30, 5), (.mjpeg, 160, 90, 30, 5),
        ])
    func frameRates(pixelFormat: PixelFormat, width: Int, height: Int, fastest: Double, slowest: Double) throws {
        let format = try SimulatedRig().format(pixelFormat, width, height)
        #expect(abs(format.maxFrameRate - fastest) < 1e-9)
        #expect(abs(1 / format.maxFrameDuration.seconds - slowest) < 1e-9)
    }

    @Test("an MJPEG-only camera still offers raw I420 through libv4l2-style emulation, flagged emulated")
    func emulatedFormats() throws {
        let listing = """
            ioctl: VIDIOC_ENUM_FMT
            \tType: Video Capture

            \t[0]: 'MJPG' (Motion-JPEG, compressed)
            \t\tSize: Discrete 640x480
            \t\t\tInterval: Discrete 0.033s (30.000 fps)
            \t\tSize: Discrete 1280x720
            \t\t\tInterval: Discrete 0.033s (30.000 fps)
            """
        let rig = try SimulatedRig(listing: listing, emulatesRawFormats: true)
        let formats = try rig.device.formats
        #expect(formats.map(\.pixelFormat) == [.mjpeg, .mjpeg, .i420, .i420])
        #expect(formats.map(\.isEmulated) == [false, false, true, true])
        #expect(try rig.device.supportsSessionPreset(.hd1280x720))
    }

    @Test("stepwise frame sizes and continuous intervals become the range's ends plus common sizes")
    func stepwiseSizes() throws {
        let listing = """
            \t[0]: 'YUYV' (YUYV 4:2:2)
            \t\tSize: Stepwise 320x240 - 1920x1080 with step 16/8
            \t\t\tInterval: Continuous 0.033s - 1.000s (1.000-30.000 fps)
            """
        let rig = try SimulatedRig(listing: listing)
        let formats = try rig.device.formats
        let sizes = formats.map { "\($0.dimensions)" }
        #expect(
            sizes == [
                "320x240", "352x288", "640x360", "640x480", "800x600", "1024x768", "1280x720", "1280x960", "1920x1080",
            ])
        let range = try #require(formats.first?.videoSupportedFrameRateRanges.first)
        #expect(range.minFrameDuration == MediaTime(value: 1, timescale: 30))
        #expect(range.maxFrameDuration == MediaTime(value: 1, timescale: 1))
    }

    @Test("a listing that cannot be read is refused with the line it failed on")
    func badListing() {
        #expect {
            try SimulatedUVCCamera(configuration: .init(listing: "\t[0]: 'YUYV' (YUYV)\n\t\tSize: Discrete 64ox480"))
        } throws: { error in
            (error as? CaptureError)?.code == .invalidArgument && "\(error)".contains("line 2")
        }
    }

    @Test("devices(for:) lists real cameras first and the virtual camera last")
    func ordering() throws {
        let rig = try SimulatedRig()
        let second = try SimulatedUVCCamera(
            configuration: .init(
                listing: SimulatedUVCCamera.c920Listing, card: "Second", busInfo: "usb-test-second", clock: rig.clock))
        rig.bus.plug(second)
        let devices = rig.bus.withDiscovery { CaptureDevice.devices(for: .video) }
        #expect(devices.map(\.deviceType) == [.external, .external, .virtual])
        #expect(devices.map(\.localizedName) == ["HD Pro Webcam C920", "Second", "Test Pattern Camera"])
        #expect(rig.bus.withDiscovery { CaptureDevice.default(for: .video) } === devices[0])
        let external = rig.bus.withDiscovery {
            CaptureDevice.DiscoverySession(deviceTypes: [.external], mediaType: .video, position: .unspecified).devices
        }
        #expect(external.count == 2)
    }

    @Test("hot-plug posts connected and disconnected notifications and devices(for:) stays current")
    func hotPlug() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        let disconnected = NotificationRecorder(CaptureDevice.wasDisconnectedNotification, object: device)
        let connected = NotificationRecorder(CaptureDevice.wasConnectedNotification, object: device)
        rig.bus.unplug(rig.camera)
        #expect(disconnected.wait())
        #expect(!device.isConnected)
        #expect(rig.bus.withDiscovery { CaptureDevice.devices(for: .video).map(\.deviceType) } == [.virtual])
        rig.bus.plug(rig.camera)
        #expect(connected.wait())
        #expect(device.isConnected)
        #expect(rig.bus.withDiscovery { CaptureDevice.default(for: .video) } === device)
    }

    @Test("a node that cannot be opened for lack of permission is listed and reported, and opening it says the fix")
    func discoveryPermission() throws {
        let rig = try SimulatedRig()
        rig.camera.setOpenError(EACCES)
        rig.bus.unplug(rig.camera)
        rig.bus.plug(rig.camera)
        let cameras = rig.bus.devices.filter { $0.backend is V4L2CameraBackend }
        #expect(cameras.count == 1, "the camera is listed, not left out, and its metadata node is not")
        let device = try #require(cameras.first)
        #expect(device.localizedName == rig.camera.card, "named as sysfs names it")
        #expect(device.formats.isEmpty)
        let problem = try #require(rig.bus.provider.scanProblems.first)
        #expect(problem.code == .permissionDenied)
        #expect(problem.errno == EACCES)
        #expect(problem.message.contains("'video' group"))
        do {
            _ = try CaptureDeviceInput(device: device)
            Issue.record("an input was made for a camera whose node refused permission")
        } catch {
            #expect(error.code == .permissionDenied)
            #expect(error.message.contains("sudo usermod -aG video $USER"))
        }
    }
}

@Suite("V4L2 device directory")
struct V4L2DevDirectoryTests {
    @Test("inotify notices video nodes appearing and going, and the listing sorts numerically")
    func watchesDirectory() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("vf-dev-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let directory = V4L2DevDirectory(path: path)
        let changed = DispatchSemaphore(value: 0)
        try #require(directory.watch { changed.signal() })
        /// Waits for change events until the listing is `expected` (events may arrive in several batches).
        func waitForNodes(_ expected: [String]) -> Bool {
            let deadline = DispatchTime.now() + 10
            while directory.videoNodes() != expected {
                guard changed.wait(timeout: deadline) == .success else { return false }
            }
            return true
        }
        for name in ["video10", "video2", "media0", "videoX"] {
            #expect(FileManager.default.createFile(atPath: "\(path)/\(name)", contents: nil))
        }
        #expect(waitForNodes(["\(path)/video2", "\(path)/video10"]))
        try FileManager.default.removeItem(atPath: "\(path)/video2")
        #expect(waitForNodes(["\(path)/video10"]))
    }
}
