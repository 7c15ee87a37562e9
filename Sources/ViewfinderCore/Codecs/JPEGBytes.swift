import Foundation

/// Memory holding one JPEG file, given back when its pixel buffer goes.
package final class JPEGBytes: PixelMemoryOwner, @unchecked Sendable {
    // unchecked: the memory is written once, before the buffer holding it is handed out.
    private let memory: UnsafeMutableRawPointer

    private init(count: Int) {
        memory = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 64)
    }

    deinit { memory.deallocate() }

    package func reclaim(slot: Int) {}

    /// A ``PixelFormat/mjpeg`` buffer of a `width` × `height` image holding `jpeg`.
    package static func pixelBuffer(holding jpeg: Data, width: Int, height: Int) -> PixelBuffer {
        let layout = PlaneLayout(pixelFormat: .mjpeg, width: width, height: height)
        let owner = JPEGBytes(count: max(jpeg.count, layout.totalBytes, 1))
        jpeg.copyBytes(to: owner.memory.assumingMemoryBound(to: UInt8.self), count: jpeg.count)
        return PixelBuffer(memory: owner.memory, layout: layout, dataSize: jpeg.count, owner: owner, slot: 0)
    }
}
