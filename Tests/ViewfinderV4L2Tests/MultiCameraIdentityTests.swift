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

@Suite("Several cameras: identity and USB bandwidth")
struct MultiCameraIdentityTests {
    @Test("unique IDs come from the serial number, else the by-id name, else the port")
    func uniqueIDSources() throws {
        let rig = try MultiCameraRig(
            ports: [.init(bus: 1, port: "1"), .init(bus: 1, port: "2"), .init(bus: 2, port: "1")],
            serials: ["A1B2C3", nil, nil], card: "Cam")
        #expect(try rig.device(0).uniqueID == "v4l2:usb-046d:082d:A1B2C3")
        // Cameras 2 and 3 have no serial but different names, so their by-id names differ.
        #expect(try rig.device(1).uniqueID == "v4l2:by-id:usb-046d_Cam_2-video-index0")
        #expect(try rig.device(2).uniqueID == "v4l2:by-id:usb-046d_Cam_3-video-index0")

        // Two identical cameras without serial numbers share a by-id name: each is named by its port.
        let twins = try MultiCameraRig(
            ports: [.init(bus: 1, port: "1"), .init(bus: 1, port: "2")], serials: [nil, nil], card: "Twin",
            numbered: false)
        let names = try [twins.device(0).uniqueID, twins.device(1).uniqueID]
        #expect(names == ["v4l2:\(twins.cameras[0].busInfo)", "v4l2:\(twins.cameras[1].busInfo)"])
        #expect(Set(names).count == 2)
    }

    @Test("a camera moved to another node number and another port is found again by its uniqueID")
    func movedCameraFoundAgain() throws {
        let rig = try MultiCameraRig(ports: [.init(bus: 1, port: "1"), .init(bus: 1, port: "2")])
        let before = try rig.device(0)
        let id = before.uniqueID
        #expect(before.devicePath == "/dev/video0")
        let oldBusInfo = rig.cameras[0].busInfo
        rig.bus.unplug(rig.cameras[0])
        rig.bus.withDiscovery {
            #expect(CaptureDevice.device(withUniqueID: id) == nil, "unplugged")
        }
        rig.bus.plug(rig.cameras[0], at: "/dev/video8", port: .init(bus: 3, port: "4", speedMbps: 5000))
        #expect(rig.cameras[0].busInfo != oldBusInfo, "the port changed")
        try rig.bus.withDiscovery {
            let found = try #require(CaptureDevice.device(withUniqueID: id))
            #expect(found === before, "the same device object, connected again")
            #expect(found.devicePath == "/dev/video8")
            #expect(found.isConnected)
            #expect(found.backend.usbLocation?.busNumber == 3)
            #expect(found.backend.usbLocation?.speedMbps == 5000)
        }
    }

    @Test("the bandwidth model: raw formats by their bytes, Motion-JPEG at 2 bits a pixel, USB 2 at 80 %")
    func bandwidthModel() {
        #expect(USBBandwidth.periodicCapacityMbps(speedMbps: 480) == 384)
        let vga = USBBandwidth.requiredMbps(pixelFormat: .yuyv, width: 640, height: 480, framesPerSecond: 30)
        #expect(abs(vga - 147.456) < 1e-6)
        let jpeg = USBBandwidth.requiredMbps(pixelFormat: .mjpeg, width: 1920, height: 1080, framesPerSecond: 30)
        #expect(abs(jpeg - 124.416) < 1e-6)
        #expect(2 * vga <= 384 && 3 * vga > 384, "two raw VGA cameras fit a USB 2 bus, three do not")
    }

    /// Two sessions streaming raw VGA from cameras 1 and 2 of three on one USB 2 bus (295 of its
    /// 384 Mbit/s), and a third session for camera 3 posting to `collector`.
    static func crowdedBus(
        _ rig: MultiCameraRig, preset: CaptureSession.Preset, collector: NotificationCollector
    ) throws -> (running: [CaptureSession], third: CaptureSession, output: CaptureVideoDataOutput) {
        var running: [CaptureSession] = []
        for index in 0..<2 {
            try rig.choose(index, .yuyv, 640, 480)
            let (session, _) = try makeSession(
                device: try rig.device(index), delegate: RecordingDelegate(), preset: .inputPriority)
            session.startRunning()
            #expect(session.isRunning)
            running.append(session)
        }
        let session = CaptureSession(notificationCenter: collector.center)
        session.sessionPreset = preset
        try session.tryAddInput(try CaptureDeviceInput(device: try rig.device(2)))
        let output = CaptureVideoDataOutput()
        try session.tryAddOutput(output)
        return (running, session, output)
    }

    static let threeOnOneBus: [SimulatedUSBPort] = [
        .init(bus: 1, port: "1"), .init(bus: 1, port: "2"), .init(bus: 1, port: "3"),
    ]

    @Test("ENOSPC at stream start is a typed error with what the format needs and what the bus has left")
    func enospcIsTyped() throws {
        let rig = try MultiCameraRig(ports: Self.threeOnOneBus)
        let collector = NotificationCollector([CaptureSession.runtimeErrorNotification])
        try rig.choose(2, .yuyv, 640, 480)
        let (running, session, _) = try Self.crowdedBus(rig, preset: .inputPriority, collector: collector)
        defer { for other in running { other.stopRunning() } }
        session.startRunning()
        #expect(!session.isRunning)
        let error = try #require(collector.error(CaptureSession.runtimeErrorNotification))
        #expect(error.code == .insufficientBandwidth)
        #expect(error.errno == ENOSPC)
        #expect(error.message.contains("needs 147 Mbit/s"), "\(error.message)")
        #expect(error.message.contains("the bus has 89.1 Mbit/s left"), "\(error.message)")
        #expect(error.message.contains("MJPEG at 640x480 or a smaller size would fit"), "\(error.message)")
        #expect(error.message.contains("'HD Pro Webcam C920 1'"), "names the cameras sharing the bus: \(error.message)")
        #expect(!rig.cameras[2].isStreaming)
        #expect(rig.cameras[2].openDescriptorCount == 0)
    }

    @Test("with a preset that allows it, the session falls back to a format that fits and says so")
    func fallbackToFittingFormat() throws {
        let rig = try MultiCameraRig(ports: Self.threeOnOneBus)
        let collector = NotificationCollector([
            CaptureSession.runtimeErrorNotification, CaptureSession.didFallBackToFormatNotification,
        ])
        let (running, session, output) = try Self.crowdedBus(rig, preset: .vga640x480, collector: collector)
        defer { for other in running { other.stopRunning() } }
        session.startRunning()
        defer { session.stopRunning() }
        #expect(session.isRunning)
        let note = try #require(collector.wait(for: CaptureSession.didFallBackToFormatNotification))
        let reason = try #require(note.userInfo?[CaptureSessionErrorKey] as? CaptureError)
        #expect(reason.code == .insufficientBandwidth)
        let active = try rig.device(2).activeFormat
        #expect(note.userInfo?[CaptureSessionFormatKey] as? CaptureDevice.Format == active)
        #expect(reason.message.contains("fell back to \(active)"), "\(reason.message)")
        #expect(active.pixelFormat == .mjpeg || active.dimensions.width < 640, "a format needing less: \(active)")
        #expect(USBBandwidth.requiredMbps(active, frameDuration: try rig.device(2).activeVideoMinFrameDuration) <= 89.1)
        _ = output
        #expect(rig.cameras[2].isStreaming)
        #expect(collector.notes(CaptureSession.runtimeErrorNotification).isEmpty)
    }
}
