import Foundation
import Testing

@testable import ViewfinderCore
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting

/// Camera profiles on disk and on the virtual camera (formats and frame rates; it has no controls).
@Suite("Camera profile store")
struct CameraProfileStoreTests {
    /// A temporary directory to use as `XDG_CONFIG_HOME`, removed after the test.
    final class ConfigHome {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("vf-config-\(UUID().uuidString)")
        deinit { try? FileManager.default.removeItem(at: url) }
        var store: CameraProfileStore {
            .standard(environment: ["XDG_CONFIG_HOME": url.path, "HOME": "/nonexistent"])
        }
    }

    static func camera(_ home: ConfigHome) -> CaptureDevice {
        let camera = VirtualCamera(
            configuration: .init(uniqueID: "virtual:profile/\(UUID().uuidString)", clock: ManualClock()))
        camera.device.profileStore = home.store
        return camera.device
    }

    @Test("profiles live in $XDG_CONFIG_HOME/viewfinder/profiles, else ~/.config (a relative XDG path is ignored)")
    func location() {
        let xdg = CameraProfileStore.standard(environment: ["XDG_CONFIG_HOME": "/tmp/xdg", "HOME": "/home/a"])
        #expect(xdg.directory.path == "/tmp/xdg/viewfinder/profiles")
        let home = CameraProfileStore.standard(environment: ["HOME": "/home/a"])
        #expect(home.directory.path == "/home/a/.config/viewfinder/profiles")
        let relative = CameraProfileStore.standard(environment: ["XDG_CONFIG_HOME": "rel", "HOME": "/home/a"])
        #expect(relative.directory.path == "/home/a/.config/viewfinder/profiles")
        // A unique ID becomes one path component; the profile name is the file's name.
        let file = xdg.file(for: "v4l2:usb-0000:00:14.0-1/..", name: "Studio light")
        #expect(file.path == "/tmp/xdg/viewfinder/profiles/v4l2%3Ausb-0000%3A00%3A14.0-1%2F../Studio light.json")
        #expect(xdg.folder(for: "..").lastPathComponent == "%2E.")
    }

    @Test(
        "names that cannot be file names are refused with invalidArgument",
        arguments: ["", ".hidden", "a/b", " x", String(repeating: "n", count: 101)])
    func badNames(name: String) {
        let home = ConfigHome()
        let device = Self.camera(home)
        #expect(throws: CaptureError.self) { try device.saveProfile(named: name) }
        do {
            try device.saveProfile(named: name)
        } catch {
            #expect(error.code == .invalidArgument)
        }
        #expect(device.savedProfileNames.isEmpty)
    }

    @Test("save, list, apply and remove on the virtual camera: format and frame rate come back")
    func saveListApplyRemove() throws {
        let home = ConfigHome()
        let device = Self.camera(home)
        let hd = try #require(device.formats.first { $0.pixelFormat == .nv12VideoRange && $0.dimensions.width == 1280 })
        try device.lockForConfiguration()
        try device.setActiveFormat(hd)
        try device.setActiveVideoMinFrameDuration(MediaTime(value: 1, timescale: 15))
        device.unlockForConfiguration()
        try device.saveProfile(named: "b")
        try device.saveProfile()
        #expect(device.savedProfileNames == ["b", "default"])

        try device.lockForConfiguration()
        try device.setActiveFormat(device.formats[0])
        device.unlockForConfiguration()
        #expect(device.activeFormat != hd)
        #expect(try device.applyProfile(named: "b").isEmpty)
        #expect(device.activeFormat == hd)
        #expect(device.activeVideoMinFrameDuration == MediaTime(value: 1, timescale: 15))
        #expect(!device.isLockedForConfiguration, "the lock applyProfile took is given back")

        try device.removeProfile(named: "b")
        try device.removeProfile(named: "b")  // already gone: nothing
        #expect(device.savedProfileNames == ["default"])
        #expect {
            try device.applyProfile(named: "b")
        } throws: { error in
            (error as? CaptureError)?.code == .invalidArgument
                && (error as? CaptureError)?.message.contains("savedProfileNames") == true
        }
    }

    @Test("a format the camera no longer offers and a rate it lacks are reported, not fatal")
    func refusedFormat() throws {
        let home = ConfigHome()
        let device = Self.camera(home)
        try device.saveProfile()
        let file = home.store.file(for: device.uniqueID, name: CaptureDevice.defaultProfileName)
        let text = try String(contentsOf: file, encoding: .utf8)
        let original = device.activeFormat
        // The saved format at a size the camera does not have.
        try text.replacingOccurrences(of: "\"width\" : \(original.dimensions.width)", with: "\"width\" : 4000")
            .write(to: file, atomically: true, encoding: .utf8)
        var problems = try device.applyProfile()
        #expect(problems.map(\.setting) == [.activeFormat])
        #expect(problems.first?.error.code == .unsupportedFormat)
        #expect(device.activeFormat == original)
        // The saved rate is one the format lacks.
        let rate = try #require(text.split(separator: "\n").first { $0.contains("frameDuration") })
        try text.replacingOccurrences(of: String(rate), with: "  \"frameDuration\" : \"1/7\",")
            .write(to: file, atomically: true, encoding: .utf8)
        problems = try device.applyProfile()
        #expect(problems.map(\.setting) == [.activeVideoMinFrameDuration])
        #expect(problems.first?.error.code == .unsupportedFormat)
    }

    @Test("a session that opens the camera applies its default profile before the first frame")
    func appliedOnOpen() throws {
        let home = ConfigHome()
        let camera = VirtualCamera(configuration: .init(uniqueID: "virtual:profile-open/\(UUID().uuidString)"))
        let device = camera.device
        device.profileStore = home.store
        let small = try #require(device.formats.first { $0.pixelFormat == .yuyv && $0.dimensions.width == 640 })
        let large = try #require(device.formats.first { $0.pixelFormat == .yuyv && $0.dimensions.width == 1920 })
        try device.lockForConfiguration()
        try device.setActiveFormat(large)
        device.unlockForConfiguration()
        try device.saveProfile()
        try device.lockForConfiguration()
        try device.setActiveFormat(small)
        device.unlockForConfiguration()

        let applied = NotificationRecorder(CaptureDevice.didApplyProfileNotification, object: device)
        let delegate = RecordingDelegate()
        let (session, _) = try makeSession(device: device, delegate: delegate, preset: .low)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(delegate.waitForFrames(1))
        #expect(applied.count == 1)
        #expect(device.activeFormat == large)
        #expect(delegate.frames.first?.width == 1920, "the first frame is in the profile's format")
    }
}
