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

/// Controls of PipeWire camera nodes: a test camera publishes PropInfo and Props params, the
/// backend lists them as neutral controls and sets them with `pw_node_set_param(Props)`.
@Suite("PipeWire controls", .serialized, .enabled(if: PipeWireTestDaemon.isAvailable, "needs Scripts/pipewire.sh"))
struct PipeWireControlsTests {
    typealias Control = PipeWireProducer.Control

    /// V4L2_CID_BACKLIGHT_COMPENSATION and V4L2_CID_POWER_LINE_FREQUENCY as PipeWire's V4L2 plugin
    /// publishes them (SPA_PROP_START_CUSTOM + the V4L2 ID).
    static let backlightID = Control.customID + 0x98_091c
    static let powerLineID = Control.customID + 0x98_0918

    static let published: [Control] = [
        Control(
            id: Control.brightnessID, name: "Brightness", kind: .integer(minimum: -64, maximum: 64, step: 1),
            defaultValue: 0, value: 10),
        Control(
            id: Control.contrastID, name: "Contrast", kind: .integer(minimum: 0, maximum: 100, step: 5),
            defaultValue: 50),
        Control(id: backlightID, name: "Backlight Compensation", kind: .boolean, defaultValue: 0),
        Control(
            id: powerLineID, name: "Power Line Frequency",
            kind: .menu([(0, "Disabled"), (1, "50 Hz"), (2, "60 Hz")]), defaultValue: 1),
    ]

    /// Publishes a test camera with `controls`, finds it through a private registry and runs `body`.
    func withCamera(
        _ label: String, controls: [Control] = published, _ body: (CaptureDevice, PipeWireTestCamera) throws -> Void
    ) throws {
        let (registry, _) = try PipeWireTestDaemon.registry()
        let name = PipeWireTestDaemon.uniqueName(label)
        let camera = try PipeWireTestCamera(
            name: name, format: "yuyv", width: 320, height: 240, framesPerSecond: 30,
            remoteName: PipeWireTestDaemon.remote, controls: controls)
        defer { camera.close() }
        try DeviceRegistry.$current.withValue(registry) {
            let device = try #require(PipeWireTestDaemon.device("pipewire:\(name)", in: registry))
            try body(device, camera)
        }
    }

    /// Waits (up to `timeout` seconds) until `condition` holds; returns whether it did.
    func eventually(timeout: Double = 5, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !condition() {
            guard Date() < deadline else { return false }
            usleep(5_000)
        }
        return true
    }

    @Test("a node's PropInfo is listed as neutral controls with ranges, defaults and values from its Props")
    func listed() throws {
        try withCamera("controls-list") { device, _ in
            let controls = device.controls
            #expect(controls.count == 4, "\(controls)")
            let brightness = try #require(controls.first { $0.id == .brightness })
            #expect(brightness.name == "Brightness")
            #expect(brightness.kind == .integer)
            #expect(brightness.minimum == -64 && brightness.maximum == 64 && brightness.step == 1)
            #expect(brightness.defaultValue == 0)
            let contrast = try #require(controls.first { $0.id == .contrast })
            #expect(contrast.minimum == 0 && contrast.maximum == 100 && contrast.step == 5)
            #expect(contrast.defaultValue == 50)
            let backlight = try #require(controls.first { $0.id == .backlightCompensation })
            #expect(backlight.kind == .boolean && backlight.defaultValue == 0)
            let powerLine = try #require(controls.first { $0.id.rawValue == "powerLineFrequency" })
            #expect(powerLine.kind == .menu)
            #expect(
                powerLine.menuItems == [
                    .init(value: 0, name: "Disabled"), .init(value: 1, name: "50 Hz"), .init(value: 2, name: "60 Hz"),
                ])
            #expect(powerLine.defaultValue == 1)
            #expect(device.control(.brightness) == brightness)
            // Values come from the node's Props (brightness starts at 10, not its default).
            #expect(try device.value(of: .brightness) == 10)
            #expect(try device.value(of: .contrast) == 50)
            #expect(try device.value(of: .init(rawValue: "powerLineFrequency")) == 1)
        }
    }

    @Test("a value set inside lockForConfiguration reaches the producer and reads back from the node's Props")
    func setReachesProducer() throws {
        try withCamera("controls-set") { device, camera in
            _ = device.controls
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            try device.setValue(-20, for: .brightness)
            try device.setValue(85, for: .contrast)
            try device.setValue(1, for: .backlightCompensation)
            try device.setValue(2, for: .init(rawValue: "powerLineFrequency"))
            #expect(eventually { camera.value(ofControl: Control.brightnessID) == -20 })
            #expect(eventually { camera.value(ofControl: Control.contrastID) == 85 })
            #expect(eventually { camera.value(ofControl: Self.backlightID) == 1 })
            #expect(eventually { camera.value(ofControl: Self.powerLineID) == 2 })
            // Read back through the node's Props param, not a cache of what was set.
            #expect(eventually { (try? device.value(of: .brightness)) == -20 })
            #expect(eventually { (try? device.value(of: .contrast)) == 85 })
            #expect(eventually { (try? device.value(of: .backlightCompensation)) == 1 })
        }
    }

    @Test("out-of-range values, unknown controls and a missing lock are typed errors, and nothing reaches the node")
    func rejected() throws {
        try withCamera("controls-reject") { device, camera in
            _ = device.controls
            #expect(throws: CaptureError.self) { try device.setValue(5, for: .brightness) }
            do {
                try device.setValue(5, for: .brightness)
            } catch let error as CaptureError {
                #expect(error.code == .configurationNotLocked)
            }
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            for (value, id) in [
                (65, CaptureDevice.Control.ID.brightness), (-65, .brightness), (52, .contrast),
                (2, .backlightCompensation), (3, .init(rawValue: "powerLineFrequency")),
            ] {
                do {
                    try device.setValue(value, for: id)
                    Issue.record("\(value) for \(id) was accepted")
                } catch let error as CaptureError {
                    #expect(error.code == .invalidArgument)
                    #expect(error.localizedDescription.contains("out of range"), "\(error)")
                }
            }
            do {
                try device.setValue(1, for: .gamma)
                Issue.record("gamma, which the node lacks, was accepted")
            } catch let error as CaptureError {
                #expect(error.code == .unsupportedControl)
            }
            #expect(throws: CaptureError.self) { _ = try device.value(of: .gamma) }
            // The backend's own check, below CaptureDevice's.
            let backend = try #require(device.backend as? PipeWireCameraBackend)
            do {
                try backend.setValue(1000, for: .brightness)
                Issue.record("the backend accepted 1000")
            } catch let error as CaptureError {
                #expect(error.code == .invalidArgument)
            }
            #expect(camera.value(ofControl: Control.brightnessID) == 10)
            #expect(camera.value(ofControl: Control.contrastID) == 50)
            #expect(try device.value(of: .brightness) == 10)
        }
    }

    @Test("a floating-point control (as libcamera's nodes have) is listed and set in thousandths")
    func floatControl() throws {
        let saturation = Control(
            id: Control.saturationID, name: "Saturation", minimum: 0, maximum: 32, defaultValue: 1, value: 1.5)
        // As PipeWire 0.3's libcamera plugin publishes them: libcamera's control ID and name.
        let exposureTime = Control(
            id: 7, name: "ExposureTime", kind: .integer(minimum: 1, maximum: 66_666, step: 1), defaultValue: 10_000)
        let gain = Control(id: 9, name: "AnalogueGain", minimum: 1, maximum: 16, defaultValue: 1)
        try withCamera("controls-float", controls: [saturation, exposureTime, gain]) { device, camera in
            #expect(device.controls.map(\.id.rawValue).sorted() == ["exposureTime", "gain", "saturation"])
            #expect(device.control(.init(rawValue: "exposureTime"))?.maximum == 66_666)
            #expect(device.control(.gain)?.maximum == 16_000)
            let control = try #require(device.controls.first { $0.id == .saturation })
            #expect(control.kind == .integer)
            #expect(control.minimum == 0 && control.maximum == 32_000 && control.step == 1)
            #expect(control.defaultValue == 1000)
            #expect(try device.value(of: .saturation) == 1500)
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            try device.setValue(2250, for: .saturation)
            #expect(eventually { camera.floatValue(ofControl: Control.saturationID) == 2.25 })
            #expect(eventually { (try? device.value(of: .saturation)) == 2250 })
            do {
                try device.setValue(32_001, for: .saturation)
                Issue.record("32.001 was accepted for a 0…32 control")
            } catch let error as CaptureError {
                #expect(error.code == .invalidArgument)
            }
        }
    }

    @Test("a node whose Props carry no values (as PipeWire's V4L2 plugin's): the default, then the last value set")
    func valuesNotInProps() throws {
        try withCamera("controls-hidden", controls: []) { device, camera in
            try camera.publish(controls: Self.published, showingValues: false)
            #expect(device.controls.count == 4)
            // Brightness is 10 at the producer, but its Props do not say so: the default is all we know.
            #expect(try device.value(of: .brightness) == 0)
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            try device.setValue(33, for: .brightness)
            #expect(eventually { camera.value(ofControl: Control.brightnessID) == 33 })
            #expect(try device.value(of: .brightness) == 33)
            #expect(try device.value(of: .contrast) == 50)
        }
    }

    @Test("a node without PropInfo has no controls, and asking for one is an error, not a crash")
    func nodeWithoutControls() throws {
        try withCamera("controls-none", controls: []) { device, _ in
            #expect(device.controls.isEmpty)
            #expect(device.control(.brightness) == nil)
            do {
                _ = try device.value(of: .brightness)
                Issue.record("brightness read from a node without controls")
            } catch let error as CaptureError {
                #expect(error.code == .unsupportedControl)
            }
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            do {
                try device.setValue(0, for: .brightness)
                Issue.record("brightness set on a node without controls")
            } catch let error as CaptureError {
                #expect(error.code == .unsupportedControl)
            }
            #expect(!device.isExposureModeSupported(.custom))
        }
    }

    @Test("PropInfo parsing: SPA IDs map to the neutral names, custom ones are named from their description")
    func mapping() {
        #expect(PipeWireControlMap.neutralID(spaID: Control.gainID, name: "Gain") == .gain)
        #expect(
            PipeWireControlMap.neutralID(spaID: Control.customID + 0x98_091a, name: "White Balance Temperature")
                == .whiteBalanceTemperature)
        #expect(PipeWireControlMap.neutralID(spaID: Control.exposureID, name: "Exposure").rawValue == "exposure")
        #expect(PipeWireControlMap.scaled(-0.25) == -250)
        // PipeWire 0.3's libcamera plugin: libcamera's control IDs and names.
        #expect(PipeWireControlMap.neutralID(spaID: 9, name: "AnalogueGain") == .gain)
        #expect(PipeWireControlMap.neutralID(spaID: 11, name: "Brightness") == .brightness)
        #expect(PipeWireControlMap.neutralID(spaID: 7, name: "ExposureTime").rawValue == "exposureTime")
        #expect(PipeWireControlMap.neutralID(spaID: Control.customID + 1, name: "ISO").rawValue == "iso")
    }
}
