import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ViewfinderCore
@testable import ViewfinderTestSupport
@testable import ViewfinderV4L2

/// A temporary XDG config directory (`XDG_CONFIG_HOME`) for one test's profiles, removed after it:
/// the tests never read or write the user's own configuration.
final class TemporaryConfigHome {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("vf-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// The profile store an environment with `XDG_CONFIG_HOME` set to this directory resolves to.
    var store: CameraProfileStore {
        CameraProfileStore.standard(environment: ["XDG_CONFIG_HOME": url.path, "HOME": "/nonexistent"])
    }
}

/// What happened, in order: profiles applied (with the brightness the device reported then) and
/// the first frame delivered after each arming (with the brightness the device reported then).
final class ProfileProbe: @unchecked Sendable {  // unchecked: `observer` is set once in init.
    enum Event: Equatable, CustomStringConvertible {
        case applied(brightness: Int?, problems: Int)
        case firstFrame(brightness: Int?)
        var description: String {
            switch self {
            case .applied(let brightness, let problems):
                "applied(brightness \(String(describing: brightness)), \(problems) problems)"
            case .firstFrame(let brightness): "firstFrame(brightness \(String(describing: brightness)))"
            }
        }
    }

    private final class Log: Sendable {
        let events = Mutex<[Event]>([])
        let problems = Mutex<[CaptureDevice.ProfileProblem]>([])
        let armed = Mutex(true)
    }
    private let log = Log()
    private let device: CaptureDevice
    private var observer: (any NSObjectProtocol)?

    init(device: CaptureDevice) {
        self.device = device
        let log = log
        observer = NotificationCenter.default.addObserver(
            forName: CaptureDevice.didApplyProfileNotification, object: device, queue: nil
        ) { note in
            let found = note.userInfo?[CaptureDeviceProfileProblemsKey] as? [CaptureDevice.ProfileProblem] ?? []
            log.problems.withLock { $0.append(contentsOf: found) }
            let brightness = try? device.value(of: .brightness)
            log.events.withLock { $0.append(.applied(brightness: brightness, problems: found.count)) }
        }
    }

    deinit {
        if let observer { NotificationCenter.default.removeObserver(observer) }
    }

    /// What happened so far.
    var events: [Event] { log.events.withLock { $0 } }
    /// Every value reported refused so far.
    var problems: [CaptureDevice.ProfileProblem] { log.problems.withLock { $0 } }

    /// Records the next delivered frame (with the brightness the device reports as it arrives).
    func arm() { log.armed.withLock { $0 = true } }

    /// The delegate's inspection hook: records the first frame after arming.
    var inspect: @Sendable (SampleBuffer) -> Void {
        { [log, device] _ in
            let first = log.armed.withLock { armed in
                defer { armed = false }
                return armed
            }
            guard first else { return }
            let brightness = try? device.value(of: .brightness)
            log.events.withLock { $0.append(.firstFrame(brightness: brightness)) }
        }
    }
}

/// Camera profiles over the production V4L2 path and the fake-camera plugin, whose controls live
/// with its device file: a replugged camera (a new file) has forgotten every value, as a UVC camera does.
@Suite(
    "Camera profiles with the fake-camera plugin", .serialized,
    .enabled(if: FakeCameraPlugin.isInstalled, FakeCameraPlugin.skipReason))
struct CameraProfileTests {
    static func setBrightness(_ value: Int, on device: CaptureDevice) throws {
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setValue(value, for: .brightness)
    }

    @Test("a saved profile is applied when the device is opened and again after an unplug, before the first frame")
    func reappliedAfterReplug() throws {
        let home = try TemporaryConfigHome()
        let rig = try FakeCameraRig()
        let camera = LibV4L2PluginTests.smallCamera()
        try rig.plug(camera)
        let device = try rig.device(camera)
        device.profileStore = home.store
        try Self.setBrightness(20, on: device)
        try device.saveProfile()
        #expect(device.savedProfileNames == [CaptureDevice.defaultProfileName])
        try Self.setBrightness(-10, on: device)  // changed after saving: opening puts 20 back

        let probe = ProfileProbe(device: device)
        let delegate = RecordingDelegate(inspect: probe.inspect)
        let (session, _) = try makeSession(device: device, delegate: delegate, preset: .low)
        let interrupted = NotificationRecorder(CaptureSession.wasInterruptedNotification, object: session)
        let ended = NotificationRecorder(CaptureSession.interruptionEndedNotification, object: session)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(delegate.waitForFrames(2))
        #expect(probe.events == [.applied(brightness: 20, problems: 0), .firstFrame(brightness: 20)])

        try rig.unplug()
        #expect(interrupted.wait())
        probe.arm()
        let before = delegate.frames.count
        try rig.plug(camera)  // a new device file: brightness is back at the camera's 0
        #expect(ended.wait())
        #expect(delegate.waitForFrames(before + 2))
        #expect(delegate.frames[before].sequenceNumber == 0, "the camera restarted its stream")
        #expect(
            probe.events == [
                .applied(brightness: 20, problems: 0), .firstFrame(brightness: 20),
                .applied(brightness: 20, problems: 0), .firstFrame(brightness: 20),
            ], "applied after the replug, before its first frame")
        #expect(try device.value(of: .brightness) == 20)
    }

    @Test("with automatic re-apply off, the replugged camera keeps the values it came back with")
    func automaticReapplyOff() throws {
        let home = try TemporaryConfigHome()
        let rig = try FakeCameraRig()
        let camera = LibV4L2PluginTests.smallCamera()
        try rig.plug(camera)
        let device = try rig.device(camera)
        device.profileStore = home.store
        device.automaticallyAppliesProfile = false
        try Self.setBrightness(20, on: device)
        try device.saveProfile()

        let probe = ProfileProbe(device: device)
        let delegate = RecordingDelegate(inspect: probe.inspect)
        let (session, _) = try makeSession(device: device, delegate: delegate, preset: .low)
        let interrupted = NotificationRecorder(CaptureSession.wasInterruptedNotification, object: session)
        let ended = NotificationRecorder(CaptureSession.interruptionEndedNotification, object: session)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(delegate.waitForFrames(2))
        try rig.unplug()
        #expect(interrupted.wait())
        probe.arm()
        let before = delegate.frames.count
        try rig.plug(camera)
        #expect(ended.wait())
        #expect(delegate.waitForFrames(before + 2))
        #expect(try device.value(of: .brightness) == 0, "the camera's own value after the replug")
        #expect(probe.events == [.firstFrame(brightness: 20), .firstFrame(brightness: 0)])
        // By hand it still applies.
        #expect(try device.applyProfile().isEmpty)
        #expect(try device.value(of: .brightness) == 20)
    }

    @Test("a value the replugged camera no longer accepts is reported; the rest applies and frames flow")
    func refusedValueReported() throws {
        let home = try TemporaryConfigHome()
        let rig = try FakeCameraRig()
        var camera = LibV4L2PluginTests.smallCamera()
        try rig.plug(camera)
        let device = try rig.device(camera)
        device.profileStore = home.store
        try Self.setBrightness(40, on: device)
        try device.saveProfile()

        let probe = ProfileProbe(device: device)
        let delegate = RecordingDelegate(inspect: probe.inspect)
        let (session, _) = try makeSession(device: device, delegate: delegate, preset: .low)
        let interrupted = NotificationRecorder(CaptureSession.wasInterruptedNotification, object: session)
        let ended = NotificationRecorder(CaptureSession.interruptionEndedNotification, object: session)
        let errors = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: session)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(delegate.waitForFrames(2))
        try rig.unplug()
        #expect(interrupted.wait())
        let errorsBefore = errors.count
        probe.arm()
        let before = delegate.frames.count
        // The same camera (same unique ID) comes back with a narrower brightness range.
        camera.brightness = (minimum: -10, maximum: 10, defaultValue: 0, value: 3)
        try rig.plug(camera)
        #expect(ended.wait())
        #expect(delegate.waitForFrames(before + 2), "a refused value is not fatal")
        #expect(errors.count == errorsBefore, "no runtime error for a refused profile value")
        let problems = probe.problems
        #expect(problems.count == 1)
        let problem = try #require(problems.first)
        #expect(problem.setting == .control(.brightness, value: 40))
        #expect(problem.error.code == .invalidArgument)
        #expect(problem.error.message.contains("-10…10"), "\(problem.error.message)")
        #expect(try device.value(of: .brightness) == 3, "the camera's own value stays")
    }

    @Test("the profile is a file a person can read and edit: an edited value is what applies")
    func handEditedFile() throws {
        let home = try TemporaryConfigHome()
        let rig = try FakeCameraRig()
        let camera = LibV4L2PluginTests.smallCamera()
        try rig.plug(camera)
        let device = try rig.device(camera)
        device.profileStore = home.store
        try device.lockForConfiguration()
        let large = try #require(device.formats.first { $0.dimensions.width == 640 && !$0.isEmulated })
        try device.setActiveFormat(large)
        try device.setValue(12, for: .brightness)
        device.unlockForConfiguration()
        try device.saveProfile(named: "Studio")

        let folder = home.url.appendingPathComponent("viewfinder/profiles")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(files.count == 1)
        let file = folder.appendingPathComponent(files[0]).appendingPathComponent("Studio.json")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains("\"brightness\" : 12"), "\(text)")
        #expect(text.contains("\"frameDuration\" : \"1/15\""), "\(text)")
        #expect(text.contains("\"width\" : 640"), "\(text)")
        let keys = text.split(separator: "\n").filter { $0.hasPrefix("  \"") }.map { $0.split(separator: "\"")[1] }
        #expect(keys == keys.sorted(), "top-level keys sorted: \(keys)")

        // Edited by hand: another brightness, the small size at 15 fps, and a control the camera lacks.
        var edited = text.replacingOccurrences(
            of: "\"brightness\" : 12", with: "\"brightness\" : -33,\n    \"zebraStripes\" : 1")
        edited = edited.replacingOccurrences(of: "\"width\" : 640", with: "\"width\" : 320")
        edited = edited.replacingOccurrences(of: "\"height\" : 480", with: "\"height\" : 240")
        try edited.write(to: file, atomically: true, encoding: .utf8)

        let problems = try device.applyProfile(named: "Studio")
        #expect(try device.value(of: .brightness) == -33)
        #expect(device.activeFormat.dimensions == CaptureDevice.Dimensions(width: 320, height: 240))
        #expect(device.activeVideoMinFrameDuration == MediaTime(value: 1, timescale: 15))
        #expect(problems.map(\.setting) == [.control(CaptureDevice.Control.ID(rawValue: "zebraStripes"), value: 1)])
        #expect(problems.first?.error.code == .unsupportedControl)

        // A file that is not a profile is refused, saying where.
        try "{ \"controls\" : { \"brightness\" : \"bright\" } }".write(to: file, atomically: true, encoding: .utf8)
        #expect {
            try device.applyProfile(named: "Studio")
        } throws: { error in
            let error = error as? CaptureError
            return error?.code == .invalidArgument && error?.message.contains("Studio.json") == true
                && error?.message.contains("controls.brightness") == true
        }
    }

    @Test("a profile's format and frame rate are negotiated when another process opens the camera")
    func formatAppliedOnOpen() throws {
        let home = try TemporaryConfigHome()
        let camera = LibV4L2PluginTests.smallCamera()
        do {
            let rig = try FakeCameraRig()
            try rig.plug(camera)
            let device = try rig.device(camera)
            device.profileStore = home.store
            try device.lockForConfiguration()
            let large = try #require(device.formats.first { $0.dimensions.width == 640 && !$0.isEmulated })
            try device.setActiveFormat(large)
            device.unlockForConfiguration()
            try device.saveProfile()
        }
        // A fresh registry: a new device object for the same camera, as in the next run of the app.
        let rig = try FakeCameraRig()
        try rig.plug(camera)
        let device = try rig.device(camera)
        device.profileStore = home.store
        #expect(device.activeFormat.dimensions.width == 320, "nothing applied before the device is opened")
        let delegate = RecordingDelegate()
        let (session, _) = try makeSession(device: device, delegate: delegate, preset: .low)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(delegate.waitForFrames(1))
        #expect(delegate.frames.first?.width == 640, "the first frame is in the profile's format")
        #expect(device.activeFormat.dimensions.width == 640)
        #expect(device.activeVideoMinFrameDuration == MediaTime(value: 1, timescale: 15))
    }
}
