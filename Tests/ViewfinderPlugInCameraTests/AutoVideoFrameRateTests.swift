import CV4L2
import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderCore
@testable import ViewfinderTestSupport
@testable import ViewfinderV4L2

/// `isAutoVideoFrameRateEnabled` on a camera with V4L2's `V4L2_CID_EXPOSURE_AUTO_PRIORITY`
/// ("Exposure, Dynamic Framerate"), through the production libv4l2 path against the fake-camera
/// plugin; the control's value is read back on a descriptor of its own, as another program would.
@Suite(
    "automatic video frame rate on the plug-in camera", .serialized,
    .enabled(if: FakeCameraPlugin.isInstalled, FakeCameraPlugin.skipReason))
struct AutoVideoFrameRateTests {
    /// A C920-like file camera; with the dynamic frame rate control (off) when `dynamic`.
    static func camera(dynamic: Bool) -> FakeCameraFile {
        var camera = FakeCameraFile()
        camera.card = dynamic ? "Dynamic Framerate Camera" : "Fixed Framerate Camera"
        if dynamic {
            camera.extraControlLines = ["control 0x009a0903 2 0 1 1 0 0 0 Exposure, Dynamic Framerate"]
        }
        return camera
    }

    /// The control's value as the device file holds it, read through libv4l2 on a new descriptor.
    static func dynamicFramerate(at path: String) throws -> Int {
        let interface = LibV4L2Interface()
        let fd = try interface.open(path, flags: O_RDWR | O_NONBLOCK)
        defer { interface.close(fd) }
        return try V4L2ControlQuery.value(of: VF_V4L2_CID_EXPOSURE_AUTO_PRIORITY, fd: fd, interface: interface)
    }

    @Test("a camera with the control supports it in every format; turning it on and off writes the control")
    func turnsTheControlOnAndOff() throws {
        let rig = try FakeCameraRig()
        let camera = Self.camera(dynamic: true)
        let path = try rig.plug(camera)
        let device = try rig.device(camera)
        #expect(!device.formats.isEmpty)
        #expect(device.formats.allSatisfy { $0.isAutoVideoFrameRateSupported })
        #expect(device.isAutoVideoFrameRateEnabled == false)
        #expect(try Self.dynamicFramerate(at: path) == 0)

        // As AVFoundation: the configuration lock first.
        #expect(throws: CaptureError.self) { try device.setAutoVideoFrameRateEnabled(true) }
        #expect(try Self.dynamicFramerate(at: path) == 0)

        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        device.isAutoVideoFrameRateEnabled = true
        #expect(try Self.dynamicFramerate(at: path) == 1)
        #expect(device.isAutoVideoFrameRateEnabled)
        device.isAutoVideoFrameRateEnabled = false
        #expect(try Self.dynamicFramerate(at: path) == 0)
        #expect(device.isAutoVideoFrameRateEnabled == false)
    }

    @Test("a fixed frame duration or a new active format turns it off")
    func fixedRateAndNewFormatTurnItOff() throws {
        let rig = try FakeCameraRig()
        let camera = Self.camera(dynamic: true)
        let path = try rig.plug(camera)
        let device = try rig.device(camera)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }

        try device.setAutoVideoFrameRateEnabled(true)
        #expect(try Self.dynamicFramerate(at: path) == 1)
        let format = device.activeFormat
        let duration = try #require(format.videoSupportedFrameRateRanges.first?.minFrameDuration)
        try device.setActiveVideoMinFrameDuration(duration)
        #expect(try Self.dynamicFramerate(at: path) == 0, "a fixed rate was asked for")
        #expect(device.activeVideoMinFrameDuration == duration)

        try device.setAutoVideoFrameRateEnabled(true)
        #expect(try Self.dynamicFramerate(at: path) == 1)
        let other = try #require(device.formats.first { $0 != format })
        try device.setActiveFormat(other)
        #expect(try Self.dynamicFramerate(at: path) == 0, "AVFoundation resets it with the active format")
        #expect(device.isAutoVideoFrameRateEnabled == false)
    }

    @Test("a camera without the control answers unsupported, as AVFoundation does without it")
    func withoutTheControl() throws {
        let rig = try FakeCameraRig()
        let camera = Self.camera(dynamic: false)
        try rig.plug(camera)
        let device = try rig.device(camera)
        #expect(device.formats.allSatisfy { !$0.isAutoVideoFrameRateSupported })
        #expect(device.isAutoVideoFrameRateEnabled == false)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        let error = #expect(throws: CaptureError.self) { try device.setAutoVideoFrameRateEnabled(true) }
        #expect(error?.code == .unsupportedControl)
        #expect(error?.message.contains("isAutoVideoFrameRateSupported") == true)
        try device.setAutoVideoFrameRateEnabled(false)  // turning off what is not there does nothing
        #expect(device.control(.exposureDynamicFramerate) == nil)
    }
}
