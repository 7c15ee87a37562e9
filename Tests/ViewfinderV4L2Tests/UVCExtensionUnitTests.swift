import Foundation
import Testing

@testable import ViewfinderCore
@testable import ViewfinderV4L2

/// The parts of extension-unit support that need no camera: descriptors, bit fields, maps.
@Suite("UVC extension units: descriptors, bits and maps")
struct UVCExtensionUnitTests {
    @Test("a GUID round-trips through the descriptors' byte order (first three fields little-endian)")
    func guidByteOrder() {
        let guid = UUID(uuidString: "ffe52d21-8030-4e2c-82d9-f587d00540bd")!
        let bytes = UVCDescriptors.descriptorBytes(of: guid)
        #expect(Array(bytes.prefix(8)) == [0x21, 0x2D, 0xE5, 0xFF, 0x30, 0x80, 0x2C, 0x4E])
        #expect(UVCDescriptors.guid(fromDescriptor: bytes) == guid)
    }

    @Test("extension units are read only from VideoControl interfaces, with their selectors")
    func descriptorsParse() {
        let guid = UUID()
        var bytes: [UInt8] = [9, 0x04, 0, 0, 1, 0x0E, 0x01, 0, 0]
        bytes += [26, 0x24, 0x06, 5]
        bytes += UVCDescriptors.descriptorBytes(of: guid)
        bytes += [2, 0, 2, 0x01, 0x01, 0]
        // A VideoStreaming MJPEG format descriptor has subtype 6 too: not a unit.
        bytes += [9, 0x04, 1, 0, 1, 0x0E, 0x02, 0, 0]
        bytes += [26, 0x24, 0x06, 7]
        bytes += [UInt8](repeating: 0xAA, count: 22)
        // Truncated: the walk stops, keeping what it found.
        bytes += [40, 0x24]
        let units = UVCDescriptors.extensionUnits(in: bytes)
        #expect(units == [UVCExtensionUnitDescriptor(unitID: 5, guid: guid, selectors: [1, 9])])
    }

    @Test("values are read and written as little-endian bit fields, signed ones sign-extended")
    func bitFields() {
        var bytes: [UInt8] = [0, 0, 0, 0]
        UVCControlBits.write(-2, into: &bytes, bitOffset: 8, bitCount: 16)
        #expect(bytes == [0, 0xFE, 0xFF, 0])
        #expect(UVCControlBits.read(bytes, bitOffset: 8, bitCount: 16, signed: true) == -2)
        #expect(UVCControlBits.read(bytes, bitOffset: 8, bitCount: 16, signed: false) == 0xFFFE)
        UVCControlBits.write(5, into: &bytes, bitOffset: 28, bitCount: 3)
        #expect(bytes[3] == 0x50)
        #expect(UVCControlBits.read(bytes, bitOffset: 28, bitCount: 3, signed: false) == 5)
    }

    @Test("a map that cannot be right is refused with what to fix")
    func validation() {
        func problem(_ controls: [CaptureDevice.ExtensionUnit.Control], unitID: Int? = nil) -> String? {
            let unit = CaptureDevice.ExtensionUnit(guid: UUID(), name: "Test", unitID: unitID, controls: controls)
            do {
                try CaptureDevice.registerExtensionUnit(unit)
                CaptureDevice.unregisterExtensionUnit(guid: unit.guid)
                return nil
            } catch {
                #expect(error.code == .invalidArgument)
                return error.message
            }
        }
        let ok = CaptureDevice.ExtensionUnit.Control(
            id: .init(rawValue: "ok"), name: "OK", selector: 1, byteCount: 1, type: .unsignedInteger)
        #expect(problem([ok]) == nil)
        #expect(problem([]).map { $0.contains("no controls") } == true)
        #expect(problem([ok], unitID: 0).map { $0.contains("outside 1…255") } == true)
        #expect(problem([ok, ok]).map { $0.contains("used twice") } == true)
        var menu = ok
        menu.type = .menu
        #expect(problem([menu]).map { $0.contains("needs menu items") } == true)
        var wide = ok
        wide.range = 0...300
        #expect(problem([wide]).map { $0.contains("does not fit 8 unsigned bits") } == true)
        var outside = ok
        outside.size = 1
        outside.bitOffset = 4
        outside.bitCount = 8
        #expect(problem([outside]).map { $0.contains("do not fit its 1 bytes") } == true)
        for unit in CaptureDevice.ExtensionUnit.builtIn { #expect(throws: Never.self) { try unit.validate() } }
    }
}
