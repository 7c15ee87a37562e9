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

@Suite("Delivery contract")
struct DeliveryContractTests {
    @Test("2,000 frames arrive in order, one at a time, on the delegate's queue")
    func orderLockstep() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate(readsPattern: true)
        let rig = try Rig(
            camera: .init(clock: clock, frameLimit: 2000, formats: virtualFormats(.yuyv)),
            settings: try VideoSettings(pixelFormat: .bgra), delegate: delegate)
        rig.start()
        // Frame 0 is due at once; then one frame per step of the clock.
        for index in 0..<2000 {
            try #require(delegate.waitForFrames(index + 1), "frame \(index) never arrived")
            clock.advance(by: .fps(60))
        }
        #expect(rig.camera.waitUntilFinished(timeout: 10))
        rig.session.stopRunning()

        let frames = delegate.frames
        #expect(frames.count == 2000)
        #expect(!delegate.sawOverlappingCalls)
        for (previous, next) in zip(frames, frames.dropFirst()) {
            #expect(next.presentationTime > previous.presentationTime)
            #expect(next.sequenceNumber > previous.sequenceNumber)
        }
        // The pixels are the frames they claim to be.
        #expect(frames.allSatisfy { $0.patternNumber == $0.sequenceNumber })
        let stats = rig.output.statistics
        #expect(stats.captured == 2000 && stats.delivered == 2000 && stats.dropped == 0)
    }

    @Test("unpaced frames on a concurrent queue still arrive strictly in order", arguments: [true, false])
    func orderUnderPressure(discardsLate: Bool) throws {
        let delegate = RecordingDelegate()
        let concurrent = DispatchQueue(label: "test.concurrent", attributes: .concurrent)
        let rig = try Rig(
            camera: .init(isPaced: false, frameLimit: 2000, formats: virtualFormats(.nv12VideoRange)),
            discardsLate: discardsLate, delegate: delegate, queue: concurrent)
        rig.start()
        #expect(rig.camera.waitUntilFinished(timeout: 30))
        rig.session.stopRunning()

        let frames = delegate.frames
        #expect(!frames.isEmpty)
        #expect(!delegate.sawOverlappingCalls)
        for (previous, next) in zip(frames, frames.dropFirst()) {
            #expect(next.presentationTime > previous.presentationTime)
            #expect(next.sequenceNumber > previous.sequenceNumber)
        }
        let stats = rig.output.statistics
        #expect(stats.captured == 2000)
        #expect(stats.inFlight == 0, "every frame accounted for: \(stats)")
        #expect(stats.delivered == frames.count)
        #expect(delegate.drops.reduce(0) { $0 + $1.count } == stats.dropped)
        #expect(rig.output.pipelineForTesting?.budget.count == 0, "every slot was given back")
    }

    @Test("a slow delegate gets the freshest frame; each replaced frame is reported late")
    func lateFramesDiscarded() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate(blocksOnFirstFrame: true)
        let rig = try Rig(camera: .init(clock: clock, formats: virtualFormats(.bgra)), delegate: delegate)
        // The delegate is busy with frame 0 while ten more frames come.
        var stats = rig.startWithDelegateBusy(delegate, clock: clock, frames: 10)
        #expect(stats.captured == 11)
        #expect(stats.droppedLate == 9)
        #expect(stats.inFlight == 1, "only the newest frame waits")

        delegate.openGate()
        #expect(delegate.waitForFrames(2))
        rig.session.stopRunning()

        #expect(delegate.frames.map(\.sequenceNumber) == [0, 10])
        let drops = delegate.drops
        #expect(drops.map(\.sequenceNumber) == Array(1...9))
        #expect(drops.allSatisfy { $0.reason == .frameWasLate && $0.count == 1 })
        stats = rig.output.statistics
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
    }

    @Test("without discarding, frames queue up to the budget, then drop as out of buffers")
    func queueUntilPoolExhausted() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate(blocksOnFirstFrame: true)
        let rig = try Rig(
            camera: .init(clock: clock, formats: virtualFormats(.yuyv)),
            settings: try VideoSettings(pixelFormat: .bgra),
            bufferBudget: 4, discardsLate: false, delegate: delegate)
        var stats = rig.startWithDelegateBusy(delegate, clock: clock, frames: 10)
        #expect(stats.captured == 11)
        #expect(stats.droppedOutOfBuffers == 7, "frame 0 in the delegate and 1–3 queued fill the budget of 4")
        #expect(stats.droppedLate == 0)

        delegate.openGate()
        #expect(delegate.waitForFrames(4))
        rig.session.stopRunning()
        #expect(delegate.frames.map(\.sequenceNumber) == [0, 1, 2, 3])
        #expect(delegate.drops.map(\.sequenceNumber) == Array(4...10))
        #expect(delegate.drops.allSatisfy { $0.reason == .outOfBuffers })
        stats = rig.output.statistics
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
    }

    @Test("a delegate holding buffers starves the pool instead of growing memory", arguments: [false, true])
    func memoryBoundedWhileHeld(converting: Bool) throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate(holdsBuffers: true)
        let rig = try Rig(
            camera: .init(clock: clock, bufferCount: 8, formats: virtualFormats(.yuyv)),
            settings: converting ? try VideoSettings(pixelFormat: .bgra) : VideoSettings(), bufferBudget: 5,
            delegate: delegate)
        rig.start()
        rig.step(clock, by: .fps(60), times: 50)
        // Wait until the queue is drained: 5 frames held, the rest dropped.
        #expect(delegate.waitForFrames(5))
        let pipeline = try #require(rig.output.pipelineForTesting)
        #expect(pipeline.chain.pools.allSatisfy { $0.allocatedBufferCount <= 5 })
        #expect(pipeline.chain.pools.count == (converting ? 1 : 0))
        var stats = rig.output.statistics
        #expect(stats.captured == 51)
        #expect(stats.droppedDiscontinuity == 0, "the camera's ring never ran dry")

        // Letting go of the buffers lets frames flow again.
        delegate.releaseHeldBuffers()
        clock.advance(by: .fps(60))
        #expect(delegate.waitForFrames(6))
        rig.session.stopRunning()
        stats = rig.output.statistics
        #expect(stats.delivered == 6)
        #expect(stats.droppedOutOfBuffers == 46)
        #expect(stats.inFlight == 0)
        #expect(delegate.drops.allSatisfy { $0.reason == .outOfBuffers })
    }

    @Test("frames the camera loses are reported as a discontinuity")
    func discontinuity() throws {
        let clock = ManualClock()
        // A two-buffer ring and a delegate that keeps everything: the camera runs dry.
        let delegate = RecordingDelegate(holdsBuffers: true)
        let rig = try Rig(
            camera: .init(clock: clock, bufferCount: 2, formats: virtualFormats(.nv12VideoRange)),
            bufferBudget: 6, delegate: delegate)
        rig.start()
        rig.step(clock, by: .fps(60), times: 5)
        #expect(delegate.waitForFrames(2))
        delegate.releaseHeldBuffers()
        clock.advance(by: .fps(60))
        #expect(delegate.waitForFrames(3))
        rig.session.stopRunning()
        let drops = delegate.drops
        #expect(drops.count == 1)
        #expect(drops.first?.reason == .discontinuity)
        #expect(drops.first?.sequenceNumber == 2)
        #expect(drops.first?.count == 4)
        let stats = rig.output.statistics
        #expect(stats.captured == 7 && stats.delivered == 3 && stats.droppedDiscontinuity == 4)
    }
}

@Suite("Delivery under overload")
struct OverloadTests {
    @Test("a camera far faster than a blocked delegate keeps the queue bounded and loses no count")
    func boundedReports() throws {
        let delegate = RecordingDelegate(blocksOnFirstFrame: true)
        let rig = try Rig(
            camera: .init(isPaced: false, frameLimit: 20_000, rendersEveryFrame: false, formats: virtualFormats(.bgra)),
            delegate: delegate)
        rig.start()
        #expect(delegate.entered.wait(timeout: .now() + 10) == .success)
        #expect(rig.camera.waitUntilFinished(timeout: 60))
        // Every report beyond the limit was folded into an earlier one.
        #expect(rig.output.queuedEventCount <= CaptureVideoDataOutput.dropReportLimit + 2)
        delegate.openGate()
        rig.session.stopRunning()
        let stats = rig.output.statistics
        #expect(stats.captured == 20_000)
        #expect(stats.inFlight == 0)
        #expect(stats.delivered == delegate.frames.count)
        #expect(delegate.drops.reduce(0) { $0 + $1.count } == stats.dropped)
        #expect(stats.droppedLate > 10_000)
        #expect(rig.output.pipelineForTesting?.budget.count == 0, "every slot was given back")
        let sequences = delegate.frames.map(\.sequenceNumber)
        #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count)
    }
}
