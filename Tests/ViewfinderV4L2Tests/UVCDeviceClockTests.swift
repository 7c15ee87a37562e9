import CV4L2
import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderSimulator
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// One simulated camera with a device clock, streaming 640x480 YUYV at 30 fps into a sink.
private struct ClockRig {
    let clock: ManualClock
    let bus = SimulatedV4L2Bus()
    let cameras: [SimulatedUVCCamera]

    init(
        clocks: [SimulatedUVCCamera.DeviceClock?], base: ManualClock = ManualClock(), offsets: [MediaTime]? = nil
    ) throws {
        clock = base
        var cameras: [SimulatedUVCCamera] = []
        for (index, deviceClock) in clocks.enumerated() {
            let offset = offsets?[index] ?? .zero
            let cameraClock: any CaptureClock = offset == .zero ? base : OffsetClock(base: base, offset: offset)
            let camera = try SimulatedUVCCamera(
                configuration: .init(
                    listing: SimulatedUVCCamera.c920Listing, card: "Clock Cam \(index)",
                    busInfo: "usb-clock-\(UUID().uuidString.prefix(8))",
                    clock: cameraClock,
                    deviceClock: deviceClock))
            bus.plug(camera)
            cameras.append(camera)
        }
        self.cameras = cameras
    }

    func backend(_ index: Int) throws -> V4L2CameraBackend {
        let device = try #require(bus.device(for: cameras[index]))
        return try #require(device.backend as? V4L2CameraBackend)
    }

    func format(_ index: Int) throws -> CaptureDevice.Format {
        let device = try #require(bus.device(for: cameras[index]))
        return try #require(
            device.formats.first { $0.pixelFormat == .yuyv && $0.dimensions == .init(width: 640, height: 480) })
    }

    /// Streams every camera for `frames` frame intervals; returns each camera's frames and the
    /// host time of its `STREAMON` (frame *k*'s true capture time is one interval per frame later).
    func run(frames: Int) throws -> [[RecordingSink.Frame]] {
        let sinks = cameras.map { _ in RecordingSink() }
        for index in cameras.indices {
            _ = try backend(index).startStreaming(
                format: try format(index), frameDuration: thirtyFPS, sink: sinks[index])
        }
        defer { for index in cameras.indices { try? backend(index).stopStreaming() } }
        for _ in 0..<frames {
            clock.advance(by: thirtyFPS)
            for sink in sinks { #expect(sink.waitForFrames(), "a frame each interval") }
        }
        return sinks.map(\.recorded)
    }
}

/// Frame `sequence`'s capture time in the simulator's truth: `start` plus one interval per frame.
private func truth(_ sequence: UInt64, start: MediaTime) -> Double {
    (start + thirtyFPS * Int64(sequence + 1)).seconds
}

/// The largest distance of `values` from their mean.
private func spread(_ values: [Double]) -> Double {
    let mean = values.reduce(0, +) / Double(max(1, values.count))
    return values.map { abs($0 - mean) }.max() ?? 0
}

@Suite("Several cameras: a UVC camera's own clock (metadata node PTS/SCR)")
struct UVCDeviceClockTests {
    /// 6 ms of host latency on the driver's timestamps, 0.2 ms on the metadata's packet times, a
    /// clock 150 ppm fast that wraps its 32 bits two seconds into the stream.
    static func jitteryClock(start: MediaTime, seed: UInt64 = 1, driftPPM: Double = 150)
        -> SimulatedUVCCamera.DeviceClock
    {
        let frequency = 48_000_000.0
        let ticksAtStart = start.seconds * frequency * (1 + driftPPM * 1e-6)
        let offset = UInt32(truncatingIfNeeded: Int64(1 << 32) - Int64(ticksAtStart) - Int64(2 * frequency))
        return .init(
            frequency: frequency, offset: offset, driftPPM: driftPPM,
            driverTimestampJitter: MediaTime(value: 6, timescale: 1000),
            metadataTimestampJitter: MediaTime(value: 200, timescale: 1_000_000), seed: seed)
    }

    @Test(
        "driver timestamps with 6 ms of jitter: presentation times from the device clock are within 1 ms of the truth"
    )
    func deviceClockRemovesJitter() throws {
        let base = ManualClock()
        let start = base.now()
        let rig = try ClockRig(clocks: [Self.jitteryClock(start: start)], base: base)
        let backend = try rig.backend(0)
        #expect(backend.metadataNodePath != nil, "discovery paired the metadata node with its video node")
        let frames = try rig.run(frames: 150)
        let status = backend.deviceClockStatus
        #expect(frames.count == 1 && frames[0].count == 150)
        #expect(status.state == .deviceClock)
        #expect(try #require(rig.bus.device(for: rig.cameras[0])).isUsingDeviceClock)
        #expect(status.malformedMetadata == 0)
        // The fit needs half a second of samples: the first frames keep the driver's timestamps.
        #expect(status.framesOnDriverClock >= 10 && status.framesOnDriverClock <= 30, "\(status)")
        #expect(status.framesOnDeviceClock == 150 - status.framesOnDriverClock)
        let errors = frames[0].map { $0.presentationTime.seconds - truth($0.sequenceNumber, start: start) }
        let early = Array(errors.prefix(status.framesOnDriverClock))
        let late = Array(errors.dropFirst(status.framesOnDriverClock))
        #expect(late.count >= 120)
        #expect(spread(early) > 0.002, "the driver's timestamps scatter by milliseconds: \(spread(early))")
        #expect(spread(late) < 0.001, "the device clock's are within 1 ms: \(spread(late))")
        #expect(abs(late.reduce(0, +) / Double(late.count)) < 0.001, "and on the host's timeline")
        // The fit found the clock's rate: 48 MHz running 150 ppm fast.
        let slope = try #require(status.nanosecondsPerTick)
        #expect(abs(slope * 48_000_000 * (1 + 150e-6) / 1e9 - 1) < 20e-6, "\(slope)")
    }

    @Test("two cameras with device clocks and jittery driver timestamps pair within 1 ms of their true 5 ms skew")
    func twoCamerasPairWithinAMillisecond() throws {
        let base = ManualClock()
        let start = base.now()
        let skew = MediaTime(value: 5, timescale: 1000)
        let rig = try ClockRig(
            clocks: [
                Self.jitteryClock(start: start, seed: 7, driftPPM: -80),
                Self.jitteryClock(start: start + skew, seed: 99, driftPPM: 120),
            ], base: base, offsets: [.zero, skew])
        let frames = try rig.run(frames: 120)
        for index in 0..<2 { #expect(try rig.backend(index).deviceClockStatus.state == .deviceClock) }
        let pairer = FramePairer<UInt64>(streamCount: 2, frameDuration: thirtyFPS)
        var tuples: [FramePairer<UInt64>.Tuple] = []
        // From the second second on: both fits are stable.
        for k in 30..<120 {
            for stream in 0..<2 {
                let frame = frames[stream][k]
                tuples += pairer.add(frame.sequenceNumber, at: frame.presentationTime, stream: stream)
            }
        }
        pairer.finish()
        #expect(tuples.count >= 89)
        #expect(pairer.unpartnered == [0, 0])
        let skews = tuples.map(\.skew.seconds)
        #expect(skews.allSatisfy { abs($0 - 0.005) < 0.001 }, "\(skews)")
        #expect(abs((pairer.offset(ofStream: 1) ?? 0) - 0.005) < 0.001)
        #expect(abs(pairer.drift(ofStream: 1) ?? 1) < 0.001)
    }

    @Test("a camera whose metadata node streams nothing keeps the driver's timestamps and says so")
    func noDeviceClockKeepsDriverTimestamps() throws {
        let base = ManualClock()
        let start = base.now()
        let rig = try ClockRig(clocks: [nil], base: base)
        let backend = try rig.backend(0)
        #expect(backend.metadataNodePath == nil, "a metadata node without the UVC format is not paired")
        let frames = try rig.run(frames: 40)
        #expect(backend.deviceClockStatus == DeviceClockStatus(state: .noMetadataNode))
        #expect(try #require(rig.bus.device(for: rig.cameras[0])).isUsingDeviceClock == false)
        #expect(frames[0].count == 40)
        #expect(
            frames[0].allSatisfy { abs($0.presentationTime.seconds - truth($0.sequenceNumber, start: start)) < 1e-6 },
            "the driver's timestamps, unchanged")
    }

    @Test("a metadata node another program holds: the driver's timestamps, and the state says the node is unavailable")
    func busyMetadataNode() throws {
        let base = ManualClock()
        let rig = try ClockRig(clocks: [Self.jitteryClock(start: base.now())], base: base)
        let backend = try rig.backend(0)
        let path = try #require(backend.metadataNodePath)
        // Another program owns the metadata queue.
        let fd = try backend.interface.open(path, flags: O_RDWR | O_NONBLOCK)
        defer { backend.interface.close(fd) }
        var request = v4l2_requestbuffers()
        request.count = 2
        request.type = VF_V4L2_BUF_TYPE_META_CAPTURE
        request.memory = VF_V4L2_MEMORY_MMAP
        try backend.interface.ioctl(fd, VF_VIDIOC_REQBUFS, &request)
        let frames = try rig.run(frames: 10)
        #expect(frames[0].count == 10)
        #expect(backend.deviceClockStatus == DeviceClockStatus(state: .metadataUnavailable))
    }

    @Test(
        "garbage metadata (short buffers, no PTS, inconsistent header lengths, error flags) is counted and ignored, never a crash"
    )
    func garbageMetadataIsCounted() throws {
        let base = ManualClock()
        let start = base.now()
        let rig = try ClockRig(clocks: [Self.jitteryClock(start: start)], base: base)
        let faults: [SimulatedUVCCamera.MetadataFault] = [.shortBuffer, .noTimestamps, .inconsistentHeader, .errorFlag]
        rig.cameras[0].injectMetadataFaults(Array(repeating: faults, count: 15).flatMap { $0 })
        let backend = try rig.backend(0)
        let frames = try rig.run(frames: 120)
        let status = backend.deviceClockStatus
        #expect(frames[0].map(\.sequenceNumber) == Array(0..<120), "every frame delivered")
        #expect(status.malformedMetadata == 60, "\(status)")
        // Error-flagged buffers (whole blocks) and those whose first header is inconsistent (the
        // second is fine) still carry samples; short buffers and headers without timestamps do
        // not: those frames keep the driver's timestamps.
        #expect(status.framesOnDriverClock >= 40, "\(status)")
        #expect(status.state == .deviceClock, "good metadata afterwards is used: \(status)")
        #expect(status.framesOnDeviceClock >= 40)
        let late = frames[0].suffix(20).map { $0.presentationTime.seconds - truth($0.sequenceNumber, start: start) }
        #expect(spread(late) < 0.001)
    }

    @Test("the metadata parser reads uvc_meta_buf blocks as uvcvideo writes them and stops at a truncated one")
    func parserReadsBlocks() {
        var bytes: [UInt8] = []
        func put(_ value: UInt64, _ count: Int) {
            for byte in 0..<count { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * byte))) }
        }
        // A header of 34 bytes (PTS, SCR and a camera's own data): uvcvideo copies its 12 standard bytes.
        put(1_000, 8)
        put(5, 2)
        put(34, 1)
        put(0x8C, 1)
        put(0x1122_3344, 4)
        put(0xAABB_CCDD, 4)
        put(0xFFFF, 2)
        // PTS only.
        put(2_000, 8)
        put(6, 2)
        put(6, 1)
        put(0x84, 1)
        put(0x0102_0304, 4)
        // Cut short: 7 bytes of a block.
        put(3_000, 7)
        let (blocks, malformed) = bytes.withUnsafeBytes { UVCMetadataBlock.parse($0) }
        #expect(malformed == 1)
        #expect(
            blocks == [
                UVCMetadataBlock(
                    hostNanoseconds: 1_000, hostSOF: 5, pts: 0x1122_3344, stc: 0xAABB_CCDD, deviceSOF: 0x7FF),
                UVCMetadataBlock(hostNanoseconds: 2_000, hostSOF: 6, pts: 0x0102_0304, stc: nil, deviceSOF: nil),
            ])
        // A header length smaller than its flags' fields.
        var bad = Array(bytes.prefix(22))
        bad[10] = 3
        let (none, counted) = bad.withUnsafeBytes { UVCMetadataBlock.parse($0) }
        #expect(none.isEmpty && counted == 1)
    }

    @Test("the clock fit maps across the 32-bit wrap, and starts over when the device clock jumps")
    func fitWrapsAndResets() throws {
        var fit = UVCClockFit()
        let frequency = 48_000_000.0
        let start: UInt64 = 5_000_000_000
        func stc(_ ns: UInt64) -> UInt32 {
            UInt32(truncatingIfNeeded: Int64(0xFFF0_0000) &+ Int64(Double(ns - start) * frequency / 1e9))
        }
        var host = start
        for _ in 0..<40 {
            fit.add(stc: stc(host), host: host)
            host += 16_666_667
        }
        // 0.65 s in, the counter has wrapped (0xFFF00000 + 31 M ticks).
        #expect(stc(host) < 0xFFF0_0000)
        let answer = fit.hostTime(ofPTS: stc(host - 5_000_000))
        let mapped = try #require(answer)
        #expect(abs(Double(mapped) - Double(host - 5_000_000)) < 1_000, "within 1 µs: \(mapped)")
        // The device clock restarts at 0: the fit starts over and is not used until it is stable again.
        fit.add(stc: 0, host: host)
        #expect(fit.resets == 1)
        #expect(fit.hostTime(ofPTS: 0) == nil)
    }

    @Test("in a multi-cam session: two device-clock cameras' sample buffers pair within 1 ms, driver jitter or not")
    func multiCamSessionPairsOnDeviceClocks() throws {
        let base = ManualClock()
        let start = base.now()
        let skew = MediaTime(value: 5, timescale: 1000)
        let bus = SimulatedV4L2Bus()
        var cameras: [SimulatedUVCCamera] = []
        for (index, offset) in [MediaTime.zero, skew].enumerated() {
            let camera = try SimulatedUVCCamera(
                configuration: .init(
                    listing: SimulatedUVCCamera.c920Listing, card: "Cam \(index)",
                    clock: OffsetClock(base: base, offset: offset), serialNumber: "UVC\(index)",
                    deviceClock: Self.jitteryClock(start: start + offset, seed: UInt64(index + 3))))
            bus.plug(camera, port: .init(bus: index + 1, port: "1"))
            cameras.append(camera)
        }
        let rig = MultiCameraRig(bus: bus, cameras: cameras, clock: base)
        for index in 0..<2 { try rig.choose(index, .yuyv, 640, 480) }
        let collector = NotificationCollector([CaptureSession.runtimeErrorNotification])
        let (session, _, delegates) = try MultiCameraRig.wire(rig, collector: collector)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(session.isRunning)
        for _ in 0..<60 {
            base.advance(by: thirtyFPS)
            for delegate in delegates { #expect(delegate.waitForMoreFrames()) }
        }
        for index in 0..<2 { #expect(try rig.device(index).isUsingDeviceClock) }
        let pairer = FramePairer<UInt64>(streamCount: 2, frameDuration: thirtyFPS)
        var tuples: [FramePairer<UInt64>.Tuple] = []
        // From the second second: both fits are stable.
        for (stream, delegate) in delegates.enumerated() {
            for frame in delegate.frames where frame.sequenceNumber >= 30 {
                tuples += pairer.add(frame.sequenceNumber, at: frame.presentationTime, stream: stream)
            }
        }
        #expect(tuples.count >= 25)
        #expect(tuples.allSatisfy { abs($0.skew.seconds - 0.005) < 0.001 }, "\(tuples.map(\.skew.seconds))")
    }
}
