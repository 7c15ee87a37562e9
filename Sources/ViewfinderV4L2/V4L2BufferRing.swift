import CV4L2
import Synchronization
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// A stream's ring of mmap'd V4L2 buffers, lent out as zero-copy ``PixelBuffer``s.
///
/// A dequeued buffer is wrapped in a ``PixelBuffer`` whose last release calls
/// ``reclaim(slot:)``, which queues the buffer to the driver again (`VIDIOC_QBUF`). Release can
/// happen on any thread, at any time: while streaming, after `STREAMOFF`, after the device was
/// unplugged. After ``shutDown()`` a returning buffer is unmapped instead, and once every buffer is
/// back the memory and (where still open) the descriptor are released. Memory a user still holds
/// is never unmapped under them.
///
/// Thread safety: all members may be called from any thread. Every call that changes the queue
/// or the descriptor's lifetime (QBUF, STREAMOFF, REQBUFS, munmap, close) runs under one lock, so
/// a late release never touches a closed descriptor. `DQBUF` and `poll` run unlocked on the
/// capture thread, which alone calls ``shutDown()`` and is the only closer while streaming.
package final class V4L2BufferRing: PixelMemoryOwner {
    // unchecked: the address is dereferenced only by buffer users; the ring maps and unmaps it under its lock.
    private struct Slot: @unchecked Sendable {
        var address: UnsafeMutableRawPointer
        var length: Int
        var isLent = false
        var isMapped = true
    }

    private struct State: Sendable {
        var slots: [Slot]
        var isStreaming = false
        var isDescriptorOpen = true
    }

    package let interface: any V4L2Interface
    package let fd: Int32
    /// Where the planes of each buffer sit (from the driver's `bytesperline`).
    package let layout: PlaneLayout
    /// Whether libv4l2 converts into these buffers: its memory lives as long as the descriptor,
    /// so the descriptor stays open until every buffer is back.
    package let isEmulated: Bool
    private let state: Mutex<State>
    /// Buffer objects their last holder gave back, reused for the next frames (no allocation
    /// per frame).
    private let spares: SpareObjects<PixelBuffer>

    /// A ring over buffers already mapped; the ring owns `fd` from now on.
    private init(
        interface: any V4L2Interface, fd: Int32, layout: PlaneLayout, isEmulated: Bool, slots: [Slot]
    ) {
        self.interface = interface
        self.fd = fd
        self.layout = layout
        self.isEmulated = isEmulated
        self.state = Mutex(State(slots: slots))
        self.spares = SpareObjects(limit: slots.count)
    }

    /// Requests `count` buffers, maps and queues them all, and starts streaming. On failure
    /// everything done so far is undone except closing `fd`, which stays the caller's.
    package static func start(
        interface: any V4L2Interface, fd: Int32, count: Int, layout: PlaneLayout, isEmulated: Bool
    ) throws(V4L2Errno) -> V4L2BufferRing {
        var request = v4l2_requestbuffers()
        request.count = UInt32(count)
        request.type = VF_V4L2_BUF_TYPE_VIDEO_CAPTURE
        request.memory = VF_V4L2_MEMORY_MMAP
        try interface.ioctl(fd, VF_VIDIOC_REQBUFS, &request)
        var slots: [Slot] = []
        func undo() {
            for slot in slots { interface.munmap(slot.address, length: slot.length) }
            var release = v4l2_requestbuffers()
            release.type = VF_V4L2_BUF_TYPE_VIDEO_CAPTURE
            release.memory = VF_V4L2_MEMORY_MMAP
            try? interface.ioctl(fd, VF_VIDIOC_REQBUFS, &release)
        }
        do throws(V4L2Errno) {
            guard request.count > 0 else { throw V4L2Errno(ENOMEM) }
            for index in 0..<request.count {
                var buffer = makeBuffer(index: index)
                try interface.ioctl(fd, VF_VIDIOC_QUERYBUF, &buffer)
                let length = Int(buffer.length)
                let address = try interface.mmap(fd: fd, length: length, offset: Int64(buffer.m.offset))
                slots.append(Slot(address: address, length: length))
            }
            for index in 0..<request.count {
                var buffer = makeBuffer(index: index)
                try interface.ioctl(fd, VF_VIDIOC_QBUF, &buffer)
            }
            var type = Int32(VF_V4L2_BUF_TYPE_VIDEO_CAPTURE)
            try interface.ioctl(fd, VF_VIDIOC_STREAMON, &type)
        } catch {
            undo()
            throw error
        }
        let ring = V4L2BufferRing(interface: interface, fd: fd, layout: layout, isEmulated: isEmulated, slots: slots)
        ring.state.withLock { $0.isStreaming = true }
        return ring
    }

    package static func makeBuffer(index: UInt32) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = index
        buffer.type = VF_V4L2_BUF_TYPE_VIDEO_CAPTURE
        buffer.memory = VF_V4L2_MEMORY_MMAP
        return buffer
    }

    /// Buffers in the ring.
    package var count: Int { state.withLock { $0.slots.count } }

    /// The bytes mapped for buffer `index` (what the driver's `bytesused` may not exceed).
    package func length(of index: Int) -> Int { state.withLock { $0.slots[index].length } }

    /// The smallest buffer mapped (each must hold a whole frame of a raw format).
    package var smallestLength: Int { state.withLock { $0.slots.map(\.length).min() ?? 0 } }

    /// Buffers lent out and not yet returned.
    package var lentCount: Int { state.withLock { $0.slots.count { $0.isLent } } }

    /// Whether memory or the descriptor is still held (buffers out after shutdown).
    package var isHoldingResources: Bool {
        state.withLock { $0.isDescriptorOpen || $0.slots.contains { $0.isMapped } }
    }

    /// Wraps dequeued buffer `index` (holding `bytesUsed` bytes, never counted past its mapping)
    /// for delivery; its release re-queues it.
    package func lend(index: Int, bytesUsed: Int) -> PixelBuffer {
        let (address, length) = state.withLock { state in
            state.slots[index].isLent = true
            return (state.slots[index].address, state.slots[index].length)
        }
        return PixelBuffer.make(
            memory: address, layout: layout, dataSize: min(max(0, bytesUsed), length), owner: self, slot: index,
            spares: spares)
    }

    /// Queues dequeued buffer `index` again without lending it (a corrupt frame).
    package func requeue(index: Int) throws(V4L2Errno) {
        try state.withLock { (state) throws(V4L2Errno) in
            guard state.isStreaming else { return }
            var buffer = Self.makeBuffer(index: UInt32(index))
            try interface.ioctl(fd, VF_VIDIOC_QBUF, &buffer)
        }
    }

    package func reclaim(slot: Int) {
        state.withLock { state in
            state.slots[slot].isLent = false
            if state.isStreaming {
                var buffer = Self.makeBuffer(index: UInt32(slot))
                // A failure here (the device is gone) surfaces through DQBUF on the capture thread.
                try? interface.ioctl(fd, VF_VIDIOC_QBUF, &buffer)
            } else {
                releaseReturned(&state)
            }
        }
    }

    /// Stops streaming (`STREAMOFF` returns every queued buffer) and releases what no one holds:
    /// the descriptor at once unless libv4l2's converted buffers are still out, each mapping as
    /// its buffer comes back. Called once, by the capture thread as it ends.
    package func shutDown() {
        state.withLock { state in
            guard state.isStreaming else { return }
            state.isStreaming = false
            var type = Int32(VF_V4L2_BUF_TYPE_VIDEO_CAPTURE)
            try? interface.ioctl(fd, VF_VIDIOC_STREAMOFF, &type)
            let anyLent = state.slots.contains { $0.isLent }
            if anyLent && !isEmulated {
                // The kernel keeps mapped buffer memory alive past close (each mapping holds a
                // reference), so the device is free for the next open at once.
                interface.close(fd)
                state.isDescriptorOpen = false
            } else if anyLent {
                // libv4l2's conversion buffers die with its descriptor: keep it, but give the
                // driver's queue back so the camera can be opened again.
                var release = v4l2_requestbuffers()
                release.type = VF_V4L2_BUF_TYPE_VIDEO_CAPTURE
                release.memory = VF_V4L2_MEMORY_MMAP
                try? interface.ioctl(fd, VF_VIDIOC_REQBUFS, &release)
            }
            releaseReturned(&state)
        }
    }

    /// Unmaps every buffer that is back; closes the descriptor once all are.
    private func releaseReturned(_ state: inout State) {
        for index in state.slots.indices where state.slots[index].isMapped && !state.slots[index].isLent {
            interface.munmap(state.slots[index].address, length: state.slots[index].length)
            state.slots[index].isMapped = false
        }
        if state.isDescriptorOpen && !state.slots.contains(where: { $0.isMapped }) {
            if !isEmulated {
                var release = v4l2_requestbuffers()
                release.type = VF_V4L2_BUF_TYPE_VIDEO_CAPTURE
                release.memory = VF_V4L2_MEMORY_MMAP
                try? interface.ioctl(fd, VF_VIDIOC_REQBUFS, &release)
            }
            interface.close(fd)
            state.isDescriptorOpen = false
        }
    }
}
