import CV4L2
import Foundation
import Viewfinder

extension SimulatedUVCCamera {
    /// A camera clock for the simulated camera's metadata node (`V4L2_META_FMT_UVC`), as a UVC
    /// camera has: each frame's payload headers carry its PTS (the device clock when the sensor
    /// took it) and SCR samples (the device clock when a USB packet left, with its USB frame
    /// number); uvcvideo adds the host's `CLOCK_MONOTONIC` time of each packet.
    ///
    /// The truth is the camera's clock (``Configuration/clock``): frame *k* is taken at its due
    /// time *t*; its driver timestamp is *t* plus ``driverTimestampJitter`` (scheduling and USB
    /// latency, uniform and seeded); the device clock reads
    /// `offset + t · frequency · (1 + driftPPM · 10⁻⁶)` ticks (32 bits, wrapping); the metadata
    /// buffer holds ``packetsPerFrame`` headers sent ``transferTime`` apart after *t*, each with the
    /// host time of its packet plus ``metadataTimestampJitter``.
    ///
    /// Without a device clock (the default) the metadata node refuses every format, as a camera
    /// whose metadata Viewfinder cannot read.
    public struct DeviceClock: Sendable {
        /// Ticks per second of the device clock (UVC's `dwClockFrequency`; 48 MHz is common).
        public var frequency: Double
        /// The device clock's reading at host time zero (modulo 2^32).
        public var offset: UInt32
        /// How much faster than nominal the device clock runs, in parts per million.
        public var driftPPM: Double
        /// The largest latency added to the driver's buffer timestamps (uniform in 0…this).
        public var driverTimestampJitter: MediaTime
        /// The largest latency added to the host times of the metadata's packets.
        public var metadataTimestampJitter: MediaTime
        /// Headers with an SCR sample in each frame's metadata buffer.
        public var packetsPerFrame: Int
        /// Time between the frame's capture and its first packet, and between its packets.
        public var transferTime: MediaTime
        /// Seeds the jitter (the same seed, the same jitter).
        public var seed: UInt64

        /// A device clock; every parameter has a default.
        public init(
            frequency: Double = 48_000_000, offset: UInt32 = 0x1234_5678, driftPPM: Double = 0,
            driverTimestampJitter: MediaTime = .zero, metadataTimestampJitter: MediaTime = .zero,
            packetsPerFrame: Int = 2, transferTime: MediaTime = MediaTime(value: 4, timescale: 1000), seed: UInt64 = 1
        ) {
            self.frequency = frequency
            self.offset = offset
            self.driftPPM = driftPPM
            self.driverTimestampJitter = driverTimestampJitter
            self.metadataTimestampJitter = metadataTimestampJitter
            self.packetsPerFrame = max(1, packetsPerFrame)
            self.transferTime = transferTime
            self.seed = seed
        }

        /// The device clock at host time `time` (32 bits, wrapping).
        public func ticks(at time: MediaTime) -> UInt32 {
            let ticks = time.seconds * frequency * (1 + driftPPM * 1e-6)
            return UInt32(truncatingIfNeeded: Int64(offset) &+ Int64(ticks.rounded()))
        }

        /// A latency in 0…`limit` for event `index` of kind `salt`, from the seed.
        func jitter(_ limit: MediaTime, index: UInt64, salt: UInt64) -> MediaTime {
            guard limit > .zero else { return .zero }
            // SplitMix64 over (seed, salt, index).
            var z = seed &+ salt &* 0x9E37_79B9_7F4A_7C15 &+ index &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            let fraction = Double(z >> 11) / Double(1 << 53)
            return MediaTime(value: Int64(fraction * Double(limit.nanoseconds)), timescale: 1_000_000_000)
        }
    }

    /// A fault applied to the metadata of the next frame (one per frame).
    public enum MetadataFault: Sendable, Hashable {
        /// The metadata buffer holds 5 bytes: less than one header block.
        case shortBuffer
        /// The headers have neither PTS nor SCR (`bmHeaderInfo` without those flags).
        case noTimestamps
        /// The first header's length (3) is smaller than the PTS and SCR its flags announce.
        case inconsistentHeader
        /// The buffer comes back with `V4L2_BUF_FLAG_ERROR`, as uvcvideo flags a metadata buffer
        /// that filled up (its blocks are whole).
        case errorFlag
    }

    /// Makes the metadata of the next frames faulty as listed, one fault per frame.
    public func injectMetadataFaults(_ faults: [MetadataFault]) {
        state.withLock { $0.metadataFaults.append(contentsOf: faults) }
    }

    /// Metadata buffers the camera has filled in its current or last stream.
    public var metadataBuffersFilled: Int { state.withLock { $0.metadataFilled } }

    /// Whether the metadata node streams now.
    public var isStreamingMetadata: Bool { state.withLock { $0.metadataStreaming } }

    // MARK: Driver side

    /// The metadata queue's buffer size (uvcvideo's is 10 · 1024 bytes; this is enough here).
    static let metadataBufferSize = 4096

    func metadataIoctl(fd: Int32, request: UInt, argument: UnsafeMutableRawPointer, _ state: inout State)
        throws(V4L2Errno)
    {
        guard configuration.deviceClock != nil else { throw V4L2Errno(ENOTTY) }
        switch request {
        case VF_VIDIOC_G_FMT, VF_VIDIOC_S_FMT, VF_VIDIOC_TRY_FMT:
            let format = argument.assumingMemoryBound(to: v4l2_format.self)
            guard format.pointee.type == VF_V4L2_BUF_TYPE_META_CAPTURE else { throw V4L2Errno(EINVAL) }
            format.pointee.fmt.meta.dataformat = VF_V4L2_META_FMT_UVC
            format.pointee.fmt.meta.buffersize = UInt32(Self.metadataBufferSize)
        case VF_VIDIOC_REQBUFS:
            let request = argument.assumingMemoryBound(to: v4l2_requestbuffers.self)
            guard request.pointee.type == VF_V4L2_BUF_TYPE_META_CAPTURE, request.pointee.memory == VF_V4L2_MEMORY_MMAP
            else { throw V4L2Errno(EINVAL) }
            if let owner = state.metadataOwner, owner != fd { throw V4L2Errno(EBUSY) }
            if state.metadataStreaming { throw V4L2Errno(EBUSY) }
            state.metadataBuffers = []
            state.metadataQueued = []
            state.metadataDone = []
            state.metadataOwner = nil
            guard request.pointee.count > 0 else { return }
            let count = min(Int(request.pointee.count), 32)
            state.metadataBuffers = (0..<count).map { _ in
                Buffer(memory: SimulatedBufferMemory(length: Self.metadataBufferSize))
            }
            state.metadataOwner = fd
            request.pointee.count = UInt32(count)
        case VF_VIDIOC_QUERYBUF, VF_VIDIOC_QBUF:
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
            let index = Int(buffer.pointee.index)
            guard buffer.pointee.type == VF_V4L2_BUF_TYPE_META_CAPTURE, index < state.metadataBuffers.count else {
                throw V4L2Errno(EINVAL)
            }
            if request == VF_VIDIOC_QBUF {
                guard state.metadataOwner == fd else { throw V4L2Errno(EBUSY) }
                guard state.metadataBuffers[index].phase == .dequeued else { throw V4L2Errno(EINVAL) }
                state.metadataBuffers[index].phase = .queued
                state.metadataBuffers[index].flags = 0
                state.metadataQueued.append(index)
            }
            fillMetadata(buffer, index: index, state)
        case VF_VIDIOC_STREAMON, VF_VIDIOC_STREAMOFF:
            guard
                UInt32(bitPattern: argument.assumingMemoryBound(to: Int32.self).pointee)
                    == VF_V4L2_BUF_TYPE_META_CAPTURE,
                state.metadataOwner == fd
            else { throw V4L2Errno(EINVAL) }
            if request == VF_VIDIOC_STREAMON {
                state.metadataStreaming = true
                state.metadataFilled = 0
            } else {
                state.metadataStreaming = false
                for index in state.metadataBuffers.indices { state.metadataBuffers[index].phase = .dequeued }
                state.metadataQueued = []
                state.metadataDone = []
            }
        default:
            throw V4L2Errno(ENOTTY)
        }
    }

    func fillMetadata(_ buffer: UnsafeMutablePointer<v4l2_buffer>, index: Int, _ state: State) {
        let entry = state.metadataBuffers[index]
        buffer.pointee.index = UInt32(index)
        buffer.pointee.type = VF_V4L2_BUF_TYPE_META_CAPTURE
        buffer.pointee.memory = VF_V4L2_MEMORY_MMAP
        buffer.pointee.length = UInt32(entry.memory.length)
        buffer.pointee.m.offset = UInt32(Int64(index) * Self.mapStride)
        buffer.pointee.bytesused = entry.bytesUsed
        buffer.pointee.sequence = entry.sequence
        var flags = VF_V4L2_BUF_FLAG_MAPPED
        switch entry.phase {
        case .queued: flags |= VF_V4L2_BUF_FLAG_QUEUED
        case .done: flags |= VF_V4L2_BUF_FLAG_DONE
        case .dequeued: flags |= entry.flags
        }
        buffer.pointee.flags = flags
    }

    /// Non-blocking `DQBUF` on the metadata node (it is filled with the video frames).
    func dequeueMetadata(fd: Int32, buffer: UnsafeMutablePointer<v4l2_buffer>, _ state: inout State)
        throws(V4L2Errno)
    {
        guard configuration.deviceClock != nil else { throw V4L2Errno(ENOTTY) }
        guard state.metadataOwner == fd else { throw V4L2Errno(EBUSY) }
        guard state.metadataStreaming else { throw V4L2Errno(EINVAL) }
        captureDueFrames(&state)
        guard !state.metadataDone.isEmpty else { throw V4L2Errno(EAGAIN) }
        let index = state.metadataDone.removeFirst()
        state.metadataBuffers[index].phase = .dequeued
        fillMetadata(buffer, index: index, state)
    }

    /// Fills the next queued metadata buffer for the frame taken at `time` (sequence number as the
    /// video buffer reports it), with `fault` if one applies. Nothing when none is queued.
    func captureMetadata(time: MediaTime, frame: UInt64, sequence: UInt32, fault: MetadataFault?, _ state: inout State)
    {
        guard let clock = configuration.deviceClock, state.metadataStreaming, !state.metadataQueued.isEmpty else {
            return
        }
        let index = state.metadataQueued.removeFirst()
        let memory = state.metadataBuffers[index].memory
        let bytes = memory.address.assumingMemoryBound(to: UInt8.self)
        var used = 0
        func put(_ value: UInt64, _ count: Int) {
            for byte in 0..<count { bytes[used + byte] = UInt8(truncatingIfNeeded: value >> (8 * byte)) }
            used += count
        }
        let pts = clock.ticks(at: time)
        for packet in 0..<clock.packetsPerFrame {
            let sent = time + clock.transferTime * Int64(packet + 1)
            let host =
                sent + clock.jitter(clock.metadataTimestampJitter, index: frame * 64 + UInt64(packet), salt: 2)
            let usbFrame = UInt64(sent.nanoseconds / 1_000_000) & 0x7FF
            put(UInt64(host.nanoseconds), 8)  // ns
            put(usbFrame, 2)  // sof
            let headerInfo: UInt64 = fault == .noTimestamps ? 0x80 : 0x80 | 0x04 | 0x08  // EOH, PTS, SCR
            // Headers longer than their standard part (a camera's own data) are copied only up to
            // it, as uvcvideo does: the length byte says 34, the block holds 12.
            let length: UInt64 = fault == .noTimestamps ? 2 : 34
            put(packet == 0 && fault == .inconsistentHeader ? 3 : length, 1)
            put(headerInfo, 1)
            if fault != .noTimestamps {
                put(UInt64(pts), 4)
                put(UInt64(clock.ticks(at: sent)), 4)
                put(usbFrame, 2)
            }
        }
        if fault == .shortBuffer { used = 5 }
        state.metadataBuffers[index].bytesUsed = UInt32(used)
        state.metadataBuffers[index].flags = fault == .errorFlag ? VF_V4L2_BUF_FLAG_ERROR : 0
        state.metadataBuffers[index].sequence = sequence
        state.metadataBuffers[index].phase = .done
        state.metadataDone.append(index)
        state.metadataFilled += 1
    }
}
