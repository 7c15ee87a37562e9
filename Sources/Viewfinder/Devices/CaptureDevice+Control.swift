import CV4L2

extension CaptureDevice {
    /// One adjustable camera setting as the driver describes it: brightness, exposure time,
    /// focus position, …, with its range and default (the generic counterpart of the typed
    /// focus, exposure, white-balance, zoom and torch API).
    ///
    /// Control IDs are V4L2's (`V4L2_CID_*`), so a control with no named constant can still be
    /// addressed by its number. Read and change values with ``CaptureDevice/value(of:)`` and
    /// ``CaptureDevice/setValue(_:for:)``.
    ///
    /// Thread safety: a value type; freely sendable.
    public struct Control: Sendable, Hashable, Identifiable, CustomStringConvertible {
        /// Identifies a control (a V4L2 control ID).
        public struct ID: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
            /// The V4L2 control ID.
            public var rawValue: UInt32
            /// The control with V4L2 ID `rawValue`.
            public init(rawValue: UInt32) { self.rawValue = rawValue }

            /// Picture brightness (`V4L2_CID_BRIGHTNESS`).
            public static let brightness = ID(rawValue: VF_V4L2_CID_BRIGHTNESS)
            /// Picture contrast (`V4L2_CID_CONTRAST`).
            public static let contrast = ID(rawValue: VF_V4L2_CID_CONTRAST)
            /// Colour saturation (`V4L2_CID_SATURATION`).
            public static let saturation = ID(rawValue: VF_V4L2_CID_SATURATION)
            /// Hue (`V4L2_CID_HUE`).
            public static let hue = ID(rawValue: VF_V4L2_CID_HUE)
            /// Gain (`V4L2_CID_GAIN`).
            public static let gain = ID(rawValue: VF_V4L2_CID_GAIN)
            /// Sharpness (`V4L2_CID_SHARPNESS`).
            public static let sharpness = ID(rawValue: VF_V4L2_CID_SHARPNESS)
            /// Backlight compensation (`V4L2_CID_BACKLIGHT_COMPENSATION`).
            public static let backlightCompensation = ID(rawValue: VF_V4L2_CID_BACKLIGHT_COMPENSATION)
            /// Automatic white balance on (1) or off (0) (`V4L2_CID_AUTO_WHITE_BALANCE`).
            public static let whiteBalanceAutomatic = ID(rawValue: VF_V4L2_CID_AUTO_WHITE_BALANCE)
            /// White-balance colour temperature in kelvin (`V4L2_CID_WHITE_BALANCE_TEMPERATURE`).
            public static let whiteBalanceTemperature = ID(rawValue: VF_V4L2_CID_WHITE_BALANCE_TEMPERATURE)
            /// Mains frequency to cancel flicker for: 0 off, 1 50 Hz, 2 60 Hz, 3 auto
            /// (`V4L2_CID_POWER_LINE_FREQUENCY`).
            public static let powerLineFrequency = ID(rawValue: VF_V4L2_CID_POWER_LINE_FREQUENCY)
            /// Exposure mode: 0 auto, 1 manual, 2 shutter priority, 3 aperture priority
            /// (`V4L2_CID_EXPOSURE_AUTO`).
            public static let exposureMode = ID(rawValue: VF_V4L2_CID_EXPOSURE_AUTO)
            /// Exposure time in units of 100 µs (`V4L2_CID_EXPOSURE_ABSOLUTE`).
            public static let exposureTime = ID(rawValue: VF_V4L2_CID_EXPOSURE_ABSOLUTE)
            /// Continuous autofocus on (1) or off (0) (`V4L2_CID_FOCUS_AUTO`).
            public static let focusAutomatic = ID(rawValue: VF_V4L2_CID_FOCUS_AUTO)
            /// Focus position; larger is nearer, units are the driver's (`V4L2_CID_FOCUS_ABSOLUTE`).
            public static let focusPosition = ID(rawValue: VF_V4L2_CID_FOCUS_ABSOLUTE)
            /// Optical or digital zoom, units are the driver's (`V4L2_CID_ZOOM_ABSOLUTE`).
            public static let zoom = ID(rawValue: VF_V4L2_CID_ZOOM_ABSOLUTE)
            /// LED mode: 0 off, 1 flash, 2 torch (`V4L2_CID_FLASH_LED_MODE`).
            public static let ledMode = ID(rawValue: VF_V4L2_CID_FLASH_LED_MODE)

            public var description: String { "0x" + String(rawValue, radix: 16) }
        }

        /// What values a control takes.
        public enum Kind: Sendable, Hashable {
            /// Any value in ``Control/minimum``…``Control/maximum`` on ``Control/step``.
            case integer
            /// 0 or 1.
            case boolean
            /// One of ``Control/menuItems`` (by value).
            case menu
            /// A write-only trigger.
            case button
        }

        /// One choice of a menu control.
        public struct MenuItem: Sendable, Hashable {
            /// The value that selects it.
            public var value: Int
            /// Its name, for people.
            public var name: String
            /// A choice named `name` selected by `value`.
            public init(value: Int, name: String) {
                self.value = value
                self.name = name
            }
        }

        /// The control's ID.
        public var id: ID
        /// The driver's name for it ("Brightness").
        public var name: String
        /// What values it takes.
        public var kind: Kind
        /// The smallest value.
        public var minimum: Int
        /// The largest value.
        public var maximum: Int
        /// The step between values.
        public var step: Int
        /// The value after a reset.
        public var defaultValue: Int
        /// The choices of a menu control (only the values the driver accepts); empty otherwise.
        public var menuItems: [MenuItem]
        /// Whether the value can only be read.
        public var isReadOnly: Bool
        /// Whether changing it has no effect now (e.g. exposure time while exposure is automatic).
        public var isInactive: Bool

        /// A control description.
        public init(
            id: ID, name: String, kind: Kind, minimum: Int, maximum: Int, step: Int, defaultValue: Int,
            menuItems: [MenuItem] = [], isReadOnly: Bool = false, isInactive: Bool = false
        ) {
            self.id = id
            self.name = name
            self.kind = kind
            self.minimum = minimum
            self.maximum = maximum
            self.step = step
            self.defaultValue = defaultValue
            self.menuItems = menuItems
            self.isReadOnly = isReadOnly
            self.isInactive = isInactive
        }

        /// Whether `value` is one the control accepts.
        public func accepts(_ value: Int) -> Bool {
            switch kind {
            case .menu: return menuItems.contains { $0.value == value }
            case .boolean: return value == 0 || value == 1
            case .button: return true
            case .integer: return value >= minimum && value <= maximum && (value - minimum) % max(1, step) == 0
            }
        }

        /// The accepted values, as people read them.
        public var rangeDescription: String {
            switch kind {
            case .menu: return menuItems.map { "\($0.value) (\($0.name))" }.joined(separator: ", ")
            case .boolean: return "0 or 1"
            case .button: return "any value"
            case .integer: return "\(minimum)…\(maximum)" + (step > 1 ? " in steps of \(step)" : "")
            }
        }

        public var description: String { "\(name) [\(id)]: \(rangeDescription), default \(defaultValue)" }
    }
}

/// A backend whose device has controls (V4L2 cameras). Backends that are not report every
/// control unsupported.
///
/// Thread safety: as ``DeviceBackend``.
protocol ControllableBackend: DeviceBackend {
    /// The device's controls now (flags such as inactive are current).
    func controls() throws(CaptureError) -> [CaptureDevice.Control]
    /// The device's controls, possibly from a cache (for support checks).
    func cachedControls() -> [CaptureDevice.Control]
    /// Reads a control.
    func value(of id: CaptureDevice.Control.ID) throws(CaptureError) -> Int
    /// Writes a control.
    func setValue(_ value: Int, for id: CaptureDevice.Control.ID) throws(CaptureError)
}

extension CaptureDevice {
    /// Every control the device has, with ranges and defaults; empty for devices without
    /// controls (the virtual camera) or when the device cannot be reached.
    public var controls: [Control] {
        guard let backend = backend as? any ControllableBackend else { return [] }
        return (try? backend.controls()) ?? []
    }

    /// The control `id`, if the device has it.
    public func control(_ id: Control.ID) -> Control? {
        (backend as? any ControllableBackend)?.cachedControls().first { $0.id == id }
    }

    /// Reads control `id`. Throws ``CaptureError/Code/unsupportedControl`` when the device has no
    /// such control, or the device's error when it cannot be read.
    public func value(of id: Control.ID) throws(CaptureError) -> Int {
        guard let backend = backend as? any ControllableBackend,
            backend.cachedControls().contains(where: { $0.id == id })
        else { throw unsupportedControl("control \(id)") }
        return try backend.value(of: id)
    }

    /// Writes control `id`. Requires the configuration lock. Throws
    /// ``CaptureError/Code/unsupportedControl`` when the device has no such control,
    /// ``CaptureError/Code/invalidArgument`` for a value outside its range, or the device's error.
    public func setValue(_ value: Int, for id: Control.ID) throws(CaptureError) {
        try requireConfigurationLock("changing control \(id)")
        guard let backend = backend as? any ControllableBackend,
            let control = backend.cachedControls().first(where: { $0.id == id })
        else { throw unsupportedControl("control \(id)") }
        guard !control.isReadOnly else {
            throw CaptureError(.unsupportedControl, "'\(control.name)' on '\(localizedName)' is read-only")
        }
        guard control.accepts(value) else {
            throw CaptureError(
                .invalidArgument,
                "\(value) is out of range for '\(control.name)' on '\(localizedName)': use \(control.rangeDescription)")
        }
        try backend.setValue(value, for: id)
    }

    func requireConfigurationLock(_ action: String) throws(CaptureError) {
        guard isLockedForConfiguration else {
            throw CaptureError(
                .configurationNotLocked,
                "\(action) on '\(localizedName)' needs the configuration lock: call lockForConfiguration() first")
        }
    }

    func unsupportedControl(_ what: String) -> CaptureError {
        CaptureError(
            .unsupportedControl,
            "'\(localizedName)' has no \(what): check the matching is…Supported property or `controls` first")
    }
}
