import CV4L2
import Foundation
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// One extension unit a camera's USB descriptors declare (UVC 1.5, 3.7.2.7).
///
/// Thread safety: a value type.
package struct UVCExtensionUnitDescriptor: Sendable, Hashable {
    /// `bUnitID`: what `UVCIOC_CTRL_QUERY` names the unit by.
    package var unitID: Int
    /// `guidExtensionCode`.
    package var guid: UUID
    /// The selectors the unit has (`bmControls`: bit n − 1 set for selector n).
    package var selectors: Set<Int>

    package init(unitID: Int, guid: UUID, selectors: Set<Int>) {
        self.unitID = unitID
        self.guid = guid
        self.selectors = selectors
    }
}

/// Reads extension units out of a USB device's descriptors (sysfs `descriptors`: the device
/// descriptor, then each configuration with its interfaces and their class-specific descriptors).
///
/// Thread safety: a stateless namespace.
package enum UVCDescriptors {
    /// The extension units of every VideoControl interface (class 0x0E, subclass 0x01) in `bytes`;
    /// a truncated or malformed descriptor ends the walk (what came before it is kept).
    package static func extensionUnits(in bytes: [UInt8]) -> [UVCExtensionUnitDescriptor] {
        var units: [UVCExtensionUnitDescriptor] = []
        var inVideoControl = false
        var at = 0
        while at + 2 <= bytes.count {
            let length = Int(bytes[at])
            guard length >= 2, at + length <= bytes.count else { break }
            let type = bytes[at + 1]
            if type == 0x04, length >= 9 {  // INTERFACE: which class the descriptors after it belong to
                inVideoControl = bytes[at + 5] == 0x0E && bytes[at + 6] == 0x01
            } else if type == 0x24, inVideoControl, length >= 24, bytes[at + 2] == 0x06 {
                // CS_INTERFACE, VC_EXTENSION_UNIT
                let d = bytes[at..<(at + length)]
                let unitID = Int(d[at + 3])
                let pins = Int(d[at + 21])
                let sizeAt = at + 22 + pins
                var selectors = Set<Int>()
                if sizeAt < at + length {
                    let size = Int(d[sizeAt])
                    for index in 0..<size where sizeAt + 1 + index < at + length {
                        let byte = d[sizeAt + 1 + index]
                        for bit in 0..<8 where byte & (1 << bit) != 0 { selectors.insert(index * 8 + bit + 1) }
                    }
                }
                units.append(
                    UVCExtensionUnitDescriptor(
                        unitID: unitID, guid: guid(fromDescriptor: Array(d[(at + 4)..<(at + 20)])), selectors: selectors
                    ))
            }
            at += length
        }
        return units
    }

    /// A GUID as USB descriptors store it: its first three fields little-endian (Microsoft's
    /// layout), the last eight bytes in order.
    package static func guid(fromDescriptor raw: [UInt8]) -> UUID {
        let b = raw.count == 16 ? raw : [UInt8](repeating: 0, count: 16)
        return UUID(
            uuid: (b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }

    /// The 16 bytes of `guid` as USB descriptors store it (see ``guid(fromDescriptor:)``).
    package static func descriptorBytes(of guid: UUID) -> [UInt8] {
        let u = guid.uuid
        return [u.3, u.2, u.1, u.0, u.5, u.4, u.7, u.6, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15]
    }
}

/// A value's bits in a UVC control's bytes (little-endian, as USB sends numbers).
///
/// Thread safety: a stateless namespace.
package enum UVCControlBits {
    /// The `bitCount` bits at `bitOffset` of `bytes`, sign-extended when `signed`.
    package static func read(_ bytes: [UInt8], bitOffset: Int, bitCount: Int, signed: Bool) -> Int {
        var value: UInt64 = 0
        for bit in 0..<bitCount {
            let position = bitOffset + bit
            guard position / 8 < bytes.count else { break }
            if bytes[position / 8] & (1 << (position % 8)) != 0 { value |= 1 << UInt64(bit) }
        }
        if signed, bitCount < 64, value & (1 << UInt64(bitCount - 1)) != 0 {
            return Int(Int64(bitPattern: value | ~((1 << UInt64(bitCount)) - 1)))
        }
        return Int(truncatingIfNeeded: value)
    }

    /// `bytes` with the `bitCount` bits at `bitOffset` replaced by `value`'s low bits.
    package static func write(_ value: Int, into bytes: inout [UInt8], bitOffset: Int, bitCount: Int) {
        let pattern = UInt64(bitPattern: Int64(value))
        for bit in 0..<bitCount {
            let position = bitOffset + bit
            guard position / 8 < bytes.count else { break }
            let mask = UInt8(1 << (position % 8))
            if pattern & (1 << UInt64(bit)) != 0 {
                bytes[position / 8] |= mask
            } else {
                bytes[position / 8] &= ~mask
            }
        }
    }
}

/// uvcvideo's `UVCIOC_CTRL_QUERY` on an open descriptor: one UVC request to one extension-unit
/// control. uvcvideo answers `ENOENT` for a unit or selector the camera does not have, `ENOBUFS`
/// for a size other than the control's, `EBADRQC` for a request the control does not support, and
/// the camera's refusal (`ERANGE` out of range, `EPIPE` a stall) otherwise.
///
/// Thread safety: a stateless namespace.
package enum UVCExtensionQuery {
    /// Performs `request` (`VF_UVC_GET_CUR`, …) with `data` (its size is the request's size).
    package static func perform(
        _ request: UInt8, unit: Int, selector: Int, data: inout [UInt8], fd: Int32, interface: any V4L2Interface
    ) throws(V4L2Errno) {
        let result: Result<Void, V4L2Errno> = data.withUnsafeMutableBufferPointer { buffer in
            var query = uvc_xu_control_query()
            query.unit = UInt8(truncatingIfNeeded: unit)
            query.selector = UInt8(truncatingIfNeeded: selector)
            query.query = request
            query.size = UInt16(truncatingIfNeeded: buffer.count)
            query.data = buffer.baseAddress
            do throws(V4L2Errno) {
                try interface.ioctl(fd, VF_UVCIOC_CTRL_QUERY, &query)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// The control's bytes for a `GET_*` request of `size` bytes.
    package static func get(
        _ request: UInt8, unit: Int, selector: Int, size: Int, fd: Int32, interface: any V4L2Interface
    ) throws(V4L2Errno) -> [UInt8] {
        var data = [UInt8](repeating: 0, count: size)
        try perform(request, unit: unit, selector: selector, data: &data, fd: fd, interface: interface)
        return data
    }

    /// The control's size in bytes (`GET_LEN`).
    package static func length(unit: Int, selector: Int, fd: Int32, interface: any V4L2Interface) throws(V4L2Errno)
        -> Int
    {
        let data = try get(VF_UVC_GET_LEN, unit: unit, selector: selector, size: 2, fd: fd, interface: interface)
        return Int(data[0]) | Int(data[1]) << 8
    }
}

/// One extension-unit control a camera has, resolved from a map and the camera's answers.
///
/// Thread safety: a value type.
package struct UVCExtensionControl: Sendable, Hashable {
    /// The control as ``CaptureDevice/controls`` lists it (range, step and default resolved).
    package var control: CaptureDevice.Control
    /// The unit (`bUnitID`) and selector it is read and written through.
    package var unitID: Int
    package var selector: Int
    /// The UVC control's size in bytes.
    package var size: Int
    package var bitOffset: Int
    package var bitCount: Int
    package var isSigned: Bool
    /// Whether `GET_CUR` reports the value (else the last value set is reported).
    package var readsCurrentValue: Bool

    /// The unit's name and GUID, for messages.
    package var unitName: String

    /// The value in the control's bytes.
    package func value(in bytes: [UInt8]) -> Int {
        let raw = UVCControlBits.read(bytes, bitOffset: bitOffset, bitCount: bitCount, signed: isSigned)
        return control.kind == .boolean ? (raw == 0 ? 0 : 1) : raw
    }

    /// The controls of `maps` that the camera on `fd` has. The unit ID comes from `units` (the
    /// camera's descriptors) when they could be read, else from the map; a control is listed only
    /// when the camera answers `GET_LEN` for it with the map's size (when the map gives one), and
    /// not when its ID is in `taken` (the driver's own controls come first).
    package static func resolve(
        maps: [CaptureDevice.ExtensionUnit], units: [UVCExtensionUnitDescriptor]?, taken: Set<CaptureDevice.Control.ID>,
        fd: Int32, interface: any V4L2Interface
    ) -> [UVCExtensionControl] {
        var result: [UVCExtensionControl] = []
        var ids = taken
        for map in maps {
            let unitID: Int
            var selectors: Set<Int>?
            if let units {
                guard let unit = units.first(where: { $0.guid == map.guid }) else { continue }
                unitID = unit.unitID
                selectors = unit.selectors
            } else if let mapped = map.unitID {
                unitID = mapped
            } else {
                continue
            }
            for entry in map.controls where !ids.contains(entry.id) {
                if let selectors, !selectors.isEmpty, !selectors.contains(entry.selector) { continue }
                guard
                    let resolved = resolve(
                        entry, unit: map, unitID: unitID, fd: fd, interface: interface)
                else { continue }
                ids.insert(entry.id)
                result.append(resolved)
            }
        }
        return result
    }

    private static func resolve(
        _ entry: CaptureDevice.ExtensionUnit.Control, unit map: CaptureDevice.ExtensionUnit, unitID: Int, fd: Int32,
        interface: any V4L2Interface
    ) -> UVCExtensionControl? {
        guard
            let size = try? UVCExtensionQuery.length(
                unit: unitID, selector: entry.selector, fd: fd, interface: interface), size > 0,
            entry.size == nil || entry.size == size, entry.bitOffset + entry.bitCount <= size * 8
        else { return nil }
        // GET_INFO: bit 0 the control can be read, bit 1 written (UVC 1.5, 4.1.2, Table 4-3).
        let info =
            (try? UVCExtensionQuery.get(
                VF_UVC_GET_INFO, unit: unitID, selector: entry.selector, size: 1, fd: fd, interface: interface))?[0]
            ?? 0x03
        let signed = entry.type == .signedInteger
        func ask(_ request: UInt8) -> Int? {
            guard
                let bytes = try? UVCExtensionQuery.get(
                    request, unit: unitID, selector: entry.selector, size: size, fd: fd, interface: interface)
            else { return nil }
            return UVCControlBits.read(bytes, bitOffset: entry.bitOffset, bitCount: entry.bitCount, signed: signed)
        }
        let kind: CaptureDevice.Control.Kind
        var minimum: Int
        var maximum: Int
        switch entry.type {
        case .menu:
            kind = .menu
            let values = entry.menuItems.map(\.value)
            minimum = entry.range?.lowerBound ?? values.min() ?? 0
            maximum = entry.range?.upperBound ?? values.max() ?? 0
        case .boolean:
            kind = .boolean
            minimum = 0
            maximum = 1
        case .signedInteger, .unsignedInteger:
            kind = .integer
            let fullLow = signed ? -(1 << (entry.bitCount - 1)) : 0
            let fullHigh = signed ? (1 << (entry.bitCount - 1)) - 1 : (1 << entry.bitCount) - 1
            minimum = entry.range?.lowerBound ?? ask(VF_UVC_GET_MIN) ?? fullLow
            maximum = entry.range?.upperBound ?? ask(VF_UVC_GET_MAX) ?? fullHigh
            if minimum > maximum { (minimum, maximum) = (fullLow, fullHigh) }
        }
        let step = kind == .integer ? max(1, entry.step ?? ask(VF_UVC_GET_RES) ?? 1) : 1
        var defaultValue = entry.defaultValue ?? ask(VF_UVC_GET_DEF) ?? minimum
        if kind == .boolean { defaultValue = defaultValue == 0 ? 0 : 1 }
        let control = CaptureDevice.Control(
            id: entry.id, name: entry.name, kind: kind, minimum: minimum, maximum: maximum, step: step,
            defaultValue: defaultValue, menuItems: kind == .menu ? entry.menuItems : [],
            isReadOnly: info & 0x02 == 0)
        return UVCExtensionControl(
            control: control, unitID: unitID, selector: entry.selector, size: size, bitOffset: entry.bitOffset,
            bitCount: entry.bitCount, isSigned: signed,
            readsCurrentValue: entry.reportsCurrentValue && info & 0x01 != 0,
            unitName: map.description)
    }
}
