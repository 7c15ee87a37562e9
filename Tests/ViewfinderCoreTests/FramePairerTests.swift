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

@Suite("Several cameras: pairing frames by time")
struct FramePairerTests {
    static let interval = MediaTime(value: 1, timescale: 30)

    @Test("known skew and drift are reported within 1 ms; a frame with no partner is counted")
    func knownSkewAndDrift() throws {
        let pairer = FramePairer<Int>(streamCount: 2, frameDuration: Self.interval)
        let skew = 0.007  // stream 1 starts 7 ms late …
        let drift = 100e-6  // … and its clock runs 100 ppm slow: 6 ms more after 60 s
        var tuples: [FramePairer<Int>.Tuple] = []
        for k in 0..<1800 {
            let t0 = Double(k) / 30
            tuples += pairer.add(k, at: MediaTime(seconds: 10 + t0, preferredTimescale: 1_000_000_000), stream: 0)
            if k == 900 { continue }  // camera 1 lost a frame
            let t1 = 10 + skew + t0 * (1 + drift)
            tuples += pairer.add(k, at: MediaTime(seconds: t1, preferredTimescale: 1_000_000_000), stream: 1)
        }
        pairer.finish()
        #expect(tuples.count == 1799)
        #expect(tuples.allSatisfy { $0.frames[0] == $0.frames[1] }, "each frame with its own partner")
        #expect(pairer.unpartnered == [1, 0], "camera 0's frame 900 had no partner")
        #expect(abs(tuples[0].skew.seconds - skew) < 0.001)
        #expect(abs(tuples.last!.skew.seconds - (skew + 59.97 * drift)) < 0.001)
        let measured = try #require(pairer.drift(ofStream: 1))
        #expect(abs(measured * 60 - drift * 60) < 0.001, "drift over a minute within 1 ms: \(measured)")
        let offset = try #require(pairer.offset(ofStream: 1))
        #expect(abs(offset - (skew + 30 * drift)) < 0.001)
    }

    @Test("frames further apart than half an interval do not pair: the earlier is counted")
    func halfIntervalRule() {
        let pairer = FramePairer<String>(streamCount: 3, frameDuration: Self.interval)
        #expect(pairer.add("a0", at: MediaTime(value: 0, timescale: 1000), stream: 0).isEmpty)
        #expect(pairer.add("b0", at: MediaTime(value: 20, timescale: 1000), stream: 1).isEmpty)
        // c's first frame is 20 ms after a0 (more than 16.7): a0 goes unpartnered; b0 and c0 wait.
        #expect(pairer.add("c0", at: MediaTime(value: 21, timescale: 1000), stream: 2).isEmpty)
        let made = pairer.add("a1", at: MediaTime(value: 33, timescale: 1000), stream: 0)
        #expect(made.map(\.frames) == [["a1", "b0", "c0"]])
        #expect(made.first?.skew == MediaTime(value: 13, timescale: 1000))
        #expect(pairer.unpartnered == [1, 0, 0])
    }

    @Test("two plug-in cameras with clocks 5 ms apart in a multi-cam session: the skew is reported within 1 ms")
    func camerasWithSkewedClocks() throws {
        let clock = ManualClock()
        let bus = SimulatedV4L2Bus()
        let offsets = [MediaTime.zero, MediaTime(value: 5, timescale: 1000)]
        var cameras: [SimulatedUVCCamera] = []
        for (index, offset) in offsets.enumerated() {
            let camera = try SimulatedUVCCamera(
                configuration: .init(
                    listing: SimulatedUVCCamera.c920Listing, card: "Cam \(index)",
                    clock: OffsetClock(base: clock, offset: offset), serialNumber: "P\(index)"))
            bus.plug(camera, port: .init(bus: index + 1, port: "1"))
            cameras.append(camera)
        }
        let rig = MultiCameraRig(bus: bus, cameras: cameras, clock: clock)
        for index in 0..<2 { try rig.choose(index, .yuyv, 640, 480) }
        let collector = NotificationCollector([CaptureSession.runtimeErrorNotification])
        let (session, _, delegates) = try MultiCameraRig.wire(rig, collector: collector)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(session.isRunning)
        for _ in 0..<6 {
            clock.advance(by: Self.interval)
            for delegate in delegates { #expect(delegate.waitForMoreFrames()) }
        }
        let pairer = FramePairer<UInt64>(streamCount: 2, frameDuration: Self.interval)
        var tuples: [FramePairer<UInt64>.Tuple] = []
        for (stream, delegate) in delegates.enumerated() {
            for frame in delegate.frames {
                tuples += pairer.add(frame.sequenceNumber, at: frame.presentationTime, stream: stream)
            }
        }
        #expect(tuples.count >= 5)
        #expect(tuples.allSatisfy { abs($0.skew.seconds - 0.005) < 0.001 }, "\(tuples.map(\.skew.seconds))")
        #expect(abs((pairer.offset(ofStream: 1) ?? 0) - 0.005) < 0.001)
        #expect(abs(pairer.drift(ofStream: 1) ?? 1) < 0.001, "the simulated sensors run at the same rate")
    }
}
