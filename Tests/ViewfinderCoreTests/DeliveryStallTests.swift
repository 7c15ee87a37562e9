import Dispatch
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

/// An output whose frames all drop for one cause while the camera keeps producing says so once,
/// with the cause and the counts, instead of only counting (issue 28).
@Suite("Delivery stalls are said, once")
struct DeliveryStallTests {
    @Test("a delegate holding every buffer: one outOfBuffers runtime error after 2 s of drops; delivery clears it")
    func heldBuffers() throws {
        let clock = ManualClock()
        let camera = VirtualCamera(
            configuration: .init(
                clock: clock, formats: virtualFormats(.nv12VideoRange).filter { $0.dimensions.width == 640 }))
        let center = NotificationCenter()
        let session = CaptureSession(notificationCenter: center)
        let output = CaptureVideoDataOutput(bufferBudget: 2)
        output.alwaysDiscardsLateVideoFrames = false
        let delegate = RecordingDelegate(holdsBuffers: true)
        output.setSampleBufferDelegate(delegate, queue: delegate.queue)
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        try session.tryAddOutput(output)
        let errors = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: session, center: center)
        session.startRunning()
        #expect(clock.waitUntilSleeping())

        // 1.5 s of frames: the two buffers are held, the rest drop, nothing is said yet.
        for _ in 0..<45 {
            clock.advance(by: .fps(30))
            #expect(clock.waitUntilSleeping())
        }
        #expect(output.waitUntilDelivered(timeout: 10))
        #expect(!errors.wait(timeout: 0.2), "within the bound nothing is posted")
        // Past 2 s: said once, however long it goes on.
        for _ in 0..<60 {
            clock.advance(by: .fps(30))
            #expect(clock.waitUntilSleeping())
        }
        #expect(output.waitUntilDelivered(timeout: 10))
        let posted = errors.next()
        #expect(posted.received)
        #expect(posted.error?.code == .outOfBuffers)
        let message = posted.error?.message ?? ""
        #expect(message.contains("outOfBuffers") && message.contains("bufferBudget"), "\(message)")
        #expect(!errors.wait(timeout: 0.2), "one error for one stall")

        // The delegate lets go: frames are delivered again, the stall is over; a new one would be
        // said again.
        delegate.releaseHeldBuffers()
        let delivered = output.statistics.delivered
        for _ in 0..<3 {
            clock.advance(by: .fps(30))
            #expect(clock.waitUntilSleeping())
        }
        #expect(output.waitUntilDelivered(timeout: 10))
        #expect(output.statistics.delivered > delivered)
        session.stopRunning()
        let statistics = output.statistics
        #expect(statistics.delivered + statistics.dropped + statistics.rateGated == statistics.captured)
        #expect(errors.count == 1)
    }

    @Test(
        "the watch: one cause throughout, late frames and a user's processor's drops never count, a delivery clears it")
    func watchRules() {
        var watch = DeliveryStallWatch()
        let step = MediaTime(value: 1, timescale: 30)
        var reports: [DeliveryStallWatch.Report] = []
        for index in 0..<100 {
            let time = MediaTime(value: Int64(index), timescale: 30)
            let reason: DroppedFrameReason = index % 2 == 0 ? .discontinuity : .outOfBuffers
            if let report = watch.dropped(reason, count: 1, at: time) { reports.append(report) }
        }
        #expect(reports.isEmpty, "alternating causes are no single-cause stall")
        for index in 0..<100 {
            let time = MediaTime(value: Int64(100 + index), timescale: 30)
            #expect(watch.dropped(.droppedByProcessor("motion gate"), count: 1, at: time) == nil)
            #expect(watch.dropped(.frameWasLate, count: 1, at: time) == nil, "a busy delegate is no fault")
        }
        for index in 0..<100 {
            let time = MediaTime(value: Int64(200 + index), timescale: 30)
            if let report = watch.dropped(.droppedByProcessor("decoder"), count: 1, at: time) {
                reports.append(report)
            }
        }
        #expect(reports.count == 1)
        #expect(reports.first?.frames == 61, "reported when 2 s of frames had dropped")
        watch.delivered()
        #expect(watch.dropped(.outOfBuffers, count: 1, at: MediaTime(value: 400, timescale: 30)) == nil)
        #expect(
            watch.dropped(.outOfBuffers, count: 1, at: MediaTime(value: 400, timescale: 30) + step * 60) != nil,
            "after a delivery a new stall is said again")
    }
}
