import CV4L2
import Dispatch
import Foundation
import Synchronization
import ViewfinderCore

/// One V4L2 capture node behind a ``CaptureDevice``: opens the node when a stream starts, sets
/// format (`VIDIOC_S_FMT`) and frame interval (`VIDIOC_S_PARM`), streams through an mmap ring
/// (``V4L2BufferRing``) on its own capture thread, and closes the node when the stream stops,
/// so other programs can use the camera in between.
///
/// Everything goes through a ``V4L2Interface``: libv4l2 in production, a simulated camera in tests.
///
/// Frames: each dequeued buffer becomes a zero-copy ``PixelBuffer`` whose release queues it
/// again; kernel monotonic timestamps become presentation times in nanoseconds; the driver's
/// sequence numbers pass through (gaps are frames the driver lost). Buffers flagged
/// `V4L2_BUF_FLAG_ERROR`, empty, shorter than a frame or claiming more bytes than their mapping
/// holds are queued again, never delivered, and counted in ``corruptFramesSkipped``; skipped
/// frames before the first good one of a stream still count as a sequence gap downstream, and a
/// stream that gets nothing but corrupt frames for a while is reported (one runtime error, see
/// ``StreamStallWatch``) while it keeps running.
/// Sequence numbers are extended to 64 bits across wrap-around; a repeat or a step back of the
/// driver's counter is passed on as a step back (the delivery engine reports it as a
/// discontinuity), never as billions of lost frames.
///
/// Presence has one owner, the provider's scan: a stream that finds the camera gone marks it
/// disconnected only if no scan has seen the camera (again) since the stream started, and asks
/// the provider to look again, so an unplug followed at once by a replug never leaves the camera
/// marked absent.
///
/// Emulated formats (libv4l2 converts into buffers of its own) are delivered as copies and their
/// buffers queued again at once: libv4l2 refuses `VIDIOC_REQBUFS` with `EBUSY` while any of its
/// converted buffers is mapped, and warns when its descriptor closes with one still mapped, so a
/// frame a user held would keep the camera busy and stop the next configuration. Emulated I420 that
/// libv4lconvert decodes from JPEG is full range (JFIF); its copy is compressed to video range, so
/// it means what ``PixelFormat/i420`` says, as I420 converted from a YUYV camera already does.
///
/// Thread safety: all members may be used from any thread; `startStreaming` and `stopStreaming`
/// are serialised by the owning ``CaptureDevice``.
package final class V4L2CameraBackend: DeviceBackend {
    /// How long the capture thread waits in `poll` before checking for a stop request.
    package static let pollTimeoutMilliseconds: Int32 = 20

    package let interface: any V4L2Interface
    package let uniqueID: String
    package let localizedName: String
    package let modelID: String
    package var manufacturer: String { "" }
    package let deviceType: CaptureDevice.DeviceType
    package let position: CaptureDevice.Position
    package let formats: [CaptureDevice.Format]
    /// Buffers requested from the driver per stream.
    package let bufferCount: Int
    /// What `VIDIOC_QUERYCAP` says: the bus the camera is on and its card name (what a PipeWire
    /// node of the camera repeats).
    package let busInfo: String
    package let card: String
    /// Where a node sharing this camera (PipeWire's) is looked for (`nil`: never).
    package let routing: (any V4L2CameraRouting)?
    /// The shared node a running stream goes through, if it does.
    private let routed = Mutex<(any V4L2RoutedCamera)?>(nil)

    private struct Running {
        var thread: CaptureThread
        var ring: V4L2BufferRing
    }

    /// Whether the camera is there, and how many times a scan has found it (re)appear: a stream
    /// remembers the generation it started in, so a late failure of an old descriptor cannot mark a
    /// camera absent that a newer scan found present.
    private struct Presence {
        var isConnected = true
        var generation = 0
    }

    private let node: Mutex<String>
    private let presence = Mutex(Presence())
    /// Set by the provider: asks it to scan again when a stream finds the camera gone.
    private let lossHandler = Mutex<(@Sendable () -> Void)?>(nil)
    private let running = Mutex<Running?>(nil)
    private let controlCache = Mutex<V4L2ControlMap?>(nil)
    private let corruptFrames = Atomic<Int>(0)
    private let lastRing = Mutex<V4L2BufferRing?>(nil)
    /// The camera's UVC metadata node, set by the provider's scan (`nil`: none).
    private let metadataNode = Mutex<String?>(nil)
    /// The current or last stream's metadata, or why there was none.
    private let deviceClock = Mutex<(stream: UVCMetadataStream?, state: DeviceClockState)>((nil, .noMetadataNode))

    package init(
        info: V4L2DeviceInfo, uniqueID: String, interface: any V4L2Interface, bufferCount: Int = 4,
        portKind: V4L2PortKind = .unknown, usb: USBLocation? = nil, routing: (any V4L2CameraRouting)? = nil,
        accessRefusal: CaptureError? = nil, optics: KnownCameraOptics?
    ) {
        self.accessRefusal = accessRefusal
        self.interface = interface
        self.busInfo = info.busInfo
        self.card = info.card
        self.routing = routing
        self.uniqueID = uniqueID
        self.localizedName = info.card.isEmpty ? info.path : info.card
        self.modelID = info.driver
        (self.deviceType, self.position) = portKind.classify(busInfo: info.busInfo)
        self.formats = info.formats.map { format in
            var format = format
            format.traits.autoVideoFrameRate = info.hasExposureAutoPriority
            format.traits.fieldOfView = optics?.horizontalFieldOfView(of: format.dimensions) ?? 0
            return format
        }
        self.bufferCount = max(2, bufferCount)
        self.node = Mutex(info.path)
        self.usb = Mutex(usb)
    }

    /// A backend for a camera whose field of view is not known.
    package convenience init(
        info: V4L2DeviceInfo, uniqueID: String, interface: any V4L2Interface, bufferCount: Int = 4,
        portKind: V4L2PortKind = .unknown, usb: USBLocation? = nil, routing: (any V4L2CameraRouting)? = nil,
        accessRefusal: CaptureError? = nil
    ) {
        self.init(
            info: info, uniqueID: uniqueID, interface: interface, bufferCount: bufferCount, portKind: portKind,
            usb: usb,
            routing: routing, accessRefusal: accessRefusal, optics: nil)
    }

    private let usb: Mutex<USBLocation?>

    /// Why this process may not open the camera (its node refused permission when the scan
    /// examined it), with what to do; `nil` for a camera the scan could open. Such a camera is
    /// listed without formats, and ``CaptureDeviceInput`` and streaming throw this error.
    package let accessRefusal: CaptureError?

    /// Where the camera is plugged in now, when it is a USB camera the directory knows about.
    package var usbLocation: USBLocation? { usb.withLock { $0 } }

    /// The USB bus's bandwidth model, where the bus is known (``USBBusBandwidth``).
    package var bandwidth: (any DeviceBandwidth)? { usbLocation.map(USBBusBandwidth.init(location:)) }

    /// Called by the provider's scan: the camera's USB location now (another port, another bus).
    package func update(usb location: USBLocation?) {
        usb.withLock { $0 = location }
    }

    /// Called by the provider's scan: the camera's UVC metadata node (`nil`: it has none).
    package func update(metadataNode path: String?) {
        metadataNode.withLock { $0 = path }
    }

    /// The UVC metadata node the next stream reads the device clock from, if any.
    package var metadataNodePath: String? { metadataNode.withLock { $0 } }

    /// Where the current (or last) stream's presentation times come from: the camera's own clock
    /// (PTS/SCR from its UVC metadata node, mapped to the host clock) or the driver's timestamps,
    /// and why. See ``DeviceClockState``.
    package var deviceClockStatus: DeviceClockStatus {
        deviceClock.withLock { clock in
            clock.stream?.status.withLock { $0 } ?? DeviceClockStatus(state: clock.state)
        }
    }

    /// The device node the camera is at now (it may change when the camera is plugged in again).
    package var path: String { node.withLock { $0 } }

    package var isConnected: Bool { presence.withLock { $0.isConnected } }

    /// The presence generation now (it grows each time a scan finds the camera appear).
    package var presenceGeneration: Int { presence.withLock { $0.generation } }

    /// Called by the provider when a scan finds the camera (possibly at a new node) or finds it gone.
    package func update(path: String?, connected isPresent: Bool) {
        if let path { node.withLock { $0 = path } }
        let appeared = presence.withLock { presence -> Bool in
            defer { presence.isConnected = isPresent }
            guard isPresent, !presence.isConnected else { return false }
            presence.generation += 1
            return true
        }
        if appeared { controlCache.withLock { $0 = nil } }
    }

    /// Called by the provider: how to ask it for a scan when a stream finds the camera gone.
    package func setLossHandler(_ handler: (@Sendable () -> Void)?) {
        lossHandler.withLock { $0 = handler }
    }

    /// A descriptor opened in presence generation `generation` found the camera gone. Marks it
    /// disconnected unless a scan has seen it (again) since, and asks the provider to check.
    private func cameraWasLost(since generation: Int) {
        let marked = presence.withLock { presence -> Bool in
            guard presence.generation == generation, presence.isConnected else { return false }
            presence.isConnected = false
            return true
        }
        if marked, let handler = lossHandler.withLock({ $0 }) { handler() }
    }

    /// Frames dequeued with an error flag, no data or too little data: queued again, never delivered.
    package var corruptFramesSkipped: Int { corruptFrames.load(ordering: .relaxed) }

    /// Buffers of the current or last stream still held by users.
    package var buffersOutstanding: Int { lastRing.withLock { $0?.lentCount ?? 0 } }

    private func error(_ failure: V4L2Errno, _ action: String) -> CaptureError {
        CaptureError.v4l2(failure, action, name: localizedName, path: path)
    }

    // MARK: Streaming

    package func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: DeviceStreamSink
    ) throws(CaptureError) -> MediaTime {
        let generation = presenceGeneration
        if let accessRefusal { throw accessRefusal }
        try checkCanStream(format)
        if let duration = try streamThroughPipeWire(format: format, frameDuration: frameDuration, sink: sink) {
            // PipeWire's node stamps the frames: the metadata node is not read on that route.
            deviceClock.withLock { $0 = (nil, .noMetadataNode) }
            return duration
        }
        // A native format streams through plain ioctls where the node is the kernel's (no libv4l2
        // device limit); an emulated one through libv4l2, which converts it.
        let io = format.isEmulated ? interface : (interface.nativeStreamingInterface(for: path) ?? interface)
        let fd: Int32
        do {
            fd = try io.open(path, flags: O_RDWR | O_NONBLOCK)
        } catch {
            throw self.error(error, "opening")
        }
        let ring: V4L2BufferRing
        let actualDuration: MediaTime
        var decodesJPEG = false
        do throws(CaptureError) {
            _ = vf_v4l2_take_conversion_source()
            let layout = try setFormat(format, fd: fd, io: io)
            // libv4l2 logs the format it converts from during S_FMT, on this thread.
            let source = vf_v4l2_take_conversion_source()
            decodesJPEG =
                format.isEmulated && format.pixelFormat == .i420
                && (source == VF_V4L2_PIX_FMT_MJPEG || source == VF_V4L2_PIX_FMT_JPEG)
            actualDuration = setFrameDuration(frameDuration, fd: fd, io: io) ?? frameDuration
            do {
                ring = try V4L2BufferRing.start(
                    interface: io, fd: fd, count: bufferCount, layout: layout, isEmulated: format.isEmulated)
            } catch  where error.code == ENOSPC && usbLocation != nil {
                throw CaptureError.usbBandwidth(
                    camera: localizedName, format: format, frameDuration: actualDuration, location: usbLocation!,
                    deviceID: uniqueID, formats: formats)
            } catch {
                throw self.error(error, "starting the stream of")
            }
        } catch {
            io.close(fd)
            if error.code == .deviceDisconnected { cameraWasLost(since: generation) }
            throw error
        }
        // Untrusted driver data: every buffer of a raw format must hold a whole frame.
        if !format.pixelFormat.isCompressed, ring.smallestLength < ring.layout.totalBytes {
            let smallest = ring.smallestLength
            ring.shutDown()
            throw CaptureError(
                .driverError,
                "the driver of '\(localizedName)' (\(path)) maps \(smallest)-byte buffers for \(format), which needs \(ring.layout.totalBytes): the driver is misbehaving; try another format"
            )
        }
        lastRing.withLock { $0 = ring }
        // The camera's own clock, where its metadata node streams UVC payload headers.
        let metadataPath = metadataNodePath
        let metadata = metadataPath.flatMap { UVCMetadataStream.start(path: $0, interface: interface) }
        deviceClock.withLock { $0 = (metadata, metadataPath == nil ? .noMetadataNode : .metadataUnavailable) }
        // Twice the ring: copies a user holds for a while do not starve an emulated stream at once.
        let copies =
            format.isEmulated && !format.pixelFormat.isCompressed
            ? try? PixelBufferPool(
                pixelFormat: format.pixelFormat, width: format.dimensions.pixelWidth,
                height: format.dimensions.pixelHeight,
                capacity: 2 * ring.count)
            : nil
        let context = CaptureContext(
            io: io, ring: ring, fd: fd, format: format, duration: actualDuration, expectedBytes: ring.layout.totalBytes,
            copies: copies, generation: generation, metadata: metadata,
            rangeCompressor: decodesJPEG
                ? V4L2RangeCompressor(width: format.dimensions.pixelWidth, height: format.dimensions.pixelHeight) : nil)
        let thread = CaptureThread(name: "viewfinder.v4l2.\(URL(fileURLWithPath: path).lastPathComponent)") {
            [self] thread in
            capture(context, sink: sink, isCancelled: { thread.isCancelled })
        }
        running.withLock { $0 = Running(thread: thread, ring: ring) }
        if let usb = usbLocation {
            USBBandwidthLedger.shared.reserve(
                busID: usb.busID, deviceID: uniqueID, name: localizedName,
                mbps: USBBandwidth.requiredMbps(format, frameDuration: actualDuration))
        }
        return actualDuration
    }

    /// The route the running stream takes: ``CameraRoute/pipeWire`` through a PipeWire node,
    /// ``CameraRoute/v4l2`` straight from the driver, `nil` when not streaming.
    package var streamingRoute: CameraRoute? {
        if routed.withLock({ $0 }) != nil { return .pipeWire }
        return running.withLock { $0 } != nil ? .v4l2 : nil
    }

    /// Starts the stream on the PipeWire node that offers this camera, when the route allows it
    /// and the node has the format; `nil`: stream straight from the driver.
    private func streamThroughPipeWire(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: DeviceStreamSink
    ) throws(CaptureError) -> MediaTime? {
        guard let routing else { return nil }
        let node = routing.routedCamera(for: self)
        guard let node, let equivalent = node.format(matching: format, frameDuration: frameDuration) else {
            guard routing.isForced else { return nil }
            throw routing.refusal(camera: self, node: node, format: format)
        }
        let duration = try node.startStreaming(format: equivalent, frameDuration: frameDuration, sink: sink)
        routed.withLock { $0 = node }
        return duration
    }

    package func stopStreaming() {
        if let node = routed.withLock({ routed in
            defer { routed = nil }
            return routed
        }) {
            node.stopStreaming()
            return
        }
        let current = running.withLock { running in
            defer { running = nil }
            return running
        }
        current?.thread.stop()
        USBBandwidthLedger.shared.release(deviceID: uniqueID)
    }

    /// `VIDIOC_S_FMT`, then checks what the driver chose. Returns the buffer layout.
    private func setFormat(
        _ format: CaptureDevice.Format, fd: Int32, io interface: any V4L2Interface
    ) throws(CaptureError) -> PlaneLayout {
        var request = v4l2_format()
        request.type = VF_V4L2_BUF_TYPE_VIDEO_CAPTURE
        request.fmt.pix.width = UInt32(format.dimensions.width)
        request.fmt.pix.height = UInt32(format.dimensions.height)
        request.fmt.pix.pixelformat = format.backendCode
        request.fmt.pix.field = VF_V4L2_FIELD_ANY
        do {
            try interface.ioctl(fd, VF_VIDIOC_S_FMT, &request)
        } catch  where error.code == EINVAL {
            throw CaptureError(
                .unsupportedFormat,
                "the driver of '\(localizedName)' (\(path)) refused \(format): choose another of its formats",
                errno: error.code)
        } catch {
            throw self.error(error, "setting \(format) on")
        }
        let chosen = request.fmt.pix
        guard chosen.pixelformat == format.backendCode, Int(chosen.width) == format.dimensions.width,
            Int(chosen.height) == format.dimensions.height
        else {
            throw CaptureError(
                .unsupportedFormat,
                "the driver of '\(localizedName)' (\(path)) adjusted \(format) to \(chosen.width)x\(chosen.height) '\(V4L2FourCC.string(chosen.pixelformat))': choose another of its formats",
                errno: EINVAL)
        }
        let layout =
            format.pixelFormat.isCompressed
            ? PlaneLayout(
                pixelFormat: format.pixelFormat, width: format.dimensions.pixelWidth,
                height: format.dimensions.pixelHeight)
            : PlaneLayout(
                pixelFormat: format.pixelFormat, width: format.dimensions.pixelWidth,
                height: format.dimensions.pixelHeight,
                bytesPerRow: Int(chosen.bytesperline))
        if !format.pixelFormat.isCompressed, chosen.sizeimage != 0, Int(chosen.sizeimage) < layout.totalBytes {
            throw CaptureError(
                .driverError,
                "the driver of '\(localizedName)' (\(path)) reports \(chosen.sizeimage)-byte frames for \(format), which needs \(layout.totalBytes): the driver is misbehaving; try another format"
            )
        }
        return layout
    }

    /// `VIDIOC_S_PARM` with the frame interval, returning the interval the driver chose, or `nil`
    /// when the driver has no frame-interval setting (it then runs at its own rate).
    private func setFrameDuration(_ duration: MediaTime, fd: Int32, io interface: any V4L2Interface) -> MediaTime? {
        guard duration.isValid, duration > .zero else { return nil }
        var parameters = v4l2_streamparm()
        parameters.type = VF_V4L2_BUF_TYPE_VIDEO_CAPTURE
        guard (try? interface.ioctl(fd, VF_VIDIOC_G_PARM, &parameters)) != nil,
            parameters.parm.capture.capability & VF_V4L2_CAP_TIMEPERFRAME != 0
        else { return nil }
        let fraction = V4L2FourCC.fraction(duration)
        parameters.parm.capture.timeperframe.numerator = fraction.numerator
        parameters.parm.capture.timeperframe.denominator = fraction.denominator
        guard (try? interface.ioctl(fd, VF_VIDIOC_S_PARM, &parameters)) != nil else { return nil }
        let chosen = V4L2FourCC.time(
            numerator: parameters.parm.capture.timeperframe.numerator,
            denominator: parameters.parm.capture.timeperframe.denominator)
        return chosen.isValid && chosen > .zero ? chosen : nil
    }

    // MARK: Capture thread

    private struct CaptureContext {
        /// The path the stream takes: libv4l2, or plain ioctls for a native format.
        var io: any V4L2Interface
        var ring: V4L2BufferRing
        var fd: Int32
        var format: CaptureDevice.Format
        var duration: MediaTime
        var expectedBytes: Int
        /// Where frames of an emulated format are copied (libv4l2's buffers must not be held).
        var copies: PixelBufferPool?
        /// The presence generation the stream started in.
        var generation: Int
        /// The camera's metadata stream, when its clock can be read.
        var metadata: UVCMetadataStream?
        /// Set when libv4lconvert decodes JPEG into these (full-range) I420 buffers.
        var rangeCompressor: V4L2RangeCompressor?
    }

    /// Extends the driver's 32-bit sequence numbers to 64 bits across wrap-around.
    ///
    /// A step forward of at most ``largestGap`` (modulo 2^32, so a wrap is a small step) is
    /// frames the driver lost. Anything else — a repeat, a step back, or a jump too large to be
    /// loss — means the driver's counter was reset or is misbehaving: the extended number steps
    /// back by as much (the delivery engine drops that frame as a discontinuity and counts on from
    /// it), never forward by billions.
    package struct SequenceExtender {
        /// The largest forward step read as lost frames: 2^24 frames, over six days at 30 fps.
        package static let largestGap: UInt32 = 1 << 24
        package private(set) var extended: UInt64 = 0
        private var last: UInt32?

        package mutating func extend(_ sequence: UInt32) -> UInt64 {
            defer { last = sequence }
            guard let last else {
                extended = UInt64(sequence)
                return extended
            }
            let forward = sequence &- last
            if forward != 0, forward <= Self.largestGap {
                extended &+= UInt64(forward)
            } else {
                let back = UInt64(last &- sequence)
                extended = extended >= back ? extended - back : 0
            }
            return extended
        }
    }

    private enum Step {
        case frame(v4l2_buffer)
        case empty
        case failed(CaptureError)
    }

    /// Reads the driver's timestamps as nanoseconds without trapping, across the wrap of the
    /// kernel's 64-bit nanosecond counter.
    ///
    /// The driver's time is taken as the kernel keeps it, unsigned 64-bit nanoseconds that wrap.
    /// Ordinary times (under 2^62 ns, 146 years of uptime) are passed on unchanged. A stream whose
    /// first time lies beyond that (vivid's "Wrap Timestamp" puts it 16 s before 2^63 ns, past
    /// which `Int64` nanoseconds would overflow) is anchored at the host's arrival time of its
    /// first frame, and every later frame keeps the driver's spacing from there.
    package struct TimestampExtender {
        /// The largest driver time passed on unchanged.
        package static let largestPlain: UInt64 = 1 << 62
        private var last: (raw: UInt64, extended: Int64)?

        package init() {}

        package mutating func extend(seconds: Int64, microseconds: Int64, arrival: Int64) -> Int64 {
            let raw = UInt64(bitPattern: seconds) &* 1_000_000_000 &+ UInt64(bitPattern: microseconds) &* 1_000
            var extended: Int64
            if let last {
                // The step since the last frame, signed, modulo 2^64 (so a wrap is a small step).
                let (sum, overflow) = last.extended.addingReportingOverflow(Int64(bitPattern: raw &- last.raw))
                extended = overflow ? arrival : sum
            } else {
                extended = raw <= Self.largestPlain ? Int64(raw) : arrival
            }
            last = (raw, extended)
            return extended
        }
    }

    /// What the capture thread knows about a stream's sequence numbers and times.
    private struct SequenceState {
        var extender = SequenceExtender()
        var timestamps = TimestampExtender()
        /// Whether a frame has been delivered yet.
        var hasDelivered = false
        /// The sequence number of the first frame skipped before the first delivered one.
        var firstSkipped: UInt64?
    }

    private func capture(_ context: CaptureContext, sink: DeviceStreamSink, isCancelled: () -> Bool) {
        defer {
            context.ring.shutDown()
            context.metadata?.shutDown()
        }
        let host = HostClock()
        var sequence = SequenceState()
        while !isCancelled() {
            let events: Int16
            do {
                events = try context.io.poll(
                    context.fd, events: Int16(POLLIN | POLLPRI), timeoutMilliseconds: Self.pollTimeoutMilliseconds)
            } catch {
                return fail(
                    self.error(error, "waiting for frames from"), generation: context.generation, sink: sink,
                    cancelled: isCancelled)
            }
            if events == 0 { continue }
            var dequeued = 0
            while !isCancelled() {
                switch dequeue(context) {
                case .empty:
                    break
                case .failed(let error):
                    return fail(error, generation: context.generation, sink: sink, cancelled: isCancelled)
                case .frame(let buffer):
                    dequeued += 1
                    if let error = deliver(buffer, context: context, sequence: &sequence, host: host, sink: sink) {
                        return fail(error, generation: context.generation, sink: sink, cancelled: isCancelled)
                    }
                    continue
                }
                break
            }
            if dequeued == 0, events & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                // Readable with an error but nothing to dequeue: find out whether the camera is gone.
                return fail(
                    diagnose(fd: context.fd, io: context.io, fallback: V4L2Errno(EIO)), generation: context.generation,
                    sink: sink,
                    cancelled: isCancelled)
            }
        }
    }

    private func dequeue(_ context: CaptureContext) -> Step {
        var buffer = V4L2BufferRing.makeBuffer(index: 0)
        do {
            try context.io.ioctl(context.fd, VF_VIDIOC_DQBUF, &buffer)
            return .frame(buffer)
        } catch  where error.code == EAGAIN {
            return .empty
        } catch  where error.code == EIO {
            // uvcvideo reports EIO both for a failed transfer and for an unplugged camera.
            return .failed(diagnose(fd: context.fd, io: context.io, fallback: error))
        } catch {
            return .failed(self.error(error, "dequeuing a frame from"))
        }
    }

    /// After an error on a stream: `ENODEV` if the camera is gone, otherwise the error for `fallback`.
    private func diagnose(fd: Int32, io interface: any V4L2Interface, fallback: V4L2Errno) -> CaptureError {
        var capability = v4l2_capability()
        do {
            try interface.ioctl(fd, VF_VIDIOC_QUERYCAP, &capability)
        } catch  where error.code == ENODEV {
            return self.error(error, "capturing from")
        } catch {}
        return self.error(fallback, "capturing from")
    }

    /// Hands a dequeued buffer on, or queues it again if it is corrupt. Returns an error when
    /// re-queueing fails.
    private func deliver(
        _ buffer: v4l2_buffer, context: CaptureContext, sequence: inout SequenceState, host: HostClock,
        sink: DeviceStreamSink
    ) -> CaptureError? {
        let index = Int(buffer.index)
        guard index >= 0, index < context.ring.count else {
            return CaptureError(
                .driverError,
                "the driver of '\(localizedName)' returned buffer \(index) of \(context.ring.count): the driver is misbehaving"
            )
        }
        let bytesUsed = Int(buffer.bytesused)
        let minimum = context.format.pixelFormat.isCompressed ? 1 : context.expectedBytes
        let number = sequence.extender.extend(buffer.sequence)
        // Untrusted driver data: a frame claiming more bytes than its buffer maps is corrupt too.
        let corruption: SkippedFrameCause? =
            if buffer.flags & VF_V4L2_BUF_FLAG_ERROR != 0 {
                .errorFlag
            } else if bytesUsed < minimum {
                .shortPayload
            } else if bytesUsed > context.ring.length(of: index) {
                .oversizedPayload
            } else {
                nil
            }
        if let corruption {
            corruptFrames.add(1, ordering: .relaxed)
            if !sequence.hasDelivered, sequence.firstSkipped == nil { sequence.firstSkipped = number }
            do {
                try context.ring.requeue(index: index)
            } catch {
                return self.error(error, "re-queueing a buffer of")
            }
            // The sink posts one runtime error if nothing but corrupt frames come for a while.
            sink.deviceDidSkipFrame(corruption)
            return nil
        }
        let arrival = host.now()
        var presentationTime: MediaTime
        if buffer.flags & VF_V4L2_BUF_FLAG_TIMESTAMP_MASK == VF_V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC {
            let nanoseconds = sequence.timestamps.extend(
                seconds: Int64(buffer.timestamp.tv_sec), microseconds: Int64(buffer.timestamp.tv_usec),
                arrival: arrival.nanoseconds)
            presentationTime = MediaTime(value: nanoseconds, timescale: 1_000_000_000)
        } else {
            presentationTime = arrival
        }
        // The sensor's time from the camera's clock, free of USB and scheduling jitter, once known.
        if let metadata = context.metadata,
            let mapped = metadata.presentationTime(
                sequence: buffer.sequence,
                driverTime: presentationTime.nanoseconds)
        {
            presentationTime = MediaTime(value: mapped, timescale: 1_000_000_000)
        }
        var pixels: PixelBuffer?
        if let copies = context.copies {
            pixels = copies.makePixelBuffer()
            guard let copy = pixels else {
                // Every copy is still held: the frame is lost, as on a starved ring (a sequence gap).
                do {
                    try context.ring.requeue(index: index)
                } catch {
                    return self.error(error, "re-queueing a buffer of")
                }
                return nil
            }
            // The lent buffer goes back to the driver as soon as it is copied.
            var converted: PixelBuffer? = context.ring.lend(index: index, bytesUsed: bytesUsed)
            let compressed = context.rangeCompressor?.compress(converted!, into: copy) ?? false
            if !compressed { PixelCopy.copy(converted!, into: copy) }
            PixelBuffer.recycle(&converted)
        } else {
            pixels = context.ring.lend(index: index, bytesUsed: bytesUsed)
        }
        hand(
            pixels!, presentationTime: presentationTime, number: number, arrival: arrival, context: context,
            sequence: &sequence, sink: sink)
        // Whoever lets go last (this thread, or the output once it delivered) recycles the buffer.
        PixelBuffer.recycle(&pixels)
        return nil
    }

    /// Passes a frame over `pixels` to `sink` (its references end when this returns).
    private func hand(
        _ pixels: PixelBuffer, presentationTime: MediaTime, number: UInt64, arrival: MediaTime,
        context: CaptureContext, sequence: inout SequenceState, sink: DeviceStreamSink
    ) {
        var frame = CapturedFrame(
            buffer: pixels, presentationTime: presentationTime, duration: context.duration, sequenceNumber: number,
            hostArrivalTime: arrival)
        if !sequence.hasDelivered {
            // Frames skipped before this one still count, as a gap from the first of them.
            frame.streamStartSequenceNumber = sequence.firstSkipped
            sequence.hasDelivered = true
        }
        sink.deviceDidCapture(frame)
    }

    private func fail(_ error: CaptureError, generation: Int, sink: DeviceStreamSink, cancelled: () -> Bool) {
        if error.code == .deviceDisconnected { cameraWasLost(since: generation) }
        // A stop request races with the failure it may have caused: only report real failures.
        guard !cancelled() else { return }
        sink.deviceDidFail(error)
    }

    // MARK: Controls

    /// Runs `body` on a descriptor of its own (controls work from any open descriptor, streaming or not).
    private func withDescriptor<T>(
        _ action: String, describe: ((V4L2Errno) -> CaptureError)? = nil, _ body: (Int32) throws(V4L2Errno) -> T
    ) throws(CaptureError) -> T {
        guard isConnected else {
            throw CaptureError(
                .deviceDisconnected, "'\(localizedName)' is disconnected: reconnect it to change its controls")
        }
        let fd: Int32
        do {
            fd = try interface.open(path, flags: O_RDWR | O_NONBLOCK)
        } catch {
            throw self.error(error, "opening (to \(action))")
        }
        defer { interface.close(fd) }
        do {
            return try body(fd)
        } catch {
            throw describe?(error) ?? self.error(error, action)
        }
    }

    /// The driver's controls now, in V4L2 terms (refreshes the cache).
    package func v4l2Controls() throws(CaptureError) -> [V4L2Control] { try refreshControls().controls }

    /// Reads V4L2 control `id`.
    package func v4l2Value(of id: UInt32) throws(CaptureError) -> Int {
        let interface = self.interface
        return try withDescriptor("reading control \(describe(id)) of") { (fd) throws(V4L2Errno) in
            try V4L2ControlQuery.value(of: id, fd: fd, interface: interface)
        }
    }

    /// Writes V4L2 control `id`.
    package func setV4L2Value(_ value: Int, of id: UInt32) throws(CaptureError) {
        let interface = self.interface
        let name = describe(id)
        let describe = { (failure: V4L2Errno) -> CaptureError in
            guard failure.code == EACCES else { return self.error(failure, "setting control \(name) of") }
            // S_CTRL answers EACCES for a control that its automatic mode currently drives.
            return CaptureError(
                .unsupportedControl,
                "control \(name) of '\(self.localizedName)' cannot be changed now: it is read-only or driven by an automatic mode; turn that mode off first",
                errno: EACCES)
        }
        try withDescriptor("setting control \(name) of", describe: describe) { (fd) throws(V4L2Errno) in
            try V4L2ControlQuery.setValue(value, of: id, fd: fd, interface: interface)
        }
    }

    private func refreshControls() throws(CaptureError) -> V4L2ControlMap {
        let interface = self.interface
        let list = try withDescriptor("listing the controls of") { (fd) throws(V4L2Errno) in
            try V4L2ControlQuery.enumerate(fd: fd, interface: interface)
        }
        let map = V4L2ControlMap(list)
        controlCache.withLock { $0 = map }
        return map
    }

    private var cachedMap: V4L2ControlMap {
        if let cached = controlCache.withLock({ $0 }) { return cached }
        return (try? refreshControls()) ?? V4L2ControlMap([])
    }

    /// A control's name for messages: the driver's name, else its hexadecimal ID.
    private func describe(_ id: UInt32) -> String {
        cachedMap.control(id).map { "'\($0.name)'" } ?? "0x" + String(id, radix: 16)
    }

    /// The V4L2 control behind a camera setting, or the unsupported-control error.
    private func require(_ id: UInt32, _ what: String) throws(CaptureError) -> V4L2Control {
        guard let control = cachedMap.control(id) else {
            throw CaptureError(.unsupportedControl, "'\(localizedName)' has no \(what)")
        }
        return control
    }
}

// MARK: - Neutral controls

extension V4L2CameraBackend: AccessRefusingBackend {}

extension V4L2CameraBackend: ControllableBackend {
    package func controls() throws(CaptureError) -> [CaptureDevice.Control] {
        try refreshControls().generic.map(\.control)
    }

    package func cachedControls() -> [CaptureDevice.Control] { cachedMap.generic.map(\.control) }

    package func value(of id: CaptureDevice.Control.ID) throws(CaptureError) -> Int {
        try v4l2Value(of: try v4l2ID(id))
    }

    package func setValue(_ value: Int, for id: CaptureDevice.Control.ID) throws(CaptureError) {
        try setV4L2Value(value, of: try v4l2ID(id))
    }

    private func v4l2ID(_ id: CaptureDevice.Control.ID) throws(CaptureError) -> UInt32 {
        guard let v4l2ID = cachedMap.v4l2ID(for: id) else {
            throw CaptureError(.unsupportedControl, "'\(localizedName)' has no control \(id)")
        }
        return v4l2ID
    }

    package func cameraCapabilities() -> CameraCapabilities { cachedMap.capabilities }

    package func read(_ key: CameraSetting.Key) throws(CaptureError) -> CameraSetting {
        typealias ID = V4L2ControlID
        switch key {
        case .focusMode:
            let auto = cachedMap.control(ID.focusAuto) != nil ? try v4l2Value(of: ID.focusAuto) : 0
            return .focusMode(auto == 1 ? .continuousAutoFocus : .locked)
        case .lensPosition:
            let control = try require(ID.focusAbsolute, "focus position control")
            return .lensPosition(V4L2ControlMap.lensPosition(try v4l2Value(of: control.id), of: control))
        case .exposureMode:
            let mode = try v4l2Value(of: try require(ID.exposureAuto, "exposure mode control").id)
            return .exposureMode(mode == Int(VF_V4L2_EXPOSURE_MANUAL) ? .custom : .continuousAutoExposure)
        case .exposureDuration:
            let units = try v4l2Value(of: try require(ID.exposureAbsolute, "exposure time control").id)
            return .exposureDuration(V4L2ControlMap.duration(units))
        case .whiteBalanceMode:
            let auto = try v4l2Value(of: try require(ID.autoWhiteBalance, "automatic white-balance control").id)
            return .whiteBalanceMode(auto == 1 ? .continuousAutoWhiteBalance : .locked)
        case .whiteBalanceTemperature:
            let kelvin = try v4l2Value(
                of: try require(ID.whiteBalanceTemperature, "white-balance temperature control").id)
            return .whiteBalanceTemperature(kelvin)
        case .zoomFactor:
            let control = try require(ID.zoomAbsolute, "zoom control")
            return .zoomFactor(V4L2ControlMap.zoomFactor(try v4l2Value(of: control.id), of: control))
        case .torchMode:
            let mode = try v4l2Value(of: try require(ID.flashLEDMode, "LED control").id)
            return .torchMode(mode == Int(VF_V4L2_FLASH_LED_MODE_TORCH) ? .on : .off)
        case .powerLineFrequency:
            let value = try v4l2Value(of: try require(ID.powerLineFrequency, "power-line frequency control").id)
            guard let frequency = V4L2ControlMap.frequency(menuValue: value) else {
                throw CaptureError(
                    .driverError, "'\(localizedName)' reports power-line frequency \(value), which V4L2 does not define"
                )
            }
            return .powerLineFrequency(frequency)
        }
    }

    package func apply(_ setting: CameraSetting) throws(CaptureError) {
        typealias ID = V4L2ControlID
        let map = cachedMap
        switch setting {
        case .focusMode(let mode):
            if map.control(ID.focusAuto) != nil {
                try setV4L2Value(mode == .continuousAutoFocus ? 1 : 0, of: ID.focusAuto)
            }
        case .lensPosition(let position):
            let control = try require(ID.focusAbsolute, "focus position control")
            if map.control(ID.focusAuto) != nil { try setV4L2Value(0, of: ID.focusAuto) }
            try setV4L2Value(V4L2ControlMap.focusValue(position, of: control), of: control.id)
        case .exposureMode(let mode):
            if mode == .continuousAutoExposure {
                guard let automatic = map.automaticExposure else {
                    throw CaptureError(.unsupportedControl, "'\(localizedName)' has no automatic exposure")
                }
                try setV4L2Value(Int(automatic), of: ID.exposureAuto)
            } else {
                // Locked and custom keep the exposure time automatic exposure had chosen.
                let current = try v4l2Value(of: try require(ID.exposureAbsolute, "exposure time control").id)
                try setV4L2Value(Int(VF_V4L2_EXPOSURE_MANUAL), of: ID.exposureAuto)
                try setV4L2Value(current, of: ID.exposureAbsolute)
            }
        case .exposureDuration(let duration):
            let control = try require(ID.exposureAbsolute, "exposure time control")
            try setV4L2Value(Int(VF_V4L2_EXPOSURE_MANUAL), of: ID.exposureAuto)
            try setV4L2Value(V4L2ControlMap.units(duration, of: control), of: control.id)
        case .whiteBalanceMode(let mode):
            if map.control(ID.autoWhiteBalance) != nil {
                try setV4L2Value(mode == .continuousAutoWhiteBalance ? 1 : 0, of: ID.autoWhiteBalance)
            }
        case .whiteBalanceTemperature(let kelvin):
            let control = try require(ID.whiteBalanceTemperature, "white-balance temperature control")
            if map.control(ID.autoWhiteBalance) != nil { try setV4L2Value(0, of: ID.autoWhiteBalance) }
            try setV4L2Value(V4L2ControlMap.temperatureValue(kelvin, of: control), of: control.id)
        case .zoomFactor(let factor):
            let control = try require(ID.zoomAbsolute, "zoom control")
            try setV4L2Value(V4L2ControlMap.zoomValue(factor, of: control), of: control.id)
        case .torchMode(let mode):
            let value = mode == .on ? VF_V4L2_FLASH_LED_MODE_TORCH : VF_V4L2_FLASH_LED_MODE_NONE
            try setV4L2Value(Int(value), of: try require(ID.flashLEDMode, "LED control").id)
        case .powerLineFrequency(let frequency):
            let control = try require(ID.powerLineFrequency, "power-line frequency control")
            try setV4L2Value(Int(V4L2ControlMap.menuValue(of: frequency)), of: control.id)
        }
    }
}
