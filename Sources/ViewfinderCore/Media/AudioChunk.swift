import Synchronization

/// Reusable memory for PCM chunks: a fixed number of equally sized byte buffers, handed out as
/// ``PCMBuffer``s that come back when their last reference goes. Steady-state capture allocates
/// nothing; when every buffer is held downstream ``makeBuffer()`` returns `nil` and the source
/// counts the audio it could not keep.
///
/// Thread safety: all members may be used from any thread.
package final class PCMBufferPool: Sendable {
    /// Bytes in each buffer.
    package let bytesPerBuffer: Int
    /// Buffers the pool can lend at once.
    package let capacity: Int

    private struct State {
        var memory: [UnsafeMutableRawPointer?]
        var free: [Int]
    }
    // The raw pointers are owned by the pool and only reached under the lock.
    private let state: Mutex<State>

    package init(bytesPerBuffer: Int, capacity: Int) throws(CaptureError) {
        guard bytesPerBuffer > 0, capacity > 0 else {
            throw CaptureError(
                .invalidArgument,
                "a PCM buffer pool needs positive sizes, got \(capacity) buffers of \(bytesPerBuffer) bytes")
        }
        self.bytesPerBuffer = bytesPerBuffer
        self.capacity = capacity
        state = Mutex(State(memory: Array(repeating: nil, count: capacity), free: Array((0..<capacity).reversed())))
    }

    deinit {
        state.withLock { state in
            for case let memory? in state.memory { memory.deallocate() }
        }
    }

    /// A free buffer, or `nil` when all are lent.
    package func makeBuffer() -> PCMBuffer? {
        let taken: (Int, UnsafeMutableRawPointer)? = state.withLock { state in
            guard let slot = state.free.popLast() else { return nil }
            if let memory = state.memory[slot] { return (slot, memory) }
            let memory = UnsafeMutableRawPointer.allocate(byteCount: bytesPerBuffer, alignment: 64)
            state.memory[slot] = memory
            return (slot, memory)
        }
        guard let (slot, memory) = taken else { return nil }
        return PCMBuffer(memory: memory, capacity: bytesPerBuffer, pool: self, slot: slot)
    }

    /// Buffers lent out now.
    package var buffersInUse: Int { state.withLock { capacity - $0.free.count } }

    fileprivate func reclaim(slot: Int) {
        state.withLock { $0.free.append(slot) }
    }
}

/// Bytes of PCM lent by a ``PCMBufferPool`` (or owned alone), returned when the last reference
/// goes.
///
/// Thread safety: the producer writes the bytes before handing the buffer on; afterwards it is
/// only read, from any thread.
package final class PCMBuffer: @unchecked Sendable {  // written once by its producer before it is shared
    /// The start of the bytes.
    package let memory: UnsafeMutableRawPointer
    /// Bytes available at ``memory``.
    package let capacity: Int
    private let pool: PCMBufferPool?
    private let slot: Int

    fileprivate init(memory: UnsafeMutableRawPointer, capacity: Int, pool: PCMBufferPool, slot: Int) {
        self.memory = memory
        self.capacity = capacity
        self.pool = pool
        self.slot = slot
    }

    /// A buffer of its own of at least `capacity` bytes, starting with a copy of `bytes`
    /// (tests, one-off conversions).
    package init(copying bytes: UnsafeRawBufferPointer, capacity minimum: Int = 0) {
        capacity = max(1, bytes.count, minimum)
        memory = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 64)
        if let base = bytes.baseAddress, !bytes.isEmpty { memory.copyMemory(from: base, byteCount: bytes.count) }
        pool = nil
        slot = -1
    }

    deinit {
        if let pool { pool.reclaim(slot: slot) } else { memory.deallocate() }
    }
}

/// One period of captured audio as a source (ALSA, the virtual microphone) hands it on:
/// interleaved PCM in a pooled buffer, its format, its time and where it sits in the stream.
///
/// Thread safety: a value type; the bytes are immutable once delivered.
package struct AudioChunk: Sendable {
    /// The samples, `frameCount * channelCount` of them from the start: interleaved, or one
    /// channel after another (`frameCount` samples each) for a non-interleaved format.
    package var buffer: PCMBuffer
    /// Frames in the chunk.
    package var frameCount: Int
    /// The samples' layout.
    package var format: AudioFormat
    /// When the chunk's first frame was captured, on `CLOCK_MONOTONIC` (the clock cameras stamp
    /// frames with) or on the source's injected clock.
    package var presentationTime: MediaTime
    /// The stream position of the chunk's first frame: frames captured since the stream started,
    /// lost ones included. A chunk whose index is beyond the previous chunk's end follows a gap.
    package var sampleIndex: UInt64
    /// Frames lost right before this chunk (overrun, or no free buffer); `sampleIndex` already
    /// counts them.
    package var framesLostBefore: Int
    /// When the chunk reached user space, on the host's monotonic clock (for latency figures).
    package var hostArrivalTime: MediaTime

    /// The chunk's length in time, exact in the sample rate's timescale.
    /// A chunk of `frameCount` frames in `buffer`, as a capture source hands it on.
    package init(
        buffer: PCMBuffer, frameCount: Int, format: AudioFormat, presentationTime: MediaTime, sampleIndex: UInt64,
        framesLostBefore: Int, hostArrivalTime: MediaTime
    ) {
        self.buffer = buffer
        self.frameCount = frameCount
        self.format = format
        self.presentationTime = presentationTime
        self.sampleIndex = sampleIndex
        self.framesLostBefore = framesLostBefore
        self.hostArrivalTime = hostArrivalTime
    }

    package var duration: MediaTime { format.duration(ofFrames: frameCount) }

    /// The bytes of the chunk's frames (every channel's plane, back to back, when non-interleaved).
    package var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(
            start: buffer.memory, count: frameCount * format.sampleFormat.bytesPerSample * format.channelCount)
    }

    /// Runs `body` on the samples as `T` (`Int16`, `Int32` or `Float`, matching the format),
    /// interleaved: `frameCount * channelCount` values; an empty buffer when `T`'s size does not
    /// match the sample format.
    package func withSamples<T, R>(as type: T.Type, _ body: (UnsafeBufferPointer<T>) throws -> R) rethrows -> R {
        guard MemoryLayout<T>.size == format.sampleFormat.bytesPerSample else {
            return try body(UnsafeBufferPointer(start: nil, count: 0))
        }
        let count = frameCount * format.channelCount
        return try body(UnsafeBufferPointer(start: buffer.memory.assumingMemoryBound(to: T.self), count: count))
    }
}
