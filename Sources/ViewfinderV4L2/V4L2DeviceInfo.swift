import CV4L2
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// What discovery learns about one V4L2 node: its identity (from `VIDIOC_QUERYCAP`) and its
/// formats (from `VIDIOC_ENUM_FMT`, `VIDIOC_ENUM_FRAMESIZES` and `VIDIOC_ENUM_FRAMEINTERVALS`).
///
/// Thread safety: a value type.
package struct V4L2DeviceInfo: Sendable, Hashable {
    /// The node, e.g. `/dev/video0`.
    package var path: String
    /// The card name (`Logitech Webcam C920`), used as the localized name.
    package var card: String
    /// The driver name (`uvcvideo`), used as the model ID.
    package var driver: String
    /// Where the device sits (`usb-0000:00:14.0-1`): stable across reboots for the same port.
    package var busInfo: String
    /// The node's own capabilities (`device_caps`, or `capabilities` on drivers that predate it).
    package var deviceCapabilities: UInt32
    /// Every format Viewfinder can use, in the driver's order.
    package var formats: [CaptureDevice.Format]
    /// Whether the node has `V4L2_CID_EXPOSURE_AUTO_PRIORITY` (auto exposure may lower the frame
    /// rate): its formats then support ``CaptureDevice/isAutoVideoFrameRateEnabled``.
    package var hasExposureAutoPriority = false

    /// Whether the node captures video with streaming I/O: the nodes Viewfinder offers (a UVC
    /// camera's metadata node is left out).
    package static func isStreamingCapture(_ capabilities: UInt32) -> Bool {
        capabilities & VF_V4L2_CAP_VIDEO_CAPTURE != 0 && capabilities & VF_V4L2_CAP_STREAMING != 0
    }

    /// Queries the node at `path`. Throws the failing call's errno; returns `nil` for nodes that
    /// are not streaming capture devices.
    package static func probe(path: String, interface: any V4L2Interface) throws(V4L2Errno) -> V4L2DeviceInfo? {
        let fd = try interface.open(path, flags: O_RDWR | O_NONBLOCK)
        defer { interface.close(fd) }
        var capability = v4l2_capability()
        try interface.ioctl(fd, VF_VIDIOC_QUERYCAP, &capability)
        let caps =
            capability.capabilities & VF_V4L2_CAP_DEVICE_CAPS != 0 ? capability.device_caps : capability.capabilities
        guard isStreamingCapture(caps) else { return nil }
        return V4L2DeviceInfo(
            path: path, card: v4l2String(capability.card), driver: v4l2String(capability.driver),
            busInfo: v4l2String(capability.bus_info), deviceCapabilities: caps,
            formats: try enumerateFormats(fd: fd, interface: interface),
            hasExposureAutoPriority: hasControl(V4L2ControlID.exposureAutoPriority, fd: fd, interface: interface))
    }

    /// Whether the open node has control `id`, enabled (one `VIDIOC_QUERYCTRL`; any failure is
    /// "no").
    static func hasControl(_ id: UInt32, fd: Int32, interface: any V4L2Interface) -> Bool {
        var query = v4l2_queryctrl()
        query.id = id
        do {
            try interface.ioctl(fd, VF_VIDIOC_QUERYCTRL, &query)
        } catch {
            return false
        }
        return query.id == id && query.flags & VF_V4L2_CTRL_FLAG_DISABLED == 0
    }

    /// Enumerates formats, sizes and intervals of an open capture node.
    package static func enumerateFormats(fd: Int32, interface: any V4L2Interface) throws(V4L2Errno) -> [CaptureDevice
        .Format]
    {
        var formats: [CaptureDevice.Format] = []
        var index: UInt32 = 0
        while true {
            var description = v4l2_fmtdesc()
            description.index = index
            description.type = VF_V4L2_BUF_TYPE_VIDEO_CAPTURE
            do {
                try interface.ioctl(fd, VF_VIDIOC_ENUM_FMT, &description)
            } catch  where error.code == EINVAL {
                break
            }
            index += 1
            guard let pixelFormat = V4L2FourCC.pixelFormat(description.pixelformat) else { continue }
            let emulated = description.flags & VF_V4L2_FMT_FLAG_EMULATED != 0
            for (width, height) in try frameSizes(fd: fd, fourCC: description.pixelformat, interface: interface) {
                let rates = try frameRates(
                    fd: fd, fourCC: description.pixelformat, width: width, height: height, interface: interface)
                var format = CaptureDevice.Format(
                    pixelFormat: pixelFormat, width: Int(width), height: Int(height), frameRateRanges: rates,
                    isEmulated: emulated)
                format.backendCode = description.pixelformat
                formats.append(format)
            }
        }
        return formats.filter { !isKnownToFailEmulation($0, among: formats) }
    }

    /// Whether libv4lconvert would emulate `format` by decoding JPEG into planar YUV at a size that
    /// is not a multiple of 16: libv4lconvert 1.22 then fails every frame of a 4:2:0 MJPEG camera
    /// ("resolution is not a multiple of dctsize", DQBUF `EIO`; 1920x1080 is such a size). It decodes
    /// from JPEG where the camera has no raw format of that size; such formats are left out, so
    /// negotiation cannot pick them.
    package static func isKnownToFailEmulation(_ format: CaptureDevice.Format, among formats: [CaptureDevice.Format])
        -> Bool
    {
        guard format.isEmulated, format.pixelFormat == .i420,
            format.dimensions.width % 16 != 0 || format.dimensions.height % 16 != 0
        else { return false }
        let hasRawSource = formats.contains {
            !$0.isEmulated && !$0.pixelFormat.isCompressed && $0.dimensions == format.dimensions
        }
        return !hasRawSource
    }

    /// Sizes commonly asked for, offered from stepwise and continuous size ranges.
    package static let commonSizes: [(UInt32, UInt32)] = [
        (160, 120), (320, 240), (352, 288), (640, 360), (640, 480), (800, 600), (1024, 768), (1280, 720),
        (1280, 960), (1600, 1200), (1920, 1080), (2560, 1440), (3840, 2160),
    ]

    package static func frameSizes(
        fd: Int32, fourCC: UInt32, interface: any V4L2Interface
    ) throws(V4L2Errno) -> [(UInt32, UInt32)] {
        var sizes: [(UInt32, UInt32)] = []
        var index: UInt32 = 0
        while true {
            var size = v4l2_frmsizeenum()
            size.index = index
            size.pixel_format = fourCC
            do {
                try interface.ioctl(fd, VF_VIDIOC_ENUM_FRAMESIZES, &size)
            } catch  where error.code == EINVAL {
                break
            }
            index += 1
            if size.type == VF_V4L2_FRMSIZE_TYPE_DISCRETE {
                sizes.append((size.discrete.width, size.discrete.height))
                continue
            }
            // Stepwise or continuous: one entry describes the whole range. Offer its smallest and
            // largest sizes and the common sizes on its grid.
            let range = size.stepwise
            let stepX = max(1, range.step_width)
            let stepY = max(1, range.step_height)
            var candidates = [(range.min_width, range.min_height)]
            for (w, h) in commonSizes
            where w > range.min_width && w < range.max_width && h > range.min_height && h < range.max_height
                && (w - range.min_width) % stepX == 0 && (h - range.min_height) % stepY == 0
            {
                candidates.append((w, h))
            }
            candidates.append((range.max_width, range.max_height))
            for candidate in candidates where !sizes.contains(where: { $0 == candidate }) {
                sizes.append(candidate)
            }
            break
        }
        return sizes
    }

    package static func frameRates(
        fd: Int32, fourCC: UInt32, width: UInt32, height: UInt32, interface: any V4L2Interface
    ) throws(V4L2Errno) -> [FrameRateRange] {
        var ranges: [FrameRateRange] = []
        var index: UInt32 = 0
        while true {
            var interval = v4l2_frmivalenum()
            interval.index = index
            interval.pixel_format = fourCC
            interval.width = width
            interval.height = height
            do {
                try interface.ioctl(fd, VF_VIDIOC_ENUM_FRAMEINTERVALS, &interval)
            } catch  where error.code == EINVAL || error.code == ENOTTY {
                break
            }
            index += 1
            if interval.type == VF_V4L2_FRMIVAL_TYPE_DISCRETE {
                let duration = V4L2FourCC.time(
                    numerator: interval.discrete.numerator, denominator: interval.discrete.denominator)
                if duration.isValid, duration > .zero { ranges.append(FrameRateRange(frameDuration: duration)) }
                continue
            }
            let fastest = V4L2FourCC.time(
                numerator: interval.stepwise.min.numerator, denominator: interval.stepwise.min.denominator)
            let slowest = V4L2FourCC.time(
                numerator: interval.stepwise.max.numerator, denominator: interval.stepwise.max.denominator)
            if fastest.isValid, slowest.isValid, fastest > .zero {
                ranges.append(FrameRateRange(minFrameDuration: fastest, maxFrameDuration: max(fastest, slowest)))
            }
            break
        }
        // A driver that cannot enumerate intervals still streams at some rate: assume 30 fps.
        return ranges.isEmpty ? [FrameRateRange(framesPerSecond: 30)] : ranges
    }
}
