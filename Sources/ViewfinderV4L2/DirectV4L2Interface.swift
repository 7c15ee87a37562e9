import CV4L2
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// The direct ``V4L2Interface``: plain `open(2)`, `ioctl(2)`, `mmap(2)`, `munmap(2)` and `poll(2)`
/// on the kernel's node, without libv4l2. `EINTR` is retried everywhere.
///
/// A stream of a format the camera delivers natively takes this path (see
/// ``V4L2Interface/nativeStreamingInterface(for:)``): it has no per-process limit, where libv4l2
/// keeps at most 16 devices open at once (`V4L2_MAX_DEVICES`), and nothing between the driver's
/// buffers and the frames. libv4l2 stays for what only it does: the formats it emulates (RGB or
/// YUV converted from MJPEG or Bayer) and its plug-ins (the test suite's fake camera).
///
/// Thread safety: stateless; the kernel serialises what it must.
package struct DirectV4L2Interface: V4L2Interface {
    /// The kernel's entry points.
    package init() {}

    package func open(_ path: String, flags: Int32) throws(V4L2Errno) -> Int32 {
        while true {
            let fd = Glibc.open(path, flags | O_CLOEXEC)
            if fd >= 0 { return fd }
            if errno != EINTR { throw V4L2Errno(errno) }
        }
    }

    package func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    package func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) throws(V4L2Errno) {
        while Glibc.ioctl(fd, request, argument) == -1 {
            if errno != EINTR { throw V4L2Errno(errno) }
        }
    }

    package func mmap(fd: Int32, length: Int, offset: Int64) throws(V4L2Errno) -> UnsafeMutableRawPointer {
        guard let address = Glibc.mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(offset)),
            address != MAP_FAILED
        else { throw V4L2Errno(errno) }
        return address
    }

    package func munmap(_ address: UnsafeMutableRawPointer, length: Int) {
        _ = Glibc.munmap(address, length)
    }

    package func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) throws(V4L2Errno) -> Int16 {
        try LibV4L2Interface().poll(fd, events: events, timeoutMilliseconds: timeoutMilliseconds)
    }

    package func nativeStreamingInterface(for path: String) -> (any V4L2Interface)? { self }
}

/// Which path ``LibV4L2Interface`` streams native formats through.
package enum V4L2StreamingPath: String, Sendable {
    /// Plain ioctls for the formats the camera delivers natively (when the node answers
    /// `VIDIOC_QUERYCAP` itself), libv4l2 for emulated formats and plug-in devices: the default.
    case automatic
    /// libv4l2 for everything (what Viewfinder did before the direct path;
    /// `VIEWFINDER_V4L2_PATH=libv4l2`).
    case libv4l2

    /// `VIEWFINDER_V4L2_PATH` (`libv4l2` or `direct`/`automatic`), else ``automatic``.
    package static var fromEnvironment: V4L2StreamingPath {
        guard let value = getenv("VIEWFINDER_V4L2_PATH") else { return .automatic }
        return String(cString: value) == "libv4l2" ? .libv4l2 : .automatic
    }

    /// Whether the node at `path` is a kernel V4L2 capture node that plain ioctls reach (a
    /// libv4l2 plug-in's device file is not: it answers `VIDIOC_QUERYCAP` with `ENOTTY`).
    package static func isKernelNode(_ path: String) -> Bool {
        let direct = DirectV4L2Interface()
        guard let fd = try? direct.open(path, flags: O_RDWR | O_NONBLOCK) else { return false }
        defer { direct.close(fd) }
        var capability = v4l2_capability()
        guard (try? direct.ioctl(fd, VF_VIDIOC_QUERYCAP, &capability)) != nil else { return false }
        let caps =
            capability.capabilities & VF_V4L2_CAP_DEVICE_CAPS != 0 ? capability.device_caps : capability.capabilities
        return V4L2DeviceInfo.isStreamingCapture(caps)
    }
}
