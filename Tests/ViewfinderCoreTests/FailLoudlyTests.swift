import Dispatch
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

/// Issue 28: failures that used to cost CPU or frames without a word now say so.
@Suite("Fail loudly: bad rates, stalled streams, narrow frames, budgets, overflow")
struct FailLoudlyTests {
    /// Frame-rate ranges no camera can pace by, and a fragment of the value each error must name.
    static let badRates: [(name: String, ranges: [FrameRateRange], named: String)] = [
        ("no range at all", [], "no frame rate"),
        ("0 fps", [FrameRateRange(framesPerSecond: 0)], "1/0"),
        ("-30 fps", [FrameRateRange(framesPerSecond: -30)], "1/-30"),
        ("NaN", [FrameRateRange(frameDuration: MediaTime(seconds: .nan))], "invalid"),
        ("a zero duration", [FrameRateRange(frameDuration: .zero)], "0/1"),
        ("a negative duration", [FrameRateRange(frameDuration: MediaTime(value: -1, timescale: 30))], "-1/30"),
        (
            "minimum above maximum",
            [FrameRateRange(minFrameDuration: .fps(15), maxFrameDuration: .fps(30))], "1/15"
        ),
    ]

    @Test(
        "a format without a usable frame rate is refused with a typed error naming the value, and produces nothing",
        arguments: 0..<badRates.count)
    func badRateFormatRefused(index: Int) throws {
        let bad = Self.badRates[index]
        let clock = ManualClock()
        let format = CaptureDevice.Format(pixelFormat: .bgra, width: 64, height: 48, frameRateRanges: bad.ranges)
        let rig = try Rig(
            camera: .init(clock: clock, isPaced: true, formats: [format]), preset: .high, delegate: RecordingDelegate())
        let errors = rig.record(CaptureSession.runtimeErrorNotification)
        rig.session.startRunning()
        let (posted, error) = errors.next(timeout: 2)
        let running = rig.session.isRunning
        rig.session.stopRunning()
        #expect(posted, "\(bad.name): no runtime error")
        #expect(error?.code == .invalidArgument, "\(bad.name): \(String(describing: error))")
        #expect(error?.message.contains(bad.named) == true, "\(bad.name): \(error?.message ?? "")")
        #expect(!running, "\(bad.name): the session runs on a format it cannot pace")
        // The clock never moved: a camera may at most have produced the frame due at its start.
        #expect(rig.camera.framesProduced <= 1, "\(bad.name): \(rig.camera.framesProduced) frames at one instant")
    }

    @Test("a paced camera whose clock returns early reports it instead of producing frames ahead of its format")
    func earlyClockReported() throws {
        let clock = EarlyClock()
        let rig = try Rig(
            camera: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)), delegate: RecordingDelegate())
        let errors = rig.record(CaptureSession.runtimeErrorNotification)
        rig.session.startRunning()
        let (posted, error) = errors.next(timeout: 5)
        rig.session.stopRunning()
        #expect(posted)
        #expect(error?.code == .driverError, "\(String(describing: error))")
        // Time never moved on the camera's clock: one frame (the one due at the start) is all its format allows.
        #expect(rig.camera.framesProduced <= 1, "\(rig.camera.framesProduced) frames in no time")
    }

    @Test(
        "a driver whose every frame is corrupt gets one runtime error within 2 s of its clock; the stream keeps counting, and recovery clears it"
    )
    func allCorruptDriverReported() throws {
        let rig = try SimulatedRig()
        let delegate = RecordingDelegate()
        let device = try rig.device
        let (session, _) = try makeSession(device: device, delegate: delegate, discardsLate: false)
        let errors = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: session)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(session.isRunning)
        let interval = device.activeVideoMinFrameDuration
        #expect(interval.isNumeric && interval > .zero)
        let bound = MediaTime(value: 2, timescale: 1)

        /// Steps the clock one frame at a time, every frame corrupt, until 2 s of the camera's
        /// clock have passed (the bound), then waits for the runtime error the stream must have
        /// posted by then. Returns how many came.
        func corruptForTheBound() -> Int {
            let before = errors.count
            var elapsed = MediaTime.zero
            while elapsed < bound {
                rig.camera.injectFrameFaults([.oversizedPayload])
                #expect(rig.clock.waitUntilSleeping())
                rig.clock.advance(by: interval)
                elapsed = elapsed + interval
            }
            #expect(rig.clock.waitUntilSleeping())
            if errors.count == before { _ = errors.next(timeout: 2) }
            if errors.count == before {
                // One frame's slack: under load the good frame that ended a stall and the first
                // corrupt one can fall on either side of a fault injection.
                rig.camera.injectFrameFaults([.oversizedPayload])
                rig.clock.advance(by: interval)
                #expect(rig.clock.waitUntilSleeping())
                _ = errors.next(timeout: 5)
            }
            return errors.count - before
        }

        #expect(corruptForTheBound() == 1, "one runtime error within 2 s of corrupt frames")
        let error = errors.lastError
        #expect(error?.code == .driverError, "\(String(describing: error))")
        let skipped = try rig.backend.corruptFramesSkipped
        #expect(error?.message.contains("\(skipped)") == true, "the counts: \(error?.message ?? "")")
        #expect(error?.message.contains("bytesused") == true, "the cause: \(error?.message ?? "")")
        #expect(delegate.frames.isEmpty)

        // Still corrupt: the stream runs on, counting, and says nothing more.
        for _ in 0..<5 {
            rig.camera.injectFrameFaults([.oversizedPayload])
            rig.clock.advance(by: interval)
            #expect(rig.clock.waitUntilSleeping())
        }
        #expect(session.isRunning)
        #expect(try rig.backend.corruptFramesSkipped == skipped + 5)
        #expect(errors.count == 1, "one error per stall")

        // A good frame ends the stall; a new one is reported again.
        rig.clock.advance(by: interval)
        #expect(delegate.waitForMoreFrames())
        #expect(corruptForTheBound() == 1, "a stall after recovery is reported again")
        #expect(session.isRunning)
    }

    @Test("readSequenceNumber answers nil for frames too narrow to hold the number, and reads the rest")
    func narrowFramesReadNil() throws {
        for format in [PixelFormat.bgra, .yuyv, .nv12VideoRange, .nv12FullRange, .i420] {
            for (width, height) in [(1, 1), (2, 1), (3, 1), (7, 5), (16, 16), (32, 8), (62, 2), (63, 64)] {
                let pool = try PixelBufferPool(pixelFormat: format, width: width, height: height, capacity: 1)
                let buffer = try #require(pool.makePixelBuffer())
                TestPattern.render(sequenceNumber: 12345, into: buffer)
                #expect(TestPattern.readSequenceNumber(from: buffer) == nil, "\(format.name) \(width)x\(height)")
            }
            for (width, height) in [(64, 1), (64, 48), (66, 2), (100, 7), (130, 3), (640, 480)] {
                let pool = try PixelBufferPool(pixelFormat: format, width: width, height: height, capacity: 1)
                let buffer = try #require(pool.makePixelBuffer())
                TestPattern.render(sequenceNumber: 12345, into: buffer)
                #expect(TestPattern.readSequenceNumber(from: buffer) == 12345, "\(format.name) \(width)x\(height)")
            }
        }
    }

    @Test(
        "an audio output's budget beyond its memory bound is refused with a typed error when the session starts",
        arguments: [1 << 40, Int.max])
    func audioBudgetRefused(budget: Int) throws {
        let clock = ManualClock()
        let stereo = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16)
        let mic = VirtualMicrophone(configuration: .init(clock: clock, formats: [stereo]))
        let rig = try AudioRig(device: mic.makeDevice(), bufferBudget: budget, delegate: RecordingAudioDelegate())
        let errors = NotificationRecorder(
            CaptureSession.runtimeErrorNotification, object: rig.session, center: rig.center)
        rig.session.startRunning()
        let running = rig.session.isRunning
        rig.session.stopRunning()
        #expect(!running, "a budget of \(budget) buffers runs")
        let error = errors.lastError
        #expect(error?.code == .invalidArgument, "\(String(describing: error))")
        #expect(error?.message.contains("\(budget)") == true, "names the budget: \(error?.message ?? "")")
    }

    @Test("a budget at the audio output's memory bound still runs")
    func audioBudgetAtBoundRuns() throws {
        let clock = ManualClock()
        let stereo = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16)
        let mic = VirtualMicrophone(configuration: .init(clock: clock, formats: [stereo]))
        let delegate = RecordingAudioDelegate()
        let rig = try AudioRig(device: mic.makeDevice(), bufferBudget: 4096, delegate: delegate)
        rig.start()
        rig.step(clock, by: .audioChunk, times: 2)
        rig.session.stopRunning()
        #expect(delegate.buffers.count >= 2)
    }

    /// CMTimeAdd's documented rule (developer.apple.com, CMTimeAdd): the common timescale is the
    /// LCM, at most kCMTimeMaxTimescale; on overflow the timescale is halved until the value fits,
    /// with default rounding and hasBeenRounded set; only a value that still overflows at
    /// timescale 1 gives ±infinity.
    @Test("MediaTime overflow in addition and subtraction follows CMTimeAdd's documented rule")
    func additionOverflow() {
        let sum = MediaTime(value: .max, timescale: 1) + MediaTime(value: 1, timescale: 1_000_000_000)
        // Int64.max s + 1 ns does not fit at 1e9 or any halving of it above 1; at timescale 1 it
        // rounds to Int64.max s, which fits: a finite, rounded time, not infinity.
        #expect(sum.isNumeric)
        #expect(sum.value == .max && sum.timescale == 1)
        #expect(sum.hasBeenRounded)
        let difference = MediaTime(value: .min, timescale: 1) - MediaTime(value: 1, timescale: 1_000_000_000)
        #expect(difference.isNumeric && difference.value == .min && difference.timescale == 1)
        #expect(difference.hasBeenRounded)
        // Still overflowing at timescale 1: infinity by the direction of the overflow.
        #expect((MediaTime(value: .max, timescale: 1) + MediaTime(value: 1, timescale: 1)).isPositiveInfinity)
        #expect((MediaTime(value: .min, timescale: 1) - MediaTime(value: 1, timescale: 1)).isNegativeInfinity)
        #expect(
            (MediaTime(value: .max, timescale: 1) + MediaTime(value: 1, timescale: 2)).isPositiveInfinity,
            "Int64.max + 0.5 s rounds half away from zero to Int64.max + 1 at timescale 1")
        // Halving from the LCM: (2^62 + 1/3) s does not fit at timescale 3, fits at 1.
        let halved = MediaTime(value: 1 << 62, timescale: 1) + MediaTime(value: 1, timescale: 3)
        #expect(halved.value == 1 << 62 && halved.timescale == 1 && halved.hasBeenRounded)
        // No overflow, no rounding: the exact sum at the LCM.
        let exact = MediaTime(value: 1, timescale: 2) + MediaTime(value: 1, timescale: 3)
        #expect(exact.value == 5 && exact.timescale == 6 && !exact.hasBeenRounded)
    }
}

@Suite("Fail loudly: the checks themselves")
struct FailLoudlyCheckTests {
    @Test("FrameRateRange and Format validate: bad rates are a typed error naming the value; good ones pass")
    func validation() throws {
        for (bad, named) in [
            (FrameRateRange(framesPerSecond: 0), "1/0"), (FrameRateRange(framesPerSecond: -30), "1/-30"),
            (FrameRateRange(frameDuration: MediaTime(seconds: .nan)), "0/0"),
            (FrameRateRange(frameDuration: .positiveInfinity), "+infinity"),
            (FrameRateRange(minFrameDuration: .fps(15), maxFrameDuration: .fps(30)), "1/15"),
        ] {
            #expect(!bad.isValid)
            #expect(!bad.description.contains("nan"), "\(bad.description)")
            let error = #expect(throws: CaptureError.self) { try bad.validate() }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains(named) == true, "\(error?.message ?? "")")
        }
        let good = FrameRateRange(minFrameDuration: .fps(60), maxFrameDuration: .fps(15))
        #expect(good.isValid)
        try good.validate()
        for format in VirtualCamera.standardFormats { try format.validate() }
        let empty = CaptureDevice.Format(pixelFormat: .bgra, width: 64, height: 48, frameRateRanges: [])
        #expect(throws: CaptureError.self) { try empty.validate() }
        let noSize = CaptureDevice.Format(
            pixelFormat: .bgra, width: 0, height: 48, frameRateRanges: [FrameRateRange(framesPerSecond: 30)])
        #expect(throws: CaptureError.self) { try noSize.validate() }
    }

    @Test("the stall watch reports once by frames at the stream's rate, or by host time for a slow driver")
    func stallWatch() {
        let name = "cam"
        var byFrames = StreamStallWatch()
        let reports = (0..<100).compactMap { index in
            byFrames.skip(
                index.isMultiple(of: 2) ? .errorFlag : .shortPayload, now: .zero, frameDuration: .fps(30),
                deviceName: name)
        }
        #expect(reports.count == 1)
        #expect(reports.first?.message.contains("60 frames") == true, "\(reports.first?.message ?? "")")
        #expect(reports.first?.message.contains("30 flagged as damaged") == true)
        #expect(byFrames.total == 100, "it keeps counting")
        byFrames.recover()
        #expect(byFrames.total == 0 && !byFrames.hasReported)

        var byTime = StreamStallWatch()
        #expect(byTime.skip(.oversizedPayload, now: .zero, frameDuration: .fps(30), deviceName: name) == nil)
        #expect(
            byTime.skip(
                .oversizedPayload, now: MediaTime(value: 19, timescale: 10), frameDuration: .fps(30), deviceName: name)
                == nil)
        let late = byTime.skip(
            .oversizedPayload, now: MediaTime(value: 2, timescale: 1), frameDuration: .fps(30), deviceName: name)
        #expect(late?.code == .driverError)
        #expect(late?.message.contains("3 claiming more bytes (bytesused)") == true, "\(late?.message ?? "")")
    }
}

/// A clock whose wait returns at once while its time stands still: a broken clock (or a capture
/// loop that does not wait), which a paced camera must notice.
private struct EarlyClock: CaptureClock {
    func now() -> MediaTime { .zero }
    func wait(until deadline: MediaTime, isCancelled: () -> Bool) -> Bool { !isCancelled() }
}
