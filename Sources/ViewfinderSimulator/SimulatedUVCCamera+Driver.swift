import CV4L2
import Foundation
import Viewfinder

#if canImport(Glibc)
    import Glibc
#endif

/// The driver side of ``SimulatedUVCCamera``: what each call does, following the V4L2
/// specification (and `uvcvideo` where the specification leaves room).
extension SimulatedUVCCamera {
    /// Offsets handed out by `QUERYBUF` are `index * mapStride`.
    static let mapStride: Int64 = 0x100_0000

    // MARK: Descriptors

    func open(fd: Int32, isMetadata: Bool, flags: Int32) throws(V4L2Errno) {
        try state.withLock { (state) throws(V4L2Errno) in
            guard state.connected else { throw V4L2Errno(ENODEV) }
            if let error = state.openError { throw V4L2Errno(error) }
            state.handles[fd] = (state.generation, isMetadata, flags & O_NONBLOCK != 0)
        }
    }

    func close(fd: Int32) {
        defer { noteChange() }
        state.withLock { state in
            guard let handle = state.handles.removeValue(forKey: fd) else { return }
            if handle.generation == state.generation, state.metadataOwner == fd {
                state.metadataStreaming = false
                state.metadataBuffers = []
                state.metadataQueued = []
                state.metadataDone = []
                state.metadataOwner = nil
            }
            if handle.generation == state.generation, state.owner == fd {
                // Closing the queue's owner stops streaming and frees the queue (mappings keep
                // their memory alive).
                if state.streaming { releaseBandwidth(state) }
                state.streaming = false
                state.buffers = []
                state.queued = []
                state.done = []
                state.owner = nil
            }
        }
    }

    /// Checks the descriptor is live and returns whether it is the metadata node.
    private func check(_ fd: Int32, _ state: State) throws(V4L2Errno) -> (isMetadata: Bool, nonBlocking: Bool) {
        guard let handle = state.handles[fd] else { throw V4L2Errno(EBADF) }
        guard handle.generation == state.generation, state.connected else { throw V4L2Errno(ENODEV) }
        return (handle.isMetadata, handle.nonBlocking)
    }

    // MARK: ioctl

    func ioctl(fd: Int32, request: UInt, argument: UnsafeMutableRawPointer) throws(V4L2Errno) {
        defer { noteChange() }
        if request == VF_VIDIOC_DQBUF {
            return try dequeue(fd: fd, buffer: argument.assumingMemoryBound(to: v4l2_buffer.self))
        }
        try state.withLock { (state) throws(V4L2Errno) in
            let handle = try check(fd, state)
            if request == VF_VIDIOC_QUERYCAP {
                return querycap(handle.isMetadata, argument.assumingMemoryBound(to: v4l2_capability.self), state)
            }
            if handle.isMetadata {
                return try metadataIoctl(fd: fd, request: request, argument: argument, &state)
            }
            switch request {
            case VF_VIDIOC_ENUM_FMT:
                try enumFormat(argument.assumingMemoryBound(to: v4l2_fmtdesc.self))
            case VF_VIDIOC_ENUM_FRAMESIZES:
                try enumSizes(argument.assumingMemoryBound(to: v4l2_frmsizeenum.self))
            case VF_VIDIOC_ENUM_FRAMEINTERVALS:
                try enumIntervals(argument.assumingMemoryBound(to: v4l2_frmivalenum.self))
            case VF_VIDIOC_G_FMT:
                try getFormat(argument.assumingMemoryBound(to: v4l2_format.self), state)
            case VF_VIDIOC_S_FMT, VF_VIDIOC_TRY_FMT:
                try setFormat(
                    argument.assumingMemoryBound(to: v4l2_format.self), apply: request == VF_VIDIOC_S_FMT, fd: fd,
                    &state)
            case VF_VIDIOC_G_PARM:
                try getParameters(argument.assumingMemoryBound(to: v4l2_streamparm.self), state)
            case VF_VIDIOC_S_PARM:
                try setParameters(argument.assumingMemoryBound(to: v4l2_streamparm.self), fd: fd, &state)
            case VF_VIDIOC_REQBUFS:
                try requestBuffers(argument.assumingMemoryBound(to: v4l2_requestbuffers.self), fd: fd, &state)
            case VF_VIDIOC_QUERYBUF:
                try queryBuffer(argument.assumingMemoryBound(to: v4l2_buffer.self), state)
            case VF_VIDIOC_QBUF:
                try queueBuffer(argument.assumingMemoryBound(to: v4l2_buffer.self), fd: fd, &state)
            case VF_VIDIOC_STREAMON:
                try streamOn(argument.assumingMemoryBound(to: Int32.self).pointee, fd: fd, &state)
            case VF_VIDIOC_STREAMOFF:
                try streamOff(argument.assumingMemoryBound(to: Int32.self).pointee, fd: fd, &state)
            case VF_VIDIOC_QUERYCTRL:
                try queryControl(argument.assumingMemoryBound(to: v4l2_queryctrl.self), state)
            case VF_VIDIOC_QUERYMENU:
                try queryMenu(argument.assumingMemoryBound(to: v4l2_querymenu.self), state)
            case VF_VIDIOC_G_CTRL:
                try getControl(argument.assumingMemoryBound(to: v4l2_control.self), state)
            case VF_VIDIOC_S_CTRL:
                try setControl(argument.assumingMemoryBound(to: v4l2_control.self), &state)
            default:
                throw V4L2Errno(ENOTTY)
            }
        }
    }

    private func querycap(
        _ isMetadata: Bool, _ capability: UnsafeMutablePointer<v4l2_capability>, _ state: State
    ) {
        capability.pointee = v4l2_capability()
        setV4L2String(&capability.pointee.driver, driver)
        setV4L2String(&capability.pointee.card, card)
        setV4L2String(&capability.pointee.bus_info, state.usb?.busInfo ?? configuredBusInfo)
        capability.pointee.version = 0x0006_0100
        let video = VF_V4L2_CAP_VIDEO_CAPTURE | VF_V4L2_CAP_STREAMING
        let metadata = VF_V4L2_CAP_META_CAPTURE | VF_V4L2_CAP_STREAMING
        capability.pointee.capabilities = video | metadata | VF_V4L2_CAP_DEVICE_CAPS
        capability.pointee.device_caps = isMetadata ? metadata : video
    }

    private func format(at index: UInt32) throws(V4L2Errno) -> V4L2FormatListing.Format {
        guard index < listing.formats.count else { throw V4L2Errno(EINVAL) }
        return listing.formats[Int(index)]
    }

    private func enumFormat(_ description: UnsafeMutablePointer<v4l2_fmtdesc>) throws(V4L2Errno) {
        guard description.pointee.type == VF_V4L2_BUF_TYPE_VIDEO_CAPTURE else { throw V4L2Errno(EINVAL) }
        let format = try format(at: description.pointee.index)
        description.pointee.flags =
            (format.isCompressed ? VF_V4L2_FMT_FLAG_COMPRESSED : 0)
            | (format.isEmulated ? VF_V4L2_FMT_FLAG_EMULATED : 0)
        description.pointee.pixelformat = format.fourCC
        setV4L2String(&description.pointee.description, format.description)
    }

    private func listingFormat(_ fourCC: UInt32) throws(V4L2Errno) -> V4L2FormatListing.Format {
        guard let format = listing.formats.first(where: { $0.fourCC == fourCC }) else { throw V4L2Errno(EINVAL) }
        return format
    }

    private func enumSizes(_ size: UnsafeMutablePointer<v4l2_frmsizeenum>) throws(V4L2Errno) {
        let format = try listingFormat(size.pointee.pixel_format)
        let index = Int(size.pointee.index)
        guard index < format.sizes.count else { throw V4L2Errno(EINVAL) }
        switch format.sizes[index].size {
        case .discrete(let width, let height):
            size.pointee.type = VF_V4L2_FRMSIZE_TYPE_DISCRETE
            size.pointee.discrete = v4l2_frmsize_discrete(width: width, height: height)
        case .stepwise(let minW, let minH, let maxW, let maxH, let stepW, let stepH):
            // A stepwise range is reported once, at index 0 (the specification's rule).
            guard index == 0 else { throw V4L2Errno(EINVAL) }
            let continuous = stepW == 1 && stepH == 1
            size.pointee.type = continuous ? VF_V4L2_FRMSIZE_TYPE_CONTINUOUS : VF_V4L2_FRMSIZE_TYPE_STEPWISE
            size.pointee.stepwise = v4l2_frmsize_stepwise(
                min_width: minW, max_width: maxW, step_width: stepW, min_height: minH, max_height: maxH,
                step_height: stepH)
        }
    }

    private func intervals(fourCC: UInt32, width: UInt32, height: UInt32) throws(V4L2Errno)
        -> V4L2FormatListing.Intervals
    {
        let format = try listingFormat(fourCC)
        guard let entry = format.sizes.first(where: { $0.size.contains(width: width, height: height) }) else {
            throw V4L2Errno(EINVAL)
        }
        if case .discrete(let list) = entry.intervals, list.isEmpty {
            return .discrete([V4L2FormatListing.Fraction(numerator: 1, denominator: 30)])
        }
        return entry.intervals
    }

    private func enumIntervals(_ interval: UnsafeMutablePointer<v4l2_frmivalenum>) throws(V4L2Errno) {
        let available = try intervals(
            fourCC: interval.pointee.pixel_format, width: interval.pointee.width, height: interval.pointee.height)
        let index = Int(interval.pointee.index)
        switch available {
        case .discrete(let list):
            guard index < list.count else { throw V4L2Errno(EINVAL) }
            interval.pointee.type = VF_V4L2_FRMIVAL_TYPE_DISCRETE
            interval.pointee.discrete = v4l2_fract(
                numerator: list[index].numerator, denominator: list[index].denominator)
        case .stepwise(let minimum, let maximum, let step):
            guard index == 0 else { throw V4L2Errno(EINVAL) }
            interval.pointee.type = VF_V4L2_FRMIVAL_TYPE_STEPWISE
            interval.pointee.stepwise = v4l2_frmival_stepwise(
                min: v4l2_fract(numerator: minimum.numerator, denominator: minimum.denominator),
                max: v4l2_fract(numerator: maximum.numerator, denominator: maximum.denominator),
                step: v4l2_fract(numerator: step.numerator, denominator: step.denominator))
        }
    }

    private func getFormat(_ format: UnsafeMutablePointer<v4l2_format>, _ state: State) throws(V4L2Errno) {
        guard format.pointee.type == VF_V4L2_BUF_TYPE_VIDEO_CAPTURE else { throw V4L2Errno(EINVAL) }
        format.pointee.fmt.pix = v4l2_pix_format()
        format.pointee.fmt.pix.width = state.width
        format.pointee.fmt.pix.height = state.height
        format.pointee.fmt.pix.pixelformat = state.fourCC
        format.pointee.fmt.pix.field = VF_V4L2_FIELD_NONE
        format.pointee.fmt.pix.bytesperline = state.bytesPerLine
        format.pointee.fmt.pix.sizeimage = state.sizeImage
        format.pointee.fmt.pix.colorspace = VF_V4L2_COLORSPACE_SRGB
    }

    /// `S_FMT` / `TRY_FMT`: adjusts the request to the nearest format and size the camera has
    /// (never `EINVAL` for that, as the specification says), unless told to refuse the format.
    private func setFormat(
        _ format: UnsafeMutablePointer<v4l2_format>, apply: Bool, fd: Int32, _ state: inout State
    ) throws(V4L2Errno) {
        guard format.pointee.type == VF_V4L2_BUF_TYPE_VIDEO_CAPTURE else { throw V4L2Errno(EINVAL) }
        let requested = format.pointee.fmt.pix
        if state.refusedFourCCs.contains(requested.pixelformat) { throw V4L2Errno(EINVAL) }
        if apply {
            if state.busyElsewhere { throw V4L2Errno(EBUSY) }
            // videobuf2: the format cannot change while buffers exist.
            if !state.buffers.isEmpty { throw V4L2Errno(EBUSY) }
        }
        let chosen = listing.formats.first { $0.fourCC == requested.pixelformat } ?? listing.formats[0]
        var best: (UInt32, UInt32) = (0, 0)
        var bestDistance = Int64.max
        for entry in chosen.sizes {
            let candidate: (UInt32, UInt32)
            switch entry.size {
            case .discrete(let w, let h):
                candidate = (w, h)
            case .stepwise(let minW, let minH, let maxW, let maxH, let stepW, let stepH):
                let w = min(maxW, max(minW, requested.width))
                let h = min(maxH, max(minH, requested.height))
                candidate = (w - (w - minW) % max(1, stepW), h - (h - minH) % max(1, stepH))
            }
            let distance =
                abs(Int64(candidate.0) - Int64(requested.width)) + abs(Int64(candidate.1) - Int64(requested.height))
            if distance < bestDistance { (best, bestDistance) = (candidate, distance) }
        }
        var result = state
        result.fourCC = chosen.fourCC
        (result.width, result.height) = best
        result.computeSizes(listing: listing, alignment: configuration.bytesPerLineAlignment)
        try getFormat(format, result)
        guard apply else { return }
        // The interval is per size: keep it when the new size has it, otherwise take the fastest.
        if let available = try? intervals(fourCC: result.fourCC, width: result.width, height: result.height) {
            result.interval = nearest(to: state.interval.seconds, in: available)
        }
        state = result
    }

    private func nearest(to seconds: Double, in intervals: V4L2FormatListing.Intervals) -> V4L2FormatListing.Fraction {
        switch intervals {
        case .discrete(let list):
            return list.min { abs($0.seconds - seconds) < abs($1.seconds - seconds) }
                ?? .init(numerator: 1, denominator: 30)
        case .stepwise(let minimum, let maximum, _):
            if seconds <= minimum.seconds { return minimum }
            if seconds >= maximum.seconds { return maximum }
            return V4L2FormatListing.fraction(seconds: seconds)
        }
    }

    private func getParameters(_ parameters: UnsafeMutablePointer<v4l2_streamparm>, _ state: State) throws(V4L2Errno) {
        guard parameters.pointee.type == VF_V4L2_BUF_TYPE_VIDEO_CAPTURE else { throw V4L2Errno(EINVAL) }
        parameters.pointee.parm.capture = v4l2_captureparm()
        parameters.pointee.parm.capture.capability = VF_V4L2_CAP_TIMEPERFRAME
        parameters.pointee.parm.capture.timeperframe = v4l2_fract(
            numerator: state.interval.numerator, denominator: state.interval.denominator)
        parameters.pointee.parm.capture.readbuffers = 0
    }

    /// `S_PARM`: picks the supported interval nearest the request and reports it back.
    private func setParameters(
        _ parameters: UnsafeMutablePointer<v4l2_streamparm>, fd: Int32, _ state: inout State
    ) throws(V4L2Errno) {
        guard parameters.pointee.type == VF_V4L2_BUF_TYPE_VIDEO_CAPTURE else { throw V4L2Errno(EINVAL) }
        if state.busyElsewhere { throw V4L2Errno(EBUSY) }
        let asked = parameters.pointee.parm.capture.timeperframe
        let available = try intervals(fourCC: state.fourCC, width: state.width, height: state.height)
        if asked.numerator != 0, asked.denominator != 0 {
            state.interval = nearest(to: Double(asked.numerator) / Double(asked.denominator), in: available)
        }
        state.lastFrameInterval = state.interval
        try getParameters(parameters, state)
    }

    // MARK: Buffers

    private func checkOwner(_ fd: Int32, _ state: State) throws(V4L2Errno) {
        if let owner = state.owner, owner != fd { throw V4L2Errno(EBUSY) }
    }

    private func requestBuffers(
        _ request: UnsafeMutablePointer<v4l2_requestbuffers>, fd: Int32, _ state: inout State
    ) throws(V4L2Errno) {
        guard request.pointee.type == VF_V4L2_BUF_TYPE_VIDEO_CAPTURE, request.pointee.memory == VF_V4L2_MEMORY_MMAP
        else { throw V4L2Errno(EINVAL) }
        try checkOwner(fd, state)
        if state.busyElsewhere { throw V4L2Errno(EBUSY) }
        if state.streaming { throw V4L2Errno(EBUSY) }
        // Freeing is allowed while buffers are still mapped: their memory lives on in the mappings
        // (videobuf2's orphaned buffers).
        state.buffers = []
        state.queued = []
        state.done = []
        state.owner = nil
        guard request.pointee.count > 0 else { return }
        let count = min(Int(request.pointee.count), 32)
        let length = (Int(state.sizeImage) + 4095) / 4096 * 4096
        state.buffers = (0..<count).map { _ in Buffer(memory: SimulatedBufferMemory(length: length)) }
        state.owner = fd
        request.pointee.count = UInt32(count)
    }

    private func fill(_ buffer: UnsafeMutablePointer<v4l2_buffer>, index: Int, _ state: State) {
        let entry = state.buffers[index]
        buffer.pointee.index = UInt32(index)
        buffer.pointee.type = VF_V4L2_BUF_TYPE_VIDEO_CAPTURE
        buffer.pointee.memory = VF_V4L2_MEMORY_MMAP
        buffer.pointee.length = UInt32(entry.memory.length)
        buffer.pointee.m.offset = UInt32(Int64(index) * Self.mapStride)
        buffer.pointee.bytesused = entry.bytesUsed
        buffer.pointee.field = VF_V4L2_FIELD_NONE
        buffer.pointee.sequence = entry.sequence
        let nanoseconds = entry.timestamp.nanoseconds
        buffer.pointee.timestamp = timeval(
            tv_sec: Int(nanoseconds / 1_000_000_000), tv_usec: Int(nanoseconds % 1_000_000_000 / 1000))
        var flags = VF_V4L2_BUF_FLAG_MAPPED | VF_V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC
        switch entry.phase {
        case .queued: flags |= VF_V4L2_BUF_FLAG_QUEUED
        case .done: flags |= VF_V4L2_BUF_FLAG_DONE
        case .dequeued: flags |= entry.flags
        }
        buffer.pointee.flags = flags
    }

    private func queryBuffer(_ buffer: UnsafeMutablePointer<v4l2_buffer>, _ state: State) throws(V4L2Errno) {
        guard buffer.pointee.type == VF_V4L2_BUF_TYPE_VIDEO_CAPTURE, Int(buffer.pointee.index) < state.buffers.count
        else { throw V4L2Errno(EINVAL) }
        fill(buffer, index: Int(buffer.pointee.index), state)
    }

    private func queueBuffer(_ buffer: UnsafeMutablePointer<v4l2_buffer>, fd: Int32, _ state: inout State)
        throws(V4L2Errno)
    {
        try checkOwner(fd, state)
        let index = Int(buffer.pointee.index)
        guard buffer.pointee.type == VF_V4L2_BUF_TYPE_VIDEO_CAPTURE, buffer.pointee.memory == VF_V4L2_MEMORY_MMAP,
            index < state.buffers.count, state.buffers[index].phase == .dequeued
        else { throw V4L2Errno(EINVAL) }
        state.buffers[index].phase = .queued
        state.buffers[index].flags = 0
        state.queued.append(index)
        fill(buffer, index: index, state)
    }

    private func streamOn(_ type: Int32, fd: Int32, _ state: inout State) throws(V4L2Errno) {
        guard UInt32(bitPattern: type) == VF_V4L2_BUF_TYPE_VIDEO_CAPTURE, !state.buffers.isEmpty else {
            throw V4L2Errno(EINVAL)
        }
        try checkOwner(fd, state)
        guard !state.streaming else { return }
        try reserveBandwidth(state)
        state.streaming = true
        state.streamStart = configuration.clock.now()
        state.nextFrame = 0
        state.sequence = 0
        state.sequenceOffset = 0
        state.timestampOffset = .zero
        state.framesCaptured = 0
        state.framesLost = 0
    }

    private func streamOff(_ type: Int32, fd: Int32, _ state: inout State) throws(V4L2Errno) {
        guard UInt32(bitPattern: type) == VF_V4L2_BUF_TYPE_VIDEO_CAPTURE else { throw V4L2Errno(EINVAL) }
        try checkOwner(fd, state)
        if state.streaming { releaseBandwidth(state) }
        state.streaming = false
        // STREAMOFF returns every buffer to the application, filled or not.
        for index in state.buffers.indices { state.buffers[index].phase = .dequeued }
        state.queued = []
        state.done = []
    }

    // MARK: Frames

    /// The time frame `index` of the current stream is due.
    private func deadline(_ index: Int64, _ state: State) -> MediaTime {
        let interval = V4L2FourCC.time(numerator: state.interval.numerator, denominator: state.interval.denominator)
        return state.streamStart + interval * (index + 1)
    }

    /// Captures every frame whose time has come: into the oldest queued buffer, or lost (its
    /// sequence number skipped) when none is queued.
    func captureDueFrames(_ state: inout State) {
        guard state.streaming else { return }
        let now = configuration.clock.now()
        while deadline(state.nextFrame, state) <= now {
            let time = deadline(state.nextFrame, state)
            let sequence = state.sequence
            state.nextFrame += 1
            state.sequence &+= 1
            guard !state.queued.isEmpty else {
                state.framesLost += 1
                continue
            }
            let index = state.queued.removeFirst()
            state.framesCaptured += 1
            render(into: index, sequence: sequence, &state)
            state.buffers[index].phase = .done
            if !state.faults.isEmpty {
                switch state.faults.removeFirst() {
                case .errorFlag: state.buffers[index].flags = VF_V4L2_BUF_FLAG_ERROR
                case .emptyPayload: state.buffers[index].bytesUsed = 0
                case .shortPayload: state.buffers[index].bytesUsed /= 2
                case .oversizedPayload:
                    state.buffers[index].bytesUsed = UInt32(clamping: state.buffers[index].memory.length + 4096)
                case .timestampStep(let step): state.timestampOffset = state.timestampOffset + step
                case .sequenceStep(let step): state.sequenceOffset &+= UInt32(truncatingIfNeeded: step)
                }
            }
            state.buffers[index].sequence = sequence &+ state.sequenceOffset
            state.buffers[index].timestamp = time + state.timestampOffset
            if let clock = configuration.deviceClock {
                // The host's latency in stamping the frame; the metadata carries the device's time.
                let frame = UInt64(state.nextFrame - 1)
                state.buffers[index].timestamp =
                    state.buffers[index].timestamp + clock.jitter(clock.driverTimestampJitter, index: frame, salt: 1)
                let fault = state.metadataFaults.isEmpty ? nil : state.metadataFaults.removeFirst()
                captureMetadata(
                    time: time, frame: frame, sequence: state.buffers[index].sequence, fault: fault, &state)
            }
            state.done.append(index)
        }
    }

    private func render(into index: Int, sequence: UInt32, _ state: inout State) {
        let memory = state.buffers[index].memory
        guard let format = V4L2FourCC.pixelFormat(state.fourCC), !format.isCompressed else {
            renderJPEG(into: index, sequence: sequence, &state)
            return
        }
        let layout = PlaneLayout(
            pixelFormat: format, width: Int(state.width), height: Int(state.height),
            bytesPerRow: Int(state.bytesPerLine))
        let pixels = PixelBuffer(memory: memory.address, layout: layout, owner: nil, slot: index)
        if let previous = state.buffers[index].renderedSequence {
            TestPattern.stamp(sequenceNumber: UInt64(sequence), previous: previous, into: pixels)
        } else {
            TestPattern.render(sequenceNumber: UInt64(sequence), into: pixels)
        }
        state.buffers[index].renderedSequence = UInt64(sequence)
        state.buffers[index].bytesUsed = state.sizeImage
    }

    /// A Motion-JPEG frame: the test pattern showing `sequence`, rendered in full-range NV12 and
    /// encoded as a 4:2:2 JPEG of quality 85 (what webcams send, Huffman tables included).
    private func renderJPEG(into index: Int, sequence: UInt32, _ state: inout State) {
        let memory = state.buffers[index].memory
        let (width, height) = (Int(state.width), Int(state.height))
        if state.jpegSource?.width != width || state.jpegSource?.height != height {
            let pool = try? PixelBufferPool(pixelFormat: .nv12FullRange, width: width, height: height, capacity: 1)
            state.jpegSource = pool?.makePixelBuffer()
            state.jpegSourceSequence = nil
        }
        if state.jpegEncoder == nil { state.jpegEncoder = try? JPEGEncoder(quality: 0.85, chromaSubsampling: .yuv422) }
        guard let source = state.jpegSource, let encoder = state.jpegEncoder else {
            state.buffers[index].bytesUsed = 0
            return
        }
        if let previous = state.jpegSourceSequence {
            TestPattern.stamp(sequenceNumber: UInt64(sequence), previous: previous, into: source)
        } else {
            TestPattern.render(sequenceNumber: UInt64(sequence), into: source)
        }
        state.jpegSourceSequence = UInt64(sequence)
        let bytes = (try? encoder.encode(source)) ?? []
        let count = min(bytes.count, memory.length)
        bytes.withUnsafeBytes { memory.address.copyMemory(from: $0.baseAddress!, byteCount: count) }
        state.buffers[index].bytesUsed = UInt32(count)
    }

    private func dequeue(fd: Int32, buffer: UnsafeMutablePointer<v4l2_buffer>) throws(V4L2Errno) {
        while true {
            let result: Result<Bool, V4L2Errno> = state.withLock { state in
                do throws(V4L2Errno) {
                    let handle = try check(fd, state)
                    if handle.isMetadata {
                        try dequeueMetadata(fd: fd, buffer: buffer, &state)
                        return .success(true)
                    }
                    try checkOwner(fd, state)
                    if state.pendingIOError {
                        state.pendingIOError = false
                        throw V4L2Errno(EIO)
                    }
                    guard state.streaming else { throw V4L2Errno(EINVAL) }
                    captureDueFrames(&state)
                    guard !state.done.isEmpty else {
                        if handle.nonBlocking { throw V4L2Errno(EAGAIN) }
                        return .success(false)
                    }
                    let index = state.done.removeFirst()
                    state.buffers[index].phase = .dequeued
                    fill(buffer, index: index, state)
                    return .success(true)
                } catch {
                    return .failure(error)
                }
            }
            if try result.get() { return }
            // Blocking descriptor: wait for the next frame.
            _ = try poll(fd: fd, events: Int16(POLLIN), timeoutMilliseconds: -1)
        }
    }

    /// Maps buffer memory by its `QUERYBUF` offset.
    func memory(fd: Int32, offset: Int64, length: Int) throws(V4L2Errno) -> SimulatedBufferMemory {
        try state.withLock { (state) throws(V4L2Errno) in
            let handle = try check(fd, state)
            let buffers = handle.isMetadata ? state.metadataBuffers : state.buffers
            let index = Int(offset / Self.mapStride)
            guard offset % Self.mapStride == 0, index < buffers.count, length <= buffers[index].memory.length
            else { throw V4L2Errno(EINVAL) }
            return buffers[index].memory
        }
    }

    // MARK: poll

    /// Readable when a filled buffer waits; `POLLERR` when not streaming; `POLLERR | POLLHUP`
    /// once unplugged. Waits on the camera's clock for the next frame, and at most
    /// `timeoutMilliseconds` of real time (negative: no limit).
    func poll(fd: Int32, events: Int16, timeoutMilliseconds: Int32) throws(V4L2Errno) -> Int16 {
        let host = HostClock()
        let realDeadline =
            timeoutMilliseconds < 0 ? nil : host.now() + MediaTime(value: Int64(timeoutMilliseconds), timescale: 1000)
        while true {
            let (ready, next, generation): (Int16?, MediaTime, Int) = state.withLock { state in
                guard let handle = state.handles[fd] else { return (Int16(POLLNVAL), .zero, 0) }
                guard handle.generation == state.generation, state.connected else {
                    return (Int16(POLLERR | POLLHUP | POLLPRI), .zero, 0)
                }
                guard state.streaming, state.owner == fd else { return (Int16(POLLERR), .zero, 0) }
                captureDueFrames(&state)
                if !state.done.isEmpty { return (Int16(POLLIN | POLLRDNORM) & (events | Int16(POLLRDNORM)), .zero, 0) }
                return (nil, deadline(state.nextFrame, state), state.generation)
            }
            if let ready {
                noteChange()
                return ready
            }
            noteChange()
            if let realDeadline, host.now() >= realDeadline { return 0 }
            _ = configuration.clock.wait(until: next) {
                if let realDeadline, host.now() >= realDeadline { return true }
                return state.withLock { !$0.streaming || $0.generation != generation || !$0.connected }
            }
        }
    }

    // MARK: Controls

    private func queryControl(_ query: UnsafeMutablePointer<v4l2_queryctrl>, _ state: State) throws(V4L2Errno) {
        let asked = query.pointee.id
        let control: Control?
        if asked & VF_V4L2_CTRL_FLAG_NEXT_CTRL != 0 {
            let after = asked & ~VF_V4L2_CTRL_FLAG_NEXT_CTRL
            control = state.controls.first { $0.id > after }
        } else {
            control = state.controls.first { $0.id == asked }
        }
        guard let control else { throw V4L2Errno(EINVAL) }
        query.pointee = v4l2_queryctrl()
        query.pointee.id = control.id
        query.pointee.type = control.type
        setV4L2String(&query.pointee.name, control.name)
        query.pointee.minimum = control.minimum
        query.pointee.maximum = control.maximum
        query.pointee.step = control.step
        query.pointee.default_value = control.defaultValue
        query.pointee.flags = isInactive(control, state) ? VF_V4L2_CTRL_FLAG_INACTIVE : 0
    }

    private func isInactive(_ control: Control, _ state: State) -> Bool {
        guard let master = control.master, let driver = state.controls.first(where: { $0.id == master.id }) else {
            return false
        }
        return driver.value != master.manualValue
    }

    private func queryMenu(_ item: UnsafeMutablePointer<v4l2_querymenu>, _ state: State) throws(V4L2Errno) {
        guard let control = state.controls.first(where: { $0.id == item.pointee.id }),
            let name = control.menu[Int32(bitPattern: item.pointee.index)]
        else { throw V4L2Errno(EINVAL) }
        setV4L2String(&item.pointee.name, name)
    }

    private func getControl(_ value: UnsafeMutablePointer<v4l2_control>, _ state: State) throws(V4L2Errno) {
        guard let control = state.controls.first(where: { $0.id == value.pointee.id }) else { throw V4L2Errno(EINVAL) }
        value.pointee.value = control.value
    }

    private func setControl(_ value: UnsafeMutablePointer<v4l2_control>, _ state: inout State) throws(V4L2Errno) {
        guard let index = state.controls.firstIndex(where: { $0.id == value.pointee.id }) else {
            throw V4L2Errno(EINVAL)
        }
        let control = state.controls[index]
        let new = value.pointee.value
        guard new >= control.minimum, new <= control.maximum,
            control.menu.isEmpty || control.menu[new] != nil
        else { throw V4L2Errno(ERANGE) }
        // Modern uvcvideo refuses to set a control its automatic mode drives.
        if isInactive(control, state) { throw V4L2Errno(EACCES) }
        let step = max(1, control.step)
        state.controls[index].value = control.minimum + (new - control.minimum) / step * step
    }
}
