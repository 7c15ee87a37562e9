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

@Suite("V4L2 controls")
struct V4L2ControlTests {
    @Test("the generic list has the UVC controls with their ranges and menus")
    func list() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        let controls = device.controls
        let brightness = try #require(controls.first { $0.id == .brightness })
        #expect(brightness.kind == .integer)
        #expect((brightness.minimum, brightness.maximum, brightness.defaultValue) == (0, 255, 128))
        // The V4L2 layer underneath: menus, flags and IDs as the driver reports them.
        let v4l2 = try rig.backend.v4l2Controls()
        let exposure = try #require(v4l2.first { $0.id == V4L2ControlID.exposureAuto })
        #expect(exposure.menuItems.map(\.value) == [1, 3], "menu gaps are skipped")
        #expect(
            v4l2.first { $0.id == V4L2ControlID.exposureAbsolute }?.isInactive == true,
            "inactive while exposure is automatic")
        #expect(v4l2.contains { $0.id == V4L2ControlID.flashLEDMode } == false)
        // The neutral list: named IDs, no typed-API controls, no V4L2 units.
        #expect(
            controls.first { $0.id == .whiteBalanceTemperature }?.isInactive == true,
            "inactive while white balance is automatic")
        #expect(try device.value(of: .contrast) == 128)
        #expect(!device.hasTorch)
        #expect(!controls.contains { $0.id.rawValue.lowercased().contains("exposure") }, "exposure is typed API")
    }

    @Test("setting needs the configuration lock, and values are range-checked")
    func lockingAndRanges() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        #expect(throws: CaptureError.self) { try device.setValue(10, for: .brightness) }
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setValue(10, for: .brightness)
        #expect(try device.value(of: .brightness) == 10)
        let error = try #require(throws: CaptureError.self) { try device.setValue(300, for: .brightness) }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("0…255"))
        let driven = try #require(throws: CaptureError.self) {
            try device.setValue(5000, for: .whiteBalanceTemperature)
        }
        #expect(driven.code == .unsupportedControl)
        #expect(driven.errno == EACCES)
    }

    @Test("focus: continuous autofocus or locked at a lens position")
    func focus() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        #expect(device.isFocusModeSupported(.continuousAutoFocus))
        #expect(device.isFocusModeSupported(.locked))
        #expect(!device.isFocusModeSupported(.autoFocus))
        #expect(device.focusMode == .continuousAutoFocus)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setFocusModeLocked(lensPosition: 0)
        #expect(device.focusMode == .locked)
        #expect(try rig.backend.v4l2Value(of: V4L2ControlID.focusAbsolute) == 250, "nearest is V4L2's largest value")
        #expect(device.lensPosition == 0)
        let error = try #require(throws: CaptureError.self) { try device.setFocusMode(.autoFocus) }
        #expect(error.code == .unsupportedControl)
    }

    @Test("exposure: custom duration, back to automatic")
    func exposure() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        #expect(device.isExposureModeSupported(.custom))
        #expect(device.isExposureModeSupported(.continuousAutoExposure))
        #expect(device.exposureMode == .continuousAutoExposure)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setExposureModeCustom(duration: MediaTime(value: 1, timescale: 100))
        #expect(device.exposureMode == .custom)
        #expect(device.exposureDuration == MediaTime(value: 1, timescale: 100))
        #expect(device.minExposureDuration.seconds == 0.0003, "V4L2's 3 × 100 µs, reported in seconds")
        #expect(device.maxExposureDuration.seconds == 0.2047)
        #expect(throws: CaptureError.self) {
            try device.setExposureModeCustom(duration: MediaTime(value: 1, timescale: 1))
        }
        try device.setExposureMode(.continuousAutoExposure)
        #expect(
            try rig.backend.v4l2Value(of: V4L2ControlID.exposureAuto) == 3,
            "aperture priority: the automatic mode uvcvideo offers")
    }

    @Test("white balance, zoom and anti-flicker")
    func whiteBalanceZoomFlicker() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setWhiteBalanceModeLocked(temperature: 5000)
        #expect(device.whiteBalanceMode == .locked)
        #expect(device.whiteBalanceTemperature == 5000)
        #expect(device.whiteBalanceTemperatureRange == 2000...6500)
        try device.setWhiteBalanceMode(.continuousAutoWhiteBalance)
        #expect(device.whiteBalanceMode == .continuousAutoWhiteBalance)
        #expect(device.maxAvailableVideoZoomFactor == 5)
        try device.setVideoZoomFactor(2)
        #expect(try rig.backend.v4l2Value(of: V4L2ControlID.zoomAbsolute) == 200)
        #expect(device.videoZoomFactor == 2)
        #expect(device.isPowerLineFrequencySupported(.fiftyHertz))
        #expect(!device.isPowerLineFrequencySupported(.automatic))
        try device.setPowerLineFrequency(.fiftyHertz)
        #expect(device.powerLineFrequency == .fiftyHertz)
        let error = try #require(throws: CaptureError.self) { try device.setPowerLineFrequency(.automatic) }
        #expect(error.code == .unsupportedControl)
    }

    @Test("torch where the driver has an LED control, unsupported otherwise", arguments: [true, false])
    func torch(hasLED: Bool) throws {
        let rig = try SimulatedRig(hasTorch: hasLED)
        let device = try rig.device
        #expect(device.hasTorch == hasLED)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        if hasLED {
            try device.setTorchMode(.on)
            #expect(device.torchMode == .on)
            #expect(!device.isTorchModeSupported(.auto))
        } else {
            let error = try #require(throws: CaptureError.self) { try device.setTorchMode(.on) }
            #expect(error.code == .unsupportedControl)
        }
    }

    @Test("the virtual camera has no controls and says so")
    func virtualCamera() throws {
        let device = VirtualCamera(configuration: .init(clock: ManualClock())).device
        #expect(device.controls.isEmpty)
        #expect(!device.isFocusModeSupported(.locked))
        #expect(!device.isExposureModeSupported(.custom))
        #expect(!device.hasTorch)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        let error = try #require(throws: CaptureError.self) { try device.setFocusMode(.continuousAutoFocus) }
        #expect(error.code == .unsupportedControl)
        #expect(throws: CaptureError.self) { try device.setValue(1, for: .brightness) }
        #expect(throws: CaptureError.self) { try device.value(of: .brightness) }
    }

    @Test("the V4L2 mapping: named IDs, IDs from names for the rest, typed controls left to the typed API")
    func mapping() {
        func control(_ id: UInt32, _ name: String) -> V4L2Control {
            V4L2Control(
                id: id, name: name, kind: .integer, minimum: 0, maximum: 10, step: 1, defaultValue: 5, menuItems: [],
                isReadOnly: false, isInactive: false)
        }
        let map = V4L2ControlMap([
            control(V4L2ControlID.brightness, "Brightness"), control(0x009a_0903, "Exposure, Dynamic Framerate"),
            control(V4L2ControlID.zoomAbsolute, "Zoom, Absolute"), control(V4L2ControlID.gamma, "Gamma"),
        ])
        #expect(map.generic.map(\.control.id.rawValue) == ["brightness", "exposureDynamicFramerate", "gamma"])
        #expect(map.v4l2ID(for: .brightness) == V4L2ControlID.brightness)
        #expect(map.v4l2ID(for: .init(rawValue: "zoomAbsolute")) == nil, "zoom is the typed API's")
        #expect(map.capabilities.maxZoomFactor == 1 + 10.0 / 100, "a zoom range from 0 counts 100 per 1x")
        #expect(map.capabilities.exposureModes.isEmpty)
        #expect(V4L2ControlMap.units(MediaTime(value: 1, timescale: 100), of: control(0, "Exposure")) == 10)
    }
}
