import Dispatch
import Synchronization

/// The output a ``CaptureVideoPreviewLayer`` owns: the layer is fed like any output (its own
/// delivery engine: newest wins, every frame counted, the camera never waits for it), renders
/// each accepted frame with a ``PreviewRenderer`` and hands it to the layer's presenters.
///
/// All of the layer's output plumbing is in this file. The session connects it like an output
/// (``CaptureSession/connections`` lists its connection, as AVFoundation lists a preview layer's)
/// but does not list it among ``CaptureSession/outputs``, as AVFoundation does not list preview
/// layers there.
///
/// Thread safety: may be used from any thread; state is in Mutexes.
final class PreviewOutput: CaptureOutput, @unchecked Sendable {  // unchecked: state is in Mutexes.
    /// Frames in flight, and the size of each rendering pool.
    static let bufferBudget = 6

    private struct State {
        var request = PreviewRenderRequest()
        var presenters: [any PreviewPresenter] = []
    }
    private let state = Mutex(State())
    private var engine: DeliveryEngine<PreviewRenderer, PreviewFrame>!
    /// Where presenters are called (set only while there are presenters, so a layer nobody
    /// watches renders nothing).
    private let presentQueue = DispatchQueue(label: "viewfinder.preview-layer.present")

    override init() {
        super.init()
        engine = DeliveryEngine(
            label: "preview-layer",
            prepare: { sample, renderer, _, _ in renderer.render(sample) },
            consume: { [weak self] frame, _ in
                guard let self else { return }
                for presenter in self.presenters { presenter.present(frame) }
            },
            reportDrop: { _ in })
    }

    override var acceptedMediaTypes: [MediaType] { [.video] }

    // MARK: What the layer sets

    var presenters: [any PreviewPresenter] { state.withLock { $0.presenters } }

    /// Changes the layer's part of the request (size, gravity) and renegotiates between frames.
    func update(_ edit: (inout PreviewRenderRequest) -> Void) throws(CaptureError) {
        let changed = state.withLock { state -> Bool in
            let before = state.request
            edit(&state.request)
            return state.request != before
        }
        if changed { try requestDidChange() }
    }

    func addPresenter(_ presenter: any PreviewPresenter) throws(CaptureError) {
        state.withLock { state in
            if !state.presenters.contains(where: { $0 === presenter }) { state.presenters.append(presenter) }
        }
        engine.setCallbackQueue(presentQueue)
        try requestDidChange()
    }

    func removePresenter(_ presenter: any PreviewPresenter) throws(CaptureError) {
        let empty = state.withLock { state in
            state.presenters.removeAll { $0 === presenter }
            return state.presenters.isEmpty
        }
        if empty { engine.setCallbackQueue(nil) }
        try requestDidChange()
    }

    /// The renderer of the current (or last) stream.
    var renderer: PreviewRenderer? { engine.context }

    var statistics: Statistics { engine.statistics }
    var latency: LatencyStatistics { engine.latency }

    /// Waits until every accepted frame has been handed to the presenters (bounded).
    @discardableResult
    func waitUntilDelivered(timeout: Double) -> Bool { engine.waitUntilDelivered(timeout: timeout) }

    // MARK: Session hooks

    override func makeRequest() -> OutputRequest {
        var request = state.withLock { state in
            var request = state.request
            request.acceptsJPEG = state.presenters.contains { $0.acceptsJPEG }
            request.needsBGRA = state.presenters.contains { !$0.acceptsJPEG }
            return request
        }
        if let connection = connection(with: .video) {
            request.rotationAngle = connection.videoRotationAngle
            request.mirrored = connection.isVideoMirrored
        }
        // The preview asks nothing of the device: it renders whatever the other outputs choose.
        return OutputRequest(settings: request)
    }

    override func makeStreamContext(
        format: CaptureDevice.Format, frameDuration: MediaTime, request: OutputRequest
    ) throws(CaptureError) -> any Sendable {
        try PreviewRenderer(
            deviceFormat: format, request: request.settings as? PreviewRenderRequest ?? PreviewRenderRequest(),
            budget: Self.bufferBudget)
    }

    override func install(_ context: any Sendable, isRestart: Bool) {
        guard let renderer = context as? PreviewRenderer else { return }
        if isRestart || !engine.isStreaming {
            engine.beginStream(context: renderer, budgetLimit: Self.bufferBudget)
        } else {
            engine.replaceContext(renderer)
        }
    }

    override func sessionWillStartRunning() { engine.resetStatistics() }

    override func receive(_ sample: CapturedSample, from connection: CaptureConnection) {
        engine.receive(sample, from: connection)
    }

    override func streamDidStop() { engine.endStream(waitingUpTo: 5) }
}
