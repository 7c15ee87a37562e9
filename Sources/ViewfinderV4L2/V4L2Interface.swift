import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// The `errno` of a failed call through a ``V4L2Interface``.
package struct V4L2Errno: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `errno` value (`ENODEV`, `EAGAIN`, …).
    package var code: Int32
    /// The error for `errno` value `code`.
    package init(_ code: Int32) { self.code = code }

    package var description: String { "errno \(code): \(String(cString: strerror(code)))" }
}

/// The one small interface through which the V4L2 backend reaches a device: open, close, ioctl,
/// mmap, munmap and poll (the shape of Chromium's `V4L2CaptureDevice`).
///
/// In production ``LibV4L2Interface`` calls libv4l2 (which adds format conversion for cameras
/// that only deliver compressed frames) and `poll(2)`; in tests a ``SimulatedV4L2Bus`` implements
/// it with in-process cameras that follow the V4L2 specification, so the very same backend code
/// runs against both.
///
/// Thread safety: implementations must accept calls from any thread, as the kernel does.
package protocol V4L2Interface: Sendable {
    /// Opens the device node at `path` (`O_RDWR | O_NONBLOCK` is what the backend passes).
    func open(_ path: String, flags: Int32) throws(V4L2Errno) -> Int32
    /// Closes a descriptor from ``open(_:flags:)``. Mappings made through it stay valid until unmapped.
    func close(_ fd: Int32)
    /// Performs `request` (a `VIDIOC_*` code) with the structure at `argument`; `EINTR` is retried.
    func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) throws(V4L2Errno)
    /// Maps `length` bytes of the buffer at `offset` (from `VIDIOC_QUERYBUF`) read-write, shared.
    func mmap(fd: Int32, length: Int, offset: Int64) throws(V4L2Errno) -> UnsafeMutableRawPointer
    /// Unmaps memory from ``mmap(fd:length:offset:)``.
    func munmap(_ address: UnsafeMutableRawPointer, length: Int)
    /// Waits up to `timeoutMilliseconds` for `events` on `fd`; returns the events that occurred
    /// (empty on timeout).
    func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) throws(V4L2Errno) -> Int16
    /// The interface a stream of a format the node at `path` delivers natively should take
    /// instead of this one (``DirectV4L2Interface``, plain ioctls), or `nil` to stream through
    /// this one.
    func nativeStreamingInterface(for path: String) -> (any V4L2Interface)?
}

extension V4L2Interface {
    /// Streams through this interface.
    package func nativeStreamingInterface(for path: String) -> (any V4L2Interface)? { nil }
}

extension V4L2Interface {
    /// Performs `request` on a Swift value of the request's structure type.
    package func ioctl<Argument>(_ fd: Int32, _ request: UInt, _ argument: inout Argument) throws(V4L2Errno) {
        let result: Result<Void, V4L2Errno> = withUnsafeMutableBytes(of: &argument) { bytes in
            do throws(V4L2Errno) {
                try ioctl(fd, request, bytes.baseAddress!)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }
}

/// Reads a NUL-terminated C character array imported as a tuple (`v4l2_capability.card`, …).
package func v4l2String<Tuple>(_ tuple: Tuple) -> String {
    withUnsafeBytes(of: tuple) { bytes in
        let end = bytes.firstIndex(of: 0) ?? bytes.count
        return String(decoding: bytes[..<end], as: UTF8.self)
    }
}

/// Writes `string` into a C character array imported as a tuple, NUL-terminated and truncated to fit.
package func setV4L2String<Tuple>(_ tuple: inout Tuple, _ string: String) {
    withUnsafeMutableBytes(of: &tuple) { bytes in
        bytes.initializeMemory(as: UInt8.self, repeating: 0)
        for (index, byte) in string.utf8.prefix(bytes.count - 1).enumerated() { bytes[index] = byte }
    }
}
