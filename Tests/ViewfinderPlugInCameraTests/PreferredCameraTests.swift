import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ViewfinderCore
@testable import ViewfinderTestSupport
@testable import ViewfinderV4L2

/// `userPreferredCamera` and `systemPreferredCamera` over two plug-in cameras, with the preference
/// kept in a temporary XDG config directory.
@Suite(
    "Preferred cameras with the fake-camera plugin", .serialized,
    .enabled(if: FakeCameraPlugin.isInstalled, FakeCameraPlugin.skipReason))
struct PreferredCameraTests {
    /// Two cameras on one rig, `video0` and `video1`.
    static func twoCameras() throws -> (FakeCameraRig, FakeCameraFile, FakeCameraFile) {
        let rig = try FakeCameraRig()
        var first = FakeCameraFile()
        first.card = "First Camera"
        var second = FakeCameraFile()
        second.card = "Second Camera"
        try rig.plug(first, as: "video0")
        try rig.plug(second, as: "video1")
        _ = try rig.device(first)
        _ = try rig.device(second)
        return (rig, first, second)
    }

    @Test(
        "the preference is set, survives a relaunch (a new read of the same directory) and setting nil changes nothing")
    func setAndRelaunch() throws {
        let home = try TemporaryConfigHome()
        let store = PreferredCameraStore.standard(environment: [
            "XDG_CONFIG_HOME": home.url.path, "HOME": "/nonexistent",
        ])
        #expect(store.file.path == home.url.path + "/viewfinder/preferred-cameras.json")
        let (rig, _, second) = try Self.twoCameras()
        let preferences = PreferredCameras(store: store, registry: rig.registry)
        let chosen = try rig.device(second)
        PreferredCameras.$current.withValue(preferences) {
            CaptureDevice.userPreferredCamera = chosen
            #expect(CaptureDevice.userPreferredCamera === chosen)
            #expect(CaptureDevice.systemPreferredCamera === chosen)
            CaptureDevice.userPreferredCamera = nil  // no effect, as in AVFoundation
            #expect(CaptureDevice.userPreferredCamera === chosen)
        }
        #expect(store.load() == [chosen.uniqueID])
        let relaunched = PreferredCameras(store: store, registry: rig.registry)
        #expect(relaunched.userPreferredCamera === chosen)
        #expect(relaunched.systemPreferredCamera === chosen)
    }

    @Test("with the preferred camera unplugged, both properties fall back to a connected camera and return on replug")
    func fallsBackWhenUnplugged() throws {
        let home = try TemporaryConfigHome()
        let store = PreferredCameraStore(file: home.url.appendingPathComponent("preferred-cameras.json"))
        let (rig, first, second) = try Self.twoCameras()
        let preferences = PreferredCameras(store: store, registry: rig.registry)
        let firstDevice = try rig.device(first)
        let secondDevice = try rig.device(second)
        preferences.setUserPreferredCamera(firstDevice)
        preferences.setUserPreferredCamera(secondDevice)
        #expect(preferences.history == [secondDevice.uniqueID, firstDevice.uniqueID])

        try rig.unplug("video1")
        #expect(rig.wait { !secondDevice.isConnected })
        // The history's next camera.
        #expect(preferences.userPreferredCamera === firstDevice)
        #expect(preferences.systemPreferredCamera === firstDevice)

        try rig.unplug("video0")
        #expect(rig.wait { !firstDevice.isConnected })
        #expect(preferences.userPreferredCamera == nil)
        #expect(preferences.systemPreferredCamera == nil)

        try rig.plug(second, as: "video1")
        #expect(rig.wait { (try? rig.device(second))?.isConnected == true })
        #expect(preferences.userPreferredCamera?.uniqueID == secondDevice.uniqueID)
    }

    @Test("observing systemPreferredCamera on the class reports a new preference and an unplug")
    func observation() throws {
        let home = try TemporaryConfigHome()
        let store = PreferredCameraStore(file: home.url.appendingPathComponent("preferred-cameras.json"))
        let (rig, first, second) = try Self.twoCameras()
        let preferences = PreferredCameras(store: store, registry: rig.registry)
        let firstDevice = try rig.device(first)
        let secondDevice = try rig.device(second)
        preferences.setUserPreferredCamera(secondDevice)

        let seen = Mutex<[String?]>([])
        let changed = DispatchSemaphore(value: 0)
        let observation = PreferredCameras.$current.withValue(preferences) {
            CaptureDevice.observe(\.systemPreferredCamera, options: [.new, .old]) { _, change in
                seen.withLock { $0.append(change.newValue??.uniqueID) }
                changed.signal()
            }
        }
        defer { observation.invalidate() }

        PreferredCameras.$current.withValue(preferences) { CaptureDevice.userPreferredCamera = firstDevice }
        #expect(changed.wait(timeout: .now() + 10) == .success)
        #expect(seen.withLock { $0 } == [firstDevice.uniqueID])

        // The preferred camera goes: the system's choice moves to the other one by itself.
        try rig.unplug("video0")
        #expect(changed.wait(timeout: .now() + 10) == .success)
        #expect(seen.withLock { $0 } == [firstDevice.uniqueID, secondDevice.uniqueID])
        #expect(preferences.systemPreferredCamera === secondDevice)
    }
}
