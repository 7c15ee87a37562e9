import Synchronization

/// Something that shows a preview layer's frames: a window, a web page, your own toolkit.
///
/// Add one with ``CaptureVideoPreviewLayer/addPresenter(_:)``. The contract:
/// - The layer renders each frame once, at its bounds' size in pixels with its gravity, rotation
///   and mirroring, and hands the same ``PreviewFrame`` to every presenter through
///   ``present(_:)``, on the layer's own serial delivery queue, one frame at a time and in order.
/// - ``present(_:)`` must return promptly: keep the newest frame and show it on your own thread
///   (replacing a frame not shown yet: newest wins). The layer itself is newest-wins too: while
///   presenters are busy at most one newer frame waits and replaced frames are counted as late
///   (``CaptureVideoPreviewLayer/statistics``); the camera, a recording or a data output beside
///   the layer never wait for it.
/// - A frame's buffers come from small pools: a presenter that holds frames for long makes the
///   layer drop newer ones (counted as out of buffers), it never makes memory grow.
/// - A presenter whose ``acceptsJPEG`` is `true` is given the camera's own Motion-JPEG bytes
///   (``PreviewFrame/jpegBuffer``) when they already fit the layer exactly (same size, no
///   rotation, no mirroring); otherwise, and for every other presenter, it gets the rendered BGRA
///   frame (``PreviewFrame/pixelBuffer``).
///
/// Thread safety: presenters are called from the layer's delivery queue; they may be added and
/// removed from any thread.
public protocol PreviewPresenter: AnyObject, Sendable {
    /// Whether the presenter can show the camera's Motion-JPEG frames as they are (default
    /// `false`: it is always given BGRA).
    var acceptsJPEG: Bool { get }

    /// A new frame to show, on the layer's delivery queue. Must not block.
    func present(_ frame: PreviewFrame)
}

extension PreviewPresenter {
    /// Presenters take BGRA unless they say otherwise.
    public var acceptsJPEG: Bool { false }
}

/// One frame as a preview layer rendered it, handed to every ``PreviewPresenter``.
///
/// Thread safety: immutable; may be passed between threads. The buffers are the layer's pooled
/// buffers: let go of the frame when it has been shown.
public struct PreviewFrame: Sendable {
    /// The frame rendered as ``PixelFormat/bgra`` at ``width`` × ``height`` with the layer's
    /// gravity, rotation and mirroring; `nil` only when every presenter accepts JPEG and the
    /// camera's frame is passed through (``jpegBuffer``).
    public let pixelBuffer: PixelBuffer?
    /// The camera's own Motion-JPEG frame, undecoded, when it already fits the layer exactly and
    /// a presenter accepts JPEG; `nil` otherwise.
    public let jpegBuffer: PixelBuffer?
    /// The frame's width in pixels (the layer's bounds' width).
    public let width: Int
    /// The frame's height in pixels (the layer's bounds' height).
    public let height: Int
    /// The camera's capture time of the frame.
    public let presentationTimeStamp: MediaTime
    /// The frame's number in the stream (as a ``SampleBuffer``'s).
    public let sequenceNumber: UInt64
    /// When the frame reached the host, on ``HostClock`` (for latency figures).
    public let hostArrivalTime: MediaTime

    /// Calls `body` with the JPEG bytes of ``jpegBuffer`` (exactly the frame's bytes); `nil` when
    /// the frame has no JPEG.
    public func withJPEGBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result? {
        guard let jpegBuffer else { return nil }
        let bytes = jpegBuffer.bytes(ofPlane: 0)
        return try body(UnsafeRawBufferPointer(rebasing: bytes.prefix(min(bytes.count, jpegBuffer.dataSize))))
    }
}

/// What a newest-wins presenter counts.
public struct PresenterStatistics: Sendable, Hashable {
    /// Frames handed to the presenter.
    public var received = 0
    /// Frames shown (handed on to the handler, drawn in the window).
    public var presented = 0
    /// Frames replaced by a newer one before they were shown.
    public var replaced = 0

    /// Counters at zero.
    public init() {}
}

/// A one-frame mailbox with one taker at a time: newest wins, counted. Shared by the built-in
/// presenters. The taker drains it (``take()`` until `nil`); ``put(_:)`` says when no taker is
/// draining, so the caller must start one.
package final class NewestFrameSlot: Sendable {
    private struct State {
        var frame: PreviewFrame?
        var draining = false
        var statistics = PresenterStatistics()
    }
    private let state = Mutex(State())

    /// An empty slot.
    package init() {}

    /// Stores `frame`, replacing (and counting) one not taken yet. Returns `true` when no taker is
    /// draining: the caller starts one (which then owns the slot until ``take()`` returns `nil`).
    package func put(_ frame: PreviewFrame) -> Bool {
        state.withLock { state in
            state.statistics.received += 1
            if state.frame != nil { state.statistics.replaced += 1 }
            state.frame = frame
            guard !state.draining else { return false }
            state.draining = true
            return true
        }
    }

    /// The waiting frame, counted as presented; `nil` (and the taker's turn ends) when none waits.
    package func take() -> PreviewFrame? {
        state.withLock { state in
            guard let frame = state.frame else {
                state.draining = false
                return nil
            }
            state.frame = nil
            state.statistics.presented += 1
            return frame
        }
    }

    /// Drops the waiting frame without counting it as presented.
    package func clear() { state.withLock { $0.frame = nil } }

    package var statistics: PresenterStatistics { state.withLock { $0.statistics } }
}
