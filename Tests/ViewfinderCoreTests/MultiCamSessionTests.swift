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

@Suite("Several cameras: the multi-camera session")
struct MultiCamSessionTests {
    @Test("three cameras, one output each: every output gets its own camera's frames")
    func threeCamerasOneOutputEach() throws {
        #expect(CaptureMultiCamSession.isMultiCamSupported)
        let rig = try MultiCameraRig(ports: [
            .init(bus: 1, port: "1"), .init(bus: 1, port: "2"), .init(bus: 2, port: "1"),
        ])
        for index in 0..<3 { try rig.choose(index, .mjpeg, 1280, 720) }
        let collector = NotificationCollector([CaptureSession.runtimeErrorNotification])
        let (session, outputs, delegates) = try MultiCameraRig.wire(rig, collector: collector)
        // Two 720p30 MJPEG cameras on bus 1: 2 × 55.3 of 384 Mbit/s.
        #expect(abs(session.hardwareCost - Float(2 * 55.296 / 384)) < 0.001)
        #expect(session.systemPressureCost > 0)
        #expect(session.systemPressureCost <= 1)
        // A second connection to an output that has one is refused, with the reason.
        let extra = CaptureConnection(inputPorts: session.inputs[1].ports, output: outputs[0])
        #expect(!session.canAddConnection(extra))
        #expect(throws: CaptureError.self) { try session.tryAddConnection(extra) }

        session.startRunning()
        defer { session.stopRunning() }
        #expect(session.isRunning)
        #expect(collector.notes(CaptureSession.runtimeErrorNotification).isEmpty)
        #expect(rig.cameras.allSatisfy { $0.isStreaming })
        for _ in 0..<2 {
            rig.clock.advance(by: MediaTime(value: 1, timescale: 30))
            for delegate in delegates { #expect(delegate.waitForMoreFrames()) }
        }
        for (index, output) in outputs.enumerated() {
            #expect(output.connections.count == 1)
            let port = try #require(output.connections.first?.inputPorts.first)
            #expect((port.input as? CaptureDeviceInput)?.device === (try rig.device(index)))
            #expect(delegates[index].frames.count >= 2)
        }
    }

    @Test("a hardware cost above 1 is refused before streaming, naming the camera and the cause")
    func overBudgetRefused() throws {
        let rig = try MultiCameraRig(ports: [
            .init(bus: 1, port: "1"), .init(bus: 1, port: "2"), .init(bus: 1, port: "3"),
        ])
        // Raw 1080p (YUYV at 5 fps: 166 Mbit/s each): three need 498 of the bus's 384.
        for index in 0..<3 {
            let device = try rig.device(index)
            try device.lockForConfiguration()
            try device.setActiveFormat(try rig.format(index, .yuyv, 1920, 1080))
            device.unlockForConfiguration()
        }
        let collector = NotificationCollector([CaptureSession.runtimeErrorNotification])
        let (session, _, _) = try MultiCameraRig.wire(rig, collector: collector)
        #expect(abs(session.hardwareCost - Float(3 * 165.888 / 384)) < 0.001)
        session.startRunning()
        #expect(!session.isRunning)
        let error = try #require(collector.error(CaptureSession.runtimeErrorNotification))
        #expect(error.code == .multiCamCostExceeded)
        #expect(error.message.contains("hardwareCost is 1.3"), "\(error.message)")
        #expect(error.message.contains("'HD Pro Webcam C920 3'"), "names the camera: \(error.message)")
        #expect(error.message.contains("USB bus 1"), "\(error.message)")
        #expect(error.message.contains("MJPEG"), "says what would fit: \(error.message)")
        #expect(rig.cameras.allSatisfy { !$0.isStreaming && $0.openDescriptorCount == 0 }, "nothing streamed")
    }

    @Test("systemPressureCost estimates the CPU the capacity benchmark measures for six 1080p Motion-JPEG cameras")
    func pressureMatchesMeasuredCPU() throws {
        // Each camera on its own bus, so USB bandwidth plays no part.
        let rig = try MultiCameraRig(ports: (1...6).map { .init(bus: $0, port: "1") })
        for index in 0..<6 { try rig.choose(index, .mjpeg, 1920, 1080) }
        let collector = NotificationCollector([CaptureSession.runtimeErrorNotification])
        let (session, outputs, _) = try MultiCameraRig.wire(rig, collector: collector)
        for output in outputs { output.typedVideoSettings = try VideoSettings(pixelFormat: .nv12FullRange) }
        // Benchmarks/RESULTS.md (capacity, 1080p MJPEG → NV12 at 30 fps): six such cameras took
        // 0.78-0.90 of a core on the project's VM. The estimate counted the negotiation's
        // colour-change charge as time and was 2.4-3.6x that, refusing what the machine carries.
        let cores = Float(max(1, ProcessInfo.processInfo.activeProcessorCount))
        let estimatedCores = session.systemPressureCost * cores
        #expect(estimatedCores > 0.6 && estimatedCores < 1.2, "\(estimatedCores) cores estimated")
    }
}
