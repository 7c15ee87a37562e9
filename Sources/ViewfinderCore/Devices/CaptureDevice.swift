import Synchronization

/// A camera: what it is, the formats it offers, and its active configuration (the counterpart
/// of `AVCaptureDevice`).
///
/// Get devices from ``default(for:)``, ``devices(for:)`` or a ``DiscoverySession``. To change the
/// active format or frame rate, take the configuration lock first:
///
/// ```swift
/// let camera = CaptureDevice.default(for: .video)!
/// try camera.lockForConfiguration()
/// try camera.setActiveFormat(camera.formats[0])
/// try camera.setActiveVideoMinFrameDuration(MediaTime(value: 1, timescale: 15))
/// camera.unlockForConfiguration()
/// ```
///
/// Thread safety: all members may be used from any thread; configuration changes are serialised
/// by an internal lock.
public final class CaptureDevice: Sendable, Hashable, CustomStringConvertible {
    /// The kind of device, as discovery sessions filter it (the counterpart of
    /// `AVCaptureDevice.DeviceType`). Linux tells built-in from external cameras (see
    /// ``position``); the multi-camera and depth types of Apple's hardware exist so ported
    /// lookups compile, and find nothing.
    public enum DeviceType: String, Sendable, Hashable, CaseIterable {
        /// A camera on a bus that can be unplugged (USB/UVC webcams).
        case external
        /// A camera built into the machine: a USB camera on a port the firmware marks fixed (a
        /// laptop's), or a platform/CSI camera.
        case builtInWideAngleCamera
        /// Viewfinder's virtual test-pattern camera.
        case virtual
        /// A microphone: an ALSA capture device or Viewfinder's virtual microphone
        /// (`AVCaptureDevice.DeviceType.microphone`).
        case microphone
        /// Apple's wide + telephoto pair: no Linux camera is one.
        case builtInDualCamera
        /// Apple's wide + ultra-wide pair: no Linux camera is one.
        case builtInDualWideCamera
        /// Apple's three-camera module: no Linux camera is one.
        case builtInTripleCamera
        /// Apple's telephoto camera: no Linux camera is one.
        case builtInTelephotoCamera
        /// Apple's ultra-wide camera: no Linux camera is one.
        case builtInUltraWideCamera
        /// Apple's TrueDepth camera: no Linux camera is one.
        case builtInTrueDepthCamera
        /// Apple's LiDAR depth camera: no Linux camera is one.
        case builtInLiDARDepthCamera
        /// An iPhone used as a Mac's camera: none on Linux.
        case continuityCamera
        /// The Desk View camera: none on Linux.
        case deskViewCamera
    }

    /// Which way the camera faces (the counterpart of `AVCaptureDevice.Position`): ``front`` for
    /// a built-in laptop camera (it faces the user), ``unspecified`` for webcams and the virtual
    /// camera. Linux has no rear cameras it can tell apart.
    public enum Position: Int, Sendable, Hashable {
        /// Unknown or not applicable (webcams, the virtual camera).
        case unspecified = 0
        /// Facing away from the user.
        case back = 1
        /// Facing the user.
        case front = 2
    }

    package let backend: any DeviceBackend

    private struct Configuration {
        var activeFormat: Format
        var activeVideoMinFrameDuration: MediaTime
        var minFrameDurationWasSet = false
        var formatWasSet = false
        var lockCount = 0
        var owner: ObjectIdentifier?
        var ownerSession: WeakReference<CaptureSession>?
        /// Sessions interrupted by another session's claim, waiting to resume.
        var waiting: [WeakReference<CaptureSession>] = []
    }
    private let configuration: Mutex<Configuration>
    /// Settings of the porting surface that have no Linux effect (points of interest, …).
    package let extras = Mutex(DeviceExtras())
    /// Key-value observers (`Porting/KeyValueObserving+Capture.swift`).
    package let porting = PortingState(())
    /// Camera profile settings (`CaptureDevice+Profiles.swift`).
    package let profiles = Mutex(ProfileState())

    package init(backend: any DeviceBackend) {
        self.backend = backend
        let first =
            backend.formats.first
            ?? Format(pixelFormat: .bgra, width: 0, height: 0, frameRateRanges: [])
        configuration = Mutex(
            Configuration(activeFormat: first, activeVideoMinFrameDuration: first.minFrameDuration))
    }

    /// An identifier that stays the same for the same camera (built from the bus path where there is one).
    public var uniqueID: String { backend.uniqueID }
    /// The camera's name, for people.
    public var localizedName: String { backend.localizedName }
    /// The model (a driver name, say).
    public var modelID: String { backend.modelID }
    /// The maker, where known.
    public var manufacturer: String { backend.manufacturer }
    /// The kind of device.
    public var deviceType: DeviceType { backend.deviceType }
    /// Which way the camera faces.
    public var position: Position { backend.position }
    /// Whether the camera is still attached.
    public var isConnected: Bool { backend.isConnected }
    /// Every format the device offers.
    public var formats: [Format] { backend.formats }

    /// The media the device produces (``MediaType/video`` for cameras).
    public var mediaTypes: [MediaType] { backend.mediaTypes }

    /// Whether the device produces media of `mediaType`.
    public func hasMediaType(_ mediaType: MediaType) -> Bool { mediaTypes.contains(mediaType) }

    /// The format the device captures in. Setting it behaves as AVFoundation: without the
    /// configuration lock, or to a format the device does not offer, it traps naming the fix;
    /// ``setActiveFormat(_:)`` throws instead.
    public var activeFormat: Format {
        get { configuration.withLock { $0.activeFormat } }
        set { applySetting("setActiveFormat(_:)") { () throws(CaptureError) in try setActiveFormat(newValue) } }
    }

    /// The shortest time between frames: the device runs at `1 / activeVideoMinFrameDuration`
    /// frames per second. Setting it traps on misuse (no lock, a rate the format lacks), as
    /// AVFoundation raises; ``setActiveVideoMinFrameDuration(_:)`` throws instead. `.invalid`
    /// restores the format's default.
    public var activeVideoMinFrameDuration: MediaTime {
        get { configuration.withLock { $0.activeVideoMinFrameDuration } }
        set {
            applySetting("setActiveVideoMinFrameDuration(_:)") { () throws(CaptureError) in
                try setActiveVideoMinFrameDuration(newValue)
            }
        }
    }

    /// The longest time between frames. Linux cameras run at one fixed rate, so this is
    /// ``activeVideoMinFrameDuration``, and setting it sets that (same rules).
    public var activeVideoMaxFrameDuration: MediaTime {
        get { activeVideoMinFrameDuration }
        set { activeVideoMinFrameDuration = newValue }
    }

    /// Whether this process holds the configuration lock.
    public var isLockedForConfiguration: Bool { configuration.withLock { $0.lockCount > 0 } }

    /// Takes the configuration lock, needed to change ``activeFormat`` or
    /// ``activeVideoMinFrameDuration``. Nested calls must be balanced by
    /// ``unlockForConfiguration()``. Throws ``CaptureError/Code/deviceNotFound`` when the camera
    /// is gone.
    public func lockForConfiguration() throws(CaptureError) {
        guard backend.isConnected else {
            throw CaptureError(
                .deviceNotFound, "'\(localizedName)' is no longer connected: reconnect it or pick another device")
        }
        configuration.withLock { $0.lockCount += 1 }
    }

    /// Releases the configuration lock taken by ``lockForConfiguration()``.
    public func unlockForConfiguration() {
        configuration.withLock { $0.lockCount = max(0, $0.lockCount - 1) }
    }

    /// Makes `format` (one of ``formats``) the active format. Resets the frame duration to the
    /// format's fastest rate unless it supports the current one. Requires the configuration lock.
    ///
    /// Applies when set, as AVFoundation's does: on a running session the device's stream
    /// restarts in the new format (outputs convert to what they deliver, as at start). When an
    /// output cannot run on it, the previous format stays and the error is thrown.
    public func setActiveFormat(_ format: Format) throws(CaptureError) {
        guard formats.contains(format) else {
            throw CaptureError(
                .unsupportedFormat, "'\(localizedName)' does not offer \(format): pick one of its `formats`")
        }
        try applyToRunningSession { (config) throws(CaptureError) in
            guard config.lockCount > 0 else {
                throw CaptureError(
                    .configurationNotLocked,
                    "changing the active format of '\(localizedName)' needs the configuration lock: call lockForConfiguration() first"
                )
            }
            config.activeFormat = format
            config.formatWasSet = true
            if !format.supports(frameDuration: config.activeVideoMinFrameDuration) {
                config.activeVideoMinFrameDuration = format.minFrameDuration
                config.minFrameDurationWasSet = false
            }
        }
        endAutoVideoFrameRate()  // AVFoundation: a new active format resets it
        didChangeValue(for: \.activeFormat)
    }

    /// Sets the time between frames. `.invalid` restores the format's default (its fastest rate).
    /// The duration must lie in one of the active format's ``Format/videoSupportedFrameRateRanges``.
    /// Requires the configuration lock.
    public func setActiveVideoMinFrameDuration(_ duration: MediaTime) throws(CaptureError) {
        try applyToRunningSession { (config) throws(CaptureError) in
            guard config.lockCount > 0 else {
                throw CaptureError(
                    .configurationNotLocked,
                    "changing the frame duration of '\(localizedName)' needs the configuration lock: call lockForConfiguration() first"
                )
            }
            guard duration.isValid else {
                config.activeVideoMinFrameDuration = config.activeFormat.minFrameDuration
                config.minFrameDurationWasSet = false
                return
            }
            guard duration > .zero else {
                throw CaptureError(.invalidArgument, "a frame duration must be positive, got \(duration)")
            }
            guard config.activeFormat.supports(frameDuration: duration) else {
                throw CaptureError(
                    .unsupportedFormat,
                    "\(config.activeFormat) does not support frames \(duration.seconds)s apart (\(1 / duration.seconds) fps): pick a duration from its videoSupportedFrameRateRanges"
                )
            }
            config.activeVideoMinFrameDuration = duration
            config.minFrameDurationWasSet = true
        }
        endAutoVideoFrameRate()  // a fixed rate was asked for
    }

    /// Changes the configuration with `edit`, then — the one rule for settings — has the session
    /// streaming this device (if any) renegotiate now; restores the previous configuration and
    /// rethrows when the session cannot run the new one.
    private func applyToRunningSession(
        _ edit: (inout Configuration) throws(CaptureError) -> Void
    ) throws(CaptureError) {
        let (previous, session) = try configuration.withLock { (config) throws(CaptureError) in
            let previous = config
            try edit(&config)
            return (previous, config.ownerSession?.value)
        }
        guard let session else { return }
        do {
            try session.deviceConfigurationDidChange(self)
        } catch {
            configuration.withLock { config in
                config.activeFormat = previous.activeFormat
                config.activeVideoMinFrameDuration = previous.activeVideoMinFrameDuration
                config.formatWasSet = previous.formatWasSet
                config.minFrameDurationWasSet = previous.minFrameDurationWasSet
            }
            throw error
        }
    }

    /// The running session streaming the device, if any.
    package var streamingSession: CaptureSession? { configuration.withLock { $0.ownerSession?.value } }

    /// Whether the user chose the active format under the lock (the session then keeps it, as
    /// with the `.inputPriority` preset).
    package var userChoseFormat: Bool { configuration.withLock { $0.formatWasSet } }

    /// Whether the user chose the frame duration (as opposed to the format's default).
    package var userChoseFrameDuration: Bool { configuration.withLock { $0.minFrameDurationWasSet } }

    /// Applies a negotiated configuration (the session does this at commit/start time).
    package func applyNegotiated(format: Format, frameDuration: MediaTime) {
        configuration.withLock {
            $0.activeFormat = format
            $0.activeVideoMinFrameDuration = frameDuration
        }
    }

    /// Claims the device for one running session: `nil` when `session` has it now, else the
    /// session holding it (itself `nil` if that session is gone but its stream still stops).
    package func claim(for session: CaptureSession) -> CaptureSession?? {
        configuration.withLock {
            let id = ObjectIdentifier(session)
            if let owner = $0.owner, owner != id { return .some($0.ownerSession?.value) }
            $0.owner = id
            $0.ownerSession = WeakReference(session)
            return nil
        }
    }

    /// Gives up a claim taken by ``claim(for:)`` for the session with identity `session`; returns
    /// the sessions waiting for the device (interrupted by that claim), which may now take it.
    package func release(from session: ObjectIdentifier) -> [CaptureSession] {
        let waiting = configuration.withLock { config -> [WeakReference<CaptureSession>] in
            guard config.owner == session else { return [] }
            config.owner = nil
            config.ownerSession = nil
            defer { config.waiting = [] }
            return config.waiting
        }
        return waiting.compactMap(\.value)
    }

    /// Moves the claim from the session with identity `session` to `heir` (another session
    /// sharing the device's stream, when the holder leaves first); nothing if `session` does not
    /// hold it.
    package func transferClaim(from session: ObjectIdentifier, to heir: CaptureSession) {
        configuration.withLock { config in
            guard config.owner == session else { return }
            config.owner = ObjectIdentifier(heir)
            config.ownerSession = WeakReference(heir)
        }
    }

    /// Records that `session` waits for the device (it was interrupted by another session's claim).
    package func addWaiter(_ session: CaptureSession) {
        configuration.withLock { config in
            config.waiting.removeAll { $0.value == nil || $0.value === session }
            config.waiting.append(WeakReference(session))
        }
    }

    /// Whether the device supports a session preset. Presets choose video sizes: a device that
    /// produces no video (a microphone) supports every preset.
    public func supportsSessionPreset(_ preset: CaptureSession.Preset) -> Bool {
        preset == .inputPriority || !hasMediaType(.video)
            || preset.candidates(in: formats, decoding: true)?.isEmpty == false
    }

    public var description: String { "\(localizedName) [\(uniqueID)]" }

    public static func == (lhs: CaptureDevice, rhs: CaptureDevice) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
