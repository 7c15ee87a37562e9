import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

@Suite("Minimum frame duration")
struct MinFrameDurationTests {
    @Test(
        "delivered frames are at least minFrameDuration apart (manual clock, exact)",
        arguments: [
            // (device rate chosen by the user or nil, output limit as 1/fps, expected device rate)
            (Int32?.none, Int32(12), Int32(15)),  // device asked for 15 fps (nearest ≤ 1/12 s), gate halves it
            (Int32?.none, Int32(30), Int32(30)),  // device meets the limit exactly
            (Int32(60), Int32(25), Int32(60)),  // user chose 60 fps: the gate does all the work
            (Int32(30), Int32(7), Int32(30)),
        ])
    func gate(deviceRate: Int32?, limitRate: Int32, expectedDeviceRate: Int32) throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate()
        let rig = try Rig(camera: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)), delegate: delegate)
        let limit = MediaTime.fps(limitRate)
        try rig.output.setMinFrameDuration(limit)
        if let deviceRate {
            let device = rig.camera.device
            try device.lockForConfiguration()
            try device.setActiveFormat(try #require(device.formats.first { $0.dimensions.width == 640 }))
            try device.setActiveVideoMinFrameDuration(.fps(deviceRate))
            device.unlockForConfiguration()
        }
        rig.start()
        #expect(rig.camera.device.activeVideoMinFrameDuration == .fps(expectedDeviceRate))

        let steps = Int(expectedDeviceRate) * 3  // three seconds of frames
        rig.step(clock, by: .fps(expectedDeviceRate), times: steps)
        rig.session.stopRunning()

        let times = delegate.frames.map(\.presentationTime)
        #expect(times.count > 1)
        for (previous, next) in zip(times, times.dropFirst()) {
            #expect(next - previous >= limit, "frames \(previous) and \(next) are closer than \(limit)")
        }
        // The gate passes exactly the frames the rule allows: replay it on the device's timeline.
        let period = MediaTime.fps(expectedDeviceRate)
        var expected: [MediaTime] = []
        for index in 0...steps {
            let time = period * Int64(index)
            if let last = expected.last, time - last < limit { continue }
            expected.append(time)
        }
        #expect(times == expected)
        let stats = rig.output.statistics
        #expect(stats.captured == steps + 1)
        #expect(stats.rateGated == steps + 1 - expected.count)
        #expect(stats.delivered == expected.count)
    }

    @Test("zero and negative durations are refused with a clear error")
    func invalidDurations() {
        let output = CaptureVideoDataOutput()
        for bad in [MediaTime.zero, MediaTime(value: -1, timescale: 30)] {
            #expect(throws: CaptureError.self) { try output.setMinFrameDuration(bad) }
            do {
                try output.setMinFrameDuration(bad)
            } catch {
                #expect(error.code == .invalidArgument)
                #expect(error.message.contains("positive"))
            }
        }
        #expect(output.minFrameDuration == .invalid, "a refused value leaves the old one")
        #expect(throws: Never.self) { try output.setMinFrameDuration(.invalid) }
    }
}

@Suite("Minimum frame duration with jittery timestamps")
struct MinFrameDurationJitterTests {
    @Test("a camera at exactly the limit, with timestamps wobbling by half a millisecond, is not halved")
    func jitterAllowance() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate()
        let rig = try Rig(camera: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)), delegate: delegate)
        try rig.output.setMinFrameDuration(.fps(30))
        rig.start()
        rig.settle(clock)
        // Frames due at k/30 s, each stamped up to 0.5 ms early or late: the camera's deadlines
        // stay exact, so feed the gate through the output directly.
        let connection = try #require(rig.output.connection(with: .video))
        rig.session.stopRunning()
        rig.output.sessionWillStartRunning()
        try rig.output.prepareToStream(format: rig.camera.device.activeFormat, frameDuration: .fps(30))
        let pool = try PixelBufferPool(pixelFormat: .nv12VideoRange, width: 640, height: 480, capacity: 4)
        let wobble: [Int64] = [0, 500_000, -500_000, 300_000, -400_000, 0, 450_000, -450_000]
        for (index, offset) in wobble.enumerated() {
            let nominal = MediaTime.fps(30) * Int64(index)
            let frame = CapturedFrame(
                buffer: try #require(pool.makePixelBuffer()),
                presentationTime: nominal + MediaTime(value: offset, timescale: 1_000_000_000),
                duration: .fps(30), sequenceNumber: UInt64(index), hostArrivalTime: HostClock().now())
            rig.output.receive(frame, from: connection)
            #expect(rig.output.waitUntilDelivered(timeout: 10))
        }
        let stats = rig.output.statistics
        #expect(stats.rateGated == 0)
        #expect(stats.delivered == wobble.count)
        // And a frame 3 ms early is still gated: the allowance is bounded.
        let early = CapturedFrame(
            buffer: try #require(pool.makePixelBuffer()),
            presentationTime: MediaTime.fps(30) * Int64(wobble.count)
                - MediaTime(value: 3_000_000, timescale: 1_000_000_000),
            duration: .fps(30), sequenceNumber: UInt64(wobble.count), hostArrivalTime: HostClock().now())
        rig.output.receive(early, from: connection)
        #expect(rig.output.statistics.rateGated == 1)
    }
}
