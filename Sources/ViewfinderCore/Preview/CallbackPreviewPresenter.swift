import Dispatch

/// Hands a preview layer's rendered frames to your closure on a queue you choose: for toolkits
/// Viewfinder does not draw into (GTK, a game engine, your own window).
///
/// ```swift
/// let presenter = CallbackPreviewPresenter(queue: .main) { frame in
///     guard let pixels = frame.pixelBuffer else { return }   // BGRA, frame.width x frame.height
///     myImageView.upload(pixels.baseAddress, bytesPerRow: pixels.bytesPerRow)
/// }
/// previewLayer.addPresenter(presenter)
/// ```
///
/// Frames are BGRA at the layer's size (``PreviewFrame/pixelBuffer`` is never `nil` here). Newest
/// wins: the handler runs one frame at a time, even on a concurrent queue; a frame that arrives
/// while it runs waits, and a newer one replaces it (counted in ``statistics``). A slow handler
/// never slows the layer, the camera or other outputs.
///
/// Thread safety: may be used from any thread.
public final class CallbackPreviewPresenter: PreviewPresenter {
    private let queue: DispatchQueue
    private let handler: @Sendable (PreviewFrame) -> Void
    private let slot = NewestFrameSlot()

    /// A presenter calling `handler` on `queue` with each frame it shows.
    public init(queue: DispatchQueue, handler: @escaping @Sendable (PreviewFrame) -> Void) {
        self.queue = queue
        self.handler = handler
    }

    /// Frames received, handed to the handler, and replaced before it could take them.
    public var statistics: PresenterStatistics { slot.statistics }

    /// Keeps `frame` as the newest and, unless the handler is busy, schedules it on the queue.
    public func present(_ frame: PreviewFrame) {
        guard slot.put(frame) else { return }
        queue.async { [slot, handler] in
            while let next = slot.take() { handler(next) }
        }
    }
}
