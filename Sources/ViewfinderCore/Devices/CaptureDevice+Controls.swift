import Foundation

/// Focus, exposure, white balance, zoom, torch and anti-flicker, AVFoundation-style and in its
/// units (seconds, kelvin, zoom factors from 1, lens positions 0…1); the backend maps them to its
/// device's controls. Setters need the configuration lock; a mode or control the device lacks
/// throws ``CaptureError/Code/unsupportedControl`` (check the matching `is…Supported` first),
/// never fails silently. The virtual camera supports none of them.
extension CaptureDevice {
    private var controllable: (any ControllableBackend)? { backend as? any ControllableBackend }
    private var capabilities: CameraCapabilities { controllable?.cameraCapabilities() ?? CameraCapabilities() }
    private func current(_ key: CameraSetting.Key) -> CameraSetting? { try? controllable?.read(key) }

    /// Applies `setting` after the lock check, or throws unsupported when the device is not controllable.
    private func apply(_ setting: CameraSetting, _ what: String) throws(CaptureError) {
        guard let controllable else { throw unsupportedControl(what) }
        try controllable.apply(setting)
        _keyValueObservers.recheck()  // properties observed without a name (torchMode, …)
    }

    // MARK: Focus

    /// How the camera focuses (the counterpart of `AVCaptureDevice.FocusMode`).
    public enum FocusMode: Int, Sendable, Hashable {
        /// Focus stays where it is (or where ``setFocusModeLocked(lensPosition:)`` put it).
        case locked = 0
        /// Focus once, then lock (not offered by UVC cameras).
        case autoFocus = 1
        /// Keep focusing as the scene changes.
        case continuousAutoFocus = 2
    }

    /// Whether the camera can focus in `mode`.
    public func isFocusModeSupported(_ mode: FocusMode) -> Bool { capabilities.focusModes.contains(mode) }

    /// The focus mode now (``FocusMode/locked`` for fixed-focus cameras). Setting it behaves as
    /// AVFoundation: without the configuration lock, or for a mode the camera lacks, it traps
    /// naming the fix; ``setFocusMode(_:)`` throws instead.
    public var focusMode: FocusMode {
        get {
            if case .focusMode(let mode) = current(.focusMode) { return mode }
            return .locked
        }
        set { applySetting("setFocusMode(_:)") { () throws(CaptureError) in try setFocusMode(newValue) } }
    }

    /// Sets the focus mode. Requires the configuration lock.
    public func setFocusMode(_ mode: FocusMode) throws(CaptureError) {
        try requireConfigurationLock("changing the focus mode")
        guard isFocusModeSupported(mode) else { throw unsupportedControl("focus mode \(mode)") }
        try apply(.focusMode(mode), "focus mode \(mode)")
    }

    /// Whether ``setFocusModeLocked(lensPosition:)`` works (the camera has a focus position control).
    public var isLockingFocusWithCustomLensPositionSupported: Bool { capabilities.lensPosition }

    /// The lens position from 0 (nearest) to 1 (furthest), as AVFoundation counts it; 0 when the
    /// camera has no focus position control.
    public var lensPosition: Float {
        if case .lensPosition(let position) = current(.lensPosition) { return position }
        return 0
    }

    /// Locks focus at `lensPosition` (0 nearest … 1 furthest). Requires the configuration lock.
    public func setFocusModeLocked(lensPosition: Float) throws(CaptureError) {
        try requireConfigurationLock("locking focus")
        guard isLockingFocusWithCustomLensPositionSupported else { throw unsupportedControl("focus position control") }
        guard (0...1).contains(lensPosition) else {
            throw CaptureError(
                .invalidArgument, "lens position \(lensPosition) is out of range: use 0 (nearest) … 1 (furthest)")
        }
        try apply(.lensPosition(lensPosition), "focus position control")
    }

    // MARK: Exposure

    /// How the camera sets exposure (the counterpart of `AVCaptureDevice.ExposureMode`).
    public enum ExposureMode: Int, Sendable, Hashable {
        /// Exposure stays where it is.
        case locked = 0
        /// Expose once, then lock (not offered by UVC cameras).
        case autoExpose = 1
        /// Keep adjusting exposure.
        case continuousAutoExposure = 2
        /// Exposure time set by ``setExposureModeCustom(duration:)``.
        case custom = 3
    }

    /// Whether the camera can expose in `mode`.
    public func isExposureModeSupported(_ mode: ExposureMode) -> Bool { capabilities.exposureModes.contains(mode) }

    /// The exposure mode now: ``ExposureMode/custom`` when exposure is manual,
    /// ``ExposureMode/continuousAutoExposure`` otherwise (also for cameras without exposure controls).
    /// Setting it traps on misuse, as AVFoundation raises; ``setExposureMode(_:)`` throws instead.
    public var exposureMode: ExposureMode {
        get {
            guard case .exposureMode(let mode) = current(.exposureMode) else { return .continuousAutoExposure }
            // Camera drivers have one manual mode: report it as the one last chosen (locked or custom).
            return mode == .custom && extras.withLock({ $0.exposureLocked }) ? .locked : mode
        }
        set { applySetting("setExposureMode(_:)") { () throws(CaptureError) in try setExposureMode(newValue) } }
    }

    /// Sets the exposure mode: ``ExposureMode/locked`` keeps the current exposure time.
    /// Requires the configuration lock.
    public func setExposureMode(_ mode: ExposureMode) throws(CaptureError) {
        try requireConfigurationLock("changing the exposure mode")
        guard isExposureModeSupported(mode) else { throw unsupportedControl("exposure mode \(mode)") }
        try apply(.exposureMode(mode), "exposure mode \(mode)")
        extras.withLock { $0.exposureLocked = mode == .locked }
    }

    /// The exposure time now; ``MediaTime/invalid`` when the camera has no exposure time control.
    public var exposureDuration: MediaTime {
        if case .exposureDuration(let duration) = current(.exposureDuration) { return duration }
        return .invalid
    }

    /// The shortest exposure time ``setExposureModeCustom(duration:)`` takes.
    public var minExposureDuration: MediaTime {
        capabilities.exposureDurations?.lowerBound ?? .invalid
    }

    /// The longest exposure time ``setExposureModeCustom(duration:)`` takes.
    public var maxExposureDuration: MediaTime {
        capabilities.exposureDurations?.upperBound ?? .invalid
    }

    /// Switches to manual exposure of `duration` (rounded to the camera's steps).
    /// Requires the configuration lock.
    public func setExposureModeCustom(duration: MediaTime) throws(CaptureError) {
        try requireConfigurationLock("setting the exposure time")
        guard isExposureModeSupported(.custom), let range = capabilities.exposureDurations else {
            throw unsupportedControl("manual exposure control")
        }
        // Compared in seconds: the device's steps may not be representable in the caller's timescale.
        guard duration.isNumeric, duration.seconds >= range.lowerBound.seconds - 1e-9,
            duration.seconds <= range.upperBound.seconds + 1e-9
        else {
            throw CaptureError(
                .invalidArgument,
                "exposure time \(duration.seconds)s is out of range for '\(localizedName)': use \(minExposureDuration.seconds)s … \(maxExposureDuration.seconds)s"
            )
        }
        try apply(.exposureDuration(duration), "manual exposure control")
        extras.withLock { $0.exposureLocked = false }
    }

    // MARK: White balance

    /// How the camera balances colour (the counterpart of `AVCaptureDevice.WhiteBalanceMode`).
    public enum WhiteBalanceMode: Int, Sendable, Hashable {
        /// White balance stays where it is (or at the temperature set).
        case locked = 0
        /// Balance once, then lock (not offered by UVC cameras).
        case autoWhiteBalance = 1
        /// Keep balancing.
        case continuousAutoWhiteBalance = 2
    }

    /// Whether the camera can balance white in `mode`.
    public func isWhiteBalanceModeSupported(_ mode: WhiteBalanceMode) -> Bool {
        capabilities.whiteBalanceModes.contains(mode)
    }

    /// The white-balance mode now. Setting it traps on misuse, as AVFoundation raises;
    /// ``setWhiteBalanceMode(_:)`` throws instead.
    public var whiteBalanceMode: WhiteBalanceMode {
        get {
            if case .whiteBalanceMode(let mode) = current(.whiteBalanceMode) { return mode }
            return .locked
        }
        set { applySetting("setWhiteBalanceMode(_:)") { () throws(CaptureError) in try setWhiteBalanceMode(newValue) } }
    }

    /// Sets the white-balance mode. Requires the configuration lock.
    public func setWhiteBalanceMode(_ mode: WhiteBalanceMode) throws(CaptureError) {
        try requireConfigurationLock("changing the white-balance mode")
        guard isWhiteBalanceModeSupported(mode) else { throw unsupportedControl("white-balance mode \(mode)") }
        try apply(.whiteBalanceMode(mode), "white-balance mode \(mode)")
    }

    /// The white-balance colour temperature in kelvin; `nil` without a temperature control.
    public var whiteBalanceTemperature: Int? {
        if case .whiteBalanceTemperature(let kelvin) = current(.whiteBalanceTemperature) { return kelvin }
        return nil
    }

    /// The colour temperatures, in kelvin, ``setWhiteBalanceModeLocked(temperature:)`` takes;
    /// `nil` without a temperature control.
    public var whiteBalanceTemperatureRange: ClosedRange<Int>? { capabilities.whiteBalanceTemperatures }

    /// Locks white balance at `kelvin`. Requires the configuration lock.
    public func setWhiteBalanceModeLocked(temperature kelvin: Int) throws(CaptureError) {
        try requireConfigurationLock("setting the white-balance temperature")
        guard let range = whiteBalanceTemperatureRange else {
            throw unsupportedControl("white-balance temperature control")
        }
        guard range.contains(kelvin) else {
            throw CaptureError(
                .invalidArgument,
                "\(kelvin) K is out of range for '\(localizedName)': use \(range.lowerBound) … \(range.upperBound) K")
        }
        try apply(.whiteBalanceTemperature(kelvin), "white-balance temperature control")
    }

    // MARK: Zoom

    /// The smallest zoom factor: 1.
    public var minAvailableVideoZoomFactor: CGFloat { 1 }

    /// The largest zoom factor: the zoom control's on a camera with one; else the digital zoom's
    /// (``Format/videoMaxZoomFactor`` of ``activeFormat``: 16 for raw formats, 1 for Motion-JPEG).
    public var maxAvailableVideoZoomFactor: CGFloat {
        if let optical = capabilities.maxZoomFactor { return CGFloat(optical) }
        return activeFormat.videoMaxZoomFactor
    }

    /// Whether the camera zooms digitally (it has no zoom control): frames are cropped to their
    /// centre and scaled back (``DigitalZoom``).
    package var zoomsDigitally: Bool { capabilities.maxZoomFactor == nil }

    /// The zoom factor now. A camera with a zoom control reports the control's value; one
    /// without zooms digitally, as AVFoundation does beyond the optics: frames of every output
    /// show the centre `1/videoZoomFactor` of the picture, scaled to the full size. Setting it
    /// traps on misuse (no lock, out of range), as AVFoundation raises; ``setVideoZoomFactor(_:)``
    /// throws instead. Setting it ends a ramp (``ramp(toVideoZoomFactor:withRate:)``).
    public var videoZoomFactor: CGFloat {
        get {
            guard !zoomsDigitally else { return CGFloat(extras.withLock { $0.digitalZoomFactor }) }
            if case .zoomFactor(let factor) = current(.zoomFactor) { return CGFloat(factor) }
            return 1
        }
        set { applySetting("setVideoZoomFactor(_:)") { () throws(CaptureError) in try setVideoZoomFactor(newValue) } }
    }

    /// Zooms to `factor` (``minAvailableVideoZoomFactor`` … ``maxAvailableVideoZoomFactor``),
    /// ending a ramp under way. Requires the configuration lock.
    public func setVideoZoomFactor(_ factor: CGFloat) throws(CaptureError) {
        let factor = Double(factor)
        try requireConfigurationLock("zooming")
        guard let maximum = capabilities.maxZoomFactor else {
            let maximum = Double(activeFormat.videoMaxZoomFactor)
            guard factor >= 1, factor <= maximum + 1e-9 else {
                throw CaptureError(
                    .invalidArgument,
                    "zoom factor \(factor) is out of range for '\(localizedName)' in \(activeFormat): use 1 … \(maximum)"
                        + (maximum > 1 ? "" : " (Motion-JPEG frames are not zoomed digitally: choose a raw format)"))
            }
            cancelVideoZoomRamp()
            extras.withLock { $0.digitalZoomFactor = factor }
            _keyValueObservers.recheck()
            return
        }
        guard factor >= 1, factor <= maximum + 1e-9 else {
            throw CaptureError(
                .invalidArgument,
                "zoom factor \(factor) is out of range for '\(localizedName)': use 1 … \(maximum)")
        }
        cancelVideoZoomRamp()
        try apply(.zoomFactor(factor), "zoom control")
    }

    /// The digital zoom factor for the frame stamped `time` (called once per device frame by
    /// ``SharedDeviceStream``): a digital ramp under way moves the factor to
    /// `start · 2^(±rate · (time − first ramp frame's time))`, by the frames' own timestamps,
    /// and ends at its target. 1 (no work) on a camera with a zoom control.
    package func digitalZoomFactor(forFrameAt time: MediaTime) -> Double {
        let (factor, ramped) = extras.withLock { extras -> (Double, Bool) in
            guard let ramp = extras.zoomRamp, ramp.timer == nil else { return (extras.digitalZoomFactor, false) }
            let begin = ramp.begin ?? time
            ramp.begin = begin
            let step = Self.zoomRampStep(
                from: ramp.start, to: ramp.target, rate: ramp.rate, elapsed: (time - begin).seconds)
            extras.digitalZoomFactor = step.factor
            if step.done { extras.zoomRamp = nil }
            return (step.factor, true)
        }
        if ramped {
            // Observers of the factor (and of the ramp's end) never run on the capture thread.
            DispatchQueue.global().async { [self] in _keyValueObservers.recheck() }
        }
        return factor
    }

    /// One step of a zoom ramp: applies `factor` without the configuration lock (the ramp was
    /// started under it, as AVFoundation's), clamped to the camera's range.
    package func applyZoomStep(_ factor: Double) throws(CaptureError) {
        guard let maximum = capabilities.maxZoomFactor else { throw unsupportedControl("zoom control") }
        try apply(.zoomFactor(min(max(factor, 1), maximum)), "zoom control")
    }

    // MARK: Torch

    /// What the torch (the camera's LED, where the driver has an LED control) does.
    public enum TorchMode: Int, Sendable, Hashable {
        /// Off.
        case off = 0
        /// On, continuously.
        case on = 1
        /// On when dark (not offered by UVC cameras' LED controls).
        case auto = 2
    }

    /// Whether the camera has a torch (an LED it can keep on).
    public var hasTorch: Bool { capabilities.torchModes.contains(.on) }

    /// Whether the torch can be set to `mode`.
    public func isTorchModeSupported(_ mode: TorchMode) -> Bool { capabilities.torchModes.contains(mode) }

    /// The torch mode now (``TorchMode/off`` without a torch). Setting it traps on misuse, as
    /// AVFoundation raises; ``setTorchMode(_:)`` throws instead.
    public var torchMode: TorchMode {
        get {
            if case .torchMode(let mode) = current(.torchMode) { return mode }
            return .off
        }
        set { applySetting("setTorchMode(_:)") { () throws(CaptureError) in try setTorchMode(newValue) } }
    }

    /// Turns the torch on or off. Requires the configuration lock.
    public func setTorchMode(_ mode: TorchMode) throws(CaptureError) {
        try requireConfigurationLock("changing the torch mode")
        guard isTorchModeSupported(mode) else { throw unsupportedControl("torch mode \(mode)") }
        try apply(.torchMode(mode), "torch mode \(mode)")
    }

    // MARK: Anti-flicker

    /// The mains frequency the camera cancels flicker for.
    public enum PowerLineFrequency: Sendable, Hashable, CaseIterable {
        /// No flicker cancellation.
        case disabled
        /// 50 Hz mains (Europe, most of Asia and Africa).
        case fiftyHertz
        /// 60 Hz mains (the Americas, parts of Asia).
        case sixtyHertz
        /// The camera detects it.
        case automatic
    }

    /// Whether the camera can cancel flicker for `frequency`.
    public func isPowerLineFrequencySupported(_ frequency: PowerLineFrequency) -> Bool {
        capabilities.powerLineFrequencies.contains(frequency)
    }

    /// The anti-flicker setting now; `nil` without the control.
    public var powerLineFrequency: PowerLineFrequency? {
        if case .powerLineFrequency(let frequency) = current(.powerLineFrequency) { return frequency }
        return nil
    }

    /// Sets the anti-flicker frequency. Requires the configuration lock.
    public func setPowerLineFrequency(_ frequency: PowerLineFrequency) throws(CaptureError) {
        try requireConfigurationLock("changing the power-line frequency")
        guard isPowerLineFrequencySupported(frequency) else {
            throw unsupportedControl("power-line frequency \(frequency)")
        }
        try apply(.powerLineFrequency(frequency), "power-line frequency \(frequency)")
    }
}
