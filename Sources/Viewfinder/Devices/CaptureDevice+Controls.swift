import CV4L2

/// Focus, exposure, white balance, zoom, torch and anti-flicker, AVFoundation-style, on top of the
/// device's ``CaptureDevice/Control``s. Setters need the configuration lock; a mode or control
/// the device lacks throws ``CaptureError/Code/unsupportedControl`` (check the matching
/// `is…Supported` first), never fails silently. The virtual camera supports none of them.
extension CaptureDevice {
    // MARK: Focus

    /// How the camera focuses (the counterpart of `AVCaptureDevice.FocusMode`).
    public enum FocusMode: Sendable, Hashable {
        /// Focus stays where it is (or where ``setFocusModeLocked(lensPosition:)`` put it).
        case locked
        /// Focus once, then lock (not offered by UVC cameras).
        case autoFocus
        /// Keep focusing as the scene changes.
        case continuousAutoFocus
    }

    /// Whether the camera can focus in `mode`.
    public func isFocusModeSupported(_ mode: FocusMode) -> Bool {
        switch mode {
        case .locked: return control(.focusAutomatic) != nil || control(.focusPosition) != nil
        case .autoFocus: return false
        case .continuousAutoFocus: return control(.focusAutomatic) != nil
        }
    }

    /// The focus mode now (``FocusMode/locked`` for fixed-focus cameras).
    public var focusMode: FocusMode {
        (try? value(of: .focusAutomatic)) == 1 ? .continuousAutoFocus : .locked
    }

    /// Sets the focus mode. Requires the configuration lock.
    public func setFocusMode(_ mode: FocusMode) throws(CaptureError) {
        try requireConfigurationLock("changing the focus mode")
        guard isFocusModeSupported(mode) else { throw unsupportedControl("focus mode \(mode)") }
        if control(.focusAutomatic) != nil { try setValue(mode == .continuousAutoFocus ? 1 : 0, for: .focusAutomatic) }
    }

    /// Whether ``setFocusModeLocked(lensPosition:)`` works (the camera has a focus position control).
    public var isLockingFocusWithCustomLensPositionSupported: Bool { control(.focusPosition) != nil }

    /// The lens position from 0 (nearest) to 1 (furthest), as AVFoundation counts it; 0 when the
    /// camera has no focus position control.
    public var lensPosition: Float {
        guard let control = control(.focusPosition), let raw = try? value(of: .focusPosition) else { return 0 }
        // V4L2 counts the other way round: larger values focus nearer.
        return 1 - Self.fraction(raw, of: control)
    }

    /// Locks focus at `lensPosition` (0 nearest … 1 furthest). Requires the configuration lock.
    public func setFocusModeLocked(lensPosition: Float) throws(CaptureError) {
        try requireConfigurationLock("locking focus")
        guard let control = control(.focusPosition) else { throw unsupportedControl("focus position control") }
        guard (0...1).contains(lensPosition) else {
            throw CaptureError(
                .invalidArgument, "lens position \(lensPosition) is out of range: use 0 (nearest) … 1 (furthest)")
        }
        if self.control(.focusAutomatic) != nil { try setValue(0, for: .focusAutomatic) }
        try setValue(Self.value(at: 1 - Double(lensPosition), of: control), for: .focusPosition)
    }

    // MARK: Exposure

    /// How the camera sets exposure (the counterpart of `AVCaptureDevice.ExposureMode`).
    public enum ExposureMode: Sendable, Hashable {
        /// Exposure stays where it is.
        case locked
        /// Expose once, then lock (not offered by UVC cameras).
        case autoExpose
        /// Keep adjusting exposure.
        case continuousAutoExposure
        /// Exposure time set by ``setExposureModeCustom(duration:)``.
        case custom
    }

    private var exposureMenu: [Int] { control(.exposureMode)?.menuItems.map(\.value) ?? [] }
    private var automaticExposureValue: Int32? {
        let menu = exposureMenu
        if menu.contains(Int(VF_V4L2_EXPOSURE_AUTO)) { return VF_V4L2_EXPOSURE_AUTO }
        if menu.contains(Int(VF_V4L2_EXPOSURE_APERTURE_PRIORITY)) { return VF_V4L2_EXPOSURE_APERTURE_PRIORITY }
        return nil
    }

    /// Whether the camera can expose in `mode`.
    public func isExposureModeSupported(_ mode: ExposureMode) -> Bool {
        let manual = exposureMenu.contains(Int(VF_V4L2_EXPOSURE_MANUAL))
        switch mode {
        case .continuousAutoExposure: return automaticExposureValue != nil
        case .locked, .custom: return manual && control(.exposureTime) != nil
        case .autoExpose: return false
        }
    }

    /// The exposure mode now: ``ExposureMode/custom`` when exposure is manual,
    /// ``ExposureMode/continuousAutoExposure`` otherwise (also for cameras without exposure controls).
    public var exposureMode: ExposureMode {
        (try? value(of: .exposureMode)) == Int(VF_V4L2_EXPOSURE_MANUAL) ? .custom : .continuousAutoExposure
    }

    /// Sets the exposure mode: ``ExposureMode/locked`` keeps the current exposure time.
    /// Requires the configuration lock.
    public func setExposureMode(_ mode: ExposureMode) throws(CaptureError) {
        try requireConfigurationLock("changing the exposure mode")
        guard isExposureModeSupported(mode) else { throw unsupportedControl("exposure mode \(mode)") }
        switch mode {
        case .continuousAutoExposure:
            try setValue(Int(automaticExposureValue!), for: .exposureMode)
        default:
            let current = try value(of: .exposureTime)
            try setValue(Int(VF_V4L2_EXPOSURE_MANUAL), for: .exposureMode)
            try setValue(current, for: .exposureTime)
        }
    }

    /// The exposure time now (V4L2 counts it in 100 µs units); ``MediaTime/invalid`` when the
    /// camera has no exposure time control.
    public var exposureDuration: MediaTime {
        guard let raw = try? value(of: .exposureTime) else { return .invalid }
        return MediaTime(value: Int64(raw), timescale: 10_000)
    }

    /// The shortest exposure time ``setExposureModeCustom(duration:)`` takes.
    public var minExposureDuration: MediaTime {
        control(.exposureTime).map { MediaTime(value: Int64($0.minimum), timescale: 10_000) } ?? .invalid
    }

    /// The longest exposure time ``setExposureModeCustom(duration:)`` takes.
    public var maxExposureDuration: MediaTime {
        control(.exposureTime).map { MediaTime(value: Int64($0.maximum), timescale: 10_000) } ?? .invalid
    }

    /// Switches to manual exposure of `duration` (rounded to the camera's 100 µs steps).
    /// Requires the configuration lock.
    public func setExposureModeCustom(duration: MediaTime) throws(CaptureError) {
        try requireConfigurationLock("setting the exposure time")
        guard isExposureModeSupported(.custom), let control = control(.exposureTime) else {
            throw unsupportedControl("manual exposure control")
        }
        let units = duration.isNumeric ? Int(exactly: (duration.seconds * 10_000).rounded()) ?? Int.max : Int.min
        guard duration.isValid, units >= control.minimum, units <= control.maximum else {
            throw CaptureError(
                .invalidArgument,
                "exposure time \(duration.seconds)s is out of range for '\(localizedName)': use \(minExposureDuration.seconds)s … \(maxExposureDuration.seconds)s"
            )
        }
        try setValue(Int(VF_V4L2_EXPOSURE_MANUAL), for: .exposureMode)
        try setValue(units, for: .exposureTime)
    }

    // MARK: White balance

    /// How the camera balances colour (the counterpart of `AVCaptureDevice.WhiteBalanceMode`).
    public enum WhiteBalanceMode: Sendable, Hashable {
        /// White balance stays where it is (or at the temperature set).
        case locked
        /// Balance once, then lock (not offered by UVC cameras).
        case autoWhiteBalance
        /// Keep balancing.
        case continuousAutoWhiteBalance
    }

    /// Whether the camera can balance white in `mode`.
    public func isWhiteBalanceModeSupported(_ mode: WhiteBalanceMode) -> Bool {
        switch mode {
        case .continuousAutoWhiteBalance: return control(.whiteBalanceAutomatic) != nil
        case .locked: return control(.whiteBalanceAutomatic) != nil || control(.whiteBalanceTemperature) != nil
        case .autoWhiteBalance: return false
        }
    }

    /// The white-balance mode now.
    public var whiteBalanceMode: WhiteBalanceMode {
        (try? value(of: .whiteBalanceAutomatic)) == 1 ? .continuousAutoWhiteBalance : .locked
    }

    /// Sets the white-balance mode. Requires the configuration lock.
    public func setWhiteBalanceMode(_ mode: WhiteBalanceMode) throws(CaptureError) {
        try requireConfigurationLock("changing the white-balance mode")
        guard isWhiteBalanceModeSupported(mode) else { throw unsupportedControl("white-balance mode \(mode)") }
        if control(.whiteBalanceAutomatic) != nil {
            try setValue(mode == .continuousAutoWhiteBalance ? 1 : 0, for: .whiteBalanceAutomatic)
        }
    }

    /// The white-balance colour temperature in kelvin; `nil` without a temperature control.
    public var whiteBalanceTemperature: Int? { try? value(of: .whiteBalanceTemperature) }

    /// Locks white balance at `kelvin`. Requires the configuration lock.
    public func setWhiteBalanceModeLocked(temperature kelvin: Int) throws(CaptureError) {
        try requireConfigurationLock("setting the white-balance temperature")
        guard let control = control(.whiteBalanceTemperature) else {
            throw unsupportedControl("white-balance temperature control")
        }
        guard kelvin >= control.minimum, kelvin <= control.maximum else {
            throw CaptureError(
                .invalidArgument,
                "\(kelvin) K is out of range for '\(localizedName)': use \(control.minimum) … \(control.maximum) K")
        }
        if self.control(.whiteBalanceAutomatic) != nil { try setValue(0, for: .whiteBalanceAutomatic) }
        let stepped = control.minimum + (kelvin - control.minimum) / max(1, control.step) * max(1, control.step)
        try setValue(stepped, for: .whiteBalanceTemperature)
    }

    // MARK: Zoom

    /// The smallest zoom factor (1 on cameras with a zoom control).
    public var minAvailableVideoZoomFactor: Double { 1 }

    /// The largest zoom factor: 1 without a zoom control. UVC cameras count zoom from 100 for
    /// 1×, so a range of 100…500 is 1×…5×; a range starting at 0 or below counts 100 units per 1×.
    public var maxAvailableVideoZoomFactor: Double {
        guard let control = control(.zoom) else { return 1 }
        return Self.zoomFactor(control.maximum, of: control)
    }

    /// The zoom factor now (1 without a zoom control).
    public var videoZoomFactor: Double {
        guard let control = control(.zoom), let raw = try? value(of: .zoom) else { return 1 }
        return Self.zoomFactor(raw, of: control)
    }

    /// Zooms to `factor` (``minAvailableVideoZoomFactor`` … ``maxAvailableVideoZoomFactor``).
    /// Requires the configuration lock.
    public func setVideoZoomFactor(_ factor: Double) throws(CaptureError) {
        try requireConfigurationLock("zooming")
        guard let control = control(.zoom) else { throw unsupportedControl("zoom control") }
        guard factor >= 1, factor <= maxAvailableVideoZoomFactor + 1e-9 else {
            throw CaptureError(
                .invalidArgument,
                "zoom factor \(factor) is out of range for '\(localizedName)': use 1 … \(maxAvailableVideoZoomFactor)")
        }
        let unit = control.minimum > 0 ? Double(control.minimum) : 100
        let raw = control.minimum > 0 ? factor * unit : Double(control.minimum) + (factor - 1) * unit
        let step = max(1, control.step)
        let stepped = control.minimum + Int(((raw - Double(control.minimum)) / Double(step)).rounded()) * step
        try setValue(min(control.maximum, stepped), for: .zoom)
    }

    private static func zoomFactor(_ raw: Int, of control: Control) -> Double {
        control.minimum > 0 ? Double(raw) / Double(control.minimum) : 1 + Double(raw - control.minimum) / 100
    }

    // MARK: Torch

    /// What the torch (the camera's LED, where the driver has an LED control) does.
    public enum TorchMode: Sendable, Hashable {
        /// Off.
        case off
        /// On, continuously.
        case on
        /// On when dark (not offered by V4L2 LED controls).
        case auto
    }

    /// Whether the camera has a torch: an LED mode control with a torch setting.
    public var hasTorch: Bool {
        control(.ledMode)?.menuItems.contains { $0.value == Int(VF_V4L2_FLASH_LED_MODE_TORCH) } ?? false
    }

    /// Whether the torch can be set to `mode`.
    public func isTorchModeSupported(_ mode: TorchMode) -> Bool { hasTorch && mode != .auto }

    /// The torch mode now (``TorchMode/off`` without a torch).
    public var torchMode: TorchMode {
        (try? value(of: .ledMode)) == Int(VF_V4L2_FLASH_LED_MODE_TORCH) ? .on : .off
    }

    /// Turns the torch on or off. Requires the configuration lock.
    public func setTorchMode(_ mode: TorchMode) throws(CaptureError) {
        try requireConfigurationLock("changing the torch mode")
        guard isTorchModeSupported(mode) else { throw unsupportedControl("torch mode \(mode)") }
        try setValue(Int(mode == .on ? VF_V4L2_FLASH_LED_MODE_TORCH : VF_V4L2_FLASH_LED_MODE_NONE), for: .ledMode)
    }

    // MARK: Anti-flicker

    /// The mains frequency the camera cancels flicker for.
    public enum PowerLineFrequency: Int, Sendable, Hashable, CaseIterable {
        /// No flicker cancellation.
        case disabled = 0
        /// 50 Hz mains (Europe, most of Asia and Africa).
        case fiftyHertz = 1
        /// 60 Hz mains (the Americas, parts of Asia).
        case sixtyHertz = 2
        /// The camera detects it.
        case automatic = 3
    }

    /// Whether the camera can cancel flicker for `frequency`.
    public func isPowerLineFrequencySupported(_ frequency: PowerLineFrequency) -> Bool {
        control(.powerLineFrequency)?.menuItems.contains { $0.value == frequency.rawValue } ?? false
    }

    /// The anti-flicker setting now; `nil` without the control.
    public var powerLineFrequency: PowerLineFrequency? {
        (try? value(of: .powerLineFrequency)).flatMap(PowerLineFrequency.init(rawValue:))
    }

    /// Sets the anti-flicker frequency. Requires the configuration lock.
    public func setPowerLineFrequency(_ frequency: PowerLineFrequency) throws(CaptureError) {
        try requireConfigurationLock("changing the power-line frequency")
        guard isPowerLineFrequencySupported(frequency) else {
            throw unsupportedControl("power-line frequency \(frequency)")
        }
        try setValue(frequency.rawValue, for: .powerLineFrequency)
    }

    // MARK: Helpers

    /// Where `raw` sits in the control's range, 0…1.
    static func fraction(_ raw: Int, of control: Control) -> Float {
        guard control.maximum > control.minimum else { return 0 }
        return Float(raw - control.minimum) / Float(control.maximum - control.minimum)
    }

    /// The control value at `fraction` (0…1) of its range, on its step.
    static func value(at fraction: Double, of control: Control) -> Int {
        let span = Double(control.maximum - control.minimum)
        let step = max(1, control.step)
        let steps = ((fraction * span) / Double(step)).rounded()
        return min(control.maximum, control.minimum + Int(steps) * step)
    }
}
