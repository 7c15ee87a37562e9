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
package final class PreviewOutput: CaptureOutput, @unchecked Sendable {  // unchecked: state is in the core.
    /// Frames in flight, and the size of each rendering pool.
    package static let bufferBudget = 6

    /// The layer's job on the shared output core: render each accepted frame for the layer's
    /// size and gravity, hand it to every presenter.
    package struct Body: OutputBody {
        /// What the layer is set to: its part of the render request and its presenters.
        package struct Settings: Sendable {
            package var request = PreviewRenderRequest()
            package var presenters: [any PreviewPresenter] = []
        }

        package var label: String { "preview-layer" }
        package var acceptedMediaTypes: [MediaType] { [.video] }
        package var initialSettings: Settings { Settings() }

        /// The request as read for one negotiation: what the presenters take, and the
        /// connection's rotation and mirroring.
        package func resolve(_ settings: Settings, for output: CaptureOutput) -> Settings {
            var resolved = settings
            resolved.request.acceptsJPEG = settings.presenters.contains { $0.acceptsJPEG }
            resolved.request.needsBGRA = settings.presenters.contains { !$0.acceptsJPEG }
            if let connection = output.connection(with: .video) {
                resolved.request.rotationAngle = connection.videoRotationAngle
                resolved.request.mirrored = connection.isVideoMirrored
            }
            return resolved
        }

        /// The preview asks nothing of the device: it renders whatever the other outputs choose.
        package func request(for settings: Settings) -> OutputRequest {
            var request = OutputRequest()
            request.sharesDecode = false
            return request
        }

        package func makeContext(
            format: CaptureDevice.Format, frameDuration: MediaTime, settings: Settings
        ) throws(CaptureError) -> PreviewRenderer {
            try PreviewRenderer(deviceFormat: format, request: settings.request, budget: PreviewOutput.bufferBudget)
        }

        package func prepare(
            _ sample: CapturedSample, context renderer: PreviewRenderer, budget: FrameBudget,
            connection: CaptureConnection
        ) -> DeliveryEngine<PreviewRenderer, PreviewFrame>.Preparation {
            renderer.render(sample)
        }

        package func consume(
            _ frame: PreviewFrame, from connection: CaptureConnection, output: CaptureOutput,
            delegate presenters: [any PreviewPresenter]
        ) {
            for presenter in presenters { presenter.present(frame) }
        }

        /// Drops are counted in the layer's statistics; presenters only see frames.
        package func reportDrop(
            _ drop: DeliveryEngine<PreviewRenderer, PreviewFrame>.DropReport, output: CaptureOutput,
            delegate: [any PreviewPresenter]
        ) {}
    }

    package let core: EngineOutputCore<Body>
    /// Where presenters are called (set only while there are presenters, so a layer nobody
    /// watches renders nothing).
    private let presentQueue = DispatchQueue(label: "viewfinder.preview-layer.present")

    /// The layer that owns this output (``CaptureConnection/videoPreviewLayer``).
    package let owningLayer = Mutex<WeakReference<CaptureVideoPreviewLayer>?>(nil)

    package override init() {
        core = EngineOutputCore(Body(), budgetLimit: Self.bufferBudget)
        super.init()
        adopt(core)
    }

    // MARK: What the layer sets

    package var presenters: [any PreviewPresenter] { core.currentSettings.presenters }

    /// Changes the layer's part of the request (size, gravity) and renegotiates between frames.
    package func update(_ edit: (inout PreviewRenderRequest) -> Void) throws(CaptureError) {
        var request = core.currentSettings.request
        edit(&request)
        guard request != core.currentSettings.request else { return }
        try core.applyChange { settings, _ in settings.request = request }
    }

    package func addPresenter(_ presenter: any PreviewPresenter) throws(CaptureError) {
        try core.applyChange { settings, _ in
            if !settings.presenters.contains(where: { $0 === presenter }) { settings.presenters.append(presenter) }
        }
        setPresenterQueue()
    }

    package func removePresenter(_ presenter: any PreviewPresenter) throws(CaptureError) {
        try core.applyChange { settings, _ in settings.presenters.removeAll { $0 === presenter } }
        setPresenterQueue()
    }

    /// Presenters are the core's "delegate": read afresh for every frame.
    private func setPresenterQueue() {
        let watched = !presenters.isEmpty
        core.setDelegate(watched ? { [weak self] in self?.presenters } : nil, queue: watched ? presentQueue : nil)
    }

    /// The renderer of the current (or last) stream.
    package var renderer: PreviewRenderer? { core.context }

}
