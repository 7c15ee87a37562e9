import CTurboJPEG
import CV4L2
import Foundation
import Viewfinder

/// The decode floor that pays the camera's read (`capacity/decode-floor/…/camera-read`): each
/// frame dequeued from a plug-in camera through libv4l2 (`v4l2_open`, MMAP buffers, blocking
/// DQBUF, then QBUF: the path Viewfinder, GStreamer and FFmpeg all read the capacity cameras by),
/// TurboJPEG-decoded to planes at 1/`scale` on the same thread, requeued. Beside TurboJPEG's decode
/// of the same frames from memory, the difference is the camera's share of a contender's CPU per
/// frame (the plug-in copies each JPEG into the buffer at DQBUF, as a UVC driver fills it; libv4l2's
/// calls), so the gap between a contender and the decode floor splits into the camera's part and
/// the contender's own.
enum CameraReadFloor {
    // unchecked: used by one thread at a time (the floor's runs are sequential).
    final class Stream: @unchecked Sendable {
        let descriptor: Int32
        var mappings: [(UnsafeMutableRawPointer, Int)] = []
        var streaming = false

        init(_ path: String, _ size: CaptureDevice.Dimensions) throws {
            descriptor = vf_v4l2_open(path, O_RDWR)
            guard descriptor >= 0 else { throw BenchError("v4l2_open \(path): \(String(cString: strerror(errno)))") }
            var format = v4l2_format()
            format.type = VF_V4L2_BUF_TYPE_VIDEO_CAPTURE
            format.fmt.pix.width = UInt32(size.pixelWidth)
            format.fmt.pix.height = UInt32(size.pixelHeight)
            format.fmt.pix.pixelformat = VF_V4L2_PIX_FMT_MJPEG
            format.fmt.pix.field = VF_V4L2_FIELD_NONE
            try control(VF_VIDIOC_S_FMT, &format, "S_FMT")
            guard format.fmt.pix.pixelformat == VF_V4L2_PIX_FMT_MJPEG,
                format.fmt.pix.width == UInt32(size.pixelWidth), format.fmt.pix.height == UInt32(size.pixelHeight)
            else { throw BenchError("\(path) does not offer Motion-JPEG \(size)") }
            var request = v4l2_requestbuffers()
            request.count = 4
            request.type = VF_V4L2_BUF_TYPE_VIDEO_CAPTURE
            request.memory = VF_V4L2_MEMORY_MMAP
            try control(VF_VIDIOC_REQBUFS, &request, "REQBUFS")
            for index in 0..<request.count {
                var buffer = v4l2_buffer()
                buffer.type = VF_V4L2_BUF_TYPE_VIDEO_CAPTURE
                buffer.memory = VF_V4L2_MEMORY_MMAP
                buffer.index = index
                try control(VF_VIDIOC_QUERYBUF, &buffer, "QUERYBUF")
                guard
                    let memory = vf_v4l2_mmap(
                        nil, Int(buffer.length), PROT_READ | PROT_WRITE, MAP_SHARED, descriptor,
                        Int64(buffer.m.offset)),
                    memory != MAP_FAILED
                else { throw BenchError("mmap of buffer \(index) failed") }
                mappings.append((memory, Int(buffer.length)))
                try control(VF_VIDIOC_QBUF, &buffer, "QBUF")
            }
            var type = Int32(VF_V4L2_BUF_TYPE_VIDEO_CAPTURE)
            try control(VF_VIDIOC_STREAMON, &type, "STREAMON")
            streaming = true
        }

        deinit {
            if streaming {
                var type = Int32(VF_V4L2_BUF_TYPE_VIDEO_CAPTURE)
                _ = vf_v4l2_ioctl(descriptor, VF_VIDIOC_STREAMOFF, &type)
            }
            for (memory, length) in mappings { _ = vf_v4l2_munmap(memory, length) }
            _ = vf_v4l2_close(descriptor)
        }

        func control<T>(_ request: UInt, _ argument: inout T, _ name: String) throws {
            var result: Int32
            repeat {
                // The V4L2 structs are plain C structs (no object references).
                result = withUnsafeMutablePointer(to: &argument) {
                    vf_v4l2_ioctl(descriptor, request, UnsafeMutableRawPointer($0))
                }
            } while result < 0 && errno == EINTR
            guard result == 0 else { throw BenchError("VIDIOC_\(name): \(String(cString: strerror(errno)))") }
        }
    }

    /// The floor as a contender of ``CapacityWorker/Capacity/decodeFloors``: `path` must serve
    /// Motion-JPEG at `size`, unpaced.
    static func contender(_ path: String, _ size: CaptureDevice.Dimensions, scale: Int) throws
        -> MJPEGBenchmarks.Contender
    {
        let stream = try Stream(path, size)
        guard let handle = tjInitDecompress() else { throw BenchError("tjInitDecompress failed") }
        let (w, h) = ((size.pixelWidth + scale - 1) / scale, (size.pixelHeight + scale - 1) / scale)
        // unchecked: used by one thread at a time.
        final class Keep: @unchecked Sendable {
            let stream: Stream
            let handle: tjhandle
            let planes: [UnsafeMutablePointer<UInt8>]
            init(_ stream: Stream, _ handle: tjhandle, _ planes: [UnsafeMutablePointer<UInt8>]) {
                (self.stream, self.handle, self.planes) = (stream, handle, planes)
            }
            deinit {
                tjDestroy(handle)
                for plane in planes { plane.deallocate() }
            }
        }
        let chroma = ((w + 1) / 2) * h
        let sizes: [Int] = [w * h, chroma, chroma]
        let planes: [UnsafeMutablePointer<UInt8>] = sizes.map { UnsafeMutablePointer<UInt8>.allocate(capacity: $0) }
        let keep = Keep(stream, handle, planes)
        let flags = TJFLAG_ACCURATEDCT
        return MJPEGBenchmarks.Contender(
            name: "camera read + turbojpeg → planes" + (scale > 1 ? " at 1/\(scale)" : ""), threads: 1
        ) { frames in
            let cpu0 = MJPEGBenchmarks.cpuSeconds()
            let t0 = Measure.now()
            var pointers: [UnsafeMutablePointer<UInt8>?] = keep.planes
            var strides: [Int32] = [Int32(w), Int32((w + 1) / 2), Int32((w + 1) / 2)]
            for _ in 0..<frames {
                var buffer = v4l2_buffer()
                buffer.type = VF_V4L2_BUF_TYPE_VIDEO_CAPTURE
                buffer.memory = VF_V4L2_MEMORY_MMAP
                try keep.stream.control(VF_VIDIOC_DQBUF, &buffer, "DQBUF")
                let memory = keep.stream.mappings[Int(buffer.index)].0
                let status = tjDecompressToYUVPlanes(
                    keep.handle, memory.assumingMemoryBound(to: UInt8.self), UInt(buffer.bytesused), &pointers,
                    Int32(w), &strides, Int32(h), flags)
                try keep.stream.control(VF_VIDIOC_QBUF, &buffer, "QBUF")
                if status != 0 { throw BenchError("TurboJPEG failed on a camera frame") }
            }
            return (frames, Measure.now() - t0, MJPEGBenchmarks.cpuSeconds() - cpu0)
        }
    }
}
