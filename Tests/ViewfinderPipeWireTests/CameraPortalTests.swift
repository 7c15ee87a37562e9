import Foundation
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

/// The Camera portal client against the mock portal (`Tests/PortalMock`) on a private D-Bus
/// session bus that each test starts and stops (`PortalTestBus`). These need dbus-daemon,
/// python3-dbus and python3-gi (Scripts/install-dependencies.sh installs them): missing, they fail.
@Suite("Camera portal")
struct CameraPortalTests {
    static let app = "org.example.ViewfinderTest"

    /// A registry whose only provider is the portal on `bus`, as inside a sandbox.
    private func withPortal<T>(
        _ bus: PortalTestBus, receiver: RecordingRemoteReceiver, _ body: (CameraPortal) async throws -> T
    ) async rethrows -> T {
        let portal = CameraPortal(
            busAddress: bus.address, appID: Self.app, responseTimeout: .seconds(60), receiver: receiver)
        let registry = DeviceRegistry(providers: [CameraPortalProvider(portal: portal)])
        return try await DeviceRegistry.$current.withValue(registry) { try await body(portal) }
    }

    @Test("granted: AccessCamera's Response on the derived request path, then OpenPipeWireRemote's fd is handed over")
    func grant() async throws {
        let bus = try PortalTestBus(mockArguments: ["--app", Self.app, "--answer", "grant"])
        defer { bus.stop() }
        let receiver = RecordingRemoteReceiver()
        try await withPortal(bus, receiver: receiver) { portal in
            #expect(try portal.isCameraPresent())
            #expect(CaptureDevice.authorizationStatus(for: .video) == .notDetermined, "nobody has answered yet")
            #expect(CaptureDevice.authorizationError(for: .video) == nil)
            #expect(await CaptureDevice.requestAccess(for: .video))
            let request = try bus.nextMockLine()
            #expect(request.hasPrefix("request \(CameraPortal.objectPath)/request/"), "\(request)")
            #expect(CaptureDevice.authorizationStatus(for: .video) == .authorized)
            #expect(CaptureDevice.authorizationError(for: .video) == nil)
            // Audio is not the portal's: the microphones' own answer stands.
            #expect(CaptureDevice.authorizationStatus(for: .audio) == .authorized)
        }
        let fd = try #require(receiver.received.first, "the granted remote reached the receiver")
        #expect(receiver.received.count == 1)
        var marker = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &marker, marker.count)
        #expect(count > 0)
        #expect(
            String(decoding: marker.prefix(max(count, 0)), as: UTF8.self) == "viewfinder-mock-pipewire-remote\n",
            "the fd is the socket the portal sent")
    }

    @Test(
        "granted: frames arrive in a session through the PipeWire remote the portal opened",
        .enabled(if: PipeWireTestDaemon.isAvailable, "needs Scripts/pipewire.sh"))
    func grantThenFrames() async throws {
        let remote = try #require(PipeWireTestDaemon.remote)
        let runtime = try #require(ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"])
        let socketPath = "\(runtime)/\(remote)"
        #expect(FileManager.default.fileExists(atPath: socketPath), "the test daemon's socket")
        let name = PipeWireTestDaemon.uniqueName("portal")
        let camera = try PipeWireTestCamera(
            name: name, format: "yuyv", width: 320, height: 240, framesPerSecond: 30, remoteName: remote)
        defer { camera.close() }
        let bus = try PortalTestBus(
            mockArguments: ["--app", Self.app, "--answer", "grant", "--pipewire-socket", socketPath])
        defer { bus.stop() }
        // As inside a sandbox: no daemon socket this provider could reach by itself, only the
        // remote the portal hands over.
        let pipeWire = PipeWireDeviceProvider(remoteName: "viewfinder-no-such-socket-\(getpid())")
        let portal = CameraPortal(
            busAddress: bus.address, appID: Self.app, responseTimeout: .seconds(60), receiver: pipeWire)
        let registry = DeviceRegistry(providers: [CameraPortalProvider(portal: portal), pipeWire])
        try await DeviceRegistry.$current.withValue(registry) {
            #expect(!CaptureDevice.devices(for: .video).contains { $0.uniqueID == "pipewire:\(name)" })
            #expect(await CaptureDevice.requestAccess(for: .video))
            #expect(CaptureDevice.authorizationStatus(for: .video) == .authorized)
            let device = try #require(
                PipeWireTestDaemon.device("pipewire:\(name)", in: registry), "the camera behind the portal's remote")
            let check = PipeWireFrameCheck()
            let delegate = RecordingDelegate(inspect: { check.check($0) })
            let (session, output) = try makeSession(
                device: device, delegate: delegate, settings: try VideoSettings(pixelFormat: .bgra),
                discardsLate: false)
            session.startRunning()
            #expect(delegate.waitForFrames(10))
            session.stopRunning()
            delegate.queue.sync {}
            #expect(check.compared >= 10)
            #expect(check.unreadable == 0)
            #expect(check.mismatched.isEmpty, "each frame shows its own sequence number")
            let statistics = output.statistics
            #expect(statistics.delivered + statistics.dropped + statistics.rateGated == statistics.captured)
        }
    }

    @Test("refused in the dialog: .denied, no remote, and the error says how to reset the stored answer")
    func refuse() async throws {
        let bus = try PortalTestBus(mockArguments: ["--app", Self.app, "--answer", "deny"])
        defer { bus.stop() }
        let receiver = RecordingRemoteReceiver()
        try await withPortal(bus, receiver: receiver) { _ in
            #expect(!(await CaptureDevice.requestAccess(for: .video)))
            #expect(CaptureDevice.authorizationStatus(for: .video) == .denied)
            let error = try #require(CaptureDevice.authorizationError(for: .video))
            #expect(error.code == .permissionDenied)
            #expect(error.message.contains("flatpak permission-remove devices camera \(Self.app)"), "\(error)")
            #expect(error.message.contains("flatpak permission-reset \(Self.app)"), "\(error)")
        }
        #expect(receiver.received.isEmpty)
    }

    @Test("a stored refusal: .denied before asking (from the permission store), and asking does not grant")
    func storedRefusal() async throws {
        let bus = try PortalTestBus(mockArguments: ["--app", Self.app, "--answer", "grant", "--stored", "no"])
        defer { bus.stop() }
        let receiver = RecordingRemoteReceiver()
        await withPortal(bus, receiver: receiver) { _ in
            #expect(CaptureDevice.authorizationStatus(for: .video) == .denied)
            #expect(CaptureDevice.authorizationError(for: .video)?.message.contains("permission-remove") == true)
            #expect(!(await CaptureDevice.requestAccess(for: .video)), "the stored no wins over the dialog")
            #expect(CaptureDevice.authorizationStatus(for: .video) == .denied)
        }
        #expect(receiver.received.isEmpty)
    }

    @Test("inside a sandbox the store is out of reach: .notDetermined until the refusal, .denied after it")
    func refusalWithoutStore() async throws {
        let bus = try PortalTestBus(mockArguments: ["--app", Self.app, "--stored", "no", "--no-store"])
        defer { bus.stop() }
        let receiver = RecordingRemoteReceiver()
        await withPortal(bus, receiver: receiver) { _ in
            #expect(CaptureDevice.authorizationStatus(for: .video) == .notDetermined)
            #expect(!(await CaptureDevice.requestAccess(for: .video)))
            #expect(CaptureDevice.authorizationStatus(for: .video) == .denied)
            #expect(CaptureDevice.authorizationError(for: .video)?.message.contains("permission-remove") == true)
        }
    }

    @Test("a stored grant: authorized at once, without a dialog")
    func storedGrant() async throws {
        let bus = try PortalTestBus(mockArguments: ["--app", Self.app, "--answer", "deny", "--stored", "yes"])
        defer { bus.stop() }
        let receiver = RecordingRemoteReceiver()
        await withPortal(bus, receiver: receiver) { _ in
            #expect(CaptureDevice.authorizationStatus(for: .video) == .authorized)
            #expect(await CaptureDevice.requestAccess(for: .video))
        }
        #expect(receiver.received.count == 1)
    }

    @Test("the camera disabled by lockdown: .restricted, with where to turn it back on")
    func lockdown() async throws {
        let bus = try PortalTestBus(mockArguments: ["--app", Self.app, "--lockdown"])
        defer { bus.stop() }
        let receiver = RecordingRemoteReceiver()
        try await withPortal(bus, receiver: receiver) { _ in
            #expect(CaptureDevice.authorizationStatus(for: .video) == .restricted)
            #expect(!(await CaptureDevice.requestAccess(for: .video)))
            let error = try #require(CaptureDevice.authorizationError(for: .video))
            #expect(error.message.contains("disable-camera"), "\(error)")
        }
    }

    @Test("no portal on the bus: .restricted with an error naming xdg-desktop-portal and the way out")
    func portalAbsent() async throws {
        let bus = try PortalTestBus(mockArguments: nil)
        defer { bus.stop() }
        let receiver = RecordingRemoteReceiver()
        try await withPortal(bus, receiver: receiver) { portal in
            #expect(CaptureDevice.authorizationStatus(for: .video) == .restricted)
            #expect(!(await CaptureDevice.requestAccess(for: .video)))
            let error = try #require(CaptureDevice.authorizationError(for: .video))
            #expect(error.code == .permissionDenied)
            #expect(error.message.contains("xdg-desktop-portal"), "\(error)")
            #expect(error.message.contains("VIEWFINDER_CAMERA_PORTAL=0"), "\(error)")
            #expect(throws: CaptureError.self) { try portal.isCameraPresent() }
        }
        #expect(receiver.received.isEmpty)
    }

    @Test("a portal without the Camera interface: an error that says so")
    func noCameraInterface() async throws {
        let bus = try PortalTestBus(mockArguments: ["--app", Self.app, "--no-camera-interface"])
        defer { bus.stop() }
        await withPortal(bus, receiver: RecordingRemoteReceiver()) { _ in
            #expect(!(await CaptureDevice.requestAccess(for: .video)))
            #expect(CaptureDevice.authorizationError(for: .video)?.message.contains("no Camera interface") == true)
        }
    }

    @Test("no bus at the address: .restricted, saying which bus could not be reached")
    func noBus() async {
        let address = "unix:path=/nonexistent/viewfinder-bus"
        let portal = CameraPortal(busAddress: address, appID: Self.app, receiver: RecordingRemoteReceiver())
        let answer = portal.authorization()
        #expect(answer.status == .restricted)
        #expect(answer.error?.message.contains(address) == true, "\(String(describing: answer.error))")
        #expect(portal.requestAccess().status == .restricted)
    }

    @Test("when the portal is used, the app ID, and the request path rule")
    func rules() {
        #expect(CameraPortal.isWanted(environment: [:], sandboxed: true))
        #expect(!CameraPortal.isWanted(environment: [:], sandboxed: false))
        #expect(CameraPortal.isWanted(environment: ["VIEWFINDER_CAMERA_PORTAL": "1"], sandboxed: false))
        #expect(!CameraPortal.isWanted(environment: ["VIEWFINDER_CAMERA_PORTAL": "0"], sandboxed: true))
        #expect(CameraPortal.sandboxAppID(environment: ["FLATPAK_ID": "org.example.A"]) == "org.example.A")
        let info = "[Application]\nname=org.example.B\nruntime=runtime/org.gnome.Platform\n[Instance]\nname=x\n"
        #expect(CameraPortal.sandboxAppID(environment: [:], info: info) == "org.example.B")
        #expect(CameraPortal.sandboxAppID(environment: [:], info: "[Instance]\nname=x\n") == nil)
        #expect(
            CameraPortal.requestPath(uniqueName: ":1.42", token: "t7")
                == "/org/freedesktop/portal/desktop/request/1_42/t7")
    }
}
