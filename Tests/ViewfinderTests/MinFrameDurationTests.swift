import Foundation
import Testing

@testable import Viewfinder

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
