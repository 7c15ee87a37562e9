import Synchronization

/// One frame as the pipeline hands it to a delegate, the counterpart of `CMSampleBuffer`: an
/// image, its timing, its sequence number, and attachments (metadata from processors).
///
/// A buffer reported through `captureOutput(_:didDrop:from:)` carries timing and a
/// ``droppedFrameReason`` but no pixels.
///
/// Thread safety: immutable but for ``attachments``, which are guarded by a lock; may be shared
/// across threads.
public final class SampleBuffer: Sendable {
    /// The pixels, or `nil` for a dropped-frame buffer.
    public let imageBuffer: PixelBuffer?
    /// When the camera captured the frame (start of exposure, or the driver's timestamp), on the
    /// device's clock (monotonic for real cameras).
    public let presentationTimeStamp: MediaTime
    /// How long the frame is shown: the device's frame interval.
    public let duration: MediaTime
    /// The camera's frame counter; consecutive frames differ by one, gaps mean lost frames.
    public let sequenceNumber: UInt64
    /// Why the frame was dropped, for buffers passed to `captureOutput(_:didDrop:from:)`.
    public let droppedFrameReason: DroppedFrameReason?

    private let attachmentStore: Mutex<[AttachmentKey: any Sendable]>
    /// The output budget whose slot this frame holds, given back in `deinit`.
    private let budget: FrameBudget?

    init(
        imageBuffer: PixelBuffer?, presentationTimeStamp: MediaTime, duration: MediaTime,
        sequenceNumber: UInt64, droppedFrameReason: DroppedFrameReason? = nil,
        attachments: [AttachmentKey: any Sendable] = [:], budget: FrameBudget? = nil
    ) {
        self.imageBuffer = imageBuffer
        self.presentationTimeStamp = presentationTimeStamp
        self.duration = duration
        self.sequenceNumber = sequenceNumber
        self.droppedFrameReason = droppedFrameReason
        self.attachmentStore = Mutex(attachments)
        self.budget = budget
    }

    deinit {
        budget?.release()
    }

    /// A buffer that wraps `imageBuffer` with the given timing, e.g. to feed a processor in a test
    /// or a benchmark.
    public convenience init(
        imageBuffer: PixelBuffer, presentationTimeStamp: MediaTime, duration: MediaTime = .invalid,
        sequenceNumber: UInt64 = 0
    ) {
        self.init(
            imageBuffer: imageBuffer, presentationTimeStamp: presentationTimeStamp, duration: duration,
            sequenceNumber: sequenceNumber, droppedFrameReason: nil, budget: nil)
    }

    /// All attachments.
    public var attachments: [AttachmentKey: any Sendable] { attachmentStore.withLock { $0 } }

    /// The attachment under `key`, if any.
    public func attachment(forKey key: AttachmentKey) -> (any Sendable)? {
        attachmentStore.withLock { $0[key] }
    }

    /// Attaches `value` under `key`, replacing what was there.
    public func setAttachment(_ value: any Sendable, forKey key: AttachmentKey) {
        attachmentStore.withLock { $0[key] = value }
    }

    /// A name for an attachment. Processors define their own as static constants.
    public struct AttachmentKey: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { rawValue = value }
    }
}

/// Why a frame was not delivered, passed with `captureOutput(_:didDrop:from:)` (the counterpart
/// of `kCMSampleBufferAttachmentKey_DroppedFrameReason`).
public enum DroppedFrameReason: Hashable, Sendable, CustomStringConvertible {
    /// The delegate was still busy and a newer frame replaced this one
    /// (`alwaysDiscardsLateVideoFrames`).
    case frameWasLate
    /// Every buffer was in use (the delegate, or frames queued for it, hold them all).
    case outOfBuffers
    /// The device lost the frame (a gap in its sequence numbers).
    case discontinuity
    /// A frame processor dropped the frame; the associated value names the processor.
    case droppedByProcessor(String)

    public var description: String {
        switch self {
        case .frameWasLate: return "frameWasLate"
        case .outOfBuffers: return "outOfBuffers"
        case .discontinuity: return "discontinuity"
        case .droppedByProcessor(let name): return "droppedByProcessor(\(name))"
        }
    }
}

/// Bounds how many frames an output has in flight (queued for its delegate, or held by it).
/// A frame takes a slot with ``tryAcquire()`` when it is accepted; the slot is given back by the
/// sample buffer that carries the frame (in its `deinit`), or by the output when the frame is
/// dropped before becoming one. Counting by hand spares an object per frame.
///
/// Thread safety: lock-free; any thread.
final class FrameBudget: Sendable {
    let limit: Int
    private let inFlight = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    /// Takes a slot; `false` when `limit` frames are already in flight.
    func tryAcquire() -> Bool {
        var current = inFlight.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = inFlight.compareExchange(
                expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Gives back a slot taken by ``tryAcquire()``.
    func release() { inFlight.subtract(1, ordering: .releasing) }

    /// Frames in flight now.
    var count: Int { inFlight.load(ordering: .relaxed) }
}
