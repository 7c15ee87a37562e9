/// A backend whose device has controls. It declares what it has in neutral terms (Viewfinder's
/// control IDs, AVFoundation's modes and units) and maps them to its own driver's control IDs,
/// menu values and units (in the backend's own folder). Devices whose backend is not
/// controllable report every control unsupported.
///
/// ``CaptureDevice`` checks the configuration lock, support and ranges before it calls these;
/// the backend rounds to its own steps.
///
/// Thread safety: as ``DeviceBackend``.
package protocol ControllableBackend: DeviceBackend {
    /// The device's generic controls now (flags such as inactive are current).
    func controls() throws(CaptureError) -> [CaptureDevice.Control]
    /// The device's generic controls, possibly from a cache (for support checks).
    func cachedControls() -> [CaptureDevice.Control]
    /// Reads a generic control.
    func value(of id: CaptureDevice.Control.ID) throws(CaptureError) -> Int
    /// Writes a generic control.
    func setValue(_ value: Int, for id: CaptureDevice.Control.ID) throws(CaptureError)

    /// Which camera controls the device has and their ranges, possibly from a cache.
    func cameraCapabilities() -> CameraCapabilities
    /// Reads one camera setting (`key`); the result carries the same key.
    func read(_ key: CameraSetting.Key) throws(CaptureError) -> CameraSetting
    /// Applies one camera setting. ``CameraSetting/lensPosition(_:)`` and
    /// ``CameraSetting/whiteBalanceTemperature(_:)`` also lock focus or white balance,
    /// ``CameraSetting/exposureDuration(_:)`` switches to custom exposure.
    func apply(_ setting: CameraSetting) throws(CaptureError)
}

/// What a device's camera controls can do, in AVFoundation's terms and units.
///
/// Thread safety: a value type.
package struct CameraCapabilities: Sendable, Hashable {
    /// The focus modes the device offers.
    package var focusModes: Set<CaptureDevice.FocusMode> = []
    /// Whether focus can be locked at a lens position.
    package var lensPosition = false
    /// The exposure modes the device offers.
    package var exposureModes: Set<CaptureDevice.ExposureMode> = []
    /// The shortest and longest custom exposure durations, if custom exposure is offered.
    package var exposureDurations: ClosedRange<MediaTime>?
    /// The white-balance modes the device offers.
    package var whiteBalanceModes: Set<CaptureDevice.WhiteBalanceMode> = []
    /// The colour temperatures white balance can be locked at, in kelvin.
    package var whiteBalanceTemperatures: ClosedRange<Int>?
    /// The largest zoom factor; `nil` without zoom.
    package var maxZoomFactor: Double?
    /// The torch modes the device offers (empty without a torch).
    package var torchModes: Set<CaptureDevice.TorchMode> = []
    /// The anti-flicker settings the device offers.
    package var powerLineFrequencies: Set<CaptureDevice.PowerLineFrequency> = []

    /// No capability; a backend adds what its device has.
    package init() {}
}

/// One camera setting with its value, in AVFoundation's units.
///
/// Thread safety: a value type.
package enum CameraSetting: Sendable, Hashable {
    /// How the camera focuses.
    case focusMode(CaptureDevice.FocusMode)
    /// The lens position, 0 (nearest) … 1 (furthest).
    case lensPosition(Float)
    /// How the camera sets exposure.
    case exposureMode(CaptureDevice.ExposureMode)
    /// The exposure time.
    case exposureDuration(MediaTime)
    /// How the camera balances white.
    case whiteBalanceMode(CaptureDevice.WhiteBalanceMode)
    /// The white-balance colour temperature in kelvin.
    case whiteBalanceTemperature(Int)
    /// The zoom factor, 1…
    case zoomFactor(Double)
    /// What the torch does.
    case torchMode(CaptureDevice.TorchMode)
    /// The mains frequency flicker is cancelled for.
    case powerLineFrequency(CaptureDevice.PowerLineFrequency)

    /// Names a setting without a value.
    package enum Key: Sendable, Hashable, CaseIterable {
        case focusMode, lensPosition, exposureMode, exposureDuration, whiteBalanceMode, whiteBalanceTemperature
        case zoomFactor, torchMode, powerLineFrequency
    }

    /// Which setting this is.
    package var key: Key {
        switch self {
        case .focusMode: return .focusMode
        case .lensPosition: return .lensPosition
        case .exposureMode: return .exposureMode
        case .exposureDuration: return .exposureDuration
        case .whiteBalanceMode: return .whiteBalanceMode
        case .whiteBalanceTemperature: return .whiteBalanceTemperature
        case .zoomFactor: return .zoomFactor
        case .torchMode: return .torchMode
        case .powerLineFrequency: return .powerLineFrequency
        }
    }
}
