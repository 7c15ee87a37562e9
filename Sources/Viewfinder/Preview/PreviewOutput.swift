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
final class PreviewOutput: CaptureOutput, @unchecked Sendable {  // unchecked: state is in the core and Mutexes.
    /// Frames in flight, and the size of each rendering pool.
    static let bufferBudget = 6

    /// The presenters, as the core's "delegate": called on the delivery queue with each frame.
    final class Presenters: Sendable {
        let list = Mutex<[any PreviewPresenter]>([])
        func present(_ frame: PreviewFrame) {
            for presenter in list.withLock({ $0 }) { presenter.present(frame) }
        }
    }

    /// The output's job on the shared core: build a renderer per negotiation, render accepted
    /// frames, hand them to the presenters.
    struct Body: OutputBody {
        typealias Settings = PreviewRenderRequest
        typealias Context = PreviewRenderer
        typealias Product = PreviewFrame
        typealias Delegate = Presenters

        var label: String { "preview-layer" }
        var acceptedMediaTypes: [MediaType] { [.video] }
        var initialSettings: PreviewRenderRequest { PreviewRenderRequest() }

        /// The layer's settings with what the presenters take and the connection's turn and mirror.
        func resolve(_ settings: PreviewRenderRequest, for output: CaptureOutput) -> PreviewRenderRequest {
            var request = settings
            if let preview = output as? PreviewOutput {
                let presenters = preview.presenters
                request.acceptsJPEG = presenters.contains { $0.acceptsJPEG }
                request.needsBGRA = presenters.contains { !$0.acceptsJPEG }
            }
            if let connection = output.connection(with: .video) {
                request.rotationAngle = connection.videoRotationAngle
                request.mirrored = connection.isVideoMirrored
            }
            return request
        }

        /// The preview asks nothing of the device: it renders whatever the other outputs choose.
        func request(for settings: PreviewRenderRequest) -> OutputRequest { OutputRequest() }

        func makeContext(
            format: CaptureDevice.Format, frameDuration: MediaTime, settings: PreviewRenderRequest
        ) throws(CaptureError) -> PreviewRenderer {
            try PreviewRenderer(deviceFormat: format, request: settings, budget: PreviewOutput.bufferBudget)
        }

        func prepare(
            _ sample: CapturedSample, context: PreviewRenderer, budget: FrameBudget, connection: CaptureConnection
        ) -> DeliveryEngine<PreviewRenderer, PreviewFrame>.Preparation {
            context.render(sample)
        }

        func consume(
            _ product: PreviewFrame, from connection: CaptureConnection, output: CaptureOutput, delegate: Presenters
        ) {
            delegate.present(product)
        }

        func reportDrop(
            _ drop: DeliveryEngine<PreviewRenderer, PreviewFrame>.DropReport, output: CaptureOutput,
            delegate: Presenters
        ) {}
    }

    let core: EngineOutputCore<Body>
    private let presenterList = Presenters()
    /// Where presenters are called (set only while there are presenters, so a layer nobody
    /// watches renders nothing).
    private let presentQueue = DispatchQueue(label: "viewfinder.preview-layer.present")

    override init() {
        core = EngineOutputCore(Body(), budgetLimit: Self.bufferBudget)
        super.init()
        adopt(core)
    }

    // MARK: What the layer sets

    var presenters: [any PreviewPresenter] { presenterList.list.withLock { $0 } }

    /// Changes the layer's part of the request (size, gravity) and renegotiates between frames.
    func update(_ edit: (inout PreviewRenderRequest) -> Void) throws(CaptureError) {
        var edited = core.currentSettings
        edit(&edited)
        guard edited != core.currentSettings else { return }
        try core.applyChange { settings, _ in settings = edited }
    }

    func addPresenter(_ presenter: any PreviewPresenter) throws(CaptureError) {
        presenterList.list.withLock { list in
            if !list.contains(where: { $0 === presenter }) { list.append(presenter) }
        }
        core.setDelegate({ [presenterList] in presenterList }, queue: presentQueue)
        try requestDidChange()
    }

    func removePresenter(_ presenter: any PreviewPresenter) throws(CaptureError) {
        let empty = presenterList.list.withLock { list in
            list.removeAll { $0 === presenter }
            return list.isEmpty
        }
        if empty { core.setDelegate(nil, queue: nil) }
        try requestDidChange()
    }

    /// The renderer of the current (or last) stream.
    var renderer: PreviewRenderer? { core.context }

    var statistics: Statistics { core.statistics }
    var latency: LatencyStatistics { core.latency }

    /// Waits until every accepted frame has been handed to the presenters (bounded).
    @discardableResult
    func waitUntilDelivered(timeout: Double) -> Bool { core.waitUntilDelivered(timeout: timeout) }
}
