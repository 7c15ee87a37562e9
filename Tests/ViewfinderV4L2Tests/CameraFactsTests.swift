import CV4L2
import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderCore
@testable import ViewfinderSimulator
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2

/// What a camera's facts answer on simulated USB cameras through the V4L2 backend: the field of
/// view of known cameras, the automatic frame rate control, `CaptureDevice(uniqueID:)` and a
/// plain session's `hardwareCost`.
@Suite("Camera facts: field of view, automatic frame rate, lookup by unique ID, hardware cost")
struct CameraFactsTests {
    /// The horizontal angle a diagonal angle gives at an aspect ratio, worked out here on its own.
    static func horizontal(diagonal: Double, width: Double, height: Double) -> Double {
        let halfDiagonalRadians = diagonal / 2 * .pi / 180
        return 2 * atan(tan(halfDiagonalRadians) * width / (width * width + height * height).squareRoot()) * 180 / .pi
    }

    @Test("a C920 (046d:082d) reports 70.4° at its 16:9 formats and 0 (unknown) at 4:3; an unknown camera 0")
    func fieldOfView() throws {
        let rig = try MultiCameraRig(ports: [.init(bus: 1, port: "1")])
        let device = try rig.device(0)
        let wide = device.formats.filter { $0.dimensions.width * 9 == $0.dimensions.height * 16 }
        let square = device.formats.filter { $0.dimensions.width * 3 == $0.dimensions.height * 4 }
        #expect(!wide.isEmpty && !square.isEmpty)
        for format in wide {
            #expect(abs(Double(format.videoFieldOfView) - 70.42) < 0.01, "\(format)")
            #expect(format.geometricDistortionCorrectedVideoFieldOfView == format.videoFieldOfView)
        }
        #expect(square.allSatisfy { $0.videoFieldOfView == 0 })

        // The same listing under a made-up USB ID: not in the table, so unknown everywhere.
        let bus = SimulatedV4L2Bus()
        let unknown = try SimulatedUVCCamera(configuration: .init(listing: SimulatedUVCCamera.c920Listing))
        bus.plug(unknown, port: .init(bus: 1, port: "1"))
        let unknownDevice = try #require(bus.device(for: unknown))
        #expect(unknownDevice.formats.allSatisfy { $0.videoFieldOfView == 0 })
    }

    @Test("the table's angles follow the diagonal at 16:9, for each camera listed")
    func opticsTable() {
        for (id, optics) in KnownCameraOptics.table {
            let angle = optics.horizontalFieldOfView(of: .init(width: 1280, height: 720))
            let expected = Self.horizontal(diagonal: optics.diagonalDegrees, width: 16, height: 9)
            #expect(abs(Double(angle) - expected) < 0.001, "\(id)")
            #expect(optics.horizontalFieldOfView(of: .init(width: 640, height: 480)) == 0, "\(id)")
            #expect(optics.horizontalFieldOfView(of: .init(width: 0, height: 0)) == 0, "\(id)")
        }
        let c930e = KnownCameraOptics.lookup(vendorID: "046D", productID: "0843")
        #expect(abs(Double(c930e?.horizontalFieldOfView(of: .init(width: 1920, height: 1080)) ?? 0) - 82.15) < 0.01)
        #expect(KnownCameraOptics.lookup(vendorID: "1d6b", productID: "0104") == nil)
        #expect(KnownCameraOptics.lookup(vendorID: nil, productID: "082d") == nil)
    }

    @Test("a simulated camera with the dynamic frame rate control: supported, and the switch reaches the driver")
    func autoVideoFrameRateOnTheSimulatedDriver() throws {
        let bus = SimulatedV4L2Bus()
        let camera = try SimulatedUVCCamera(
            configuration: .init(
                listing: SimulatedUVCCamera.c920Listing, vendorID: "046d", productID: "082d", hasDynamicFramerate: true)
        )
        bus.plug(camera, port: .init(bus: 1, port: "1"))
        let device = try #require(bus.device(for: camera))
        #expect(device.formats.allSatisfy { $0.isAutoVideoFrameRateSupported })
        let control = try #require(device.control(.exposureDynamicFramerate))
        #expect(control.kind == .boolean)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        device.isAutoVideoFrameRateEnabled = true
        #expect(camera.controlValue(VF_V4L2_CID_EXPOSURE_AUTO_PRIORITY) == 1)
        #expect(device.isAutoVideoFrameRateEnabled)
        device.activeVideoMaxFrameDuration = MediaTime(value: 1, timescale: 30)
        #expect(camera.controlValue(VF_V4L2_CID_EXPOSURE_AUTO_PRIORITY) == 0, "a fixed rate turns it off")
        #expect(!device.isAutoVideoFrameRateEnabled)
    }

    @Test("CaptureDevice(uniqueID:) answers the registry's own instance, or nil")
    func lookupByUniqueID() throws {
        let bus = SimulatedV4L2Bus()
        let camera = try SimulatedUVCCamera(configuration: .init(listing: SimulatedUVCCamera.c920Listing))
        bus.plug(camera)
        try bus.withDiscovery {
            let listed = try #require(CaptureDevice.devices(for: .video).first { $0.backend is V4L2CameraBackend })
            let found = try #require(CaptureDevice(uniqueID: listed.uniqueID))
            #expect(found === listed)
            #expect(found == listed)
            #expect(CaptureDevice(uniqueID: "v4l2:no-such-camera") == nil)
        }
    }

    @Test("a plain session prices its camera's USB bandwidth as hardwareCost, as the multi-camera session does")
    func plainSessionHardwareCost() throws {
        let rig = try MultiCameraRig(ports: [.init(bus: 1, port: "1")])
        try rig.choose(0, .mjpeg, 1280, 720)
        let session = CaptureSession()
        #expect(session.hardwareCost == 0, "no camera yet")
        session.beginConfiguration()
        session.addInput(try CaptureDeviceInput(device: try rig.device(0)))
        session.addOutput(CaptureVideoDataOutput())
        session.commitConfiguration()
        // One 720p30 MJPEG camera: 55.3 of the USB 2 bus's 384 Mbit/s.
        #expect(abs(session.hardwareCost - Float(55.296 / 384)) < 0.001)
    }
}
