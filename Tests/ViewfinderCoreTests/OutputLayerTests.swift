import Dispatch
import Foundation
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

/// An output written outside the library as a body on the shared core: it records each frame's
/// sequence number (its "delegate" is an array) and gets ordering, late drops, accounting and
/// the session's hooks from the core. This is the whole of it.
final class SequenceLogOutput: CaptureOutput, @unchecked Sendable {  // unchecked: state is in Mutexes.
    /// What the output does with a frame, and nothing else.
    struct Body: OutputBody {
        let log: SequenceLog
        var label: String { "sequence-log" }
        var acceptedMediaTypes: [MediaType] { [.video] }
        var initialSettings: Int { 0 }
        func request(for settings: Int) -> OutputRequest { OutputRequest() }
        func makeContext(format: CaptureDevice.Format, frameDuration: MediaTime, settings: Int) -> Int { settings }
        func prepare(
            _ sample: CapturedSample, context: Int, budget: FrameBudget, connection: CaptureConnection
        ) -> DeliveryEngine<Int, UInt64>.Preparation { .ready(sample.sequenceNumber, holdsSlot: false) }
        func consume(
            _ sequence: UInt64, from connection: CaptureConnection, output: CaptureOutput, delegate: SequenceLog
        ) {
            delegate.record(sequence)
        }
        func reportDrop(_ drop: DeliveryEngine<Int, UInt64>.DropReport, output: CaptureOutput, delegate: SequenceLog) {
            delegate.drops.withLock { $0.append((drop.reason, drop.count)) }
        }
    }

    /// The consumer: a log, which can be made to block inside a hand-over.
    final class SequenceLog: Sendable {
        let sequences = Mutex<[UInt64]>([])
        let drops = Mutex<[(DroppedFrameReason, Int)]>([])
        let gate = DispatchSemaphore(value: 0)
        /// Signalled when a blocking consume has begun.
        let entered = DispatchSemaphore(value: 0)
        let blocks = Atomic<Bool>(false)

        func record(_ sequence: UInt64) {
            if blocks.load(ordering: .relaxed) {
                entered.signal()
                gate.wait()
            }
            sequences.withLock { $0.append(sequence) }
        }
    }

    let consumer = SequenceLog()
    let core: EngineOutputCore<Body>
    var engine: DeliveryEngine<Int, UInt64> { core.engine }

    init(queue: DispatchQueue) {
        core = EngineOutputCore(Body(log: consumer), budgetLimit: 4)
        super.init()
        adopt(core)
        core.setDelegate({ [consumer] in consumer }, queue: queue)
    }
}

/// An output that takes only audio.
final class AudioOnlyOutput: CaptureOutput, @unchecked Sendable {  // unchecked: no state.
    override var acceptedMediaTypes: [MediaType] { [.audio] }
}

@Suite("Output layer")
struct OutputLayerTests {
    @Test("an output composed from the engine in the test target gets ordered delivery, late drops and accounting")
    func composedOutput() throws {
        let clock = ManualClock()
        let camera = VirtualCamera(configuration: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let output = SequenceLogOutput(queue: DispatchQueue(label: "test.log"))
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        try session.tryAddOutput(output)
        output.consumer.blocks.store(true, ordering: .relaxed)
        session.startRunning()
        #expect(session.isRunning)
        #expect(clock.waitUntilSleeping())
        #expect(output.consumer.entered.wait(timeout: .now() + 10) == .success)
        // Frame 0 is in the consumer, blocked; ten more come, only the newest may wait.
        for _ in 0..<10 {
            clock.advance(by: .fps(60))
            #expect(clock.waitUntilSleeping())
        }
        output.consumer.blocks.store(false, ordering: .relaxed)
        output.consumer.gate.signal()
        #expect(output.engine.waitUntilDelivered(timeout: 10))
        session.stopRunning()

        let log = output.consumer.sequences.withLock { $0 }
        #expect(log == [0, 10], "the first frame and the newest waiting one")
        let late = output.consumer.drops.withLock { $0 }.filter { $0.0 == .frameWasLate }.reduce(0) { $0 + $1.1 }
        #expect(late == 9)
        let stats = output.engine.statistics
        #expect(stats.captured == 11 && stats.delivered == 2 && stats.droppedLate == 9)
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
        #expect(output.engine.budget?.count == 0, "every slot was given back")
    }

    @Test("an output that takes no video is not connected to the camera's video port")
    func connectionsByMediaType() throws {
        let camera = VirtualCamera(configuration: .init(clock: ManualClock()))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let input = try CaptureDeviceInput(device: camera.device)
        #expect(input.ports.map(\.mediaType) == [.video])
        let video = CaptureVideoDataOutput()
        let audio = AudioOnlyOutput()
        try session.tryAddInput(input)
        try session.tryAddOutput(video)
        #expect(session.canAddOutput(audio), "an output whose media no input has yet can still be added")
        try session.tryAddOutput(audio)

        #expect(session.connections.count == 1)
        let connection = try #require(session.connections.first)
        #expect(connection.mediaType == .video)
        #expect(connection.output === video)
        #expect(connection.inputPorts.allSatisfy { $0.mediaType == .video && $0.input === input })
        #expect(audio.connections.isEmpty)
        #expect(audio.connection(with: .video) == nil)
        #expect(video.connection(with: .video) === connection)
        #expect(video.connection(with: .audio) == nil)
    }

    @Test("videoSettings changed from BGRA to NV12 on a running session apply to the next frames")
    func videoSettingsApplyWhenSet() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate()
        let rig = try Rig(
            camera: .init(clock: clock, formats: virtualFormats(.yuyv)),
            settings: try VideoSettings(pixelFormat: .bgra),
            delegate: delegate)
        let errors = rig.record(CaptureSession.runtimeErrorNotification)
        rig.start()
        rig.step(clock, by: .fps(60), times: 3)
        rig.output.typedVideoSettings = try VideoSettings(pixelFormat: .nv12VideoRange)
        rig.step(clock, by: .fps(60), times: 3)
        rig.session.stopRunning()

        let formats = delegate.frames.map(\.pixelFormat)
        #expect(formats == [.bgra, .bgra, .bgra, .bgra, .nv12VideoRange, .nv12VideoRange, .nv12VideoRange])
        #expect(delegate.frames.map(\.patternNumber) == (0..<7).map { UInt64($0) }, "no frame lost or repeated")
        #expect(rig.camera.device.activeFormat.pixelFormat == .yuyv, "the camera kept its format: no restart")
        #expect(rig.output.deliveredFormat?.pixelFormat == .nv12VideoRange)
        let stats = rig.output.statistics
        #expect(stats.captured == 7 && stats.delivered == 7)
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
        #expect(errors.count == 0)
    }

    @Test("a minimum frame duration set while running gates from the next frame and asks the camera for less")
    func minFrameDurationAppliesWhenSet() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate()
        let rig = try Rig(camera: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)), delegate: delegate)
        rig.start()
        #expect(rig.camera.device.activeVideoMinFrameDuration == .fps(60))
        rig.step(clock, by: .fps(60), times: 2)
        try rig.output.setMinFrameDuration(.fps(15))
        #expect(rig.camera.device.activeVideoMinFrameDuration == .fps(15), "the device was renegotiated")
        rig.step(clock, by: .fps(15), times: 3)
        rig.session.stopRunning()
        // Three frames at 60 fps, then the restarted camera's first frame and three more at 15 fps.
        let times = delegate.frames.map(\.presentationTime)
        #expect(delegate.frames.count == 7)
        for (earlier, later) in zip(times.dropFirst(3), times.dropFirst(4)) {
            #expect(later - earlier >= MediaTime.fps(15) - MediaTime(value: 2, timescale: 1000))
        }
        let stats = rig.output.statistics
        #expect(stats.rateGated == 0, "the camera itself runs at the limit")
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
    }

    @Test("a delegate changed while frames are queued gets them one at a time, in order")
    func delegateSwap() throws {
        let clock = ManualClock()
        let first = RecordingDelegate(blocksOnFirstFrame: true)
        let rig = try Rig(
            camera: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)), discardsLate: false,
            delegate: first, queue: DispatchQueue(label: "first"))
        rig.start()
        #expect(first.entered.wait(timeout: .now() + 10) == .success)
        clock.advance(by: .fps(60) * 4)
        #expect(clock.waitUntilSleeping())
        // Four frames wait while frame 0 is still in the first delegate; swap now.
        let second = RecordingDelegate()
        rig.output.setSampleBufferDelegate(second, queue: DispatchQueue(label: "second", attributes: .concurrent))
        first.openGate()
        rig.step(clock, by: .fps(60), times: 3)
        rig.session.stopRunning()

        #expect(first.frames.map(\.sequenceNumber) == [0])
        let sequence = second.frames.map(\.sequenceNumber)
        #expect(sequence == (1...7).map { UInt64($0) })
        #expect(!first.sawOverlappingCalls && !second.sawOverlappingCalls)
        #expect(second.drops.isEmpty, "no invented discontinuity")
        let stats = rig.output.statistics
        #expect(stats.captured == 8 && stats.delivered == 8)
    }

    @Test("clearing and setting the delegate again reports no invented discontinuity")
    func delegateClearedAndSet() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate()
        let rig = try Rig(camera: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)), delegate: delegate)
        rig.start()
        rig.step(clock, by: .fps(60), times: 2)
        rig.output.setSampleBufferDelegate(nil, queue: nil)
        rig.step(clock, by: .fps(60), times: 5)
        rig.output.setSampleBufferDelegate(delegate, queue: delegate.queue)
        rig.step(clock, by: .fps(60), times: 2)
        rig.session.stopRunning()
        #expect(delegate.frames.map(\.sequenceNumber) == [0, 1, 2, 8, 9])
        #expect(delegate.drops.isEmpty)
    }
}

@Suite("Time kept increasing")
struct MonotonicTimeTests {
    @Test("a device clock that steps back is reported as a discontinuity and delivered times keep increasing")
    func backwardStep() throws {
        let clock = ManualClock()
        let rig = try Rig(
            camera: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)), delegate: RecordingDelegate())
        try rig.output.setMinFrameDuration(.fps(30))
        rig.start()
        rig.settle(clock)
        let connection = try #require(rig.output.connection(with: .video))
        rig.session.stopRunning()
        // Fed by hand from here, to a delegate of its own.
        let delegate = RecordingDelegate(readsPattern: false)
        rig.output.setSampleBufferDelegate(delegate, queue: delegate.queue)
        rig.output.sessionWillStartRunning()
        try rig.output.prepareToStream(format: rig.camera.device.activeFormat, frameDuration: .fps(30))
        let pool = try PixelBufferPool(pixelFormat: .nv12VideoRange, width: 640, height: 480, capacity: 4)
        // 0, 1/30, 2/30, then the clock jumps 10 s back and runs on; then a sample with no time.
        let seconds: [MediaTime] =
            [0, 1, 2].map { MediaTime.fps(30) * Int64($0) } + [MediaTime(value: -98, timescale: 10)]
            + [1, 2, 3].map { MediaTime(value: -98, timescale: 10) + MediaTime.fps(30) * Int64($0) } + [.invalid]
        for (index, time) in seconds.enumerated() {
            let frame = CapturedFrame(
                buffer: try #require(pool.makePixelBuffer()), presentationTime: time, duration: .fps(30),
                sequenceNumber: UInt64(index), hostArrivalTime: HostClock().now())
            rig.output.receive(frame, from: connection)
            #expect(rig.output.waitUntilDelivered(timeout: 10))
        }
        let times = delegate.frames.map(\.presentationTime)
        #expect(times.count == 6, "the step back and the timeless sample are not delivered")
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "delivered times strictly increase")
        #expect(times.last == MediaTime.fps(30) * 6, "after the step the time line continues frame by frame")
        #expect(delegate.dropped(.discontinuity) == 2)
        let stats = rig.output.statistics
        #expect(stats.rateGated == 0, "the gate is not fooled by the step")
        #expect(stats.captured == 8 && stats.delivered == 6 && stats.droppedDiscontinuity == 2)
    }
}
