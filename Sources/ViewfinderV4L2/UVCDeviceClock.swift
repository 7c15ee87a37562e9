import CV4L2
import Synchronization
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// Where a V4L2 camera's presentation times come from, and why.
///
/// A UVC camera stamps each frame with its own clock (the payload header's PTS) and, in its USB
/// packets, samples that clock (the SCR). uvcvideo passes the headers on on the camera's metadata
/// node (`V4L2_META_FMT_UVC`), each with the host's `CLOCK_MONOTONIC` time of the packet. A
/// running linear fit of those samples maps the device clock onto the host clock, so frames are
/// stamped when the sensor took them rather than when the host got round to them (USB and
/// scheduling jitter of several milliseconds). Where that is not possible the driver's timestamps
/// are used, and the state says why.
package enum DeviceClockState: Sendable, Hashable {
    /// The camera has no UVC metadata node (not a UVC camera, an old kernel, or a driver that does
    /// not expose it), or streams through its PipeWire node: the driver's (or PipeWire's)
    /// timestamps.
    case noMetadataNode
    /// The metadata node is there but could not be streamed (busy, refused the UVC format): the
    /// driver's timestamps.
    case metadataUnavailable
    /// Metadata is streaming but the fit has too few or too scattered samples yet, or the last
    /// frame's headers had no PTS: the driver's timestamps for now.
    case waitingForDeviceClock
    /// The last frame was stamped from the camera's clock.
    case deviceClock
}

/// What a stream learnt about its camera's clock: the state, and counts of frames by the clock
/// that stamped them and of metadata that was thrown away.
package struct DeviceClockStatus: Sendable, Hashable {
    /// Where the last frame's time came from.
    package var state: DeviceClockState = .noMetadataNode
    /// Frames stamped from the device clock.
    package var framesOnDeviceClock = 0
    /// Frames stamped with the driver's timestamp while metadata was streaming (fit not stable, no
    /// PTS for the frame, or a mapped time too far from the driver's).
    package var framesOnDriverClock = 0
    /// Metadata buffers that were malformed or incomplete (shorter than a header block, a header
    /// length smaller than its fields, headers with neither PTS nor SCR, flagged as errors: uvcvideo
    /// flags a buffer that filled up): the whole blocks before the fault are used, the rest ignored.
    package var malformedMetadata = 0
    /// The fit's slope: host nanoseconds per device clock tick (`1e9 / frequency`), once stable.
    package var nanosecondsPerTick: Double?
}

/// One block of a `V4L2_META_FMT_UVC` buffer (`struct uvc_meta_buf`): the host time and USB frame
/// number of the packet, and the payload header's PTS and SCR when the header has them.
package struct UVCMetadataBlock: Sendable, Hashable {
    /// `CLOCK_MONOTONIC` nanoseconds when the host handled the packet.
    package var hostNanoseconds: UInt64
    /// The host's USB frame number then.
    package var hostSOF: UInt16
    /// The frame's presentation time on the device clock (`UVC_STREAM_PTS`).
    package var pts: UInt32?
    /// The device clock (source time clock) when the packet was sent (`UVC_STREAM_SCR`).
    package var stc: UInt32?
    /// The 11-bit USB frame number the device read with `stc`.
    package var deviceSOF: UInt16?

    /// bmHeaderInfo bits (UVC 1.5, 2.4.3.3).
    package static let ptsFlag: UInt8 = 0x04
    package static let scrFlag: UInt8 = 0x08
    /// `ns` (8 bytes), `sof` (2), then the payload header from its `bHeaderLength`.
    package static let fixedBytes = 10

    /// Reads the blocks of one metadata buffer. For `V4L2_META_FMT_UVC` uvcvideo copies only the
    /// header's standard part: 2 bytes, 4 more with a PTS, 6 more with an SCR, whatever its
    /// `bHeaderLength` says (a camera's header may be longer, with data of its own). Untrusted
    /// driver data: a block whose header length is smaller than the fields its flags announce is
    /// skipped, one that runs past the buffer ends the parse, and both count as malformed, as does
    /// a header with neither PTS nor SCR.
    package static func parse(_ bytes: UnsafeRawBufferPointer) -> (blocks: [UVCMetadataBlock], malformed: Int) {
        var blocks: [UVCMetadataBlock] = []
        var malformed = 0
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= fixedBytes + 2 else { return (blocks, malformed + 1) }
            let length = Int(bytes[offset + 10])
            let flags = bytes[offset + 11]
            let standard = 2 + (flags & ptsFlag != 0 ? 4 : 0) + (flags & scrFlag != 0 ? 6 : 0)
            guard bytes.count - offset >= fixedBytes + standard else { return (blocks, malformed + 1) }
            guard length >= standard else {
                // The fields overran the camera's header: not to be believed; the next block
                // still starts where uvcvideo put it.
                malformed += 1
                offset += fixedBytes + standard
                continue
            }
            func read32(_ at: Int) -> UInt32 {
                (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * $1) }
            }
            func read16(_ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
            var block = UVCMetadataBlock(
                hostNanoseconds: (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * $1) },
                hostSOF: read16(offset + 8))
            var field = offset + 12
            if flags & ptsFlag != 0 {
                block.pts = read32(field)
                field += 4
            }
            if flags & scrFlag != 0 {
                block.stc = read32(field)
                block.deviceSOF = read16(field + 4) & 0x7FF
            }
            if block.pts == nil && block.stc == nil { malformed += 1 } else { blocks.append(block) }
            offset += fixedBytes + standard
        }
        return (blocks, malformed)
    }
}

/// A running least-squares fit of host time against the device clock, over the last
/// ``window`` (STC, host time) samples; the device clock's 32-bit counter is extended across
/// wrap-around. Not thread-safe: the capture thread owns it.
package struct UVCClockFit {
    /// Samples kept (about two seconds of a 30 fps camera sampled twice a frame).
    package static let window = 128
    /// Samples needed before the fit is used.
    package static let minimumSamples = 24
    /// Host time the samples must span before the fit is used: 0.5 s.
    package static let minimumSpan: Int64 = 500_000_000
    /// The largest RMS residual of a usable fit: 2 ms (the host's packet times scatter by less).
    package static let largestResidual = 2_000_000.0
    /// A sample this far from the fit (50 ms) means the device clock was reset: start again.
    package static let resetDistance = 50_000_000.0

    private var samples: [(device: Int64, host: Int64)] = []
    private var next = 0
    private var lastRaw: UInt32?
    private var extended: Int64 = 0
    private var lastHost: Int64?
    private var cached: (slope: Double, deviceMean: Double, hostMean: Double)??
    package private(set) var resets = 0

    /// Adds one sample (`stc` on the device clock, taken at `host` ns).
    package mutating func add(stc: UInt32, host: UInt64) {
        let hostTime = Int64(clamping: host)
        if let lastRaw {
            guard stc != lastRaw else { return }  // uvcvideo repeats an unchanged SCR: nothing new
            extended &+= Int64(Int32(bitPattern: stc &- lastRaw))
        } else {
            extended = Int64(stc)
        }
        lastRaw = stc
        if let fit = solve() {
            let predicted = fit.hostMean + fit.slope * (Double(extended) - fit.deviceMean)
            if abs(predicted - Double(hostTime)) > Self.resetDistance {
                samples.removeAll()
                next = 0
                lastHost = nil
                resets += 1
            }
        }
        // Host time going back is not a sample of a monotonic clock.
        if let lastHost, hostTime < lastHost { return }
        lastHost = hostTime
        if samples.count < Self.window {
            samples.append((extended, hostTime))
        } else {
            samples[next] = (extended, hostTime)
            next = (next + 1) % Self.window
        }
        cached = nil
    }

    /// The host time (ns) of device time `pts`, when the fit is stable.
    package mutating func hostTime(ofPTS pts: UInt32) -> Int64? {
        guard let lastRaw, let fit = solve() else { return nil }
        let device = Double(extended &+ Int64(Int32(bitPattern: pts &- lastRaw)))
        let host = fit.hostMean + fit.slope * (device - fit.deviceMean)
        guard host.isFinite, abs(host) < 9e18 else { return nil }
        return Int64(host.rounded())
    }

    /// Host nanoseconds per device tick, when stable.
    package mutating func slope() -> Double? { solve()?.slope }

    private mutating func solve() -> (slope: Double, deviceMean: Double, hostMean: Double)? {
        if let cached { return cached }
        let result = fit()
        cached = .some(result)
        return result
    }

    private func fit() -> (slope: Double, deviceMean: Double, hostMean: Double)? {
        guard samples.count >= Self.minimumSamples, let reference = samples.first else { return nil }
        let hosts = samples.map(\.host)
        guard hosts.max()! - hosts.min()! >= Self.minimumSpan else { return nil }
        // Relative to one sample, so the sums stay well inside a Double's precision.
        let n = Double(samples.count)
        var sx = 0.0
        var sy = 0.0
        for sample in samples {
            sx += Double(sample.device &- reference.device)
            sy += Double(sample.host &- reference.host)
        }
        let mx = sx / n
        let my = sy / n
        var sxx = 0.0
        var sxy = 0.0
        for sample in samples {
            let dx = Double(sample.device &- reference.device) - mx
            let dy = Double(sample.host &- reference.host) - my
            sxx += dx * dx
            sxy += dx * dy
        }
        guard sxx > 0 else { return nil }
        let slope = sxy / sxx
        guard slope > 0, slope.isFinite else { return nil }
        var residuals = 0.0
        for sample in samples {
            let dx = Double(sample.device &- reference.device) - mx
            let dy = Double(sample.host &- reference.host) - my
            let r = dy - slope * dx
            residuals += r * r
        }
        guard (residuals / n).squareRoot() <= Self.largestResidual else { return nil }
        return (slope, Double(reference.device) + mx, Double(reference.host) + my)
    }
}

/// A UVC camera's metadata node, streamed beside its video node: maps each frame's PTS to the
/// host clock through a ``UVCClockFit`` of the headers' SCR samples.
///
/// The capture thread owns it: after dequeuing a video frame it calls
/// ``presentationTime(sequence:driverTime:)``, which drains the metadata queue (non-blocking;
/// uvcvideo completes a frame's metadata buffer before its video buffer, with the same sequence
/// number) and answers the device-clock time of that frame, or `nil` for the driver's.
// unchecked: one capture thread uses it at a time (the status it writes is under a Mutex).
package final class UVCMetadataStream: @unchecked Sendable {
    /// Buffers requested on the metadata node.
    package static let bufferCount = 8
    /// A mapped time further than this (1 s) from the driver's timestamp is not believed.
    package static let largestDisagreement: Int64 = 1_000_000_000

    package let interface: any V4L2Interface
    package let fd: Int32
    private var mappings: [(address: UnsafeMutableRawPointer, length: Int)] = []
    private var streaming = false
    private var fit = UVCClockFit()
    /// PTS by (32-bit) sequence number of the frames whose metadata came, the latest few.
    private var pts: [(sequence: UInt32, pts: UInt32)] = []
    /// What this stream learnt; read from any thread.
    package let status = Mutex(DeviceClockStatus(state: .waitingForDeviceClock))

    private init(interface: any V4L2Interface, fd: Int32) {
        self.interface = interface
        self.fd = fd
    }

    /// Whether the node at `path` is a metadata node that streams UVC payload headers.
    /// Returns its bus info (which its video node shares), else `nil`.
    package static func uvcMetadataBusInfo(path: String, interface: any V4L2Interface) -> String? {
        guard let fd = try? interface.open(path, flags: O_RDWR | O_NONBLOCK) else { return nil }
        defer { interface.close(fd) }
        var capability = v4l2_capability()
        guard (try? interface.ioctl(fd, VF_VIDIOC_QUERYCAP, &capability)) != nil else { return nil }
        let caps =
            capability.capabilities & VF_V4L2_CAP_DEVICE_CAPS != 0 ? capability.device_caps : capability.capabilities
        guard caps & VF_V4L2_CAP_META_CAPTURE != 0, caps & VF_V4L2_CAP_STREAMING != 0 else { return nil }
        var format = v4l2_format()
        format.type = VF_V4L2_BUF_TYPE_META_CAPTURE
        guard (try? interface.ioctl(fd, VF_VIDIOC_G_FMT, &format)) != nil,
            format.fmt.meta.dataformat == VF_V4L2_META_FMT_UVC
        else { return nil }
        return v4l2String(capability.bus_info)
    }

    /// Opens and streams the metadata node at `path`; `nil` when any step fails (the camera's
    /// state is then ``DeviceClockState/metadataUnavailable``).
    package static func start(path: String, interface: any V4L2Interface) -> UVCMetadataStream? {
        guard let fd = try? interface.open(path, flags: O_RDWR | O_NONBLOCK) else { return nil }
        let stream = UVCMetadataStream(interface: interface, fd: fd)
        do throws(V4L2Errno) {
            var format = v4l2_format()
            format.type = VF_V4L2_BUF_TYPE_META_CAPTURE
            format.fmt.meta.dataformat = VF_V4L2_META_FMT_UVC
            try interface.ioctl(fd, VF_VIDIOC_S_FMT, &format)
            guard format.fmt.meta.dataformat == VF_V4L2_META_FMT_UVC else { throw V4L2Errno(EINVAL) }
            var request = v4l2_requestbuffers()
            request.count = UInt32(bufferCount)
            request.type = VF_V4L2_BUF_TYPE_META_CAPTURE
            request.memory = VF_V4L2_MEMORY_MMAP
            try interface.ioctl(fd, VF_VIDIOC_REQBUFS, &request)
            guard request.count > 0 else { throw V4L2Errno(ENOMEM) }
            for index in 0..<request.count {
                var buffer = makeBuffer(index)
                try interface.ioctl(fd, VF_VIDIOC_QUERYBUF, &buffer)
                let length = Int(buffer.length)
                let address = try interface.mmap(fd: fd, length: length, offset: Int64(buffer.m.offset))
                stream.mappings.append((address, length))
            }
            for index in 0..<request.count {
                var buffer = makeBuffer(index)
                try interface.ioctl(fd, VF_VIDIOC_QBUF, &buffer)
            }
            var type = Int32(VF_V4L2_BUF_TYPE_META_CAPTURE)
            try interface.ioctl(fd, VF_VIDIOC_STREAMON, &type)
            stream.streaming = true
        } catch {
            stream.shutDown()
            return nil
        }
        return stream
    }

    private static func makeBuffer(_ index: UInt32) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = index
        buffer.type = VF_V4L2_BUF_TYPE_META_CAPTURE
        buffer.memory = VF_V4L2_MEMORY_MMAP
        return buffer
    }

    /// The host time (ns) of frame `sequence` (the driver's 32-bit number) from the device clock,
    /// or `nil` to use `driverTime` (ns); updates the status either way.
    package func presentationTime(sequence: UInt32, driverTime: Int64) -> Int64? {
        drain()
        var mapped: Int64?
        if let index = pts.lastIndex(where: { $0.sequence == sequence }) {
            let value = pts[index].pts
            pts.removeSubrange(...index)
            if let host = fit.hostTime(ofPTS: value),
                abs(host &- driverTime) <= Self.largestDisagreement
            {
                mapped = host
            }
        }
        let slope = fit.slope()
        status.withLock { status in
            status.state = mapped != nil ? .deviceClock : .waitingForDeviceClock
            if mapped != nil { status.framesOnDeviceClock += 1 } else { status.framesOnDriverClock += 1 }
            status.nanosecondsPerTick = slope
        }
        return mapped
    }

    /// Dequeues every filled metadata buffer, feeds its SCR samples to the fit, keeps its PTS, and
    /// queues it again.
    private func drain() {
        guard streaming else { return }
        for _ in 0..<(2 * mappings.count) {
            var buffer = Self.makeBuffer(0)
            guard (try? interface.ioctl(fd, VF_VIDIOC_DQBUF, &buffer)) != nil else { return }
            let index = Int(buffer.index)
            guard index < mappings.count else {
                status.withLock { $0.malformedMetadata += 1 }
                continue
            }
            let used = min(Int(buffer.bytesused), mappings[index].length)
            // uvcvideo flags a metadata buffer that filled up (headers dropped after the last one
            // that fit): the blocks it holds are whole, so they are read, and the buffer counted.
            let (blocks, malformed) = UVCMetadataBlock.parse(
                UnsafeRawBufferPointer(start: mappings[index].address, count: used))
            var framePTS: UInt32?
            for block in blocks {
                if let stc = block.stc { fit.add(stc: stc, host: block.hostNanoseconds) }
                if framePTS == nil { framePTS = block.pts }
            }
            if let framePTS {
                pts.append((buffer.sequence, framePTS))
                if pts.count > mappings.count { pts.removeFirst(pts.count - mappings.count) }
            }
            if malformed > 0 || blocks.isEmpty || buffer.flags & VF_V4L2_BUF_FLAG_ERROR != 0 {
                status.withLock { $0.malformedMetadata += 1 }
            }
            var again = Self.makeBuffer(UInt32(index))
            guard (try? interface.ioctl(fd, VF_VIDIOC_QBUF, &again)) != nil else { return }
        }
    }

    /// Stops the metadata stream, unmaps its buffers and closes the node.
    package func shutDown() {
        if streaming {
            var type = Int32(VF_V4L2_BUF_TYPE_META_CAPTURE)
            try? interface.ioctl(fd, VF_VIDIOC_STREAMOFF, &type)
            streaming = false
        }
        for mapping in mappings { interface.munmap(mapping.address, length: mapping.length) }
        mappings = []
        interface.close(fd)
    }
}
