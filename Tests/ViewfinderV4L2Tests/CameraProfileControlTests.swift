import Foundation
import Testing

@testable import ViewfinderCore
@testable import ViewfinderSimulator
@testable import ViewfinderTestSupport
@testable import ViewfinderV4L2

/// Camera profiles of the typed controls (focus, exposure, white balance, zoom, anti-flicker),
/// on the simulated C920 (the fake-camera plugin has brightness only).
@Suite("Camera profiles of typed controls")
struct CameraProfileControlTests {
    /// A temporary `XDG_CONFIG_HOME`, removed after the test.
    final class ConfigHome {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("vf-config-\(UUID().uuidString)")
        deinit { try? FileManager.default.removeItem(at: url) }
        var store: CameraProfileStore {
            .standard(environment: ["XDG_CONFIG_HOME": url.path, "HOME": "/nonexistent"])
        }
    }

    @Test("manual focus, exposure and white balance, zoom and anti-flicker are saved and come back")
    func typedSettingsComeBack() throws {
        let home = ConfigHome()
        let rig = try SimulatedRig()
        let device = try rig.device
        device.profileStore = home.store
        try device.lockForConfiguration()
        try device.setFocusModeLocked(lensPosition: 0)
        try device.setExposureModeCustom(duration: MediaTime(value: 1, timescale: 100))
        try device.setWhiteBalanceModeLocked(temperature: 5000)
        try device.setVideoZoomFactor(2)
        try device.setPowerLineFrequency(.fiftyHertz)
        try device.setValue(10, for: .brightness)
        device.unlockForConfiguration()
        try device.saveProfile(named: "manual")
        let text = try String(
            contentsOf: home.store.file(for: device.uniqueID, name: "manual"), encoding: .utf8)
        #expect(text.contains("\"exposureMode\" : \"custom\""), "\(text)")
        #expect(text.contains("\"whiteBalanceTemperature\" : 5000"), "\(text)")
        #expect(text.contains("\"focusMode\" : \"locked\""), "\(text)")

        // What a replugged UVC camera does: everything back to automatic and defaults.
        try device.lockForConfiguration()
        try device.setFocusMode(.continuousAutoFocus)
        try device.setExposureMode(.continuousAutoExposure)
        try device.setWhiteBalanceMode(.continuousAutoWhiteBalance)
        try device.setVideoZoomFactor(1)
        try device.setPowerLineFrequency(.sixtyHertz)
        try device.setValue(128, for: .brightness)
        device.unlockForConfiguration()

        #expect(try device.applyProfile(named: "manual").isEmpty)
        #expect(device.focusMode == .locked)
        #expect(device.lensPosition == 0)
        #expect(device.exposureMode == .custom)
        #expect(device.exposureDuration == MediaTime(value: 1, timescale: 100))
        #expect(device.whiteBalanceMode == .locked)
        #expect(device.whiteBalanceTemperature == 5000)
        #expect(device.videoZoomFactor == 2)
        #expect(device.powerLineFrequency == .fiftyHertz)
        #expect(try device.value(of: .brightness) == 10)
    }

    @Test("a typed value out of range or a mode the camera lacks is reported; the others apply")
    func typedSettingsRefused() throws {
        let home = ConfigHome()
        let rig = try SimulatedRig()
        let device = try rig.device
        device.profileStore = home.store
        try device.lockForConfiguration()
        try device.setWhiteBalanceModeLocked(temperature: 4000)
        try device.setVideoZoomFactor(3)
        try device.setPowerLineFrequency(.fiftyHertz)
        device.unlockForConfiguration()
        try device.saveProfile()
        let file = home.store.file(for: device.uniqueID, name: CaptureDevice.defaultProfileName)
        let text = try String(contentsOf: file, encoding: .utf8)
        let edited =
            text
            .replacingOccurrences(of: "\"whiteBalanceTemperature\" : 4000", with: "\"whiteBalanceTemperature\" : 9000")
            .replacingOccurrences(of: "\"fiftyHertz\"", with: "\"automatic\"")
        try edited.write(to: file, atomically: true, encoding: .utf8)
        try device.lockForConfiguration()
        try device.setVideoZoomFactor(1)
        device.unlockForConfiguration()

        let problems = try device.applyProfile()
        #expect(Set(problems.map(\.setting)) == [.whiteBalance, .powerLineFrequency], "\(problems)")
        #expect(problems.first { $0.setting == .whiteBalance }?.error.code == .invalidArgument)
        #expect(problems.first { $0.setting == .powerLineFrequency }?.error.code == .unsupportedControl)
        #expect(device.videoZoomFactor == 3, "the rest applies")
    }
}
