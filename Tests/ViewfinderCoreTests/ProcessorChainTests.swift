import Synchronization
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

/// Appends its label to the frame's "trail" attachment, so a delegate can tell which processors
/// ran on a frame and in what order.
private final class Tagger: FrameProcessor {
    static let trail: SampleBuffer.AttachmentKey = "test.trail"
    let label: String
    init(_ label: String) { self.label = label }

    func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        let trail = frame.attachments[Self.trail] as? [String] ?? []
        frame.setAttachment(trail + [label], forKey: Self.trail)
        return .keep
    }
}

/// Drops odd frames, and throws on frames whose number is a multiple of `throwEvery`.
private final class Dropper: FrameProcessor {
    let throwEvery: UInt64?
    init(throwEvery: UInt64? = nil) { self.throwEvery = throwEvery }

    func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        if let throwEvery, frame.sequenceNumber > 0, frame.sequenceNumber % throwEvery == 0 {
            throw CaptureError(.invalidArgument, "test processor refuses frame \(frame.sequenceNumber)")
        }
        return frame.sequenceNumber % 2 == 1 ? .drop : .keep
    }
}

/// Accepts only NV12 and records what it was given.
private final class NV12Spy: FrameProcessor {
    let seen = Mutex<[PixelFormat]>([])
    var acceptedPixelFormats: [PixelFormat] { [.nv12VideoRange] }

    func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        let format = frame.image.pixelFormat
        seen.withLock { $0.append(format) }
        return .keep
    }
}

/// What the delegate saw: each delivered frame's attachments, by sequence number.
private final class AttachmentLog: Sendable {
    private let entries = Mutex<[UInt64: [SampleBuffer.AttachmentKey: any Sendable]]>([:])
    private let images = Mutex<[UInt64: CaptureDevice.Dimensions]>([:])

    func record(_ buffer: SampleBuffer) {
        let attachments = buffer.attachments
        entries.withLock { $0[buffer.sequenceNumber] = attachments }
        if let image = buffer.imageBuffer {
            images.withLock { $0[buffer.sequenceNumber] = .init(width: image.width, height: image.height) }
        }
    }

    func trail(_ sequenceNumber: UInt64) -> [String]? {
        entries.withLock { $0[sequenceNumber]?[Tagger.trail] as? [String] }
    }

    func attachment<T>(_ key: SampleBuffer.AttachmentKey, of sequenceNumber: UInt64, as type: T.Type) -> T? {
        entries.withLock { $0[sequenceNumber]?[key] as? T }
    }

    func size(_ sequenceNumber: UInt64) -> CaptureDevice.Dimensions? { images.withLock { $0[sequenceNumber] } }

    var sequenceNumbers: [UInt64] { entries.withLock { $0.keys.sorted() } }
}

@Suite("Processor chain on a running session")
struct ProcessorChainTests {
    private func makeRig(
        _ clock: ManualClock, _ log: AttachmentLog, camera: PixelFormat = .nv12VideoRange, deliver: PixelFormat? = nil
    ) throws -> (Rig, RecordingDelegate) {
        // The output holds its delegate weakly, like AVFoundation: callers keep the one returned.
        let delegate = RecordingDelegate { log.record($0) }
        let settings = try deliver.map { try VideoSettings(pixelFormat: $0) } ?? VideoSettings()
        let rig = try Rig(
            camera: .init(clock: clock, formats: virtualFormats(camera)), settings: settings, delegate: delegate)
        return (rig, delegate)
    }

    private func names(_ output: CaptureVideoDataOutput) -> [String] { output.processors.map(\.name) }

    @Test("processors are listed, and run, in the order their positions give")
    func positions() throws {
        let clock = ManualClock()
        let log = AttachmentLog()
        let (rig, delegate) = try makeRig(clock, log)
        let output = rig.output
        try output.addProcessor(Tagger("b"), named: "b")
        try output.addProcessor(Tagger("d"), named: "d", at: .last)
        try output.addProcessor(Tagger("a"), named: "a", at: .first)
        try output.addProcessor(Tagger("c"), named: "c", at: .before("d"))
        try output.addProcessor(Tagger("e"), named: "e", at: .after("d"))
        #expect(names(output) == ["a", "b", "c", "d", "e"])
        #expect((output.processor(named: "c") as? Tagger)?.label == "c")
        #expect(output.processor(named: "z") == nil)

        rig.start()
        rig.step(clock, by: .fps(60), times: 2)
        rig.session.stopRunning()
        #expect(delegate.frames.count == 3)
        #expect(log.sequenceNumbers == [0, 1, 2])
        for sequence in log.sequenceNumbers { #expect(log.trail(sequence) == ["a", "b", "c", "d", "e"]) }
    }

    @Test("taken or empty names and unknown anchors are typed errors that leave the chain as it was")
    func namingErrors() throws {
        let output = CaptureVideoDataOutput()
        try output.addProcessor(Tagger("a"), named: "a")
        try output.addProcessor(Tagger("b"), named: "b")
        func refused(_ body: () throws(CaptureError) -> Void) -> CaptureError? {
            do {
                try body()
                return nil
            } catch {
                return error
            }
        }
        let duplicate = refused { () throws(CaptureError) in try output.addProcessor(Tagger("x"), named: "a") }
        #expect(duplicate?.code == .invalidArgument)
        #expect(duplicate?.message.contains("already in the chain") == true)
        #expect(
            refused { () throws(CaptureError) in try output.addProcessor(Tagger("x"), named: "") }?.code
                == .invalidArgument)
        let anchor = refused { () throws(CaptureError) in
            try output.addProcessor(Tagger("x"), named: "x", at: .before("nope"))
        }
        #expect(anchor?.code == .invalidArgument)
        #expect(anchor?.message.contains("it has: a, b") == true)
        #expect(
            refused { () throws(CaptureError) in try output.addProcessor(Tagger("x"), named: "x", at: .after("nope")) }?
                .code == .invalidArgument)
        #expect(
            refused { () throws(CaptureError) in try output.removeProcessor(named: "nope") }?.code == .invalidArgument)
        #expect(
            refused { () throws(CaptureError) in try output.replaceProcessor(named: "nope", with: Tagger("x")) }?.code
                == .invalidArgument)
        #expect(names(output) == ["a", "b"])
    }

    @Test("adding, replacing and removing while running take effect between frames")
    func editsWhileRunning() throws {
        let clock = ManualClock()
        let log = AttachmentLog()
        let (rig, delegate) = try makeRig(clock, log)
        let output = rig.output
        rig.start()
        rig.step(clock, by: .fps(60), times: 1)  // frames 0, 1: no processors
        try output.addProcessor(Tagger("a"), named: "a")
        try output.addProcessor(Tagger("b"), named: "b")
        rig.step(clock, by: .fps(60), times: 2)  // frames 2, 3: a, b
        try output.replaceProcessor(named: "b", with: Tagger("B"))
        #expect(names(output) == ["a", "b"])
        #expect((output.processor(named: "b") as? Tagger)?.label == "B")
        rig.step(clock, by: .fps(60), times: 2)  // frames 4, 5: a, B
        try output.removeProcessor(named: "a")
        rig.step(clock, by: .fps(60), times: 2)  // frames 6, 7: B
        output.removeAllProcessors()
        rig.step(clock, by: .fps(60), times: 1)  // frame 8: none
        rig.session.stopRunning()

        #expect(delegate.frames.map(\.sequenceNumber) == Array(0...8))
        #expect(log.sequenceNumbers == Array(0...8))
        let trails = (0...8).map { log.trail(UInt64($0)) }
        let expected: [[String]?] = [nil, nil, ["a", "b"], ["a", "b"], ["a", "B"], ["a", "B"], ["B"], ["B"], nil]
        #expect(trails == expected)
        #expect(output.isZeroCopy, "an empty chain delivers the camera's buffers again")
    }

    @Test("a processor that drops or throws is reported as droppedByProcessor and every frame is accounted for")
    func drops() throws {
        let clock = ManualClock()
        let log = AttachmentLog()
        let (rig, delegate) = try makeRig(clock, log)
        try rig.output.addProcessor(Tagger("before"), named: "before")
        try rig.output.addProcessor(Dropper(throwEvery: 4), named: "dropper")
        try rig.output.addProcessor(Tagger("after"), named: "after")
        rig.start()
        rig.step(clock, by: .fps(60), times: 9)  // frames 0…9
        rig.session.stopRunning()

        // Odd frames are dropped, 4 and 8 thrown on; 0, 2, 6 arrive with both tags.
        #expect(log.sequenceNumbers == [0, 2, 6])
        #expect(log.sequenceNumbers.allSatisfy { log.trail($0) == ["before", "after"] })
        let drops = delegate.drops
        #expect(drops.map(\.sequenceNumber).sorted() == [1, 3, 4, 5, 7, 8, 9])
        #expect(drops.allSatisfy { $0.reason == .droppedByProcessor("dropper") })
        let stats = rig.output.statistics
        #expect(stats.captured == 10 && stats.delivered == 3 && stats.droppedByProcessor == 7)
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
        #expect(stats.inFlight == 0)
    }

    @Test("a processor taking only NV12 gets NV12 from a BGRA camera; the delegate still gets BGRA")
    func negotiationConverts() throws {
        let clock = ManualClock()
        let log = AttachmentLog()
        let (rig, delegate) = try makeRig(clock, log, camera: .bgra, deliver: .bgra)
        let spy = NV12Spy()
        try rig.output.addProcessor(spy, named: "spy")
        rig.start()
        rig.step(clock, by: .fps(60), times: 3)
        rig.session.stopRunning()
        #expect(rig.camera.device.activeFormat.pixelFormat == .bgra)
        #expect(spy.seen.withLock { $0 } == [PixelFormat](repeating: .nv12VideoRange, count: 4))
        #expect(delegate.frames.count == 4)
        #expect(delegate.frames.allSatisfy { $0.pixelFormat == .bgra && $0.width == 640 && $0.height == 480 })
    }

    @Test("built-in analysis attachments reach the delegate's sample buffers")
    func metadataReachesDelegate() throws {
        let clock = ManualClock()
        let log = AttachmentLog()
        let (rig, delegate) = try makeRig(clock, log, camera: .yuyv, deliver: .bgra)
        try rig.output.addProcessor(LumaStatisticsProcessor(sampleStride: 2), named: "luma")
        try rig.output.addProcessor(MotionDetectionProcessor(minimumChangedFraction: 0.001), named: "motion")
        rig.start()
        rig.step(clock, by: .fps(60), times: 2)
        rig.session.stopRunning()

        #expect(delegate.frames.count == 3)
        #expect(log.sequenceNumbers == [0, 1, 2])
        for sequence in log.sequenceNumbers {
            let stats = try #require(log.attachment(.lumaStatistics, of: sequence, as: LumaStatistics.self))
            #expect(stats.sampleCount == 320 * 240)
            #expect(stats.mean > 16 && stats.mean < 235)
            let motion = try #require(log.attachment(.motionReport, of: sequence, as: MotionReport.self))
            // The first frame has nothing to compare with; then the box moves 8 pixels a frame.
            #expect(motion.hasReference == (sequence > 0))
            #expect(motion.isMotion == (sequence > 0))
        }
    }

    @Test("a geometry processor changes what the delegate gets; one that cannot run is refused while running")
    func geometryInSession() throws {
        let clock = ManualClock()
        let log = AttachmentLog()
        let (rig, delegate) = try makeRig(clock, log, camera: .nv12VideoRange, deliver: .bgra)
        try rig.output.addProcessor(RotateProcessor(angle: 90), named: "rotate")
        rig.start()
        rig.step(clock, by: .fps(60), times: 1)
        let error = try #require(throws: CaptureError.self) {
            try rig.output.addProcessor(CropProcessor(x: 0, y: 0, width: 640, height: 640), named: "crop")
        }
        #expect(error.message.contains("does not fit in 480x640"))
        #expect(names(rig.output) == ["rotate"])
        rig.step(clock, by: .fps(60), times: 1)
        rig.session.stopRunning()
        #expect(delegate.frames.count == 3)
        #expect(delegate.frames.allSatisfy { $0.width == 480 && $0.height == 640 && $0.pixelFormat == .bgra })
    }
}
