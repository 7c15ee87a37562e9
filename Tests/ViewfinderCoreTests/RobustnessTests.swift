import Dispatch
import Foundation
import Synchronization
import Testing
import ViewfinderFuzzing

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

// Issue 14: the contract under races and bad input. One suite per numbered item of the issue.

@Suite("Robustness 1: a session dropped while running")
struct DroppedSessionTests {
    @Test("a session dropped while running releases its camera to a session living at another address")
    func releasedToAnotherAddress() throws {
        let clock = ManualClock()
        let camera = VirtualCamera(configuration: .init(clock: clock))
        let delegate = RecordingDelegate()
        // Made before the first session goes, so it cannot land at the dead session's address.
        let other = CaptureSession(notificationCenter: NotificationCenter())
        var firstID: ObjectIdentifier?
        do {
            let session = CaptureSession(notificationCenter: NotificationCenter())
            firstID = ObjectIdentifier(session)
            try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
            let output = CaptureVideoDataOutput()
            output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "dropped.1"))
            try session.tryAddOutput(output)
            session.startRunning()
            #expect(session.isRunning)
        }
        #expect(firstID != ObjectIdentifier(other))
        let errors = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: other)
        try other.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let output = CaptureVideoDataOutput()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "dropped.2"))
        try other.tryAddOutput(output)
        other.startRunning()
        #expect(other.isRunning, "the camera was released, not left busy")
        #expect(errors.count == 0)
        other.stopRunning()
    }
}

@Suite("Robustness 2: graph edits from two threads")
struct GraphRaceTests {
    @Test("an output added and removed from two threads ends in one session or none, never ownerless")
    func addRacingRemove() throws {
        let camera = VirtualCamera(configuration: .init(clock: ManualClock()))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let witness = CaptureSession(notificationCenter: NotificationCenter())
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        for _ in 0..<500 {
            let output = CaptureVideoDataOutput()
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                if index == 0 { try? session.tryAddOutput(output) } else { session.removeOutput(output) }
            }
            let inSession = session.outputs.contains { $0 === output }
            #expect(witness.canAddOutput(output) == !inSession, "the claim matches the graph")
            if inSession {
                #expect(!session.connections.filter { $0.output === output }.isEmpty)
                session.removeOutput(output)
            }
            #expect(witness.canAddOutput(output), "removing it released the claim")
        }
    }

    @Test("two sessions racing for one output: exactly one wins")
    func twoSessionsOneOutput() throws {
        for _ in 0..<300 {
            let sessions = [CaptureSession(notificationCenter: .init()), CaptureSession(notificationCenter: .init())]
            let output = CaptureVideoDataOutput()
            let wins = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                if (try? sessions[index].tryAddOutput(output)) != nil { wins.add(1, ordering: .relaxed) }
            }
            #expect(wins.load(ordering: .relaxed) == 1)
            #expect(sessions.filter { $0.outputs.contains { $0 === output } }.count == 1)
        }
    }

    @Test("the same input added from two threads is added once; inputs for one device too")
    func sameInputTwice() throws {
        let camera = VirtualCamera(configuration: .init(clock: ManualClock()))
        for round in 0..<300 {
            let session = CaptureSession(notificationCenter: NotificationCenter())
            let shared = try CaptureDeviceInput(device: camera.device)
            let inputs =
                round.isMultiple(of: 2) ? [shared, shared] : [shared, try CaptureDeviceInput(device: camera.device)]
            let added = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                if (try? session.tryAddInput(inputs[index])) != nil { added.add(1, ordering: .relaxed) }
            }
            #expect(added.load(ordering: .relaxed) == 1)
            #expect(session.inputs.count == 1)
        }
    }

    @Test("after racing adds of one input, a running session has one capture thread and stop stops it")
    func racingAddsThenRun() throws {
        let clock = ManualClock()
        let camera = VirtualCamera(configuration: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let input = try CaptureDeviceInput(device: camera.device)
        DispatchQueue.concurrentPerform(iterations: 2) { _ in try? session.tryAddInput(input) }
        let delegate = RecordingDelegate()
        let output = CaptureVideoDataOutput()
        output.setSampleBufferDelegate(delegate, queue: delegate.queue)
        try session.tryAddOutput(output)
        session.startRunning()
        #expect(clock.waitUntilSleeping(count: 1))
        #expect(!clock.waitUntilSleeping(count: 2, timeout: 0.2), "one capture thread, not two")
        session.stopRunning()
        #expect(!clock.waitUntilSleeping(timeout: 0.2), "no capture thread survives stopRunning")
        // The camera is free for another session.
        let other = CaptureSession(notificationCenter: NotificationCenter())
        try other.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let second = CaptureVideoDataOutput()
        second.setSampleBufferDelegate(delegate, queue: delegate.queue)
        try other.tryAddOutput(second)
        other.startRunning()
        #expect(other.isRunning)
        other.stopRunning()
    }
}

@Suite("Robustness 4: unplug and replug with no delay")
struct ReplugRaceTests {
    @Test("unplug followed at once by replug, many times: the session resumes every time")
    func immediateReplug() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        let delegate = RecordingDelegate()
        let (session, output) = try makeSession(device: device, delegate: delegate)
        let ended = NotificationRecorder(CaptureSession.interruptionEndedNotification, object: session)
        session.startRunning()
        defer { session.stopRunning() }
        rig.clock.advance(by: thirtyFPS)
        #expect(delegate.waitForMoreFrames())
        for cycle in 0..<40 {
            rig.bus.unplug(rig.camera)
            rig.bus.plug(rig.camera)
            #expect(ended.wait(), "cycle \(cycle): the interruption ended")
            #expect(rig.camera.waitUntil(timeout: 10) { $0.isStreaming }, "cycle \(cycle): streaming again")
            #expect(!session.isInterrupted && session.isRunning && device.isConnected)
            rig.clock.advance(by: thirtyFPS)
            #expect(delegate.waitForMoreFrames(), "cycle \(cycle): frames resume")
            if !device.isConnected { break }
        }
        _ = output
    }

    @Test("a stream failing after the rescan found its camera back does not mark it disconnected")
    func lateFailureKeepsPresence() throws {
        let rig = try SimulatedRig()
        let backend = try rig.backend
        let sink = RecordingSink()
        _ = try backend.startStreaming(format: try rig.format(.yuyv, 160, 120), frameDuration: thirtyFPS, sink: sink)
        // The camera goes and comes back before the capture thread notices (it waits in poll).
        rig.bus.unplug(rig.camera)
        rig.bus.plug(rig.camera)
        #expect(sink.failed.wait(timeout: .now() + 10) == .success)
        #expect(sink.errors.first?.code == .deviceDisconnected)
        backend.stopStreaming()
        #expect(backend.isConnected, "the newer scan's finding stands")
    }
}

@Suite("Robustness 5: a failed live commit")
struct FailedCommitTests {
    @Test("lowering the preset so a crop no longer fits stops the session and posts didStopRunning")
    func presetMakesCropImpossible() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate()
        let rig = try Rig(
            camera: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)), preset: .hd1280x720,
            delegate: delegate)
        try rig.output.addProcessor(CropProcessor(x: 0, y: 0, width: 1280, height: 720), named: "crop")
        let errors = rig.record(CaptureSession.runtimeErrorNotification)
        let stopped = rig.record(CaptureSession.didStopRunningNotification)
        rig.start()
        rig.step(clock, by: .fps(60))
        rig.session.beginConfiguration()
        rig.session.sessionPreset = .vga640x480
        rig.session.commitConfiguration()
        #expect(errors.wait())
        #expect(errors.lastError?.code == .invalidArgument)
        #expect(stopped.wait())
        #expect(!rig.session.isRunning)
        #expect(!rig.session.isInterrupted)
        #expect(!clock.waitUntilSleeping(timeout: 0.2), "nothing streams")
    }
}

@Suite("Robustness 6: timestamps and sequence numbers from the driver")
struct DriverTimeTests {
    /// A running session over the rig's camera; frames are advanced one at a time.
    private func run(
        _ faults: [SimulatedUVCCamera.FrameFault], before frames: Int, after more: Int
    ) throws -> (RecordingDelegate, CaptureVideoDataOutput.Statistics) {
        let rig = try SimulatedRig()
        let delegate = RecordingDelegate()
        let (session, output) = try makeSession(device: try rig.device, delegate: delegate, discardsLate: false)
        session.startRunning()
        for _ in 0..<frames {
            rig.clock.advance(by: thirtyFPS)
            #expect(delegate.waitForMoreFrames())
        }
        rig.camera.injectFrameFaults(faults)
        for index in 0..<more {
            rig.clock.advance(by: thirtyFPS)
            // Captured, dequeued, handed over or dropped, and its buffer back with the driver.
            #expect(
                rig.camera.waitUntil(timeout: 10) {
                    $0.framesCaptured == frames + index + 1 && $0.queuedBufferCount == 4
                })
            #expect(output.waitUntilDelivered(timeout: 10))
        }
        session.stopRunning()
        return (delegate, output.statistics)
    }

    @Test("a 10 s step back of the driver's clock is one discontinuity; delivered times keep increasing")
    func clockStepsBack() throws {
        let (delegate, stats) = try run([.timestampStep(MediaTime(value: -10, timescale: 1))], before: 3, after: 4)
        let times = delegate.frames.map(\.presentationTime)
        #expect(times.count == 6)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
        #expect(delegate.dropped(.discontinuity) == 1)
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
    }

    @Test("a small step back of the driver's sequence numbers is reported, and numbering goes on from it")
    func sequenceStepsBackALittle() throws {
        let (delegate, stats) = try run([.sequenceStep(-3)], before: 4, after: 4)
        let numbers = delegate.frames.map(\.sequenceNumber)
        #expect(numbers.count == 7, "the frame that stepped back is not delivered")
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "delivered numbers increase")
        #expect(delegate.dropped(.discontinuity) == 1)
        #expect(stats.captured == 8 && stats.droppedDiscontinuity == 1)
    }

    @Test("a step back of more than 2^31 is one discontinuity, not a billion lost frames")
    func sequenceStepsBackFar() throws {
        let (delegate, stats) = try run([.sequenceStep(-(1 << 31) - 1000)], before: 3, after: 3)
        #expect(delegate.dropped(.discontinuity) == 1)
        #expect(stats.captured == 6)
        #expect(delegate.frames.count == 5)
    }

    @Test("sequence numbers extend across the 32-bit wrap; jumps too large to be loss step back")
    func extender() {
        var extender = V4L2CameraBackend.SequenceExtender()
        let wrapped = [UInt32.max - 1, .max, 0, 1, 5].map { extender.extend($0) }
        #expect(wrapped == [4_294_967_294, 4_294_967_295, 4_294_967_296, 4_294_967_297, 4_294_967_301])
        var reset = V4L2CameraBackend.SequenceExtender()
        let afterReset = [3_000_000_000, 3_000_000_001, 100, 101].map { reset.extend($0) }
        #expect(afterReset[2] < afterReset[1], "a step back of 2.99e9 is a step back")
        #expect(afterReset[3] == afterReset[2] + 1)
        var repeated = V4L2CameraBackend.SequenceExtender()
        #expect([7, 7].map { repeated.extend($0) } == [7, 7], "a repeat is no step forward")
    }

    @Test("driver timestamps past 2^63 ns (vivid's 64-bit wrap) continue from the host clock instead of trapping")
    func timestampExtender() {
        var plain = V4L2CameraBackend.TimestampExtender()
        let ordinary = [(5, 0), (5, 33_333), (6, 0)].map { plain.extend(seconds: $0, microseconds: $1, arrival: 42) }
        #expect(ordinary == [5_000_000_000, 5_033_333_000, 6_000_000_000], "ordinary times pass unchanged")
        // 16 s before the wrap of the kernel's nanosecond counter, then across it.
        var wrapping = V4L2CameraBackend.TimestampExtender()
        let before = Int64((UInt64(1) << 63 - 16_000_000_000) / 1_000_000_000)
        let after = Int64(bitPattern: (UInt64(1) << 63 + 1_000_000_000) / 1_000_000_000)
        let times = [(before, 0), (before, 100_000), (after, 0)].map {
            wrapping.extend(seconds: $0, microseconds: $1, arrival: 1_000_000_000)
        }
        #expect(times[0] == 1_000_000_000, "anchored at the first frame's arrival")
        #expect(times[1] == 1_100_000_000, "the driver's spacing is kept")
        #expect(times[2] > times[1])
    }
}

@Suite("Robustness 7: driver data is not trusted")
struct DriverDataTests {
    @Test("bytesused larger than the buffer is a corrupt frame: skipped, counted, never delivered")
    func oversizedBytesUsed() throws {
        for pixelFormat in [PixelFormat.yuyv, .mjpeg] {
            let rig = try SimulatedRig()
            let backend = try rig.backend
            let sink = RecordingSink()
            rig.camera.injectFrameFaults([.oversizedPayload])
            _ = try backend.startStreaming(
                format: try rig.format(pixelFormat, 160, 120), frameDuration: thirtyFPS, sink: sink)
            rig.clock.advance(by: thirtyFPS * 3)
            #expect(sink.waitForFrames(2))
            backend.stopStreaming()
            #expect(sink.recorded.map(\.sequenceNumber) == [1, 2])
            #expect(try rig.device.corruptFramesSkipped == 1)
            let mapped = (320 * 120 + 4095) / 4096 * 4096
            #expect(sink.recorded.allSatisfy { $0.dataSize <= mapped })
        }
    }

    @Test("corrupt frames before the first good one count as a discontinuity in the output's figures")
    func leadingCorruptFramesCounted() throws {
        let rig = try SimulatedRig()
        let delegate = RecordingDelegate()
        let (session, output) = try makeSession(device: try rig.device, delegate: delegate, discardsLate: false)
        rig.camera.injectFrameFaults([.errorFlag, .emptyPayload, .oversizedPayload])
        session.startRunning()
        rig.clock.advance(by: thirtyFPS * 4)
        #expect(delegate.waitForMoreFrames())
        #expect(output.waitUntilDelivered(timeout: 10))
        session.stopRunning()
        #expect(delegate.frames.map(\.sequenceNumber) == [3])
        #expect(delegate.dropped(.discontinuity) == 3)
        let stats = output.statistics
        #expect(stats.captured == 4 && stats.delivered == 1 && stats.droppedDiscontinuity == 3)
        #expect(try rig.device.corruptFramesSkipped == 3)
    }
}

/// A processor that claims to produce frames of any size it is given.
private final class HugeOutputProcessor: FrameProcessor {
    let width: Int
    let height: Int
    init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
    var acceptedPixelFormats: [PixelFormat] { [.nv12VideoRange] }
    func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat {
        FrameFormat(pixelFormat: input.pixelFormat, width: width, height: height)
    }
    func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision { .keep }
}

@Suite("Robustness 8: sizes and counts from outside are checked at the boundary")
struct BoundaryTests {
    @Test(
        "video settings beyond the maximum frame size are a typed error",
        arguments: [(1 << 31, 1 << 31), (100_000, 100_000), (16_386, 2), (2, Int.max - 1)])
    func hugeSettings(size: (Int, Int)) {
        let error = #expect(throws: CaptureError.self) {
            try VideoSettings(pixelFormat: .bgra, width: size.0, height: size.1)
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("16384") == true)
        #expect((try? VideoSettings(pixelFormat: .bgra, width: 16384, height: 2)) != nil, "the maximum itself is fine")
    }

    @Test("crop rectangles that overflow are a typed error, at creation or when checked against a frame")
    func cropOverflow() throws {
        for (x, y, w, h) in [(Int.max, 0, 2, 2), (0, Int.max, 2, 2), (2, 2, Int.max, 2), (16_380, 0, 8, 2)] {
            #expect(throws: CaptureError.self) { try CropProcessor(x: x, y: y, width: w, height: h) }
        }
        let crop = try CropProcessor(x: 16_000, y: 0, width: 384, height: 2)
        #expect(throws: CaptureError.self) {
            try crop.outputFormat(for: FrameFormat(pixelFormat: .bgra, width: 640, height: 480))
        }
    }

    @Test("pools refuse counts and sizes past their limits instead of allocating")
    func poolLimits() {
        let cases: [(PixelFormat, Int, Int, Int)] = [
            (.bgra, 640, 480, Int.max), (.bgra, 16384, 16384, 6), (.nv12VideoRange, 100_000, 100_000, 1),
            (.bgra, 1 << 31, 1 << 31, 1), (.bgra, 1920, 1080, 1 << 20),
        ]
        for (format, width, height, capacity) in cases {
            let error = #expect(throws: CaptureError.self) {
                try PixelBufferPool(pixelFormat: format, width: width, height: height, capacity: capacity)
            }
            #expect(error?.code == .invalidArgument)
        }
        #expect((try? PixelBufferPool(pixelFormat: .bgra, width: 3840, height: 2160, capacity: 64)) != nil)
    }

    @Test("a buffer budget of Int.max runs, natively and converting")
    func hugeBufferBudget() throws {
        for settings in [VideoSettings(), try VideoSettings(pixelFormat: .bgra)] {
            let clock = ManualClock()
            let delegate = RecordingDelegate()
            let rig = try Rig(
                camera: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)), settings: settings,
                bufferBudget: Int.max, delegate: delegate)
            let errors = rig.record(CaptureSession.runtimeErrorNotification)
            rig.session.startRunning()
            if rig.session.isRunning {
                rig.step(clock, by: .fps(60), times: 2)
                #expect(delegate.frames.count == 3)
            } else {
                #expect(errors.lastError?.code == .invalidArgument, "refused with a typed error")
            }
            rig.session.stopRunning()
        }
    }

    @Test("a processor declaring a huge output is refused with a typed error when the session starts")
    func hugeProcessorOutput() throws {
        for (width, height) in [(100_000, 100_000), (20_000, 2), (1 << 40, 2)] {
            let clock = ManualClock()
            let rig = try Rig(
                camera: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)), delegate: RecordingDelegate())
            try rig.output.addProcessor(HugeOutputProcessor(width: width, height: height), named: "huge")
            let errors = rig.record(CaptureSession.runtimeErrorNotification)
            rig.session.startRunning()
            #expect(errors.wait())
            #expect(errors.lastError?.code == .invalidArgument)
            #expect(!rig.session.isRunning)
        }
    }

    @Test("durations past 9.2e9 s neither trap in nanoseconds nor in a minimum frame duration")
    func hugeDurations() throws {
        let tenBillion = MediaTime(seconds: 1e10)
        #expect(tenBillion.nanoseconds > 9_000_000_000_000_000_000, "saturated, not wrapped")
        let output = CaptureVideoDataOutput()
        do {
            try output.setMinFrameDuration(tenBillion)
        } catch {
            #expect(error.code == .invalidArgument)
        }
    }

    @Test("the test pattern draws and reads frames of one and two rows or columns in every format")
    func tinyPatterns() throws {
        for format in [PixelFormat.bgra, .yuyv, .nv12VideoRange, .nv12FullRange, .i420] {
            for (width, height) in [(1, 1), (2, 1), (64, 1), (64, 2), (1, 64), (2, 2), (3, 3)] {
                let pool = try PixelBufferPool(pixelFormat: format, width: width, height: height, capacity: 1)
                let buffer = try #require(pool.makePixelBuffer())
                TestPattern.render(sequenceNumber: 5, into: buffer)
                TestPattern.stamp(sequenceNumber: 6, previous: 5, into: buffer)
                _ = TestPattern.readSequenceNumber(from: buffer)
            }
        }
    }

    @Test("a virtual camera with one-row frames streams")
    func oneRowCamera() throws {
        let clock = ManualClock()
        let format = CaptureDevice.Format(
            pixelFormat: .bgra, width: 64, height: 1, frameRateRanges: [FrameRateRange(framesPerSecond: 60)])
        let delegate = RecordingDelegate()
        let rig = try Rig(
            camera: .init(clock: clock, formats: [format]), preset: .high, delegate: delegate)
        rig.start()
        rig.step(clock, by: .fps(60), times: 2)
        rig.session.stopRunning()
        #expect(delegate.frames.map(\.height) == [1, 1, 1])
    }
}

@Suite("Robustness 9: the format listing refuses bad lines")
struct ListingRefusalTests {
    private static let header = """
        ioctl: VIDIOC_ENUM_FMT
        \tType: Video Capture

        \t[0]: 'YUYV' (YUYV 4:2:2)
        \t\tSize: Discrete 640x480
        """

    @Test(
        "each bad line is refused with its line number",
        arguments: [
            "\t\t\tInterval: Stepwise 0.033s - 1.000s with step 0.033s )1.000-30.000 fps(",
            "\t\t\tInterval: Stepwise 0.033s - 1.000s with step 0.033s )1.000-30.000 fps",
            "\t\t\tInterval: Discrete 0.033s (inf fps)",
            "\t\t\tInterval: Discrete 0.033s (nan fps)",
            "\t\t\tInterval: Discrete 0.000s (5000000.000 fps)",
            "\t\t\tInterval: Discrete 0.000s (-30.000 fps)",
            "\t\t\tInterval: Discrete 5000.000s",
            "\t\t\tInterval: Stepwise 0.033s - 5000.000s with step 0.033s",
            "\t\t\tInterval: Stepwise 1.000s - 0.033s with step 0.033s",
            "\t\tSize: Discrete 70000x70000",
            "\t\tSize: Discrete 0x480",
            "\t\tSize: Stepwise 16x16 - 70000x70000 with step 8/8",
            "\t\tSize: Stepwise 640x480 - 16x16 with step 8/8",
        ])
    func refused(line: String) {
        let text = Self.header + "\n" + line + "\n"
        let error = #expect(throws: CaptureError.self) {
            _ = try SimulatedUVCCamera(configuration: .init(listing: text))
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("line 6") == true, "\(error?.message ?? "")")
    }

    @Test("good extremes are still read")
    func extremes() throws {
        let text = Self.header + "\n\t\t\tInterval: Discrete 4000.000s\n\t\tSize: Discrete 16384x16384\n"
        let camera = try SimulatedUVCCamera(configuration: .init(listing: text))
        #expect(camera.listing.formats[0].sizes.count == 2)
    }

    @Test("every input the fuzzer ever crashed on is refused or read, never a crash")
    func fuzzCorpus() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("FuzzCorpus")
        var replayed = 0
        for driver in FuzzTarget.allCases {
            let directory = root.appendingPathComponent(driver.rawValue)
            let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in files.sorted() where !name.hasPrefix(".") {
                let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
                let outcome = driver.run(bytes)
                if driver == .listing, case .refused(let message) = outcome {
                    #expect(message.contains("line") || message.contains("names no formats"), "\(name): \(message)")
                }
                replayed += 1
            }
        }
        #expect(replayed > 0, "the corpus is in the repository")
    }
}

@Suite("Robustness 10: smaller contract breaks")
struct SmallerBreakTests {
    /// Commits a configuration change from inside its callback, once.
    private final class CommittingDelegate: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
        // unchecked: `session` is set once before frames flow; the rest is in a Mutex.
        var session: CaptureSession?
        let committed = Mutex(0)
        let inside = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        func captureOutput(
            _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
        ) {
            guard committed.withLock({ $0 }) == 0 else { return }
            inside.signal()
            proceed.wait()
            session?.beginConfiguration()
            session?.commitConfiguration()
            committed.withLock { $0 += 1 }
        }
    }

    @Test("stopRunning does not wait out a delegate that commits from its callback")
    func stopWhileDelegateCommits() throws {
        let clock = ManualClock()
        let delegate = CommittingDelegate()
        let camera = VirtualCamera(configuration: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        delegate.session = session
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let output = CaptureVideoDataOutput()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "committing"))
        try session.tryAddOutput(output)
        session.startRunning()
        #expect(delegate.inside.wait(timeout: .now() + 10) == .success)
        let stopped = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            session.stopRunning()
            stopped.signal()
        }
        // Let the stop take the session's transition first (it stops the camera thread, which
        // sleeps on the clock until then), then let the delegate commit.
        #expect(clock.waitUntilAwake(timeout: 2), "the camera thread was not stopped")
        delegate.proceed.signal()
        // The engine would give up waiting after 5 s; well before that the stop must be done.
        #expect(stopped.wait(timeout: .now() + 2.5) == .success, "stopRunning stalled")
        #expect(delegate.committed.withLock { $0 } == 1)
        #expect(!session.isRunning)
    }

    @Test("the unpaced virtual camera waits for a free buffer instead of losing frames")
    func unpacedWaitsForBuffers() throws {
        let camera = VirtualCamera(
            configuration: .init(isPaced: false, frameLimit: 12, bufferCount: 4, formats: virtualFormats(.bgra)))
        let delegate = RecordingDelegate(holdsBuffers: true)
        let session = CaptureSession(notificationCenter: NotificationCenter())
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let output = CaptureVideoDataOutput(bufferBudget: 16)
        output.alwaysDiscardsLateVideoFrames = false
        output.setSampleBufferDelegate(delegate, queue: delegate.queue)
        try session.tryAddOutput(output)
        session.startRunning()
        for batch in 1...3 {
            #expect(delegate.waitForFrames(4 * batch))
            #expect(camera.framesProduced <= 4 * batch, "the camera waits while every buffer is held")
            delegate.releaseHeldBuffers()
        }
        #expect(camera.waitUntilFinished(timeout: 10))
        #expect(output.waitUntilDelivered(timeout: 10))
        session.stopRunning()
        #expect(delegate.frames.map(\.sequenceNumber) == (0..<12).map { UInt64($0) })
        #expect(delegate.drops.isEmpty)
        #expect(camera.framesProduced == 12)
    }

    @Test("plugging a camera that is plugged in already leaves its stream alone")
    func plugTwice() throws {
        let rig = try SimulatedRig()
        let backend = try rig.backend
        let sink = RecordingSink()
        let node = try #require(try rig.device.devicePath)
        _ = try backend.startStreaming(format: try rig.format(.yuyv, 160, 120), frameDuration: thirtyFPS, sink: sink)
        defer { backend.stopStreaming() }
        rig.clock.advance(by: thirtyFPS)
        #expect(sink.waitForFrames())
        #expect(rig.bus.plug(rig.camera) == node)
        #expect(rig.camera.isStreaming && rig.camera.allocatedBufferCount == 4)
        rig.clock.advance(by: thirtyFPS)
        #expect(sink.waitForFrames())
        #expect(sink.errors.isEmpty)
        #expect(sink.recorded.map(\.sequenceNumber) == [0, 1])
        #expect(rig.bus.devices.count == 1)
    }

    @Test("simulateDisconnect while stopped, then simulateReconnect: the next start streams")
    func disconnectWhileStopped() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate()
        let rig = try Rig(camera: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)), delegate: delegate)
        rig.camera.simulateDisconnect()
        #expect(!rig.camera.device.isConnected, "disconnected at once")
        rig.camera.simulateReconnect()
        let interrupted = rig.record(CaptureSession.wasInterruptedNotification)
        rig.start()
        rig.step(clock, by: .fps(60), times: 2)
        #expect(interrupted.count == 0)
        #expect(delegate.frames.count == 3)
        rig.session.stopRunning()
    }
}
