import Synchronization

/// The link between an input's port and an output, made by the session when both are added
/// (the counterpart of `AVCaptureConnection`).
///
/// Thread safety: may be used from any thread; property changes apply between frames.
public final class CaptureConnection: Sendable {
    /// The ports feeding the connection.
    public let inputPorts: [CaptureInput.Port]
    private let outputBox: WeakReference<CaptureOutput>
    private struct State {
        var enabled = true
        var active = false
    }
    private let state = Mutex(State())

    init(inputPorts: [CaptureInput.Port], output: CaptureOutput) {
        self.inputPorts = inputPorts
        self.outputBox = WeakReference(output)
    }

    /// The output the connection feeds.
    public var output: CaptureOutput? { outputBox.value }

    /// Whether frames flow through the connection. Turn off to pause one output.
    public var isEnabled: Bool {
        get { state.withLock { $0.enabled } }
        set { state.withLock { $0.enabled = newValue } }
    }

    /// Whether frames are flowing now: the session is running, the connection is enabled and its
    /// device is connected.
    public var isActive: Bool { state.withLock { $0.active && $0.enabled } }

    func setActive(_ active: Bool) { state.withLock { $0.active = active } }

    /// The device behind the connection, if its input is a device input.
    var device: CaptureDevice? { (inputPorts.first?.input as? CaptureDeviceInput)?.device }
}
