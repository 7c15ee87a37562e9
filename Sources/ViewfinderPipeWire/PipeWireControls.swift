import CPipeWire
import Foundation
import ViewfinderCore
import ViewfinderV4L2

/// The mapping between a PipeWire node's controls (its `SPA_PARAM_PropInfo` params, values in its
/// `SPA_PARAM_Props`) and Viewfinder's neutral controls.
///
/// `SPA_PROP_brightness`, `contrast`, `saturation`, `hue`, `gamma`, `gain` and `sharpness` become
/// the named IDs (``CaptureDevice/Control/ID/brightness`` …), `SPA_PROP_exposure` becomes
/// `"exposure"` (as V4L2's `V4L2_CID_EXPOSURE`, in the node's units); a node's own controls
/// (PipeWire's V4L2 plugin publishes each V4L2 control it has no SPA name for as
/// `SPA_PROP_START_CUSTOM` + the V4L2 ID) get an ID made from their description, as V4L2 controls
/// do ("White Balance Temperature" → `"whiteBalanceTemperature"`, "Backlight Compensation" →
/// `"backlightCompensation"`). PipeWire 0.3's libcamera plugin gives controls libcamera's own IDs
/// and names: "Brightness", "Contrast", "Saturation", "Sharpness", "Gamma" and "AnalogueGain" map
/// to the named IDs, others keep their CamelCase name ("ExposureTime" → `"exposureTime"`). Integer ranges, booleans and menus keep their values; a
/// floating-point range (libcamera's nodes) is listed in thousandths (`-1.0…1.0` → `-1000…1000`).
///
/// Thread safety: a value type built from one listing.
package struct PipeWireControlMap: Sendable {
    /// One control: its neutral description and the node's.
    package struct Entry: Sendable {
        package var control: CaptureDevice.Control
        package var node: vf_pw_control
        /// The value the node's Props showed, in neutral units.
        package var value: Int?
    }

    /// How many neutral units one unit of a floating-point control is.
    package static let floatScale = 1000.0

    package static let named: [UInt32: CaptureDevice.Control.ID] = [
        UInt32(VF_PW_PROP_BRIGHTNESS): .brightness, UInt32(VF_PW_PROP_CONTRAST): .contrast,
        UInt32(VF_PW_PROP_SATURATION): .saturation, UInt32(VF_PW_PROP_HUE): .hue, UInt32(VF_PW_PROP_GAMMA): .gamma,
        UInt32(VF_PW_PROP_GAIN): .gain, UInt32(VF_PW_PROP_SHARPNESS): .sharpness,
        UInt32(VF_PW_PROP_EXPOSURE): .init(rawValue: "exposure"),
    ]

    package let entries: [Entry]

    package init(_ controls: [vf_pw_control] = []) {
        var seen = Set<CaptureDevice.Control.ID>()
        var entries: [Entry] = []
        for node in controls {
            let name = PipeWireCameraBackend.string(node.name)
            var id = Self.neutralID(spaID: node.id, name: name)
            if seen.contains(id) { id = .init(rawValue: id.rawValue + String(node.id, radix: 16)) }
            seen.insert(id)
            let control: CaptureDevice.Control
            switch Int(node.kind) {
            case VF_PW_CONTROL_BOOL:
                control = .init(
                    id: id, name: name, kind: .boolean, minimum: 0, maximum: 1, step: 1,
                    defaultValue: Int(node.default_value))
            case VF_PW_CONTROL_MENU:
                let items = withUnsafeBytes(of: node.menu_values) { values in
                    withUnsafeBytes(of: node.menu_names) { names in
                        (0..<min(Int(node.menu_count), Int(VF_PW_MAX_MENU))).map { index in
                            let value = values.load(fromByteOffset: index * 4, as: Int32.self)
                            let stride = names.count / Int(VF_PW_MAX_MENU)
                            let bytes = names[(index * stride)..<((index + 1) * stride)].prefix { $0 != 0 }
                            return CaptureDevice.Control.MenuItem(
                                value: Int(value), name: String(decoding: bytes, as: UTF8.self))
                        }
                    }
                }
                control = .init(
                    id: id, name: name, kind: .menu, minimum: Int(node.minimum), maximum: Int(node.maximum), step: 1,
                    defaultValue: Int(node.default_value), menuItems: items)
            case VF_PW_CONTROL_FLOAT:
                control = .init(
                    id: id, name: name, kind: .integer, minimum: Self.scaled(node.float_minimum),
                    maximum: Self.scaled(node.float_maximum), step: 1, defaultValue: Self.scaled(node.float_default))
            default:
                control = .init(
                    id: id, name: name, kind: .integer, minimum: Int(node.minimum), maximum: Int(node.maximum),
                    step: max(1, Int(node.step)), defaultValue: Int(node.default_value))
            }
            let value: Int? =
                node.has_value == 0
                ? nil : Int(node.kind) == VF_PW_CONTROL_FLOAT ? Self.scaled(node.float_value) : Int(node.value)
            entries.append(Entry(control: control, node: node, value: value))
        }
        self.entries = entries
    }

    /// The neutral controls.
    package var controls: [CaptureDevice.Control] { entries.map(\.control) }

    /// The entry of neutral control `id`.
    package func entry(_ id: CaptureDevice.Control.ID) -> Entry? { entries.first { $0.control.id == id } }

    /// A floating-point value in neutral units.
    package static func scaled(_ value: Double) -> Int { Int((value * floatScale).rounded()) }

    /// libcamera's names for the named controls, where PipeWire 0.3's libcamera plugin gives a
    /// control libcamera's own ID (below `SPA_PROP_START_Device`) instead of an SPA one.
    package static let libcameraNamed: [String: CaptureDevice.Control.ID] = [
        "Brightness": .brightness, "Contrast": .contrast, "Saturation": .saturation, "Sharpness": .sharpness,
        "Gamma": .gamma, "AnalogueGain": .gain,
    ]

    /// The neutral ID of SPA property `spaID` described as `name`.
    package static func neutralID(spaID: UInt32, name: String) -> CaptureDevice.Control.ID {
        if let id = named[spaID] { return id }
        if spaID < 0x100, let id = libcameraNamed[name] { return id }
        let words = name.split { !$0.isLetter && !$0.isNumber }.map(String.init)
        guard let first = words.first else { return .init(rawValue: "control\(String(spaID, radix: 16))") }
        // One CamelCase word (libcamera's "ExposureTime"): keep its humps.
        if words.count == 1, first.contains(where: \.isLowercase) {
            return .init(rawValue: first.prefix(1).lowercased() + first.dropFirst())
        }
        let rest = words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst().lowercased() }
        return .init(rawValue: first.lowercased() + rest.joined())
    }
}

extension PipeWireConnection {
    /// Node `id`'s controls (empty for a node without any), or `nil` when the node is gone or the
    /// daemon did not answer.
    package func nodeControls(_ id: UInt32, timeoutMilliseconds: Int32 = 2000) -> [vf_pw_control]? {
        guard !isCallerOnLoopThread else { return nil }
        var controls = [vf_pw_control](repeating: vf_pw_control(), count: Int(VF_PW_MAX_CONTROLS))
        let count = vf_pw_node_controls(handle, id, &controls, Int32(controls.count), timeoutMilliseconds)
        guard count >= 0 else { return nil }
        return Array(controls.prefix(Int(count)))
    }

    /// Sets `control` of node `id` to `value` (neutral units) through `pw_node_set_param(Props)`.
    /// Returns 0 or the negative errno.
    package func setNodeControl(_ id: UInt32, control: vf_pw_control, value: Int, timeoutMilliseconds: Int32 = 2000)
        -> Int32
    {
        var control = control
        let floatValue = Double(value) / PipeWireControlMap.floatScale
        return vf_pw_node_set_control(
            handle, id, &control, Int32(clamping: value), floatValue, timeoutMilliseconds)
    }
}
