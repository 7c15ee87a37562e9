import CV4L2
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// The production ``V4L2Interface``: libv4l2 for open, close, ioctl, mmap and munmap (so cameras
/// that only send MJPEG also offer raw formats, converted by libv4l2), `poll(2)` for readiness.
/// `EINTR` is retried everywhere.
///
/// libv4l2 prints `libv4l2: error dequeuing buf: Resource temporarily unavailable` on every `EAGAIN`
/// of a non-converting stream; the first open routes its messages through a filter that drops that
/// line and passes its real errors and warnings to stderr (unless the application set
/// `v4l2_log_file` or `LIBV4L2_LOG_FILENAME` itself).
///
/// Streams of formats the camera delivers natively take ``DirectV4L2Interface`` instead where the
/// node is the kernel's (``nativeStreamingInterface(for:)``): libv4l2 keeps at most 16 devices a
/// process.
///
/// Thread safety: stateless; libv4l2 and the kernel serialise what they must.
package struct LibV4L2Interface: V4L2Interface {
    /// Installs the log filter once per process, before the first `v4l2_open`.
    private static let logFilter: Void = vf_v4l2_install_log_filter()

    /// Which path streams of native formats take: plain ioctls (``DirectV4L2Interface``) on kernel
    /// nodes, or libv4l2 too.
    package let streamingPath: V4L2StreamingPath

    /// libv4l2's entry points; native formats stream directly unless `VIEWFINDER_V4L2_PATH=libv4l2`.
    package init(streamingPath: V4L2StreamingPath = .fromEnvironment) {
        self.streamingPath = streamingPath
    }

    package func nativeStreamingInterface(for path: String) -> (any V4L2Interface)? {
        guard streamingPath == .automatic, V4L2StreamingPath.isKernelNode(path) else { return nil }
        return DirectV4L2Interface()
    }

    package func open(_ path: String, flags: Int32) throws(V4L2Errno) -> Int32 {
        Self.logFilter
        while true {
            let fd = vf_v4l2_open(path, flags | O_CLOEXEC)
            if fd >= 0 { return fd }
            if errno != EINTR { throw V4L2Errno(errno) }
        }
    }

    package func close(_ fd: Int32) {
        _ = vf_v4l2_close(fd)
    }

    package func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) throws(V4L2Errno) {
        while vf_v4l2_ioctl(fd, request, argument) == -1 {
            if errno != EINTR { throw V4L2Errno(errno) }
        }
    }

    package func mmap(fd: Int32, length: Int, offset: Int64) throws(V4L2Errno) -> UnsafeMutableRawPointer {
        guard let address = vf_v4l2_mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset),
            address != MAP_FAILED
        else { throw V4L2Errno(errno) }
        return address
    }

    package func munmap(_ address: UnsafeMutableRawPointer, length: Int) {
        _ = vf_v4l2_munmap(address, length)
    }

    package func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) throws(V4L2Errno) -> Int16 {
        var descriptor = pollfd(fd: fd, events: events, revents: 0)
        while true {
            let result = Glibc.poll(&descriptor, 1, timeoutMilliseconds)
            if result >= 0 { return result == 0 ? 0 : descriptor.revents }
            if errno != EINTR { throw V4L2Errno(errno) }
        }
    }
}
