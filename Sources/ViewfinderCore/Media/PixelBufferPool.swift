import Foundation
import Synchronization

/// A bounded pool of equally shaped pixel buffers, the counterpart of `CVPixelBufferPool`.
///
/// Memory is allocated the first time a slot is used and reused from then on, so a pipeline in
/// steady state allocates no pixel memory. When every slot is in use, ``makePixelBuffer()``
/// returns `nil` instead of allocating more: a holder that keeps buffers too long starves the pool
/// rather than growing memory without bound.
///
/// Sizes are checked when the pool is made: each side at most ``PixelBuffer/maximumDimension``
/// pixels, and `capacity` buffers together at most ``memoryBudget`` bytes, so a size or count
/// from outside (settings, a processor, a driver) is a typed error, never a huge allocation.
///
/// Thread safety: all methods may be called from any thread.
public final class PixelBufferPool: PixelMemoryOwner {
    /// The most memory one pool may hold: 4 GiB (for example 128 frames of 4K BGRA).
    public static let memoryBudget = 4 << 30

    /// The format of every buffer.
    public let pixelFormat: PixelFormat
    /// The width of every buffer.
    public let width: Int
    /// The height of every buffer.
    public let height: Int
    /// The most buffers that can exist at once.
    public let capacity: Int

    package let layout: PlaneLayout
    private struct State {
        var memory: [UnsafeMutableRawPointer?]
        var free: [Int]
        var inUse = 0
        /// Threads in ``makePixelBufferWithSlot(waitingUnless:)``: reclaiming wakes them.
        var waiters = 0
    }
    private let state: Mutex<State>
    /// Where waiters for a free buffer sleep (used only while some thread waits).
    private let freed = NSCondition()
    /// Buffer objects their last holder gave back (``PixelBuffer/recycle(_:)``), reused for the
    /// next buffers so steady-state use allocates no objects either.
    package let spares: SpareObjects<PixelBuffer>

    /// A pool of at most `capacity` buffers of `width` × `height` in `pixelFormat`. Throws
    /// ``CaptureError/Code/invalidArgument`` for a size that is not positive or exceeds
    /// ``PixelBuffer/maximumDimension``, a capacity below 1, or buffers that would need more than
    /// ``memoryBudget`` together.
    public init(pixelFormat: PixelFormat, width: Int, height: Int, capacity: Int) throws(CaptureError) {
        guard width > 0, height > 0 else {
            throw CaptureError(.invalidArgument, "a pixel buffer pool needs a positive size, got \(width)x\(height)")
        }
        try PixelBuffer.checkDimensions(width: width, height: height, what: "a pixel buffer pool")
        guard capacity > 0 else {
            throw CaptureError(.invalidArgument, "a pixel buffer pool needs a capacity of at least 1, got \(capacity)")
        }
        guard pixelFormat.planeCount > 0 else {
            throw CaptureError(
                .unsupportedPixelFormat, "cannot make buffers of unknown pixel format '\(pixelFormat.fourCC)'")
        }
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.capacity = capacity
        let layout = PlaneLayout(pixelFormat: pixelFormat, width: width, height: height)
        let (total, overflow) = layout.totalBytes.multipliedReportingOverflow(by: capacity)
        guard !overflow, total <= Self.memoryBudget else {
            throw CaptureError(
                .invalidArgument,
                "a pool of \(capacity) \(width)x\(height) \(pixelFormat.name) buffers needs more than its memory budget of \(Self.memoryBudget >> 20) MiB: use fewer buffers or smaller frames"
            )
        }
        self.layout = layout
        spares = SpareObjects(limit: capacity)
        var free = [Int]()
        free.reserveCapacity(capacity)
        free.append(contentsOf: (0..<capacity).reversed())
        state = Mutex(State(memory: Array(repeating: nil, count: capacity), free: free))
    }

    deinit {
        state.withLock { state in
            for case let memory? in state.memory { memory.deallocate() }
        }
    }

    /// A buffer from the pool, or `nil` when all `capacity` buffers are in use.
    public func makePixelBuffer() -> PixelBuffer? {
        makePixelBufferWithSlot()?.buffer
    }

    /// A buffer and the slot its memory lives in (stable across reuse), or `nil` when exhausted.
    package func makePixelBufferWithSlot() -> (buffer: PixelBuffer, slot: Int)? {
        let taken: (Int, UnsafeMutableRawPointer)? = state.withLock { state in
            guard let slot = state.free.popLast() else { return nil }
            state.inUse += 1
            if let memory = state.memory[slot] { return (slot, memory) }
            let memory = UnsafeMutableRawPointer.allocate(byteCount: layout.totalBytes, alignment: 64)
            state.memory[slot] = memory
            return (slot, memory)
        }
        guard let (slot, memory) = taken else { return nil }
        return (PixelBuffer.make(memory: memory, layout: layout, owner: self, slot: slot, spares: spares), slot)
    }

    /// A buffer, waiting for one to be returned while all are in use; `nil` once `isCancelled`
    /// says so (checked at least every 20 ms).
    package func makePixelBufferWithSlot(waitingUnless isCancelled: () -> Bool) -> (buffer: PixelBuffer, slot: Int)? {
        while !isCancelled() {
            if let taken = makePixelBufferWithSlot() { return taken }
            freed.lock()
            let mustWait = state.withLock { state -> Bool in
                guard state.free.isEmpty else { return false }
                state.waiters += 1
                return true
            }
            if mustWait {
                _ = freed.wait(until: Date(timeIntervalSinceNow: 0.02))
                state.withLock { $0.waiters -= 1 }
            }
            freed.unlock()
        }
        return nil
    }

    /// Buffers handed out and not yet returned.
    public var buffersInUse: Int { state.withLock { $0.inUse } }

    /// Buffers whose memory has been allocated so far (never more than ``capacity``).
    public var allocatedBufferCount: Int { state.withLock { $0.memory.count { $0 != nil } } }

    public func reclaim(slot: Int) {
        let wake = state.withLock { state -> Bool in
            state.free.append(slot)
            state.inUse -= 1
            return state.waiters > 0
        }
        if wake {
            freed.lock()
            freed.broadcast()
            freed.unlock()
        }
    }
}
