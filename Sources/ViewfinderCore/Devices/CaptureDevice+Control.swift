extension CaptureDevice {
    /// One adjustable camera setting as the device describes it: brightness, contrast,
    /// saturation, …, with its range and default (the generic counterpart of the typed focus,
    /// exposure, white-balance, zoom, torch and anti-flicker API, which owns those settings and
    /// speaks AVFoundation's units).
    ///
    /// Values are in the device's own scale (``minimum`` … ``maximum`` on ``step``), except where
    /// an ID says otherwise (``ID/whiteBalanceTemperature`` is in kelvin). Read and change values
    /// with ``CaptureDevice/value(of:)`` and ``CaptureDevice/setValue(_:for:)``.
    ///
    /// Thread safety: a value type; freely sendable.
    public struct Control: Sendable, Hashable, Identifiable, CustomStringConvertible {
        /// Identifies a control by name (`"brightness"`), the same for every backend. Controls a
        /// device has beyond the named ones get an ID made from the device's name for them
        /// (`"Exposure, Dynamic Framerate"` becomes `"exposureDynamicFramerate"`).
        ///
        /// Thread safety: a value type; freely sendable.
        public struct ID: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
            /// The control's name, lower camel case.
            public var rawValue: String
            /// The control named `rawValue`.
            public init(rawValue: String) { self.rawValue = rawValue }

            /// Picture brightness.
            public static let brightness = ID(rawValue: "brightness")
            /// Picture contrast.
            public static let contrast = ID(rawValue: "contrast")
            /// Colour saturation.
            public static let saturation = ID(rawValue: "saturation")
            /// Hue.
            public static let hue = ID(rawValue: "hue")
            /// Gamma.
            public static let gamma = ID(rawValue: "gamma")
            /// Gain (sensor amplification).
            public static let gain = ID(rawValue: "gain")
            /// Sharpness.
            public static let sharpness = ID(rawValue: "sharpness")
            /// Backlight compensation.
            public static let backlightCompensation = ID(rawValue: "backlightCompensation")
            /// White-balance colour temperature in kelvin (inactive while white balance is automatic).
            public static let whiteBalanceTemperature = ID(rawValue: "whiteBalanceTemperature")

            public var description: String { rawValue }
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
        /// The device's name for it ("Brightness"), for people.
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
        /// The choices of a menu control (only the values the device accepts); empty otherwise.
        public var menuItems: [MenuItem]
        /// Whether the value can only be read.
        public var isReadOnly: Bool
        /// Whether changing it has no effect now (e.g. the white-balance temperature while white
        /// balance is automatic).
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

extension CaptureDevice {
    /// The device's generic controls, with ranges and defaults; empty for devices without
    /// controls (the virtual camera) or when the device cannot be reached. Focus, exposure, white
    /// balance mode, zoom, torch and anti-flicker are not in it: use their typed API.
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
        _keyValueObservers.recheck()
    }

    package func requireConfigurationLock(_ action: String) throws(CaptureError) {
        guard isLockedForConfiguration else {
            throw CaptureError(
                .configurationNotLocked,
                "\(action) on '\(localizedName)' needs the configuration lock: call lockForConfiguration() first")
        }
    }

    package func unsupportedControl(_ what: String) -> CaptureError {
        CaptureError(
            .unsupportedControl,
            "'\(localizedName)' has no \(what): check the matching is…Supported property or `controls` first")
    }
}
