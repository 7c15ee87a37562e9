import CV4L2
import Foundation
import Testing

@testable import ViewfinderCore
@testable import ViewfinderTestSupport
@testable import ViewfinderV4L2

#if canImport(Glibc)
    import Glibc
#endif

/// UVC extension units over the production V4L2 path: the fake-camera plugin answers
/// `UVCIOC_CTRL_QUERY` from its device file as uvcvideo does, and a test sysfs holds the camera's
/// USB descriptors, so the unit is found by its GUID as on a real camera.
@Suite(
    "UVC extension units with the fake-camera plugin", .serialized,
    .enabled(if: FakeCameraPlugin.isInstalled, FakeCameraPlugin.skipReason))
struct ExtensionUnitTests {
    /// A camera's descriptors: a VideoControl interface with the extension unit `guid` at
    /// `unitID` (its `bmControls` naming `selectors`), then a VideoStreaming interface whose
    /// Motion-JPEG format descriptor has the same subtype (6) as an extension unit.
    static func descriptors(unitID: UInt8, guid: UUID, selectors: [Int]) -> [UInt8] {
        var bytes: [UInt8] = [18, 0x01, 0x00, 0x02, 0xEF, 0x02, 0x01, 64, 0x6D, 0x04, 0x2D, 0x08, 0, 0, 0, 0, 0, 1]
        bytes += [9, 0x02, 0, 0, 2, 1, 0, 0x80, 250]  // configuration
        bytes += [9, 0x04, 0, 0, 1, 0x0E, 0x01, 0x00, 0]  // interface 0: VideoControl
        bytes += [13, 0x24, 0x01, 0x00, 0x01, 0, 0, 0x80, 0x8D, 0x5B, 0x00, 1, 1]  // VC header
        var bitmap: [UInt8] = [0, 0, 0]
        for selector in selectors { bitmap[(selector - 1) / 8] |= 1 << ((selector - 1) % 8) }
        var unit: [UInt8] = [0, 0x24, 0x06, unitID] + UVCDescriptors.descriptorBytes(of: guid)
        unit += [UInt8(selectors.count), 1, 3, UInt8(bitmap.count)] + bitmap + [0]
        unit[0] = UInt8(unit.count)
        bytes += unit
        bytes += [9, 0x04, 1, 0, 1, 0x0E, 0x02, 0x00, 0]  // interface 1: VideoStreaming
        // VS_FORMAT_MJPEG: subtype 6 too, with bytes that would read as unit 7 of another GUID.
        bytes += [11, 0x24, 0x06, 7, 1, 0, 1, 0, 0, 0, 0]
        return bytes
    }

    /// The control's bytes as the camera holds them now (`GET_CUR` through libv4l2).
    static func rawBytes(_ path: String, unit: Int, selector: Int, size: Int) throws -> [UInt8] {
        let interface = LibV4L2Interface()
        let fd = try interface.open(path, flags: O_RDWR | O_NONBLOCK)
        defer { interface.close(fd) }
        return try UVCExtensionQuery.get(
            VF_UVC_GET_CUR, unit: unit, selector: selector, size: size, fd: fd, interface: interface)
    }

    static func set(_ value: Int, _ id: CaptureDevice.Control.ID, on device: CaptureDevice) throws(CaptureError) {
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setValue(value, for: id)
    }

    @Test("Logitech's LED unit, found by its GUID in the descriptors, is listed, set and read back through the ioctl")
    func logitechLEDFromDescriptors() throws {
        let sysfs = FileManager.default.temporaryDirectory.appendingPathComponent("vf-sysfs-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        let guid = CaptureDevice.ExtensionUnit.logitechPeripheral.guid
        try FakeCameraRig.makeSysfs(in: sysfs, descriptors: Self.descriptors(unitID: 6, guid: guid, selectors: [1, 9]))
        let rig = try FakeCameraRig(sysfsRoot: sysfs)
        var camera = FakeCameraFile()
        // Selector 9, 5 bytes: byte 1 the mode (0…3), byte 3 the blink frequency (0…20).
        camera.extensionControls = [
            .init(
                unit: 6, selector: 9, minimum: "0000000000", maximum: "0003001400", resolution: "0001000100",
                defaultValue: "0003000000", current: "0003000000")
        ]
        let path = try rig.plug(camera)
        let device = try rig.device(camera)

        let mode = try #require(device.controls.first { $0.id == .ledMode })
        #expect(mode.kind == .menu)
        #expect(mode.menuItems.map(\.value) == [0, 1, 2, 3])
        #expect(mode.defaultValue == 3)
        let frequency = try #require(device.control(.ledFrequency))
        #expect(frequency.kind == .integer)
        #expect((frequency.minimum, frequency.maximum, frequency.step, frequency.defaultValue) == (0, 20, 1, 0))
        #expect(device.controls.contains { $0.id == .brightness })  // beside the driver's own

        try Self.set(1, .ledMode, on: device)
        #expect(try device.value(of: .ledMode) == 1)
        #expect(try Self.rawBytes(path, unit: 6, selector: 9, size: 5) == [0, 1, 0, 0, 0])
        // The frequency shares the control: the mode set before is kept.
        try Self.set(10, .ledFrequency, on: device)
        #expect(try device.value(of: .ledFrequency) == 10)
        #expect(try Self.rawBytes(path, unit: 6, selector: 9, size: 5) == [0, 1, 0, 10, 0])

        // Out of range: a typed error naming the range, and nothing reaches the camera.
        let tooFast = #expect(throws: CaptureError.self) { try Self.set(21, .ledFrequency, on: device) }
        #expect(tooFast?.code == .invalidArgument)
        #expect(tooFast?.message.contains("0…20") == true)
        let noSuchMode = #expect(throws: CaptureError.self) { try Self.set(7, .ledMode, on: device) }
        #expect(noSuchMode?.code == .invalidArgument)
        #expect(noSuchMode?.message.contains("3 (Auto)") == true)
        #expect(try Self.rawBytes(path, unit: 6, selector: 9, size: 5) == [0, 1, 0, 10, 0])
    }

    @Test("an app's own map with a unit ID works without descriptors; the camera's own range refusal is reported")
    func appMapWithUnitID() throws {
        let guid = UUID()
        let unit = CaptureDevice.ExtensionUnit(
            guid: guid, name: "Test pan speed", unitID: 3,
            controls: [
                // Range, step and default from the camera (GET_MIN, GET_MAX, GET_RES, GET_DEF).
                .init(
                    id: .init(rawValue: "panSpeed"), name: "Pan Speed", selector: 2, size: 2, byteCount: 2,
                    type: .unsignedInteger),
                // A map that claims more than the camera takes.
                .init(
                    id: .init(rawValue: "tiltSpeed"), name: "Tilt Speed", selector: 4, byteCount: 2,
                    type: .unsignedInteger, range: 0...2000),
            ])
        try CaptureDevice.registerExtensionUnit(unit)
        defer { CaptureDevice.unregisterExtensionUnit(guid: guid) }
        #expect(CaptureDevice.extensionUnits.first == unit)

        let rig = try FakeCameraRig()
        var camera = FakeCameraFile()
        camera.extensionControls = [
            .init(
                unit: 3, selector: 2, check: "le", minimum: "0000", maximum: "e803", resolution: "0a00",
                defaultValue: "6400", current: "6400"),
            .init(
                unit: 3, selector: 4, check: "le", minimum: "0000", maximum: "e803", resolution: "0100",
                defaultValue: "0000", current: "0000"),
        ]
        let path = try rig.plug(camera)
        let device = try rig.device(camera)

        let pan = try #require(device.controls.first { $0.id.rawValue == "panSpeed" })
        #expect((pan.minimum, pan.maximum, pan.step, pan.defaultValue) == (0, 1000, 10, 100))
        #expect(try device.value(of: pan.id) == 100)
        try Self.set(500, pan.id, on: device)
        #expect(try device.value(of: pan.id) == 500)
        #expect(try Self.rawBytes(path, unit: 3, selector: 2, size: 2) == [0xF4, 0x01])
        let offStep = #expect(throws: CaptureError.self) { try Self.set(505, pan.id, on: device) }
        #expect(offStep?.code == .invalidArgument)
        #expect(offStep?.message.contains("0…1000 in steps of 10") == true)

        // The map's range passes 1500; the camera refuses it (ERANGE, as uvcvideo reports a stall).
        let tilt = try #require(device.control(.init(rawValue: "tiltSpeed")))
        #expect(tilt.maximum == 2000)
        let refused = #expect(throws: CaptureError.self) { try Self.set(1500, tilt.id, on: device) }
        #expect(refused?.code == .invalidArgument)
        #expect(refused?.errno == ERANGE)
        #expect(try Self.rawBytes(path, unit: 3, selector: 4, size: 2) == [0, 0])

        // Without the map the camera lists no such control.
        CaptureDevice.unregisterExtensionUnit(guid: guid)
        #expect(!device.controls.contains { $0.id == pan.id })
    }

    @Test("an extension-unit value is kept in a camera profile and put back after a replug")
    func keptInProfiles() throws {
        let home = try TemporaryConfigHome()
        let sysfs = FileManager.default.temporaryDirectory.appendingPathComponent("vf-sysfs-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        let guid = CaptureDevice.ExtensionUnit.logitechPeripheral.guid
        try FakeCameraRig.makeSysfs(in: sysfs, descriptors: Self.descriptors(unitID: 6, guid: guid, selectors: [9]))
        let rig = try FakeCameraRig(sysfsRoot: sysfs)
        var camera = FakeCameraFile()
        camera.extensionControls = [
            .init(
                unit: 6, selector: 9, minimum: "0000000000", maximum: "0003001400", resolution: "0001000100",
                defaultValue: "0003000000", current: "0003000000")
        ]
        let path = try rig.plug(camera)
        let device = try rig.device(camera)
        device.profileStore = home.store
        try Self.set(0, .ledMode, on: device)
        try device.saveProfile()

        try rig.unplug()
        #expect(rig.wait { !device.isConnected })
        try rig.plug(camera)  // a new device file: the LED is back to automatic
        #expect(rig.wait { device.isConnected })
        #expect(try device.value(of: .ledMode) == 3)
        #expect(try device.applyProfile().isEmpty)
        #expect(try device.value(of: .ledMode) == 0)
        #expect(try Self.rawBytes(path, unit: 6, selector: 9, size: 5) == [0, 0, 0, 0, 0])
    }

    @Test("a map whose size the camera does not have is not listed; a wrong unit ID lists nothing")
    func mismatchedMapsAreLeftOut() throws {
        let guid = UUID()
        try CaptureDevice.registerExtensionUnit(
            .init(
                guid: guid, name: "Wrong size", unitID: 3,
                controls: [
                    .init(
                        id: .init(rawValue: "wrongSize"), name: "Wrong", selector: 2, size: 4, byteCount: 1,
                        type: .boolean)
                ]))
        defer { CaptureDevice.unregisterExtensionUnit(guid: guid) }
        let other = UUID()
        try CaptureDevice.registerExtensionUnit(
            .init(
                guid: other, name: "Wrong unit", unitID: 9,
                controls: [
                    .init(id: .init(rawValue: "wrongUnit"), name: "Wrong", selector: 2, byteCount: 1, type: .boolean)
                ]))
        defer { CaptureDevice.unregisterExtensionUnit(guid: other) }
        let rig = try FakeCameraRig()
        var camera = FakeCameraFile()
        camera.extensionControls = [
            .init(
                unit: 3, selector: 2, minimum: "0000", maximum: "ffff", resolution: "0100", defaultValue: "0000",
                current: "0000")
        ]
        try rig.plug(camera)
        let ids = try rig.device(camera).controls.map(\.id.rawValue)
        #expect(!ids.contains("wrongSize"))
        #expect(!ids.contains("wrongUnit"))
        #expect(ids.contains("brightness"))
    }
}
