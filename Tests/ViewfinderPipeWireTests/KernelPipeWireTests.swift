import Foundation
import Testing

@testable import ViewfinderCore
@testable import ViewfinderPipeWire
@testable import ViewfinderTestSupport
@testable import ViewfinderV4L2

/// The PipeWire route on a kernel camera: inside `Scripts/kernel-vm.sh`'s VM, with vivid loaded
/// and `Tests/KernelPipeWire/session.sh` running udev, a session bus, PipeWire and WirePlumber,
/// whose V4L2 monitor turns the vivid node into a PipeWire node. Until now only the project's own
/// test producer stood behind PipeWire; here the node is PipeWire's own V4L2 plugin on a real
/// driver. `Scripts/test.sh` runs this suite in a VM of its own (one vivid camera); the main
/// kernel run skips it.
@Suite(
    "Kernel PipeWire on vivid", .serialized,
    .enabled(if: KernelVM.isInside, "runs in the kernel-driver VM (Scripts/test.sh)"))
struct KernelPipeWireTests {
    /// The daemon `session.sh` started (it exports `VIEWFINDER_PIPEWIRE_REMOTE`).
    static var remote: String? { ProcessInfo.processInfo.environment["VIEWFINDER_PIPEWIRE_REMOTE"] }

    @Test("WirePlumber's node for the vivid camera is listed once, with its V4L2 twin, and streams through PipeWire")
    func vividThroughPipeWire() throws {
        let remote = try #require(Self.remote, "run under Tests/KernelPipeWire/session.sh")
        let pipeWire = PipeWireDeviceProvider(remoteName: remote)
        let v4l2 = V4L2DeviceProvider(
            directory: V4L2DevDirectory(path: "/dev"), interface: LibV4L2Interface(), pipeWire: pipeWire,
            route: .automatic)
        let registry = DeviceRegistry(providers: [v4l2, pipeWire])
        try DeviceRegistry.$current.withValue(registry) {
            let cameras = registry.devices().filter { $0.hasMediaType(.video) }
            let vivid = cameras.filter { $0.uniqueID.hasPrefix("v4l2:") }
            try #require(vivid.count == 1, "one vivid camera: \(cameras.map(\.uniqueID))")
            let device = vivid[0]
            let backend = try #require(device.backend as? V4L2CameraBackend)

            // WirePlumber's node claims this camera (the same V4L2 node, its QUERYCAP answers).
            let deadline = Date(timeIntervalSinceNow: 30)
            var node: PipeWireCameraBackend?
            repeat {
                node = pipeWire.camerasNow().first { $0.offers(backend) }
            } while node == nil && Date() < deadline
            let offered = try #require(
                node, "a PipeWire node offering \(device.uniqueID): \(pipeWire.camerasNow().map(\.nodeName))")

            // Listed once: the V4L2 camera, and no PipeWire device for its node.
            let listed = registry.devices().filter { $0.hasMediaType(.video) }
            #expect(listed.count == 1, "\(listed.map(\.uniqueID))")
            #expect(listed.first === device)
            #expect(
                !pipeWire.discoverBackends().contains { ($0 as? PipeWireCameraBackend)?.nodeName == offered.nodeName })

            // Frames through PipeWire, under the V4L2 camera's unique ID. Known issue: in the VM the
            // node never starts — no frame in 60 s, and GStreamer's `pipewiresrc
            // target-object=v4l2_input.platform-vivid.0` fails the same way ("Failed to set pipeline
            // to PAUSED"), the node staying "suspended" — so it is PipeWire in this VM, not yet
            // known to be Viewfinder. The stream is still set up through the PipeWire route.
            let delegate = RecordingDelegate()
            let (session, _) = try makeSession(
                device: device, delegate: delegate, settings: try VideoSettings(pixelFormat: .bgra), discardsLate: false
            )
            session.startRunning()
            defer { session.stopRunning() }
            #expect(backend.streamingRoute == .pipeWire)
            #expect(device.uniqueID.hasPrefix("v4l2:"))
            withKnownIssue(
                "PipeWire's V4L2 node does not start in the VM (GStreamer's pipewiresrc fails too)",
                isIntermittent: true
            ) {
                #expect(delegate.waitForFrames(10, timeout: 60))
            }
        }
    }
}
