import CV4L2
import ViewfinderCore

/// One V4L2 control as `VIDIOC_QUERYCTRL` / `VIDIOC_QUERYMENU` describe it: its `V4L2_CID_*`
/// ID, range, menu (gaps left out) and flags, in the driver's units.
///
/// Thread safety: a value type.
package struct V4L2Control: Sendable, Hashable {
    /// The V4L2 control ID.
    package var id: UInt32
    /// The driver's name for it ("Brightness").
    package var name: String
    /// What values it takes.
    package var kind: CaptureDevice.Control.Kind
    /// The smallest value.
    package var minimum: Int
    /// The largest value.
    package var maximum: Int
    /// The step between values.
    package var step: Int
    /// The value after a reset.
    package var defaultValue: Int
    /// The choices of a menu control the driver accepts.
    package var menuItems: [CaptureDevice.Control.MenuItem]
    /// Whether the value can only be read.
    package var isReadOnly: Bool
    /// Whether changing it has no effect now.
    package var isInactive: Bool

    /// Whether the menu offers `value`.
    package func offers(_ value: Int32) -> Bool { menuItems.contains { $0.value == Int(value) } }
}

/// The V4L2 control IDs (`V4L2_CID_*`) Viewfinder maps to its neutral controls.
///
/// Thread safety: a stateless namespace.
package enum V4L2ControlID {
    package static let brightness = VF_V4L2_CID_BRIGHTNESS
    package static let contrast = VF_V4L2_CID_CONTRAST
    package static let saturation = VF_V4L2_CID_SATURATION
    package static let hue = VF_V4L2_CID_HUE
    package static let gamma = VF_V4L2_CID_GAMMA
    package static let gain = VF_V4L2_CID_GAIN
    package static let sharpness = VF_V4L2_CID_SHARPNESS
    package static let backlightCompensation = VF_V4L2_CID_BACKLIGHT_COMPENSATION
    /// Automatic white balance, 0 or 1.
    package static let autoWhiteBalance = VF_V4L2_CID_AUTO_WHITE_BALANCE
    /// White-balance temperature in kelvin.
    package static let whiteBalanceTemperature = VF_V4L2_CID_WHITE_BALANCE_TEMPERATURE
    /// Power-line frequency menu: 0 disabled, 1 50 Hz, 2 60 Hz, 3 auto.
    package static let powerLineFrequency = VF_V4L2_CID_POWER_LINE_FREQUENCY
    /// Exposure mode menu: `V4L2_EXPOSURE_AUTO`, `_MANUAL`, `_SHUTTER_PRIORITY`, `_APERTURE_PRIORITY`.
    package static let exposureAuto = VF_V4L2_CID_EXPOSURE_AUTO
    /// Exposure time in 100 µs units.
    package static let exposureAbsolute = VF_V4L2_CID_EXPOSURE_ABSOLUTE
    /// Whether auto exposure may lower the frame rate ("Exposure, Dynamic Framerate"), 0 or 1.
    package static let exposureAutoPriority = VF_V4L2_CID_EXPOSURE_AUTO_PRIORITY
    /// Continuous autofocus, 0 or 1.
    package static let focusAuto = VF_V4L2_CID_FOCUS_AUTO
    /// Focus position in the driver's units; larger is nearer.
    package static let focusAbsolute = VF_V4L2_CID_FOCUS_ABSOLUTE
    /// Zoom in the driver's units (UVC: 100 per 1× from a minimum of 100).
    package static let zoomAbsolute = VF_V4L2_CID_ZOOM_ABSOLUTE
    /// LED mode menu: 0 off, 1 flash, 2 torch.
    package static let flashLEDMode = VF_V4L2_CID_FLASH_LED_MODE

    /// The generic controls with a named neutral ID.
    package static let named: [UInt32: CaptureDevice.Control.ID] = [
        brightness: .brightness, contrast: .contrast, saturation: .saturation, hue: .hue, gamma: .gamma,
        gain: .gain, sharpness: .sharpness, backlightCompensation: .backlightCompensation,
        whiteBalanceTemperature: .whiteBalanceTemperature, exposureAutoPriority: .exposureDynamicFramerate,
    ]

    /// Controls the typed camera API owns (in neutral units), left out of the generic list.
    package static let typed: Set<UInt32> = [
        autoWhiteBalance, powerLineFrequency, exposureAuto, exposureAbsolute, focusAuto, focusAbsolute, zoomAbsolute,
        flashLEDMode,
    ]

    /// The neutral ID of `control`: its named ID, or one made from its name ("Exposure, Dynamic
    /// Framerate" → "exposureDynamicFramerate").
    package static func neutralID(of control: V4L2Control) -> CaptureDevice.Control.ID {
        if let id = named[control.id] { return id }
        let words = control.name.split { !$0.isLetter && !$0.isNumber }.map(String.init)
        guard let first = words.first else { return .init(rawValue: "control\(control.id)") }
        let rest = words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst().lowercased() }
        return .init(rawValue: first.lowercased() + rest.joined())
    }
}

/// The mapping between V4L2 controls and Viewfinder's neutral controls and camera settings
/// (modes, seconds, kelvin, zoom factors, lens positions).
///
/// Thread safety: a value type built from one control listing.
package struct V4L2ControlMap: Sendable {
    /// The driver's controls.
    package let controls: [V4L2Control]
    /// The generic controls, each with the V4L2 ID it stands for.
    package let generic: [(control: CaptureDevice.Control, v4l2ID: UInt32)]

    package init(_ controls: [V4L2Control]) {
        self.controls = controls
        var seen = Set<CaptureDevice.Control.ID>()
        var generic: [(CaptureDevice.Control, UInt32)] = []
        for control in controls where !V4L2ControlID.typed.contains(control.id) {
            var id = V4L2ControlID.neutralID(of: control)
            if seen.contains(id) { id = .init(rawValue: id.rawValue + String(control.id, radix: 16)) }
            seen.insert(id)
            generic.append(
                (
                    CaptureDevice.Control(
                        id: id, name: control.name, kind: control.kind, minimum: control.minimum,
                        maximum: control.maximum, step: control.step, defaultValue: control.defaultValue,
                        menuItems: control.menuItems, isReadOnly: control.isReadOnly,
                        isInactive: control.isInactive),
                    control.id
                ))
        }
        self.generic = generic
    }

    /// The driver's control `id`, if it has it.
    package func control(_ id: UInt32) -> V4L2Control? { controls.first { $0.id == id } }

    /// The V4L2 ID behind generic control `id`.
    package func v4l2ID(for id: CaptureDevice.Control.ID) -> UInt32? { generic.first { $0.control.id == id }?.v4l2ID }

    /// The automatic exposure value the menu offers: full auto, else aperture priority (uvcvideo's).
    package var automaticExposure: Int32? {
        guard let menu = control(V4L2ControlID.exposureAuto) else { return nil }
        if menu.offers(VF_V4L2_EXPOSURE_AUTO) { return VF_V4L2_EXPOSURE_AUTO }
        if menu.offers(VF_V4L2_EXPOSURE_APERTURE_PRIORITY) { return VF_V4L2_EXPOSURE_APERTURE_PRIORITY }
        return nil
    }

    /// What the controls allow, in neutral terms.
    package var capabilities: CameraCapabilities {
        var result = CameraCapabilities()
        let focusAuto = control(V4L2ControlID.focusAuto) != nil
        let focusPosition = control(V4L2ControlID.focusAbsolute) != nil
        if focusAuto { result.focusModes.insert(.continuousAutoFocus) }
        if focusAuto || focusPosition { result.focusModes.insert(.locked) }
        result.lensPosition = focusPosition
        if automaticExposure != nil { result.exposureModes.insert(.continuousAutoExposure) }
        if let time = control(V4L2ControlID.exposureAbsolute),
            control(V4L2ControlID.exposureAuto)?.offers(VF_V4L2_EXPOSURE_MANUAL) == true
        {
            result.exposureModes.formUnion([.locked, .custom])
            result.exposureDurations = Self.duration(time.minimum)...Self.duration(time.maximum)
        }
        let autoWhiteBalance = control(V4L2ControlID.autoWhiteBalance) != nil
        let temperature = control(V4L2ControlID.whiteBalanceTemperature)
        if autoWhiteBalance { result.whiteBalanceModes.insert(.continuousAutoWhiteBalance) }
        if autoWhiteBalance || temperature != nil { result.whiteBalanceModes.insert(.locked) }
        if let temperature { result.whiteBalanceTemperatures = temperature.minimum...temperature.maximum }
        if let zoom = control(V4L2ControlID.zoomAbsolute) {
            result.maxZoomFactor = Self.zoomFactor(zoom.maximum, of: zoom)
        }
        if control(V4L2ControlID.flashLEDMode)?.offers(VF_V4L2_FLASH_LED_MODE_TORCH) == true {
            result.torchModes = [.off, .on]
        }
        if let menu = control(V4L2ControlID.powerLineFrequency) {
            result.powerLineFrequencies = Set(
                CaptureDevice.PowerLineFrequency.allCases.filter { menu.offers(Self.menuValue(of: $0)) })
        }
        return result
    }

    // MARK: Units

    /// V4L2 counts exposure in 100 µs units.
    package static func duration(_ units: Int) -> MediaTime { MediaTime(value: Int64(units), timescale: 10_000) }

    /// The exposure units nearest `duration`, within the control's range.
    package static func units(_ duration: MediaTime, of control: V4L2Control) -> Int {
        min(control.maximum, max(control.minimum, Int((duration.seconds * 10_000).rounded())))
    }

    /// UVC cameras count zoom from 100 for 1×, so a range of 100…500 is 1×…5×; a range starting
    /// at 0 or below counts 100 units per 1×.
    package static func zoomFactor(_ raw: Int, of control: V4L2Control) -> Double {
        control.minimum > 0 ? Double(raw) / Double(control.minimum) : 1 + Double(raw - control.minimum) / 100
    }

    /// The zoom value for `factor`, on the control's step.
    package static func zoomValue(_ factor: Double, of control: V4L2Control) -> Int {
        let unit = control.minimum > 0 ? Double(control.minimum) : 100
        let raw = control.minimum > 0 ? factor * unit : Double(control.minimum) + (factor - 1) * unit
        let step = max(1, control.step)
        let stepped = control.minimum + Int(((raw - Double(control.minimum)) / Double(step)).rounded()) * step
        return min(control.maximum, stepped)
    }

    /// The lens position (0 nearest … 1 furthest) of a focus value: V4L2 counts the other way
    /// round (larger values focus nearer).
    package static func lensPosition(_ raw: Int, of control: V4L2Control) -> Float {
        guard control.maximum > control.minimum else { return 0 }
        return 1 - Float(raw - control.minimum) / Float(control.maximum - control.minimum)
    }

    /// The focus value for a lens position, on the control's step.
    package static func focusValue(_ lensPosition: Float, of control: V4L2Control) -> Int {
        let span = Double(control.maximum - control.minimum)
        let step = max(1, control.step)
        let steps = (((1 - Double(lensPosition)) * span) / Double(step)).rounded()
        return min(control.maximum, control.minimum + Int(steps) * step)
    }

    /// A kelvin value on the temperature control's step.
    package static func temperatureValue(_ kelvin: Int, of control: V4L2Control) -> Int {
        let step = max(1, control.step)
        return control.minimum + (kelvin - control.minimum) / step * step
    }

    /// The power-line menu value for `frequency`.
    package static func menuValue(of frequency: CaptureDevice.PowerLineFrequency) -> Int32 {
        switch frequency {
        case .disabled: return 0
        case .fiftyHertz: return 1
        case .sixtyHertz: return 2
        case .automatic: return 3
        }
    }

    /// The frequency for a power-line menu value.
    package static func frequency(menuValue value: Int) -> CaptureDevice.PowerLineFrequency? {
        CaptureDevice.PowerLineFrequency.allCases.first { Int(Self.menuValue(of: $0)) == value }
    }
}
