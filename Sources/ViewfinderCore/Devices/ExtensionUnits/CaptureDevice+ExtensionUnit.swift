import Foundation
import Synchronization

/// UVC extension units: vendor controls (LEDs, HDR, field of view, privacy shutters) that a USB
/// camera offers beside the standard ones, in blocks the USB Video Class calls extension units,
/// each named by a GUID. The class says nothing about what their controls mean; a map does.
///
/// A ``CaptureDevice/ExtensionUnit`` is such a map: the unit's GUID and, per control, its
/// selector, where its value lies in the control's bytes, its type, name and range. A camera
/// whose USB descriptors name a registered unit lists the map's controls in
/// ``CaptureDevice/controls`` beside the standard ones, as typed ``CaptureDevice/Control``s read
/// with ``CaptureDevice/value(of:)`` and written with ``CaptureDevice/setValue(_:for:)``, which
/// enforce the range. Viewfinder ships the maps in ``CaptureDevice/ExtensionUnit/builtIn``;
/// ``CaptureDevice/registerExtensionUnit(_:)`` adds an app's own. AVFoundation has no
/// counterpart: macOS reaches these controls only through IOKit.
extension CaptureDevice {
    /// A map of one UVC extension unit: which unit (its GUID) and what its controls are.
    ///
    /// ```swift
    /// let unit = CaptureDevice.ExtensionUnit(
    ///     guid: UUID(uuidString: "ffe52d21-8030-4e2c-82d9-f587d00540bd")!, name: "Logitech peripheral",
    ///     controls: [
    ///         .init(id: .ledMode, name: "LED Mode", selector: 9, size: 5, byteOffset: 1, byteCount: 1,
    ///               type: .menu, menuItems: [.init(value: 0, name: "Off"), .init(value: 1, name: "On")])
    ///     ])
    /// try CaptureDevice.registerExtensionUnit(unit)
    /// ```
    ///
    /// Values are read and written through uvcvideo's `UVCIOC_CTRL_QUERY`: `GET_CUR` and
    /// `SET_CUR` of the whole control, the value being the bits the control's map names
    /// (little-endian, as USB sends numbers); a value that shares its control with others is
    /// written by reading the control, changing its bits and writing it back. What the map leaves
    /// out (the size, the range, the step, the default, whether the control can be written) is
    /// asked of the camera (`GET_LEN`, `GET_MIN`, `GET_MAX`, `GET_RES`, `GET_DEF`, `GET_INFO`)
    /// when the device's controls are listed.
    ///
    /// Thread safety: a value type; freely sendable.
    public struct ExtensionUnit: Sendable, Hashable, CustomStringConvertible {
        /// The unit's GUID (`guidExtensionCode` in the camera's descriptors), as tools print it
        /// (`ffe52d21-8030-4e2c-82d9-f587d00540bd`).
        public var guid: UUID
        /// The unit's name, for people ("Logitech peripheral").
        public var name: String
        /// The unit's ID (`bUnitID`) on cameras whose USB descriptors cannot be read; `nil`: found
        /// in the descriptors by ``guid`` (the usual case). A camera whose descriptors can be read
        /// always uses the ID they give.
        public var unitID: Int?
        /// The unit's controls.
        public var controls: [Control]

        /// A map of the unit `guid`.
        public init(guid: UUID, name: String, unitID: Int? = nil, controls: [Control]) {
            self.guid = guid
            self.name = name
            self.unitID = unitID
            self.controls = controls
        }

        /// What a control's bits mean.
        public enum ValueType: Sendable, Hashable {
            /// An unsigned number.
            case unsignedInteger
            /// A two's-complement signed number.
            case signedInteger
            /// 0 or 1 (any value other than 0 reads as 1).
            case boolean
            /// One of the control's ``Control/menuItems``, by value.
            case menu
        }

        /// One control of an extension unit: a value in the bytes of one of the unit's controls
        /// (a UVC control may hold several values, as Logitech's LED control holds a mode and a
        /// blink frequency).
        ///
        /// Thread safety: a value type; freely sendable.
        public struct Control: Sendable, Hashable {
            /// The ID it has among the device's ``CaptureDevice/controls``.
            public var id: CaptureDevice.Control.ID
            /// Its name, for people.
            public var name: String
            /// The UVC control selector (1…255).
            public var selector: Int
            /// The size of the whole UVC control in bytes (`GET_LEN`); `nil`: ask the camera. A
            /// camera whose control has another size does not list the control (the map is not
            /// for that camera).
            public var size: Int?
            /// Where the value starts in the control's bytes, in bits from bit 0 of byte 0.
            public var bitOffset: Int
            /// How many bits the value has (1…32).
            public var bitCount: Int
            /// What the bits mean.
            public var type: ValueType
            /// The values it takes; `nil`: the camera's `GET_MIN`…`GET_MAX` (a menu: its items).
            public var range: ClosedRange<Int>?
            /// The step between values; `nil`: the camera's `GET_RES` (1 when it reports 0).
            public var step: Int?
            /// The value after a reset; `nil`: the camera's `GET_DEF`.
            public var defaultValue: Int?
            /// The choices of a ``ValueType/menu`` control.
            public var menuItems: [CaptureDevice.Control.MenuItem]
            /// Whether the camera reports the value it holds (`GET_CUR`). `false` for controls
            /// whose `GET_CUR` answers something else: their value is the last one set through
            /// Viewfinder since the camera connected, else the default.
            public var reportsCurrentValue: Bool

            /// A control at bits `bitOffset ..< bitOffset + bitCount` of selector `selector`.
            public init(
                id: CaptureDevice.Control.ID, name: String, selector: Int, size: Int? = nil, bitOffset: Int = 0,
                bitCount: Int, type: ValueType, range: ClosedRange<Int>? = nil, step: Int? = nil,
                defaultValue: Int? = nil, menuItems: [CaptureDevice.Control.MenuItem] = [],
                reportsCurrentValue: Bool = true
            ) {
                self.id = id
                self.name = name
                self.selector = selector
                self.size = size
                self.bitOffset = bitOffset
                self.bitCount = bitCount
                self.type = type
                self.range = range
                self.step = step
                self.defaultValue = defaultValue
                self.menuItems = menuItems
                self.reportsCurrentValue = reportsCurrentValue
            }

            /// A control of whole bytes: `byteCount` bytes from byte `byteOffset` of selector
            /// `selector`.
            public init(
                id: CaptureDevice.Control.ID, name: String, selector: Int, size: Int? = nil, byteOffset: Int = 0,
                byteCount: Int, type: ValueType, range: ClosedRange<Int>? = nil, step: Int? = nil,
                defaultValue: Int? = nil, menuItems: [CaptureDevice.Control.MenuItem] = [],
                reportsCurrentValue: Bool = true
            ) {
                self.init(
                    id: id, name: name, selector: selector, size: size, bitOffset: byteOffset * 8,
                    bitCount: byteCount * 8, type: type, range: range, step: step, defaultValue: defaultValue,
                    menuItems: menuItems, reportsCurrentValue: reportsCurrentValue)
            }
        }

        public var description: String { "\(name) {\(guid.uuidString.lowercased())}" }

        /// Throws ``CaptureError/Code/invalidArgument`` naming what is wrong with the map.
        public func validate() throws(CaptureError) {
            func fail(_ what: String) -> CaptureError {
                CaptureError(.invalidArgument, "the extension unit map '\(name)' is not valid: \(what)")
            }
            if let unitID, !(1...255).contains(unitID) {
                throw fail("unit ID \(unitID) is outside 1…255 (bUnitID is one byte, 0 is not a unit)")
            }
            guard !controls.isEmpty else { throw fail("it has no controls; add at least one") }
            var seen = Set<CaptureDevice.Control.ID>()
            for control in controls {
                let label = "control '\(control.name)' [\(control.id)]"
                guard seen.insert(control.id).inserted else {
                    throw fail("\(label): the ID is used twice; give each control its own")
                }
                guard (1...255).contains(control.selector) else {
                    throw fail("\(label): selector \(control.selector) is outside 1…255")
                }
                guard (1...32).contains(control.bitCount), control.bitOffset >= 0 else {
                    throw fail(
                        "\(label): \(control.bitCount) bits at bit \(control.bitOffset); a value has 1…32 bits at bit 0 or later"
                    )
                }
                if let size = control.size {
                    guard (1...4096).contains(size) else {
                        throw fail("\(label): size \(size) is outside 1…4096 bytes")
                    }
                    guard control.bitOffset + control.bitCount <= size * 8 else {
                        throw fail(
                            "\(label): bits \(control.bitOffset)..<\(control.bitOffset + control.bitCount) do not fit its \(size) bytes"
                        )
                    }
                }
                if control.type == .menu, control.menuItems.isEmpty {
                    throw fail("\(label): a menu control needs menu items")
                }
                if let step = control.step, step < 1 { throw fail("\(label): step \(step) must be 1 or more") }
                if let range = control.range, let defaultValue = control.defaultValue, !range.contains(defaultValue) {
                    throw fail("\(label): the default \(defaultValue) is outside its range \(range)")
                }
                if let range = control.range, !Self.representable(range, control) {
                    throw fail(
                        "\(label): the range \(range.lowerBound)…\(range.upperBound) does not fit \(control.bitCount) \(control.type == .signedInteger ? "signed" : "unsigned") bits"
                    )
                }
            }
        }

        private static func representable(_ range: ClosedRange<Int>, _ control: Control) -> Bool {
            let bits = control.bitCount
            if control.type == .signedInteger {
                let low = -(1 << (bits - 1))
                let high = (1 << (bits - 1)) - 1
                return range.lowerBound >= low && range.upperBound <= high
            }
            return range.lowerBound >= 0 && range.upperBound <= (1 << bits) - 1
        }
    }
}

extension CaptureDevice.Control.ID {
    /// The mode of a camera's LED (an extension-unit control: off, on, blinking, automatic).
    public static let ledMode = Self(rawValue: "ledMode")
    /// The blink frequency of a camera's LED (an extension-unit control, in the unit's steps).
    public static let ledFrequency = Self(rawValue: "ledFrequency")
    /// A camera's high-dynamic-range mode (an extension-unit control).
    public static let highDynamicRange = Self(rawValue: "highDynamicRange")
}

/// The extension-unit maps of the process: the built-in ones and those the app registered.
/// Devices read ``maps`` when they list their controls and list again when ``generation`` grew.
///
/// Thread safety: all members may be used from any thread.
package enum ExtensionUnitRegistry {
    private struct State {
        var maps: [CaptureDevice.ExtensionUnit] = CaptureDevice.ExtensionUnit.builtIn
        var generation = 0
    }
    private static let state = Mutex(State())

    /// The maps now: the app's (registered last first) before the built-in ones.
    package static var maps: [CaptureDevice.ExtensionUnit] { state.withLock { $0.maps } }

    /// Grows each time a map is registered or removed.
    package static var generation: Int { state.withLock { $0.generation } }

    package static func register(_ unit: CaptureDevice.ExtensionUnit) {
        state.withLock { state in
            state.maps.removeAll { $0.guid == unit.guid }
            state.maps.insert(unit, at: 0)
            state.generation += 1
        }
    }

    @discardableResult
    package static func unregister(guid: UUID) -> Bool {
        state.withLock { state in
            let before = state.maps.count
            state.maps.removeAll { $0.guid == guid }
            guard state.maps.count != before else { return false }
            state.generation += 1
            return true
        }
    }
}

extension CaptureDevice {
    /// The extension-unit maps cameras are read with now: those the app registered (the last
    /// first), then the built-in ones (``ExtensionUnit/builtIn``) it did not replace.
    public static var extensionUnits: [ExtensionUnit] { ExtensionUnitRegistry.maps }

    /// Adds `unit`'s map, replacing any map of the same GUID (a built-in one too): cameras that
    /// have the unit list its controls from their next listing of ``controls`` on. Throws
    /// ``CaptureError/Code/invalidArgument`` for a map that cannot be right (see
    /// ``ExtensionUnit/validate()``), saying what to fix.
    public static func registerExtensionUnit(_ unit: ExtensionUnit) throws(CaptureError) {
        try unit.validate()
        ExtensionUnitRegistry.register(unit)
    }

    /// Removes the map of the unit `guid` (a built-in one too); returns whether there was one.
    @discardableResult
    public static func unregisterExtensionUnit(guid: UUID) -> Bool {
        ExtensionUnitRegistry.unregister(guid: guid)
    }
}
