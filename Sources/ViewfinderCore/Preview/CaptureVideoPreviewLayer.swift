import Foundation
import Synchronization

/// Shows what a session's camera sees (the counterpart of `AVCaptureVideoPreviewLayer`).
///
/// ```swift
/// let previewLayer = CaptureVideoPreviewLayer(session: session)
/// previewLayer.videoGravity = .resizeAspectFill
/// let window = try PreviewWindow(layer: previewLayer, title: "Camera")  // replaces addSublayer
/// session.startRunning()
/// ```
///
/// Linux has no Core Animation, so the layer is not drawn by a layer tree: it renders each frame
/// at its ``bounds``' size in pixels, with its ``videoGravity`` and its ``connection``'s rotation
/// and mirroring, and hands it to its presenters (``addPresenter(_:)``): a ``PreviewWindow``, a
/// ``CallbackPreviewPresenter`` for your own toolkit, or your own ``PreviewPresenter``.
///
/// The layer is fed like an output: newest wins (while presenters are busy at most one newer
/// frame waits; replaced ones count as late in ``statistics``), and neither the camera nor the
/// session's other outputs ever wait for it. A layer without presenters renders nothing.
///
/// Geometry follows AVFoundation: layer points are in the layer's own coordinates (its
/// ``bounds``); capture-device points run from (0, 0), the top-left, to (1, 1), the bottom-right
/// of the camera's picture before rotation and mirroring, whatever the gravity.
///
/// The layer keeps its session alive (as AVFoundation's does); the session does not keep the
/// layer. The layer's connection is listed in the session's `connections`, but the layer is not
/// one of its `outputs` (as in AVFoundation).
///
/// Thread safety: every member may be used from any thread; changes apply between frames.
public final class CaptureVideoPreviewLayer: Sendable {
    private struct State {
        var session: CaptureSession?
        var frame = CGRect.zero
        var bounds = CGRect.zero
        var gravity = LayerVideoGravity.resizeAspect
    }
    private let state = Mutex(State())
    package let output = PreviewOutput()

    /// A layer showing nothing until given a ``session``.
    public init() { adoptOutput() }

    /// Makes this layer the owner its output's connections report.
    private func adoptOutput() { output.owningLayer.withLock { $0 = WeakReference(self) } }

    /// A layer showing `session`'s video: its connection is made to the session's first video
    /// input (now, or when one is added).
    public init(session: CaptureSession) {
        adoptOutput()
        self.session = session
    }

    /// A layer that keeps `session` but makes no connection, so it shows nothing. AVFoundation
    /// then expects `addConnection(_:)`, which Viewfinder does not offer (sessions connect by
    /// media type): set ``session`` instead to connect.
    public init(sessionWithNoConnection session: CaptureSession) {
        adoptOutput()
        setSessionWithNoConnection(session)
    }

    deinit {
        state.withLock { $0.session }?.removeOutput(output)
    }

    // MARK: Session

    /// The session previewed; setting it connects the layer to the new session's video (and
    /// disconnects it from the old one). The layer holds the session strongly.
    public var session: CaptureSession? {
        get { state.withLock { $0.session } }
        set { attach(to: newValue, connecting: true) }
    }

    /// Keeps `session` without connecting the layer to it (see ``init(sessionWithNoConnection:)``).
    public func setSessionWithNoConnection(_ session: CaptureSession) {
        attach(to: session, connecting: false)
    }

    private func attach(to session: CaptureSession?, connecting: Bool) {
        let previous = state.withLock { state in
            defer { state.session = session }
            return state.session
        }
        if let previous, previous !== session || !connecting { previous.removeOutput(output) }
        guard connecting, let session, !session.connections.contains(where: { $0.output === output }) else {
            return
        }
        do throws(CaptureError) {
            try session.tryAddOutput(output)
        } catch {
            session.postRuntimeError(error)
        }
    }

    /// The connection feeding the layer (from the session's first video input): set its
    /// ``CaptureConnection/videoRotationAngle`` (or the older
    /// ``CaptureConnection/videoOrientation``) and ``CaptureConnection/isVideoMirrored`` to turn
    /// and mirror the preview. `nil` while the layer has no session or the session no camera.
    public var connection: CaptureConnection? { output.connection(with: .video) }

    // MARK: Geometry

    /// The layer's frame in its superlayer's coordinates (there is none on Linux: a toolkit's or
    /// window's coordinates). Setting it sets ``bounds``' size (its origin stays).
    public var frame: CGRect {
        get { state.withLock { $0.frame } }
        set {
            state.withLock { state in
                state.frame = newValue
                state.bounds.size = newValue.standardized.size
            }
            sizeDidChange()
        }
    }

    /// The layer's own coordinate space: its size, rounded to whole pixels, is the size frames
    /// are rendered at (pixel size = bounds size). Setting it sets ``frame``'s size.
    public var bounds: CGRect {
        get { state.withLock { $0.bounds } }
        set {
            state.withLock { state in
                state.bounds = newValue
                state.frame.size = newValue.standardized.size
            }
            sizeDidChange()
        }
    }

    /// How the picture fits the bounds: ``LayerVideoGravity/resizeAspect`` (the default; black
    /// bands), ``LayerVideoGravity/resizeAspectFill`` (cropped) or ``LayerVideoGravity/resize``
    /// (stretched).
    public var videoGravity: LayerVideoGravity {
        get { state.withLock { $0.gravity } }
        set {
            state.withLock { $0.gravity = newValue }
            apply { $0.gravity = newValue }
        }
    }

    /// The size frames are rendered at: the bounds' size rounded to whole pixels (0 for an empty
    /// layer), at most ``PixelBuffer/maximumDimension`` a side.
    public var pixelSize: CaptureDevice.Dimensions {
        Self.pixelSize(of: bounds.standardized.size)
    }

    package static func pixelSize(of size: CGSize) -> CaptureDevice.Dimensions {
        func side(_ value: CGFloat) -> Int {
            guard value.isFinite, value >= 0.5 else { return 0 }
            return min(PixelBuffer.maximumDimension, Int(value.rounded()))
        }
        return .init(width: side(size.width), height: side(size.height))
    }

    private func sizeDidChange() {
        let size = pixelSize
        apply { $0.size = size }
    }

    /// Applies a change to what the output renders; a configuration that cannot run is posted as
    /// the session's ``CaptureSession/runtimeErrorNotification``.
    private func apply(_ edit: (inout PreviewRenderRequest) -> Void) {
        do throws(CaptureError) {
            try output.update(edit)
        } catch {
            session?.postRuntimeError(error)
        }
    }

    /// The geometry the conversions use now: the camera's frame size (as negotiated, else the
    /// device's active format), the bounds, the gravity and the connection's turn and mirroring.
    package var geometry: PreviewGeometry {
        let (bounds, gravity) = state.withLock { ($0.bounds, $0.gravity) }
        let connection = connection
        let dimensions =
            output.renderer?.deviceFormat.dimensions ?? connection?.device?.activeFormat.dimensions
            ?? .init(width: 0, height: 0)
        return PreviewGeometry(
            imageSize: CGSize(width: dimensions.pixelWidth, height: dimensions.pixelHeight), bounds: bounds,
            gravity: gravity,
            rotationAngle: connection?.videoRotationAngle ?? 0, mirrored: connection?.isVideoMirrored ?? false)
    }

    // MARK: Conversions

    /// The capture-device point (for `focusPointOfInterest`, `exposurePointOfInterest`) under
    /// `pointInLayer`: (0, 0) top-left to (1, 1) bottom-right of the camera's unrotated,
    /// unmirrored picture, with the layer's gravity, bounds, rotation and mirroring taken into
    /// account. Points where the picture is not shown (the black bands of `.resizeAspect`) give
    /// coordinates outside 0…1.
    public func captureDevicePointConverted(fromLayerPoint pointInLayer: CGPoint) -> CGPoint {
        geometry.devicePoint(fromLayerPoint: pointInLayer)
    }

    /// The layer point showing the capture-device point `captureDevicePointOfInterest` (the
    /// inverse of ``captureDevicePointConverted(fromLayerPoint:)``; with `.resizeAspectFill` a
    /// point cropped away lies outside the bounds).
    public func layerPointConverted(fromCaptureDevicePoint captureDevicePointOfInterest: CGPoint) -> CGPoint {
        geometry.layerPoint(fromDevicePoint: captureDevicePointOfInterest)
    }

    /// The rectangle in metadata-output coordinates (a metadata output's `rectOfInterest`:
    /// (0, 0) top-left to (1, 1) bottom-right of the unrotated picture) covering
    /// `rectInLayerCoordinates`.
    public func metadataOutputRectConverted(fromLayerRect rectInLayerCoordinates: CGRect) -> CGRect {
        geometry.deviceRect(fromLayerRect: rectInLayerCoordinates)
    }

    /// The layer rectangle showing `rectInMetadataOutputCoordinates` (the inverse of
    /// ``metadataOutputRectConverted(fromLayerRect:)``).
    public func layerRectConverted(fromMetadataOutputRect rectInMetadataOutputCoordinates: CGRect) -> CGRect {
        geometry.layerRect(fromDeviceRect: rectInMetadataOutputCoordinates)
    }

    /// `captureDevicePointOfInterestForPoint:`, the iOS 6 spelling.
    @available(*, deprecated, renamed: "captureDevicePointConverted(fromLayerPoint:)")
    public func captureDevicePointOfInterest(for pointInLayer: CGPoint) -> CGPoint {
        captureDevicePointConverted(fromLayerPoint: pointInLayer)
    }

    /// `pointForCaptureDevicePointOfInterest:`, the iOS 6 spelling.
    @available(*, deprecated, renamed: "layerPointConverted(fromCaptureDevicePoint:)")
    public func pointForCaptureDevicePoint(ofInterest captureDevicePointOfInterest: CGPoint) -> CGPoint {
        layerPointConverted(fromCaptureDevicePoint: captureDevicePointOfInterest)
    }

    // MARK: Presenters

    /// Adds a presenter (see ``PreviewPresenter``); the layer holds it until it is removed or
    /// the layer goes. Adding one already added does nothing. Frames flow from the next one the
    /// camera captures.
    public func addPresenter(_ presenter: any PreviewPresenter) {
        do throws(CaptureError) {
            try output.addPresenter(presenter)
        } catch {
            session?.postRuntimeError(error)
        }
    }

    /// Removes a presenter; it is given no frame after this returns but one being handed over.
    public func removePresenter(_ presenter: any PreviewPresenter) {
        do throws(CaptureError) {
            try output.removePresenter(presenter)
        } catch {
            session?.postRuntimeError(error)
        }
    }

    /// The presenters, in the order they were added.
    public var presenters: [any PreviewPresenter] { output.presenters }

    // MARK: Figures

    /// The layer's counters since its session last started: frames rendered and handed to the
    /// presenters (`delivered`), replaced while presenters were busy (`droppedLate`), dropped for
    /// want of a free buffer (`droppedOutOfBuffers`, presenters holding frames), lost by the
    /// device (`droppedDiscontinuity`). While the layer has no presenter it takes no frames and
    /// counts none.
    public var statistics: CaptureOutput.Statistics { output.statistics }

    /// Capture-to-presenter latency (host arrival to the hand-over, rendering included) over the
    /// last 1,024 frames.
    public var renderLatency: LatencyStatistics { output.deliveryLatency }
}

extension CaptureVideoPreviewLayer {
    /// `CALayer.addSublayer(_:)`: there is no layer tree on Linux.
    @available(
        *, unavailable,
        message:
            "Linux has no layer tree: show the layer with `let window = try PreviewWindow(layer: previewLayer)`, on a web page with `let page = try PreviewWebPresenter(layer: previewLayer)`, or add a presenter (previewLayer.addPresenter(_:))"
    )
    public func addSublayer(_ layer: CaptureVideoPreviewLayer) {}

    /// `CALayer.insertSublayer(_:below:)`: there is no layer tree on Linux.
    @available(
        *, unavailable,
        message:
            "Linux has no layer tree: show the layer with `let window = try PreviewWindow(layer: previewLayer)`, on a web page with `let page = try PreviewWebPresenter(layer: previewLayer)`, or add a presenter (previewLayer.addPresenter(_:))"
    )
    public func insertSublayer(_ layer: CaptureVideoPreviewLayer, below sibling: CaptureVideoPreviewLayer?) {}
}

extension CaptureVideoPreviewLayer {
    /// Tap to focus, as a presenter does for a click: sets the camera's focus and exposure
    /// points of interest (where it supports them) to the device point under `point`, converted
    /// by the layer; a point outside the picture (a letterbox band) does nothing. Returns the
    /// device point set, or `nil`. Errors are posted as the session's runtime error.
    @discardableResult
    package func setPointsOfInterest(atLayerPoint point: CGPoint) -> CGPoint? {
        guard let device = connection?.device else { return nil }
        let devicePoint = captureDevicePointConverted(fromLayerPoint: point)
        guard (0...1).contains(devicePoint.x), (0...1).contains(devicePoint.y) else { return nil }
        do throws(CaptureError) {
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            if device.isFocusPointOfInterestSupported { device.focusPointOfInterest = devicePoint }
            if device.isExposurePointOfInterestSupported { device.exposurePointOfInterest = devicePoint }
        } catch {
            CaptureSession.postSettingFailure(error, from: session, object: device)
            return nil
        }
        return devicePoint
    }
}
