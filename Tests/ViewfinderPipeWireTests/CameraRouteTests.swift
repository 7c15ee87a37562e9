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

/// One camera, listed once: the plug-in V4L2 camera (Tests/V4L2Plugin, through the real libv4l2)
/// and a PipeWire node that claims the same device.
///
/// The node is the test producer (`viewfinder-pipewire-probe produce`, in its own process as
/// WirePlumber's nodes are) publishing, through PipeWire's own `PIPEWIRE_PROPS`, the properties
/// PipeWire's V4L2 plugin and WirePlumber's V4L2 monitor put on a webcam's node: `device.api`
/// `v4l2`, `api.v4l2.path` (the V4L2 node), `object.path` `v4l2:<node>`, `api.v4l2.cap.bus_info`
/// and `api.v4l2.cap.card` (the node's `VIDIOC_QUERYCAP` answers). PipeWire's V4L2 monitor cannot
/// open the plug-in camera (it is a file libv4l2's plug-in answers for, not a kernel node udev
/// reports), but Viewfinder sees nothing of a node except its properties, formats and frames, so a
/// node that carries exactly those properties is, to Viewfinder, that camera's node; and the
/// frames tell the routes apart: the plug-in serves pattern number 4000, the producer's frames
/// show their own sequence numbers.
///
/// Needs `Scripts/pipewire.sh run -- Scripts/v4l2-plugin.sh run -- swift test …`; without the
/// plug-in the test fails.
@Suite(
    "One camera through V4L2 and PipeWire", .serialized,
    .enabled(if: PipeWireTestDaemon.isAvailable, "needs Scripts/pipewire.sh"))
struct CameraRouteTests {
    static let v4l2Pattern: UInt64 = 4000

    /// The backends of the devices reported connected (by any registry: other tests' providers on
    /// the shared test daemon announce their own devices for the same node).
    final class ConnectedIDs: Sendable {
        let ids = Mutex<[ObjectIdentifier]>([])
    }

    /// A plug-in camera offering YUYV 320x240 at 30 fps, every frame showing pattern number 4000.
    static func pluginCamera() -> FakeCameraFile {
        var camera = FakeCameraFile()
        camera.listing = """
            ioctl: VIDIOC_ENUM_FMT
            	Type: Video Capture

            	[0]: 'YUYV' (YUYV 4:2:2)
            		Size: Discrete 320x240
            			Interval: Discrete 0.033s (30.000 fps)
            """
        camera.frames = [
            ("YUYV", 320, 240, FakeCameraFile.patternFrame(.yuyv, 320, 240, number: Int(v4l2Pattern)), nil)
        ]
        return camera
    }

    /// The test producer, publishing `name` with `properties` added to its node (PIPEWIRE_PROPS).
    final class ProducerProcess {
        let process = Process()
        private let input = Pipe()

        init(name: String, properties: [String: String]) throws {
            let url = try #require(PipeWireBackendTests.probeURL, "viewfinder-pipewire-probe is not built")
            process.executableURL = url
            process.arguments = ["produce", name, "yuyv", "320x240", "30"]
            var environment = ProcessInfo.processInfo.environment
            environment["PIPEWIRE_REMOTE"] = PipeWireTestDaemon.remote
            environment["PIPEWIRE_PROPS"] =
                "{ " + properties.sorted { $0.key < $1.key }.map { "\($0.key)=\"\($0.value)\"" }.joined(separator: " ")
                + " }"
            process.environment = environment
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            let line = try PortalTestBus.readLine(output.fileHandleForReading, from: "the producer")
            try #require(line == "ready", "the producer said \(line)")
        }

        /// Removes the node (the producer exits when its stdin closes).
        func stop() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }

        deinit { if process.isRunning { stop() } }
    }

    /// Waits until `provider` has node `name` (the node is published asynchronously): each look
    /// is a round trip to the daemon, bounded by a deadline.
    static func waitForNode(_ name: String, in provider: PipeWireDeviceProvider, present: Bool = true) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 10)
        repeat {
            if provider.camerasNow().contains(where: { $0.nodeName == name }) == present { return true }
        } while Date() < deadline
        return false
    }

    @Test("listed once, captured through PipeWire with the V4L2 unique ID; the node gone, through V4L2")
    func listedOnceAndRouted() throws {
        try #require(FakeCameraPlugin.isInstalled, FakeCameraPlugin.skipReason)
        let remote = try #require(PipeWireTestDaemon.remote)
        let pipeWire = PipeWireDeviceProvider(remoteName: remote)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vf-route-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let camera = Self.pluginCamera()
        let path = "\(directory)/video0"
        try camera.contents().write(to: URL(fileURLWithPath: path))
        let v4l2 = V4L2DeviceProvider(
            directory: V4L2DevDirectory(path: directory), interface: LibV4L2Interface(), pipeWire: pipeWire,
            route: .automatic)
        let registry = DeviceRegistry(providers: [v4l2, pipeWire])
        let uniqueID = "v4l2:\(camera.busInfo)"

        try DeviceRegistry.$current.withValue(registry) {
            let device = try #require(registry.devices().first { $0.uniqueID == uniqueID }, "the plug-in camera")
            let backend = try #require(device.backend as? V4L2CameraBackend)

            let name = PipeWireTestDaemon.uniqueName("route")
            // Every device reported connected from here on: the node's arrival must not be one.
            let connectedIDs = ConnectedIDs()
            let observer = NotificationCenter.default.addObserver(
                forName: CaptureDevice.wasConnectedNotification, object: nil, queue: nil
            ) { note in
                if let device = note.object as? CaptureDevice {
                    connectedIDs.ids.withLock { $0.append(ObjectIdentifier(device.backend)) }
                }
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            let producer = try ProducerProcess(
                name: name,
                properties: [
                    "device.api": "v4l2", "api.v4l2.path": path, "object.path": "v4l2:\(path)",
                    "api.v4l2.cap.bus_info": camera.busInfo, "api.v4l2.cap.card": camera.card,
                ])
            defer { producer.stop() }
            try #require(Self.waitForNode(name, in: pipeWire), "the producer's node reached the registry")

            // Listed once: the V4L2 camera, the same object, and no PipeWire device for its node.
            // (Other tests' nodes on the shared test daemon may be listed beside it.)
            let video = registry.devices().filter { $0.hasMediaType(.video) }
            let listed = video.filter { $0.uniqueID == uniqueID || $0.uniqueID == "pipewire:\(name)" }
            #expect(listed.count == 1, "\(video.map(\.uniqueID))")
            #expect(listed.first === device)
            #expect(!pipeWire.discoverBackends().contains { ($0 as? PipeWireCameraBackend)?.nodeName == name })
            let node = try #require(pipeWire.camerasNow().first { $0.nodeName == name })
            #expect(node.offers(backend))
            #expect(!connectedIDs.ids.withLock { $0 }.contains(ObjectIdentifier(node)), "no second device announced")

            let delegate = RecordingDelegate()
            let (session, _) = try makeSession(
                device: device, delegate: delegate, settings: try VideoSettings(pixelFormat: .yuyv),
                discardsLate: false)
            let interrupted = NotificationRecorder(CaptureSession.wasInterruptedNotification, object: session)
            let ended = NotificationRecorder(CaptureSession.interruptionEndedNotification, object: session)
            let disconnected = NotificationRecorder(CaptureDevice.wasDisconnectedNotification, object: device)
            session.startRunning()
            defer { session.stopRunning() }
            #expect(delegate.waitForFrames(10))
            #expect(backend.streamingRoute == .pipeWire)
            #expect(device.uniqueID == uniqueID)
            let throughPipeWire = delegate.frames
            // The producer's frames show their own sequence numbers, never the plug-in's 4000.
            #expect(
                throughPipeWire.allSatisfy { $0.patternNumber == $0.sequenceNumber },
                "\(throughPipeWire.map(\.patternNumber))")

            // The node goes (its daemon stops offering the camera): the stream is interrupted and
            // resumes at once through V4L2, on the same device.
            producer.stop()
            #expect(interrupted.wait())
            #expect(interrupted.lastError?.code == .deviceDisconnected)
            #expect(ended.wait(), "resumed through V4L2")
            let before = delegate.frames.count
            #expect(delegate.waitForFrames(5))
            #expect(backend.streamingRoute == .v4l2)
            let throughV4L2 = delegate.frames.dropFirst(before)
            #expect(
                throughV4L2.allSatisfy { $0.patternNumber == Self.v4l2Pattern }, "\(throughV4L2.map(\.patternNumber))")
            #expect(disconnected.count == 0, "the camera never left")
            #expect(device.isConnected)
            #expect(registry.devices().filter { $0.uniqueID.hasPrefix("v4l2:") }.map(\.uniqueID) == [uniqueID])
        }
    }

    @Test(
        "forced: VIEWFINDER_CAMERA_ROUTE=v4l2 never asks PipeWire; =pipewire lists only what PipeWire offers; no daemon: V4L2"
    )
    func forcedRoutes() throws {
        try #require(FakeCameraPlugin.isInstalled, FakeCameraPlugin.skipReason)
        let remote = try #require(PipeWireTestDaemon.remote)
        let pipeWire = PipeWireDeviceProvider(remoteName: remote)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vf-route-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let camera = Self.pluginCamera()
        let path = "\(directory)/video0"
        try camera.contents().write(to: URL(fileURLWithPath: path))
        let forcedV4L2 = V4L2DeviceProvider(
            directory: V4L2DevDirectory(path: directory), interface: LibV4L2Interface(), pipeWire: pipeWire,
            route: .v4l2)
        let forcedPipeWire = V4L2DeviceProvider(
            directory: V4L2DevDirectory(path: directory), interface: LibV4L2Interface(), pipeWire: pipeWire,
            route: .pipeWire)
        // No node claims the camera yet: forced PipeWire lists nothing, forced V4L2 the camera.
        #expect(forcedPipeWire.discoverBackends().isEmpty)
        #expect(forcedV4L2.discoverBackends().map(\.uniqueID) == ["v4l2:\(camera.busInfo)"])

        let name = PipeWireTestDaemon.uniqueName("forced")
        let producer = try ProducerProcess(
            name: name, properties: ["device.api": "v4l2", "api.v4l2.path": path])
        defer { producer.stop() }
        try #require(Self.waitForNode(name, in: pipeWire))
        #expect(forcedPipeWire.discoverBackends().map(\.uniqueID) == ["v4l2:\(camera.busInfo)"])
        let v4l2Camera = try #require(forcedV4L2.presentCameras().first)
        #expect(v4l2Camera.pipeWireRoute?.node(for: v4l2Camera) == nil, "v4l2 never routes through PipeWire")
        let pipeWireCamera = try #require(forcedPipeWire.presentCameras().first)
        #expect(pipeWireCamera.pipeWireRoute?.node(for: pipeWireCamera)?.nodeName == name)
        // No daemon (a headless box): automatic lists the camera and opens its driver.
        let headless = V4L2DeviceProvider(
            directory: V4L2DevDirectory(path: directory), interface: LibV4L2Interface(),
            pipeWire: PipeWireDeviceProvider(remoteName: "viewfinder-no-daemon-\(getpid())"), route: .automatic)
        #expect(headless.discoverBackends().map(\.uniqueID) == ["v4l2:\(camera.busInfo)"])
        let headlessCamera = try #require(headless.presentCameras().first)
        #expect(headlessCamera.pipeWireRoute?.node(for: headlessCamera) == nil)
    }
}
