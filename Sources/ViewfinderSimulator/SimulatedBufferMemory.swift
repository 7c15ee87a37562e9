import Viewfinder

/// The memory of one simulated driver buffer: allocated when the application requests buffers,
/// kept alive by the driver's queue and by every mapping of it (as the kernel's videobuf2 does),
/// freed when the last of them lets go.
///
/// Thread safety: the object is immutable; its bytes are written by the simulated driver only
/// while the buffer is queued to it, and read by the application only while dequeued.
final class SimulatedBufferMemory: @unchecked Sendable {  // unchecked: raw memory handed over by the queue protocol.
    let address: UnsafeMutableRawPointer
    let length: Int

    init(length: Int) {
        self.length = length
        address = UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 4096)
        address.initializeMemory(as: UInt8.self, repeating: 0, count: length)
    }

    deinit {
        address.deallocate()
    }
}
