import Synchronization

/// The link between an input's port and an output, made by the session when both are added
/// (the counterpart of `AVCaptureConnection`).
///
/// Thread safety: may be used from any thread; property changes apply between frames.
public final class CaptureConnection: Sendable {
    /// The ports feeding the connection (one: connections carry one media type).
    public let inputPorts: [CaptureInput.Port]
    /// The media the connection carries.
    public let mediaType: MediaType
    private let outputBox: WeakReference<CaptureOutput>
    private struct State {
        var enabled = true
        var active = false
        var rotationAngle: Double = 0
        var mirrored = false
        var preferredStabilization = CaptureVideoStabilizationMode.off
    }
    private let state = Mutex(State())
    /// The level meter behind ``audioChannels`` (audio connections only).
    package let audioMeter = Mutex(AudioMeterState())
    /// Key-value observers (`Porting/KeyValueObserving+Capture.swift`).
    package let porting = PortingState(())

    package init(inputPort: CaptureInput.Port, output: CaptureOutput) {
        self.inputPorts = [inputPort]
        self.mediaType = inputPort.mediaType
        self.outputBox = WeakReference(output)
    }

    /// A connection from `inputPorts` to `output`, for ``CaptureSession/addConnection(_:)`` after
    /// ``CaptureSession/addInputWithNoConnections(_:)`` and
    /// ``CaptureSession/addOutputWithNoConnections(_:)`` (a ``CaptureMultiCamSession`` is wired
    /// so). Connections carry one media type: give exactly one port
    /// (``CaptureSession/canAddConnection(_:)`` refuses others).
    public init(inputPorts: [CaptureInput.Port], output: CaptureOutput) {
        self.inputPorts = inputPorts
        self.mediaType = inputPorts.first?.mediaType ?? .video
        self.outputBox = WeakReference(output)
    }

    /// The output the connection feeds.
    public var output: CaptureOutput? { outputBox.value }

    /// Whether frames flow through the connection. Turn off to pause one output.
    public var isEnabled: Bool {
        get { state.withLock { $0.enabled } }
        set { state.withLock { $0.enabled = newValue } }
    }

    /// Whether frames are flowing now: the session is running, the connection and its input
    /// ports are enabled and its device is connected.
    public var isActive: Bool { state.withLock { $0.active && $0.enabled } && portsEnabled }

    /// Whether samples reaching the connection go on to its output: the connection and every
    /// input port it draws on are enabled (``CaptureInput/Port/isEnabled``, as in AVFoundation,
    /// pauses every connection of that port).
    package var passesSamples: Bool { isEnabled && portsEnabled }

    private var portsEnabled: Bool { inputPorts.allSatisfy(\.isEnabled) }

    package func setActive(_ active: Bool) { state.withLock { $0.active = active } }

    /// The clockwise rotation applied to frames, in degrees: 0 (the default), 90, 180 or 270.
    /// Rotation runs first in the output's processor chain, so processors see frames as the
    /// delegate does; a quarter turn swaps the delivered width and height. Setting an angle
    /// ``isVideoRotationAngleSupported(_:)`` refuses traps, as AVFoundation raises; other
    /// failures are posted as ``CaptureSession/runtimeErrorNotification``;
    /// ``setVideoRotationAngle(_:)`` throws instead.
    public var videoRotationAngle: Double {
        get { state.withLock { $0.rotationAngle } }
        set {
            precondition(
                isVideoRotationAngleSupported(newValue),
                "a connection rotates by 0, 90, 180 or 270 degrees, not \(newValue): check isVideoRotationAngleSupported(_:) first"
            )
            do throws(CaptureError) {
                try setVideoRotationAngle(newValue)
            } catch {
                CaptureSession.postSettingFailure(error, from: output?.session, object: self)
            }
        }
    }

    /// Whether ``videoOrientation`` can be set: always true (it maps to ``videoRotationAngle``).
    public var isVideoOrientationSupported: Bool { true }

    /// The orientation of delivered frames (the counterpart of `AVCaptureVideoOrientation`),
    /// mapped to ``videoRotationAngle`` as iOS maps it for its landscape sensor:
    /// ``CaptureVideoOrientation/landscapeRight`` is the camera's own orientation (0°),
    /// ``CaptureVideoOrientation/portrait`` a quarter turn clockwise (90°, frames come out tall),
    /// ``CaptureVideoOrientation/landscapeLeft`` 180° and ``CaptureVideoOrientation/portraitUpsideDown`` 270°.
    /// Setting it sets the angle (same rules).
    public var videoOrientation: CaptureVideoOrientation {
        get { CaptureVideoOrientation(rotationAngle: videoRotationAngle) }
        set { videoRotationAngle = newValue.rotationAngle }
    }

    /// The old name of ``CaptureVideoOrientation``, which the rename of `AVCaptureVideoOrientation`
    /// produces.
    @available(*, deprecated, renamed: "CaptureVideoOrientation")
    public typealias VideoOrientation = CaptureVideoOrientation

    /// Whether the connection can stabilize video: `false` (Linux cameras do not).
    public var isVideoStabilizationSupported: Bool { false }

    /// The stabilization asked for; kept, but ``activeVideoStabilizationMode`` stays
    /// ``CaptureVideoStabilizationMode/off``.
    public var preferredVideoStabilizationMode: CaptureVideoStabilizationMode {
        get { state.withLock { $0.preferredStabilization } }
        set { state.withLock { $0.preferredStabilization = newValue } }
    }

    /// The stabilization in effect: always ``CaptureVideoStabilizationMode/off``.
    public var activeVideoStabilizationMode: CaptureVideoStabilizationMode { .off }

    /// Whether mirroring follows the camera's position automatically: `false` here (mirror
    /// with ``isVideoMirrored``); setting it is accepted and changes nothing.
    public var automaticallyAdjustsVideoMirroring: Bool {
        get { false }
        set {}
    }

    /// Whether `angle` is a rotation the connection can apply: 0, 90, 180 or 270 degrees.
    public func isVideoRotationAngleSupported(_ angle: Double) -> Bool { [0, 90, 180, 270].contains(angle) }

    /// Sets ``videoRotationAngle``; takes effect between frames, also while running. Throws
    /// ``CaptureError/Code/invalidArgument`` for other angles.
    public func setVideoRotationAngle(_ angle: Double) throws(CaptureError) {
        guard isVideoRotationAngleSupported(angle) else {
            throw CaptureError(.invalidArgument, "a connection rotates by 0, 90, 180 or 270 degrees, not \(angle)")
        }
        if try change(\.rotationAngle, to: angle) { didChangeValue(for: \.videoRotationAngle) }
    }

    /// Whether the connection can mirror frames (always true).
    public var isVideoMirroringSupported: Bool { true }

    /// Whether frames are flipped left to right (after rotation); takes effect between frames.
    /// If the output cannot apply it, the old setting stays and the error is posted as the
    /// session's ``CaptureSession/runtimeErrorNotification``; ``setVideoMirrored(_:)`` throws it.
    public var isVideoMirrored: Bool {
        get { state.withLock { $0.mirrored } }
        set {
            do throws(CaptureError) {
                try setVideoMirrored(newValue)
            } catch {
                CaptureSession.postSettingFailure(error, from: output?.session, object: self)
            }
        }
    }

    /// Sets ``isVideoMirrored``, renegotiating the output's chain if it is streaming; if the new
    /// chain cannot be built, throws its error and keeps the old setting.
    public func setVideoMirrored(_ mirrored: Bool) throws(CaptureError) {
        if try change(\.mirrored, to: mirrored) { didChangeValue(for: \.isVideoMirrored) }
    }

    /// Sets a setting and has the output renegotiate through its session; restores the old value
    /// if that fails. Returns whether the value changed.
    private func change<Value: Equatable & Sendable>(
        _ setting: WritableKeyPath<State, Value>, to value: Value
    ) throws(CaptureError) -> Bool {
        let previous = state.withLock { state in
            defer { state[keyPath: setting] = value }
            return state[keyPath: setting]
        }
        guard previous != value else { return false }
        do {
            try output?.requestDidChange()
        } catch {
            state.withLock { $0[keyPath: setting] = previous }
            throw error
        }
        return true
    }

    /// The device behind the connection, if its input is a device input.
    package var device: CaptureDevice? { (inputPorts.first?.input as? CaptureDeviceInput)?.device }
}
