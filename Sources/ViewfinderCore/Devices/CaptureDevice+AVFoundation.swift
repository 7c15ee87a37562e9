// swift-format-ignore-file: AlwaysUseLowerCamelCase

import Foundation

// The rest of `AVCaptureDevice`: exposure target bias, ISO, custom exposure and white-balance
// gains mapped onto the V4L2 controls a camera has (brightness, gain, exposure time, colour
// temperature), torch levels, zoom ramps, and the features no Linux camera has, answering as
// AVFoundation does on a device without them.

// MARK: Exposure bias, ISO and custom exposure

extension CaptureDevice {
    /// `AVCaptureExposureTargetBiasCurrent`: pass it to
    /// ``setExposureTargetBias(_:completionHandler:)`` to keep the current bias.
    public static let currentExposureTargetBias: Float = .greatestFiniteMagnitude
    /// `AVCaptureISOCurrent`: pass it to ``setExposureModeCustom(duration:iso:completionHandler:)``
    /// to keep the current ISO.
    public static let currentISO: Float = .greatestFiniteMagnitude
    /// `AVCaptureExposureDurationCurrent`: pass it to
    /// ``setExposureModeCustom(duration:iso:completionHandler:)`` to keep the current exposure time.
    public static let currentExposureDuration = MediaTime.invalid
    /// `AVCaptureLensPositionCurrent`: pass it to ``setFocusModeLocked(lensPosition:completionHandler:)``
    /// to keep the lens where it is.
    public static let currentLensPosition: Float = .greatestFiniteMagnitude

    /// The EV range the exposure target bias spans on a camera with a brightness control.
    static let biasSpan: Float = 2

    /// The brightness control the exposure bias drives, when the camera has a writable one.
    private var biasControl: Control? {
        guard let control = control(.brightness), !control.isReadOnly, control.maximum > control.minimum else {
            return nil
        }
        return control
    }

    /// The smallest exposure target bias, in EV: −2 on a camera with a brightness control (the
    /// bias moves it), 0 without.
    public var minExposureTargetBias: Float { biasControl == nil ? 0 : -Self.biasSpan }
    /// The largest exposure target bias, in EV: +2 on a camera with a brightness control, 0 without.
    public var maxExposureTargetBias: Float { biasControl == nil ? 0 : Self.biasSpan }

    /// The exposure target bias now, in EV (0 at the brightness control's default; ±2 at its
    /// ends); 0 without a brightness control.
    public var exposureTargetBias: Float {
        guard let control = biasControl, let value = try? self.value(of: .brightness) else { return 0 }
        let offset = Float(value - control.defaultValue)
        let half = Float(offset >= 0 ? control.maximum - control.defaultValue : control.defaultValue - control.minimum)
        return half > 0 ? offset / half * Self.biasSpan : 0
    }

    /// How far the metered exposure is from the target, in EV: 0 (UVC cameras do not report it).
    public var exposureTargetOffset: Float { 0 }

    /// Sets the exposure target bias, in EV (``minExposureTargetBias`` … ``maxExposureTargetBias``),
    /// moving the camera's brightness control: 0 is its default, ±2 its ends. Requires the
    /// configuration lock. Throws ``CaptureError/Code/unsupportedControl`` without a brightness
    /// control (unless `bias` is 0), ``CaptureError/Code/invalidArgument`` out of range.
    public func setExposureTargetBias(_ bias: Float) throws(CaptureError) {
        try requireConfigurationLock("setting the exposure target bias")
        if bias == Self.currentExposureTargetBias { return }
        guard let control = biasControl else {
            if bias == 0 { return }
            throw unsupportedControl("brightness control for the exposure target bias")
        }
        guard bias >= -Self.biasSpan, bias <= Self.biasSpan else {
            throw CaptureError(
                .invalidArgument,
                "exposure target bias \(bias) is out of range for '\(localizedName)': use \(minExposureTargetBias) … \(maxExposureTargetBias)"
            )
        }
        let half = Float(bias >= 0 ? control.maximum - control.defaultValue : control.defaultValue - control.minimum)
        var value = control.defaultValue + Int((bias / Self.biasSpan * half).rounded())
        if control.step > 1 { value = control.minimum + (value - control.minimum) / control.step * control.step }
        try setValue(min(max(value, control.minimum), control.maximum), for: .brightness)
    }

    /// Sets the exposure target bias as AVFoundation does: misuse (no configuration lock, out of
    /// range, no brightness control) traps naming the fix; ``setExposureTargetBias(_:)`` throws
    /// instead. `handler` is called, on a global queue, with the time the setting was applied.
    public func setExposureTargetBias(_ bias: Float, completionHandler handler: ((MediaTime) -> Void)?) {
        applySetting("setExposureTargetBias(_:)") { () throws(CaptureError) in try setExposureTargetBias(bias) }
        Self.complete(handler)
    }

    /// Calls a setter's completion handler with the time now, on a global queue.
    static func complete(_ handler: ((MediaTime) -> Void)?) {
        guard let handler else { return }
        let now = HostClock().now()
        // AVFoundation's handlers are not Sendable: the caller's closure is called once, there.
        let box = UncheckedBox(handler)
        DispatchQueue.global().async { box.value(now) }
    }

    /// The gain control ISO maps to, when the camera has a writable one.
    private var gainControl: Control? {
        guard let control = control(.gain), !control.isReadOnly, control.maximum > control.minimum else { return nil }
        return control
    }

    /// The ISO now: the camera's gain control mapped linearly onto ``Format/minISO`` …
    /// ``Format/maxISO`` (100 … 800); 100 without a gain control.
    public var iso: Float {
        guard let control = gainControl, let value = try? self.value(of: .gain) else {
            return Format.isoRange.lowerBound
        }
        let fraction = Float(value - control.minimum) / Float(control.maximum - control.minimum)
        return Format.isoRange.lowerBound + fraction * (Format.isoRange.upperBound - Format.isoRange.lowerBound)
    }

    /// The lens aperture (f-number): 0, since webcams do not report it.
    public var lensAperture: Float { 0 }

    /// The longest exposure the automatic modes may use; ``MediaTime/invalid`` (the default, the
    /// format's limit) unless set. Kept: UVC drivers take no such limit. Needs the configuration lock.
    public var activeMaxExposureDuration: MediaTime {
        get { extras.withLock { $0.activeMaxExposureDuration } }
        set {
            requireLockOrTrap("setting the longest automatic exposure")
            extras.withLock { $0.activeMaxExposureDuration = newValue }
        }
    }

    /// Switches to custom exposure of `duration` at `iso` (each clamped to the camera's range;
    /// ``currentExposureDuration`` and ``currentISO`` keep the current ones): the exposure time
    /// goes to the camera's exposure control, the ISO to its gain control (ignored without one).
    /// Requires the configuration lock; throws ``CaptureError/Code/unsupportedControl`` without
    /// manual exposure.
    public func setExposureModeCustom(duration: MediaTime, iso: Float) throws(CaptureError) {
        try requireConfigurationLock("setting a custom exposure")
        if duration.isValid {
            let minimum = minExposureDuration
            let maximum = maxExposureDuration
            guard minimum.isValid, maximum.isValid else { throw unsupportedControl("manual exposure control") }
            let seconds = min(max(duration.seconds, minimum.seconds), maximum.seconds)
            try setExposureModeCustom(duration: MediaTime(seconds: seconds, preferredTimescale: 1_000_000))
        } else {
            try setExposureMode(.custom)
        }
        if iso != Self.currentISO, let control = gainControl {
            let range = Format.isoRange
            let fraction =
                (min(max(iso, range.lowerBound), range.upperBound) - range.lowerBound)
                / (range.upperBound - range.lowerBound)
            let value = control.minimum + Int((fraction * Float(control.maximum - control.minimum)).rounded())
            try setValue(value, for: .gain)
        }
    }

    /// Switches to custom exposure as AVFoundation does: misuse traps naming the fix
    /// (``setExposureModeCustom(duration:iso:)`` throws instead); `handler` is called on a global
    /// queue with the time the settings were applied.
    public func setExposureModeCustom(
        duration: MediaTime, iso: Float, completionHandler handler: ((MediaTime) -> Void)?
    ) {
        applySetting("setExposureModeCustom(duration:iso:)") { () throws(CaptureError) in
            try setExposureModeCustom(duration: duration, iso: iso)
        }
        Self.complete(handler)
    }

    /// Locks focus at `lensPosition` (``currentLensPosition`` keeps it) as AVFoundation does:
    /// misuse traps naming the fix (``setFocusModeLocked(lensPosition:)`` throws instead);
    /// `handler` is called on a global queue with the time it was applied.
    public func setFocusModeLocked(lensPosition: Float, completionHandler handler: ((MediaTime) -> Void)?) {
        applySetting("setFocusModeLocked(lensPosition:)") { () throws(CaptureError) in
            if lensPosition == Self.currentLensPosition {
                try setFocusMode(.locked)
            } else {
                try setFocusModeLocked(lensPosition: lensPosition)
            }
        }
        Self.complete(handler)
    }
}

extension CaptureDevice.Format {
    /// The ISO range every video format reports (the gain control's range mapped onto it).
    static let isoRange: ClosedRange<Float> = 100...800

    /// The lowest ISO: 100 for video formats (see ``CaptureDevice/iso``), 0 for audio.
    public var minISO: Float { mediaType == .video ? Self.isoRange.lowerBound : 0 }
    /// The highest ISO: 800 for video formats, 0 for audio.
    public var maxISO: Float { mediaType == .video ? Self.isoRange.upperBound : 0 }
    /// The shortest exposure the format allows: 1/10000 s for video formats (the device's
    /// exposure control may allow less; custom exposure clamps to it).
    public var minExposureDuration: MediaTime {
        mediaType == .video ? MediaTime(value: 1, timescale: 10_000) : .invalid
    }
    /// The longest exposure the format allows: its longest frame duration.
    public var maxExposureDuration: MediaTime { mediaType == .video ? maxFrameDuration : .invalid }
}

// MARK: White balance gains

extension CaptureDevice {
    /// Red, green and blue white-balance gains (`AVCaptureDevice.WhiteBalanceGains`), each from
    /// 1 to ``CaptureDevice/maxWhiteBalanceGain``. Here they are relative to sRGB's white (D65),
    /// the square roots of the linear channel gains that make a light source white (a sensor's
    /// range: about 2.5 for blue at 3000 K); very warm light (under about 2500 K) needs more than
    /// the maximum, so clamp before locking, as with AVFoundation.
    public struct WhiteBalanceGains: Sendable, Hashable {
        /// The red gain.
        public var redGain: Float
        /// The green gain.
        public var greenGain: Float
        /// The blue gain.
        public var blueGain: Float
        /// Gains of 1.
        public init() { self.init(redGain: 1, greenGain: 1, blueGain: 1) }
        /// The given gains.
        public init(redGain: Float, greenGain: Float, blueGain: Float) {
            self.redGain = redGain
            self.greenGain = greenGain
            self.blueGain = blueGain
        }
    }

    /// A CIE 1931 xy chromaticity (`AVCaptureDevice.WhiteBalanceChromaticityValues`).
    public struct WhiteBalanceChromaticityValues: Sendable, Hashable {
        /// x.
        public var x: Float
        /// y.
        public var y: Float
        /// (0, 0).
        public init() { self.init(x: 0, y: 0) }
        /// The given chromaticity.
        public init(x: Float, y: Float) {
            self.x = x
            self.y = y
        }
    }

    /// A colour temperature in kelvin and a tint (`AVCaptureDevice.WhiteBalanceTemperatureAndTintValues`);
    /// the tint is the distance from the black-body locus, positive towards green, −150 … 150.
    public struct WhiteBalanceTemperatureAndTintValues: Sendable, Hashable {
        /// The temperature in kelvin.
        public var temperature: Float
        /// The tint.
        public var tint: Float
        /// 0 K, no tint.
        public init() { self.init(temperature: 0, tint: 0) }
        /// The given temperature and tint.
        public init(temperature: Float, tint: Float) {
            self.temperature = temperature
            self.tint = tint
        }
    }

    /// `AVCaptureWhiteBalanceGainsCurrent`: pass it to
    /// ``setWhiteBalanceModeLocked(with:completionHandler:)`` to keep the current gains.
    public static let currentWhiteBalanceGains = WhiteBalanceGains(redGain: -1, greenGain: -1, blueGain: -1)

    /// The largest gain: 4.
    public var maxWhiteBalanceGain: Float { 4 }

    /// The gains now: those of the camera's colour temperature (6500 K when it has no
    /// temperature control or does not report it).
    public var deviceWhiteBalanceGains: WhiteBalanceGains {
        let kelvin = Float(whiteBalanceTemperature ?? 6500)
        return deviceWhiteBalanceGains(for: WhiteBalanceTemperatureAndTintValues(temperature: kelvin, tint: 0))
    }

    /// The gains a grey-world estimate would use: the camera's own automatic estimate, as
    /// ``deviceWhiteBalanceGains`` reads it.
    public var grayWorldDeviceWhiteBalanceGains: WhiteBalanceGains { deviceWhiteBalanceGains }

    /// Whether ``setWhiteBalanceModeLocked(with:)`` works: the camera has a colour-temperature control.
    public var isLockingWhiteBalanceWithCustomDeviceGainsSupported: Bool { whiteBalanceTemperatureRange != nil }

    /// Locks white balance at `gains` (each 1 … ``maxWhiteBalanceGain``;
    /// ``currentWhiteBalanceGains`` keeps the current ones): the camera's temperature control is
    /// set to the gains' colour temperature (clamped to its range; the tint is dropped, UVC has
    /// no tint control). Requires the configuration lock.
    public func setWhiteBalanceModeLocked(with gains: WhiteBalanceGains) throws(CaptureError) {
        try requireConfigurationLock("locking white balance")
        guard let range = whiteBalanceTemperatureRange else {
            throw unsupportedControl("white-balance temperature control")
        }
        if gains == Self.currentWhiteBalanceGains {
            try setWhiteBalanceMode(.locked)
            return
        }
        for gain in [gains.redGain, gains.greenGain, gains.blueGain] where !(1...maxWhiteBalanceGain).contains(gain) {
            throw CaptureError(
                .invalidArgument, "white-balance gain \(gain) is out of range: use 1 … \(maxWhiteBalanceGain)")
        }
        let kelvin = Int(temperatureAndTintValues(for: gains).temperature.rounded())
        try setWhiteBalanceModeLocked(temperature: min(max(kelvin, range.lowerBound), range.upperBound))
    }

    /// Locks white balance at `gains` as AVFoundation does: misuse traps naming the fix
    /// (``setWhiteBalanceModeLocked(with:)`` throws instead); `handler` is called on a global
    /// queue with the time it was applied.
    public func setWhiteBalanceModeLocked(
        with gains: WhiteBalanceGains, completionHandler handler: ((MediaTime) -> Void)?
    ) {
        applySetting("setWhiteBalanceModeLocked(with:)") { () throws(CaptureError) in
            try setWhiteBalanceModeLocked(with: gains)
        }
        Self.complete(handler)
    }

    /// The chromaticity of the light source `gains` make white.
    public func chromaticityValues(for gains: WhiteBalanceGains) -> WhiteBalanceChromaticityValues {
        WhiteBalanceColour.chromaticity(of: gains)
    }

    /// The gains that make a light source of `chromaticityValues` white.
    public func deviceWhiteBalanceGains(for chromaticityValues: WhiteBalanceChromaticityValues) -> WhiteBalanceGains {
        WhiteBalanceColour.gains(for: chromaticityValues)
    }

    /// The colour temperature and tint of the light source `gains` make white.
    public func temperatureAndTintValues(for gains: WhiteBalanceGains) -> WhiteBalanceTemperatureAndTintValues {
        WhiteBalanceColour.temperatureAndTint(of: chromaticityValues(for: gains))
    }

    /// The gains that make a light source of `temperatureAndTintValues` white.
    public func deviceWhiteBalanceGains(for temperatureAndTintValues: WhiteBalanceTemperatureAndTintValues)
        -> WhiteBalanceGains
    {
        deviceWhiteBalanceGains(for: WhiteBalanceColour.chromaticity(of: temperatureAndTintValues))
    }
}

/// Colour conversions between white-balance gains, chromaticities and colour temperatures
/// (linear sRGB primaries, D65 white, gains the square roots of sRGB's channel gains; the
/// black-body locus by Kim et al.'s cubic fit; McCamy's formula back).
enum WhiteBalanceColour {
    /// The tint scale: tint = 3000 × the y distance from the locus.
    static let tintScale: Float = 3000

    static func chromaticity(of gains: CaptureDevice.WhiteBalanceGains) -> CaptureDevice.WhiteBalanceChromaticityValues
    {
        // The light source is the colour the gains turn white: 1/gain² per channel, linear sRGB
        // (gains are the square roots of sRGB's, closer to a sensor's range).
        let r = 1 / max(gains.redGain * gains.redGain, 1e-6)
        let g = 1 / max(gains.greenGain * gains.greenGain, 1e-6)
        let b = 1 / max(gains.blueGain * gains.blueGain, 1e-6)
        let x = 0.4124 * r + 0.3576 * g + 0.1805 * b
        let y = 0.2126 * r + 0.7152 * g + 0.0722 * b
        let z = 0.0193 * r + 0.1192 * g + 0.9505 * b
        let sum = max(x + y + z, 1e-6)
        return .init(x: x / sum, y: y / sum)
    }

    static func gains(for xy: CaptureDevice.WhiteBalanceChromaticityValues) -> CaptureDevice.WhiteBalanceGains {
        let y = max(xy.y, 1e-6)
        let bigX = xy.x / y
        let bigZ = (1 - xy.x - xy.y) / y
        let r = 3.2406 * bigX - 1.5372 - 0.4986 * bigZ
        let g = -0.9689 * bigX + 1.8758 + 0.0415 * bigZ
        let b = 0.0557 * bigX - 0.2040 + 1.0570 * bigZ
        let inverse = [1 / max(r, 1e-6), 1 / max(g, 1e-6), 1 / max(b, 1e-6)]
        let smallest = inverse.min() ?? 1
        return .init(
            redGain: (inverse[0] / smallest).squareRoot(), greenGain: (inverse[1] / smallest).squareRoot(),
            blueGain: (inverse[2] / smallest).squareRoot())
    }

    /// The black-body locus at `kelvin` (1667 … 25000 K).
    static func locus(_ kelvin: Float) -> (x: Float, y: Float) {
        let t = min(max(kelvin, 1667), 25000)
        let x: Float =
            t <= 4000
            ? -0.2661239e9 / (t * t * t) - 0.2343589e6 / (t * t) + 0.8776956e3 / t + 0.179910
            : -3.0258469e9 / (t * t * t) + 2.1070379e6 / (t * t) + 0.2226347e3 / t + 0.240390
        let y: Float
        if t <= 2222 {
            y = -1.1063814 * x * x * x - 1.34811020 * x * x + 2.18555832 * x - 0.20219683
        } else if t <= 4000 {
            y = -0.9549476 * x * x * x - 1.37418593 * x * x + 2.09137015 * x - 0.16748867
        } else {
            y = 3.0817580 * x * x * x - 5.87338670 * x * x + 3.75112997 * x - 0.37001483
        }
        return (x, y)
    }

    static func chromaticity(of values: CaptureDevice.WhiteBalanceTemperatureAndTintValues)
        -> CaptureDevice.WhiteBalanceChromaticityValues
    {
        let point = locus(values.temperature)
        return .init(x: point.x, y: point.y + values.tint / tintScale)
    }

    static func temperatureAndTint(of xy: CaptureDevice.WhiteBalanceChromaticityValues)
        -> CaptureDevice.WhiteBalanceTemperatureAndTintValues
    {
        let n = (xy.x - 0.3320) / (0.1858 - xy.y)
        let kelvin = 449 * n * n * n + 3525 * n * n + 6823.3 * n + 5520.33
        let tint = (xy.y - locus(kelvin).y) * tintScale
        return .init(temperature: kelvin, tint: min(max(tint, -150), 150))
    }
}

// MARK: Torch, low light, focus extras

extension CaptureDevice {
    /// `AVCaptureMaxAvailableTorchLevel`: ``setTorchModeOn(level:)`` at the brightest level allowed now.
    public static let maxAvailableTorchLevel: Float = .greatestFiniteMagnitude

    /// Turns the torch on at `torchLevel` (0 < level ≤ 1, or ``maxAvailableTorchLevel``). UVC LED
    /// controls are on or off, so any level turns it fully on. Requires the configuration lock;
    /// throws ``CaptureError/Code/unsupportedControl`` without a torch,
    /// ``CaptureError/Code/invalidArgument`` for a level out of range.
    public func setTorchModeOn(level torchLevel: Float) throws(CaptureError) {
        try requireConfigurationLock("turning the torch on")
        guard torchLevel == Self.maxAvailableTorchLevel || (torchLevel > 0 && torchLevel <= 1) else {
            throw CaptureError(.invalidArgument, "torch level \(torchLevel) is out of range: use a value in (0, 1]")
        }
        try setTorchMode(.on)
    }

    /// Whether low-light boost turns on by itself when available. `false`; it can only be set on
    /// a camera with low-light boost (``isLowLightBoostSupported``, never here): setting `true`
    /// traps naming the check, as AVFoundation raises.
    public var automaticallyEnablesLowLightBoostWhenAvailable: Bool {
        get { false }
        set { Self.unsupported(newValue, "low-light boost", check: "isLowLightBoostSupported") }
    }

    /// Traps when `enabling` an unsupported feature, as AVFoundation raises; turning it off is fine.
    static func unsupported(_ enabling: Bool, _ feature: String, check: String) {
        if enabling {
            preconditionFailure("\(feature) is not supported by Linux cameras: check \(check) first (it is false)")
        }
    }

    /// Whether the camera can focus smoothly for video: `false` (UVC has no such mode).
    public var isSmoothAutoFocusSupported: Bool { false }
    /// Whether smooth autofocus is on: `false`; setting `true` traps (check ``isSmoothAutoFocusSupported``).
    public var isSmoothAutoFocusEnabled: Bool {
        get { false }
        set { Self.unsupported(newValue, "smooth autofocus", check: "isSmoothAutoFocusSupported") }
    }

    /// Whether autofocus can be restricted to near or far: `false`.
    public var isAutoFocusRangeRestrictionSupported: Bool { false }
    /// The autofocus range restriction: ``AutoFocusRangeRestriction/none``; setting another traps.
    public var autoFocusRangeRestriction: AutoFocusRangeRestriction {
        get { .none }
        set {
            Self.unsupported(
                newValue != .none, "autofocus range restriction", check: "isAutoFocusRangeRestrictionSupported")
        }
    }

    /// Where autofocus may search (`AVCaptureDevice.AutoFocusRangeRestriction`).
    public enum AutoFocusRangeRestriction: Int, Sendable, Hashable {
        /// Anywhere.
        case none = 0
        /// Near subjects.
        case near = 1
        /// Far subjects.
        case far = 2
    }

    /// Whether focus follows detected faces. Kept (default `true`, as AVFoundation's); Linux
    /// cameras detect no faces, so it changes nothing. Needs the configuration lock.
    public var isFaceDrivenAutoFocusEnabled: Bool {
        get { extras.withLock { $0.faceDrivenAutoFocus } }
        set {
            requireLockOrTrap("changing face-driven autofocus")
            extras.withLock { $0.faceDrivenAutoFocus = newValue }
        }
    }
    /// Whether the system decides ``isFaceDrivenAutoFocusEnabled``. Kept (default `true`).
    public var automaticallyAdjustsFaceDrivenAutoFocusEnabled: Bool {
        get { extras.withLock { $0.automaticallyAdjustsFaceDrivenAutoFocus } }
        set {
            requireLockOrTrap("changing face-driven autofocus")
            extras.withLock { $0.automaticallyAdjustsFaceDrivenAutoFocus = newValue }
        }
    }
    /// Whether exposure follows detected faces. Kept (default `true`), as ``isFaceDrivenAutoFocusEnabled``.
    public var isFaceDrivenAutoExposureEnabled: Bool {
        get { extras.withLock { $0.faceDrivenAutoExposure } }
        set {
            requireLockOrTrap("changing face-driven auto exposure")
            extras.withLock { $0.faceDrivenAutoExposure = newValue }
        }
    }
    /// Whether the system decides ``isFaceDrivenAutoExposureEnabled``. Kept (default `true`).
    public var automaticallyAdjustsFaceDrivenAutoExposureEnabled: Bool {
        get { extras.withLock { $0.automaticallyAdjustsFaceDrivenAutoExposure } }
        set {
            requireLockOrTrap("changing face-driven auto exposure")
            extras.withLock { $0.automaticallyAdjustsFaceDrivenAutoExposure = newValue }
        }
    }

    /// The nearest focus distance in millimetres: −1, unknown (webcams do not report it).
    public var minimumFocusDistance: Int { -1 }

    /// Whether a focus rectangle of interest can be set: `false`.
    public var isFocusRectOfInterestSupported: Bool { false }
    /// The focus rectangle of interest (normalized): the whole frame; setting it traps (check
    /// ``isFocusRectOfInterestSupported``).
    public var focusRectOfInterest: CGRect {
        get { extras.withLock { $0.focusRect } }
        set { Self.unsupported(true, "a focus rectangle of interest", check: "isFocusRectOfInterestSupported") }
    }
    /// The smallest focus rectangle: zero (unsupported).
    public var minFocusRectOfInterestSize: CGSize { .zero }
    /// The rectangle focus would use around `pointOfInterest`: `CGRect.null` (unsupported).
    public func defaultRectForFocusPoint(ofInterest pointOfInterest: CGPoint) -> CGRect { .null }

    /// Whether an exposure rectangle of interest can be set: `false`.
    public var isExposureRectOfInterestSupported: Bool { false }
    /// The exposure rectangle of interest (normalized): the whole frame; setting it traps.
    public var exposureRectOfInterest: CGRect {
        get { extras.withLock { $0.exposureRect } }
        set { Self.unsupported(true, "an exposure rectangle of interest", check: "isExposureRectOfInterestSupported") }
    }
    /// The smallest exposure rectangle: zero (unsupported).
    public var minExposureRectOfInterestSize: CGSize { .zero }
    /// The rectangle exposure would use around `pointOfInterest`: `CGRect.null` (unsupported).
    public func defaultRectForExposurePoint(ofInterest pointOfInterest: CGPoint) -> CGRect { .null }

    /// Whether global tone mapping is on: `false`; setting `true` traps (no format supports it).
    public var isGlobalToneMappingEnabled: Bool {
        get { false }
        set { Self.unsupported(newValue, "global tone mapping", check: "activeFormat.isGlobalToneMappingSupported") }
    }
    /// Whether video HDR is on: `false`; setting `true` traps (no format supports it).
    public var isVideoHDREnabled: Bool {
        get { false }
        set { Self.unsupported(newValue, "video HDR", check: "activeFormat.isVideoHDRSupported") }
    }
    /// Whether the system decides ``isVideoHDREnabled``. Kept (default `true`).
    public var automaticallyAdjustsVideoHDREnabled: Bool {
        get { extras.withLock { $0.automaticallyAdjustsVideoHDR } }
        set { extras.withLock { $0.automaticallyAdjustsVideoHDR = newValue } }
    }

    /// Whether geometric distortion correction can be turned on: `false`.
    public var isGeometricDistortionCorrectionSupported: Bool { false }
    /// Whether geometric distortion correction is on: `false`; setting `true` traps.
    public var isGeometricDistortionCorrectionEnabled: Bool {
        get { false }
        set {
            Self.unsupported(
                newValue, "geometric distortion correction", check: "isGeometricDistortionCorrectionSupported")
        }
    }

    /// The colour space frames are in: ``CaptureColorSpace/sRGB``; setting another traps.
    public var activeColorSpace: CaptureColorSpace {
        get { .sRGB }
        set {
            Self.unsupported(newValue != .sRGB, "colour space \(newValue)", check: "activeFormat.supportedColorSpaces")
        }
    }

    /// Whether this is an iPhone used as a camera by a Mac: `false`.
    public var isContinuityCamera: Bool { false }
}

/// A colour space frames can be captured in (`AVCaptureColorSpace`).
public enum CaptureColorSpace: Int, Sendable, Hashable {
    /// sRGB (every Linux camera's).
    case sRGB = 0
    /// Display P3.
    case P3_D65 = 1
    /// BT.2020 with HLG.
    case HLG_BT2020 = 2
    /// Apple Log.
    case appleLog = 3
    /// Apple Log 2.
    case appleLog2 = 4
}

extension CaptureDevice.DeviceType {
    /// The built-in microphone (AVFoundation's name before iOS 17): ``microphone``.
    public static var builtInMicrophone: Self { .microphone }
    /// The dual camera's earlier name: ``builtInDualCamera``.
    public static var builtInDuoCamera: Self { .builtInDualCamera }
}

// MARK: Zoom ramps

extension CaptureDevice {
    /// Whether a zoom ramp is under way.
    public var isRampingVideoZoom: Bool { extras.withLock { $0.zoomRamp != nil } }

    /// Zooms smoothly to `factor` at `rate`, in powers of two per second (1 doubles or halves
    /// the factor each second), as AVFoundation does; the ramp goes on after
    /// ``unlockForConfiguration()`` and ends at `factor`, at ``cancelVideoZoomRamp()`` or when
    /// ``videoZoomFactor`` is set. A camera zooming digitally moves the factor frame by frame,
    /// by each frame's timestamp (the first frame after this call is the ramp's time zero), so
    /// the ramp advances while the camera streams; one with a zoom control steps the control. Needs the configuration lock; `factor` out of range, or a
    /// camera without zoom, traps naming the fix (``rampVideoZoom(to:rate:)`` throws instead).
    public func ramp(toVideoZoomFactor factor: CGFloat, withRate rate: Float) {
        applySetting("rampVideoZoom(to:rate:)") { () throws(CaptureError) in
            try rampVideoZoom(to: Double(factor), rate: rate)
        }
    }

    /// Starts a zoom ramp to `factor` at `rate` (powers of two per second); see
    /// ``ramp(toVideoZoomFactor:withRate:)``. Throws instead of trapping.
    public func rampVideoZoom(to factor: Double, rate: Float) throws(CaptureError) {
        try requireConfigurationLock("ramping the zoom")
        let maximum = Double(maxAvailableVideoZoomFactor)
        guard factor >= 1, factor <= maximum + 1e-9 else {
            throw CaptureError(
                .invalidArgument, "zoom factor \(factor) is out of range for '\(localizedName)': use 1 … \(maximum)")
        }
        guard rate > 0 else {
            throw CaptureError(.invalidArgument, "zoom rate \(rate) must be positive (powers of two per second)")
        }
        cancelVideoZoomRamp()
        let start = Double(videoZoomFactor)
        if abs(start - factor) < 1e-9 { return }
        if zoomsDigitally {
            extras.withLock { $0.zoomRamp = ZoomRamp(start: start, target: factor, rate: rate) }
            _keyValueObservers.recheck()
            return
        }
        let begin = HostClock().now().seconds
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
        let ramp = ZoomRamp(timer: timer)
        timer.setEventHandler { [weak self] in
            guard let self else { return timer.cancel() }
            let step = Self.zoomRampStep(
                from: start, to: factor, rate: rate, elapsed: HostClock().now().seconds - begin)
            let failed: Bool
            do {
                try self.applyZoomStep(step.factor)
                failed = false
            } catch {
                failed = true
            }
            if step.done || failed { self.endZoomRamp(ramp) }
        }
        extras.withLock { $0.zoomRamp = ramp }
        timer.schedule(deadline: .now(), repeating: .milliseconds(16))
        timer.resume()
    }

    /// The factor a ramp from `start` to `target` at `rate` (powers of two per second) is at
    /// `elapsed` seconds in, and whether it has arrived: `start · 2^(±rate · elapsed)`, stopping
    /// at `target`.
    package static func zoomRampStep(from start: Double, to target: Double, rate: Float, elapsed: Double) -> (
        factor: Double, done: Bool
    ) {
        let direction: Double = target > start ? 1 : -1
        let next = start * pow(2, direction * Double(rate) * max(elapsed, 0))
        let done = direction > 0 ? next >= target : next <= target
        return (done ? target : next, done)
    }

    /// Stops a zoom ramp where it is.
    public func cancelVideoZoomRamp() {
        if let ramp = extras.withLock({ $0.zoomRamp }) { endZoomRamp(ramp) }
    }

    private func endZoomRamp(_ ramp: ZoomRamp) {
        ramp.timer?.cancel()
        extras.withLock { if $0.zoomRamp === ramp { $0.zoomRamp = nil } }
        _keyValueObservers.recheck()
    }

    /// The factor by which to multiply zoom factors to show them to people: 1.
    public var displayVideoZoomFactorMultiplier: CGFloat { 1 }
    /// The zoom factor at which a dual camera switches lenses: 1 (no dual cameras).
    public var dualCameraSwitchOverVideoZoomFactor: CGFloat { 1 }
}

/// A range of zoom factors (`AVZoomRange`).
///
/// Thread safety: immutable; freely sendable.
public final class ZoomRange: Sendable {
    /// The smallest factor.
    public let minZoomFactor: CGFloat
    /// The largest factor.
    public let maxZoomFactor: CGFloat
    /// The range `minZoomFactor` … `maxZoomFactor`.
    public init(minZoomFactor: CGFloat, maxZoomFactor: CGFloat) {
        self.minZoomFactor = minZoomFactor
        self.maxZoomFactor = maxZoomFactor
    }
    /// Whether `zoomFactor` lies in the range.
    public func containsZoomFactor(_ zoomFactor: CGFloat) -> Bool {
        zoomFactor >= minZoomFactor && zoomFactor <= maxZoomFactor
    }
}
