import Dispatch
import Foundation
import Synchronization
import ViewfinderCore

/// A web page on loopback showing a preview layer — the camera in any browser on the machine,
/// with the session's live figures, and tap to focus:
///
/// ```swift
/// let previewLayer = CaptureVideoPreviewLayer(session: session)
/// previewLayer.frame = CGRect(x: 0, y: 0, width: 1280, height: 720)
/// let page = try PreviewWebPresenter(layer: previewLayer)
/// print(page.url)        // http://127.0.0.1:PORT/?token=…: open it in a browser
/// session.startRunning()
/// ```
///
/// The page draws the newest frame on a canvas (a WebSocket of JPEG frames), shows the layer's
/// figures (fps, drops by reason, latency) and turns a click on the picture into the camera's
/// focus and exposure point of interest, converted by the layer
/// (``CaptureVideoPreviewLayer/captureDevicePointConverted(fromLayerPoint:)``). ``streamURL`` is a
/// plain `multipart/x-mixed-replace` stream of the same frames for `<img>` and tools.
///
/// Frames are the layer's, at its bounds' size with its gravity: a Motion-JPEG camera whose frame
/// already fits goes out undecoded; others are encoded to JPEG here, on a queue of the
/// presenter's own, newest first (a frame not yet encoded is replaced by a newer one, counted in
/// ``statistics``). Neither encoding nor any viewer ever slows the layer or the camera.
///
/// Security: the server binds 127.0.0.1 unless you name another address; every request and the
/// WebSocket must carry the random token in ``url`` (other requests are refused and counted), and
/// a WebSocket from a page of another origin is refused, so no web page open in the user's
/// browser can watch the camera. Viewers are many (32 at once by default), each with a bounded,
/// newest-wins queue; one that stalls or disconnects costs the others nothing.
///
/// Thread safety: every member may be used from any thread.
public final class PreviewWebPresenter: PreviewPresenter {
    private let server: PreviewWebServer
    private let layerReference: WeakReference<CaptureVideoPreviewLayer>
    private let slot = NewestFrameSlot()
    private let encodeQueue = DispatchQueue(label: "viewfinder.preview-web.encode")
    private let encoder: JPEGEncoder
    private struct Figures {
        var lastSent: MediaTime?
        var frames: [MediaTime] = []
    }
    private let figures = Mutex(Figures())
    /// Signalled once a click on the page has been applied to the camera (for tests).
    package let clickApplied = DispatchSemaphore(value: 0)

    /// Serves `layer` on `address` (loopback by default) and `port` (0: any free port) with JPEG
    /// `quality`, and adds the page as the layer's presenter. Throws
    /// ``CaptureError/Code/invalidArgument`` for an address or token it cannot use,
    /// ``CaptureError/Code/systemError`` when the port cannot be bound.
    public init(
        layer: CaptureVideoPreviewLayer, address: String = "127.0.0.1", port: Int = 0, token: String? = nil,
        quality: Double = 0.8, maxViewers: Int = 32
    ) throws(CaptureError) {
        encoder = try JPEGEncoder(quality: quality)
        server = try PreviewWebServer(
            configuration: .init(address: address, port: port, token: token, maxViewers: maxViewers))
        layerReference = WeakReference(layer)
        server.onClick = { [layerReference, clickApplied] x, y in
            // Off the server's thread: focusing locks the camera's configuration.
            DispatchQueue.global().async {
                layerReference.value?.setPointsOfInterest(atLayerPoint: CGPoint(x: x, y: y))
                clickApplied.signal()
            }
        }
        layer.addPresenter(self)
    }

    deinit { server.stop() }

    /// The page, with its token: open it in a browser on this machine.
    public var url: URL { server.pageURL }

    /// The `multipart/x-mixed-replace` JPEG stream, with its token.
    public var streamURL: URL { server.streamURL }

    /// Viewers connected now (pages and streams).
    public var viewerCount: Int { server.viewerCount }

    /// Frames received from the layer, sent on to the viewers, and replaced before they could be
    /// encoded.
    public var statistics: PresenterStatistics { slot.statistics }

    /// The layer shown, while it exists.
    public var layer: CaptureVideoPreviewLayer? { layerReference.value }

    /// Stops serving: every viewer is disconnected, the port closed, and the page leaves its
    /// layer. Later calls do nothing.
    public func close() {
        layer?.removePresenter(self)
        server.stop()
    }

    /// The server, for tests and benchmarks.
    package var webServer: PreviewWebServer { server }

    // MARK: PreviewPresenter

    /// The page takes the camera's own Motion-JPEG frames when they fit the layer.
    public var acceptsJPEG: Bool { true }

    /// Keeps `frame` as the newest and has the encode queue send it.
    public func present(_ frame: PreviewFrame) {
        guard slot.put(frame) else { return }
        encodeQueue.async { [self] in
            while let next = slot.take() { send(next) }
        }
    }

    private func send(_ frame: PreviewFrame) {
        // Nobody watching: nothing to encode (a page that connects gets the next frame).
        guard server.viewerCount > 0 else { return }
        let published: Bool? = frame.withJPEGBytes { bytes in
            server.publish(
                jpeg: bytes, sequenceNumber: frame.sequenceNumber, presentationTime: frame.presentationTimeStamp,
                width: frame.width, height: frame.height)
            return true
        }
        if published == nil, let image = frame.pixelBuffer, let jpeg = try? encoder.encode(image) {
            jpeg.withUnsafeBytes { bytes in
                server.publish(
                    jpeg: bytes, sequenceNumber: frame.sequenceNumber, presentationTime: frame.presentationTimeStamp,
                    width: frame.width, height: frame.height)
            }
        }
        publishFigures(after: frame)
    }

    /// Twice a second of stream time: the frame rate shown, and the layer's counts and latency.
    private func publishFigures(after frame: PreviewFrame) {
        let time = frame.presentationTimeStamp
        guard time.isNumeric else { return }
        let fps = figures.withLock { state -> Double? in
            state.frames.append(time)
            state.frames.removeAll { (time - $0).seconds > 1 }
            if let last = state.lastSent, (time - last).seconds < 0.5 { return nil }
            state.lastSent = time
            guard let first = state.frames.first, state.frames.count > 1 else { return 0 }
            return Double(state.frames.count - 1) / (time - first).seconds
        }
        guard let fps, let layer else { return }
        let statistics = layer.statistics
        let latency = layer.renderLatency
        server.publish(figures: [
            "fps": fps.isFinite ? fps : 0,
            "frames shown": Double(statistics.delivered),
            "dropped: late": Double(statistics.droppedLate),
            "dropped: out of buffers": Double(statistics.droppedOutOfBuffers),
            "dropped: lost by camera": Double(statistics.droppedDiscontinuity),
            "render latency p50 (ms)": latency.p50 / 1000,
            "render latency p99 (ms)": latency.p99 / 1000,
            "viewers": Double(server.viewerCount),
        ])
    }
}
