import Synchronization

/// A bounded pool of equally shaped pixel buffers, the counterpart of `CVPixelBufferPool`.
///
/// Memory is allocated the first time a slot is used and reused from then on, so a pipeline in
/// steady state allocates no pixel memory. When every slot is in use, ``makePixelBuffer()``
/// returns `nil` instead of allocating more: a holder that keeps buffers too long starves the pool
/// rather than growing memory without bound.
///
/// Thread safety: all methods may be called from any thread.
public final class PixelBufferPool: PixelMemoryOwner {
    /// The format of every buffer.
    public let pixelFormat: PixelFormat
    /// The width of every buffer.
    public let width: Int
    /// The height of every buffer.
    public let height: Int
    /// The most buffers that can exist at once.
    public let capacity: Int

    let layout: PlaneLayout
    private struct State {
        var memory: [UnsafeMutableRawPointer?]
        var free: [Int]
        var inUse = 0
    }
    private let state: Mutex<State>

    /// A pool of at most `capacity` buffers of `width` × `height` in `pixelFormat`.
    public init(pixelFormat: PixelFormat, width: Int, height: Int, capacity: Int) throws(CaptureError) {
        guard width > 0, height > 0 else {
            throw CaptureError(.invalidArgument, "a pixel buffer pool needs a positive size, got \(width)x\(height)")
        }
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
        self.layout = PlaneLayout(pixelFormat: pixelFormat, width: width, height: height)
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
    func makePixelBufferWithSlot() -> (buffer: PixelBuffer, slot: Int)? {
        let taken: (Int, UnsafeMutableRawPointer)? = state.withLock { state in
            guard let slot = state.free.popLast() else { return nil }
            state.inUse += 1
            if let memory = state.memory[slot] { return (slot, memory) }
            let memory = UnsafeMutableRawPointer.allocate(byteCount: layout.totalBytes, alignment: 64)
            state.memory[slot] = memory
            return (slot, memory)
        }
        guard let (slot, memory) = taken else { return nil }
        return (PixelBuffer(memory: memory, layout: layout, owner: self, slot: slot), slot)
    }

    /// Buffers handed out and not yet returned.
    public var buffersInUse: Int { state.withLock { $0.inUse } }

    /// Buffers whose memory has been allocated so far (never more than ``capacity``).
    public var allocatedBufferCount: Int { state.withLock { $0.memory.count { $0 != nil } } }

    public func reclaim(slot: Int) {
        state.withLock { state in
            state.free.append(slot)
            state.inUse -= 1
        }
    }
}
