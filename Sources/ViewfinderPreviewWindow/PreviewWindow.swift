import Dispatch
import Foundation
import Synchronization
import ViewfinderCore

/// A desktop window showing a preview layer (SDL2: X11 or Wayland) — what replaces
/// `view.layer.addSublayer(previewLayer)` on Linux:
///
/// ```swift
/// let previewLayer = CaptureVideoPreviewLayer(session: session)
/// let window = try PreviewWindow(layer: previewLayer, title: "Camera")
/// session.startRunning()
/// window.waitUntilClosed()
/// ```
///
/// The window is the layer's bounds: opening it sets the layer's bounds to the window's size and
/// resizing the window (by the user or ``setSize(width:height:)``) resizes the layer, so frames
/// are rendered at the window's size in pixels with the layer's gravity and drawn 1:1. Drawing
/// is newest-wins (``statistics``): a slow display never slows the layer or the camera. A click
/// in the window sets the camera's focus and exposure point of interest to the point under it
/// (converted by the layer) where the camera supports them.
///
/// The layer holds the window (a presenter) until the window closes — by its close button or
/// ``close()`` — or the layer goes; the window holds the layer weakly.
///
/// Thread safety: every member may be used from any thread. All SDL calls run on one thread that
/// Viewfinder starts with the first window and ends with the last.
public final class PreviewWindow: PreviewPresenter {
    /// The title given at creation.
    public let title: String
    package let slot = NewestFrameSlot()
    private let layerReference: WeakReference<CaptureVideoPreviewLayer>
    private struct State {
        var id: UInt32 = 0
        var closed = false
        var size = CaptureDevice.Dimensions(width: 0, height: 0)
        /// The last frame drawn: its number and size (for tests).
        var drawn: (sequenceNumber: UInt64, width: Int, height: Int)?
    }
    private let state = Mutex(State())
    private let closedSignal = DispatchSemaphore(value: 0)
    /// Signalled after each new frame is on screen (for tests).
    package let frameDrawn = DispatchSemaphore(value: 0)
    /// Where layer changes asked by the window run (never on the SDL thread, which must keep
    /// drawing while a session renegotiates).
    private let layerQueue = DispatchQueue(label: "viewfinder.preview-window.layer")

    /// Opens a resizable `width` × `height` window titled `title` showing `layer`, sets the
    /// layer's bounds to the window's size and adds the window as the layer's presenter. Throws
    /// ``CaptureError/Code/systemError`` when no window can be opened (no `DISPLAY`, no X
    /// server), ``CaptureError/Code/invalidArgument`` for a size below 1 or above
    /// ``PixelBuffer/maximumDimension``.
    public init(
        layer: CaptureVideoPreviewLayer, title: String = "Viewfinder", width: Int = 640, height: Int = 480
    ) throws(CaptureError) {
        try PixelBuffer.checkDimensions(width: width, height: height, what: "a preview window")
        self.title = title
        layerReference = WeakReference(layer)
        let reply = SDLDisplay.Reply<UInt32>()
        try SDLDisplay.perform(.open(self, title: title, width: width, height: height, reply: reply))
        let id = try reply.wait(timeout: 20).get()
        state.withLock { state in
            state.id = id
            if state.size.width == 0 { state.size = .init(width: width, height: height) }
        }
        let size = self.size
        layer.bounds = CGRect(x: 0, y: 0, width: size.pixelWidth, height: size.pixelHeight)
        layer.addPresenter(self)
    }

    deinit {
        let (id, closed) = state.withLock { ($0.id, $0.closed) }
        if !closed, id != 0 { try? SDLDisplay.perform(.close(id, reply: SDLDisplay.Reply<Bool>())) }
    }

    /// The layer shown, while it exists.
    public var layer: CaptureVideoPreviewLayer? { layerReference.value }

    /// The window's size in pixels (the layer's bounds follow it).
    public var size: CaptureDevice.Dimensions { state.withLock { $0.size } }

    /// Whether the window has been closed (by its close button or ``close()``).
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Frames received from the layer, drawn, and replaced before they could be drawn.
    public var statistics: PresenterStatistics { slot.statistics }

    /// Resizes the window; the layer's bounds follow once the window system has resized it.
    public func setSize(width: Int, height: Int) throws(CaptureError) {
        try PixelBuffer.checkDimensions(width: width, height: height, what: "a preview window")
        let (id, closed) = state.withLock { ($0.id, $0.closed) }
        guard !closed else { throw CaptureError(.invalidArgument, "the preview window is closed: open a new one") }
        try SDLDisplay.perform(.resize(id, width: width, height: height))
    }

    /// Closes the window and removes it from its layer. Returns once the window is gone (and,
    /// when it was the last window, SDL with its display connection). Closing twice does nothing.
    public func close() {
        let (id, wasClosed) = state.withLock { state in
            defer { state.closed = true }
            return (state.id, state.closed)
        }
        guard !wasClosed else { return }
        layer?.removePresenter(self)
        slot.clear()
        let reply = SDLDisplay.Reply<Bool>()
        if (try? SDLDisplay.perform(.close(id, reply: reply))) != nil { _ = reply.wait(timeout: 20) }
        closedSignal.signal()
    }

    /// Waits until the window is closed, at most `timeout` seconds (`nil`: forever). Returns
    /// whether it is closed.
    @discardableResult
    public func waitUntilClosed(timeout: Double? = nil) -> Bool {
        if isClosed { return true }
        let result =
            timeout.map { closedSignal.wait(timeout: .now() + $0) }
            ?? {
                closedSignal.wait()
                return .success
            }()
        if result == .success { closedSignal.signal() }  // let other waiters through
        return result == .success || isClosed
    }

    // MARK: PreviewPresenter

    /// Keeps `frame` as the newest and wakes the SDL thread to draw it.
    public func present(_ frame: PreviewFrame) {
        let id = state.withLock { $0.closed ? 0 : $0.id }
        guard id != 0, slot.put(frame) else { return }
        try? SDLDisplay.perform(.draw(id))
    }

    // MARK: From the SDL thread

    package func windowDidResize(width: Int, height: Int) {
        let changed = state.withLock { state -> Bool in
            let size = CaptureDevice.Dimensions(width: width, height: height)
            defer { state.size = size }
            return state.size != size
        }
        guard changed else { return }
        layerQueue.async { [layerReference] in
            layerReference.value?.bounds = CGRect(x: 0, y: 0, width: width, height: height)
        }
    }

    package func windowWasClosed() {
        let wasClosed = state.withLock { state in
            defer { state.closed = true }
            return state.closed
        }
        guard !wasClosed else { return }
        slot.clear()
        layerQueue.async { [layerReference, self] in
            layerReference.value?.removePresenter(self)
            self.closedSignal.signal()
        }
    }

    package func windowWasClicked(x: Int, y: Int) {
        layerQueue.async { [layerReference] in
            layerReference.value?.setPointsOfInterest(atLayerPoint: CGPoint(x: Double(x) + 0.5, y: Double(y) + 0.5))
        }
    }

    package func frameWasDrawn(_ frame: PreviewFrame) {
        state.withLock { $0.drawn = (frame.sequenceNumber, frame.width, frame.height) }
        frameDrawn.signal()
    }

    /// Waits until the layer changes the window asked for (a resize, a click) are applied.
    package func waitForLayerChanges() { layerQueue.sync {} }

    /// The number and size of the last frame drawn (for tests).
    package var lastDrawn: (sequenceNumber: UInt64, width: Int, height: Int)? { state.withLock { $0.drawn } }
}
