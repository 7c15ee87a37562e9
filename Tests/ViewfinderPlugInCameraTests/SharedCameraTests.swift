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

/// A session with one video data output on `device`, its delegate and its notifications.
struct SharingMember {
    let session: CaptureSession
    let output: CaptureVideoDataOutput
    let delegate = RecordingDelegate()
    let center: NotificationCenter

    init(
        _ device: CaptureDevice, center: NotificationCenter = NotificationCenter(), preset: CaptureSession.Preset,
        pixelFormat: PixelFormat?
    ) throws {
        self.center = center
        session = CaptureSession(notificationCenter: center)
        output = CaptureVideoDataOutput()
        output.typedVideoSettings = try pixelFormat.map { try VideoSettings(pixelFormat: $0) } ?? VideoSettings()
        output.alwaysDiscardsLateVideoFrames = false
        output.setSampleBufferDelegate(delegate, queue: delegate.queue)
        session.beginConfiguration()
        session.sessionPreset = preset
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        try session.tryAddOutput(output)
        session.commitConfiguration()
    }

    func record(_ name: Notification.Name) -> NotificationRecorder {
        NotificationRecorder(name, object: session, center: center)
    }

    func start(sourceLocation: SourceLocation = #_sourceLocation) {
        let errors = record(CaptureSession.runtimeErrorNotification)
        session.startRunning()
        #expect(session.isRunning, sourceLocation: sourceLocation)
        #expect(errors.count == 0, "no runtime error", sourceLocation: sourceLocation)
    }
}

/// Two sessions of one process on one camera (issue 25): macOS shares the device's stream, each
/// session fed in its own format; formats that cannot coexist interrupt as before.
@Suite("Two sessions on one camera")
struct SharedCameraTests {
    /// Waits until the camera waits on `clock` again and every running member's output drained.
    private func settle(
        _ clock: ManualClock, _ members: [SharingMember], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(clock.waitUntilSleeping(), sourceLocation: sourceLocation)
        for member in members where member.session.isRunning {
            #expect(member.output.waitUntilDelivered(timeout: 10), sourceLocation: sourceLocation)
        }
    }

    private func step(_ clock: ManualClock, _ members: [SharingMember], times: Int) {
        for _ in 0..<times {
            clock.advance(by: .fps(60))
            settle(clock, members)
        }
    }

    @Test(
        "virtual camera: two sessions share one stream, BGRA and NV12, every frame to both; the first leaving keeps the second fed"
    )
    func shareVirtualCamera() throws {
        let clock = ManualClock()
        let camera = VirtualCamera(configuration: .init(clock: clock))
        let a = try SharingMember(camera.device, preset: .vga640x480, pixelFormat: .bgra)
        let b = try SharingMember(camera.device, preset: .vga640x480, pixelFormat: .nv12VideoRange)
        let aInterrupted = a.record(CaptureSession.wasInterruptedNotification)
        let bInterrupted = b.record(CaptureSession.wasInterruptedNotification)
        a.start()
        settle(clock, [a])
        b.start()
        settle(clock, [a, b])
        #expect(!a.session.isInterrupted && !b.session.isInterrupted)
        let aBefore = a.output.statistics.captured
        let bBefore = b.output.statistics.captured
        let aFramesBefore = a.delegate.frames.count
        let bFramesBefore = b.delegate.frames.count

        step(clock, [a, b], times: 20)
        let aStats = a.output.statistics
        let bStats = b.output.statistics
        #expect(aStats.captured - aBefore == 20, "\(aStats)")
        #expect(bStats.captured - bBefore == 20, "\(bStats)")
        #expect(aStats.dropped == 0 && bStats.dropped == 0)
        let aFrames = Array(a.delegate.frames.dropFirst(aFramesBefore))
        let bFrames = Array(b.delegate.frames.dropFirst(bFramesBefore))
        #expect(aFrames.count == 20 && bFrames.count == 20)
        #expect(aFrames.map(\.sequenceNumber) == bFrames.map(\.sequenceNumber), "the same frames, one stream")
        #expect(aFrames.map(\.patternNumber) == bFrames.map(\.patternNumber), "each frame's own pixels, in both")
        #expect(aFrames.allSatisfy { $0.pixelFormat == .bgra && $0.width == 640 })
        #expect(bFrames.allSatisfy { $0.pixelFormat == .nv12VideoRange && $0.width == 640 })
        #expect(a.output.isZeroCopy, "the first session's format is the device's")
        #expect(aInterrupted.count == 0 && bInterrupted.count == 0, "nobody was interrupted")

        // The session that started the device leaves first: the stream goes on for the other.
        a.session.stopRunning()
        let bMid = b.output.statistics.captured
        step(clock, [b], times: 5)
        #expect(b.output.statistics.captured - bMid == 5)
        #expect(bInterrupted.count == 0)
        b.session.stopRunning()
        #expect(SharedDeviceStream.stream(on: camera.device) == nil, "the last to leave stops the device")
        #expect(a.output.statistics.inFlight == 0 && b.output.statistics.inFlight == 0)
        let final = b.output.statistics
        #expect(final.delivered + final.dropped + final.rateGated == final.captured)
    }

    @Test(
        "virtual camera: a session needing a size the running format cannot give interrupts the sharing sessions, which resume after it"
    )
    func incompatibleInterrupts() throws {
        let clock = ManualClock()
        let camera = VirtualCamera(configuration: .init(clock: clock))
        let center = NotificationCenter()
        let a = try SharingMember(camera.device, center: center, preset: .vga640x480, pixelFormat: .bgra)
        let b = try SharingMember(camera.device, center: center, preset: .vga640x480, pixelFormat: .nv12VideoRange)
        let c = try SharingMember(camera.device, center: center, preset: .hd1280x720, pixelFormat: .bgra)
        a.start()
        b.start()
        settle(clock, [a, b])
        let reasons = Mutex<[CaptureSession.InterruptionReason]>([])
        let observers = [a, b].map { member in
            center.addObserver(forName: CaptureSession.wasInterruptedNotification, object: member.session, queue: nil) {
                if let reason = $0.userInfo?[CaptureSessionInterruptionReasonKey] as? CaptureSession.InterruptionReason
                {
                    reasons.withLock { $0.append(reason) }
                }
            }
        }
        defer { observers.forEach(center.removeObserver) }
        let interrupted = [a, b].map { $0.record(CaptureSession.wasInterruptedNotification) }
        let ended = [a, b].map { $0.record(CaptureSession.interruptionEndedNotification) }

        c.start()
        #expect(interrupted.allSatisfy { $0.next().error?.code == .sessionWasInterrupted })
        #expect(reasons.withLock { $0 } == [.videoDeviceInUseByAnotherClient, .videoDeviceInUseByAnotherClient])
        #expect(a.session.isInterrupted && b.session.isInterrupted)
        settle(clock, [c])
        let cBefore = c.output.statistics.captured
        step(clock, [c], times: 3)
        #expect(c.output.statistics.captured - cBefore == 3)
        #expect(c.delegate.frames.last?.width == 1280)

        c.session.stopRunning()
        #expect(ended.allSatisfy { $0.wait() }, "both resume when the camera is free")
        #expect(!a.session.isInterrupted && !b.session.isInterrupted)
        settle(clock, [a, b])
        let aBefore = a.output.statistics.captured
        let bBefore = b.output.statistics.captured
        step(clock, [a, b], times: 4)
        #expect(a.output.statistics.captured - aBefore == 4)
        #expect(b.output.statistics.captured - bBefore == 4, "shared again after resuming")
        a.session.stopRunning()
        b.session.stopRunning()
    }
}

/// The same on the production V4L2 path (libv4l2 and the fake-camera plug-in).
@Suite(
    "Two sessions on one plug-in V4L2 camera", .serialized,
    .enabled(if: FakeCameraPlugin.isInstalled, FakeCameraPlugin.skipReason))
struct SharedV4L2CameraTests {
    @Test("two sessions share the V4L2 stream (YUYV zero-copy and BGRA); every frame the second got, the first got too")
    func share() throws {
        let rig = try FakeCameraRig()
        let camera = LibV4L2PluginTests.smallCamera(frames: 4)
        try rig.plug(camera)
        let device = try rig.device(camera)
        let a = try SharingMember(device, preset: .low, pixelFormat: nil)
        let b = try SharingMember(device, preset: .low, pixelFormat: .bgra)
        let aInterrupted = a.record(CaptureSession.wasInterruptedNotification)
        a.start()
        #expect(a.delegate.waitForFrames(2))
        b.start()
        #expect(b.delegate.waitForFrames(10))
        b.session.stopRunning()
        #expect(a.delegate.waitForFrames(a.delegate.frames.count + 2), "the first keeps streaming")
        a.session.stopRunning()
        #expect(aInterrupted.count == 0, "sharing, not interrupting")
        #expect(a.output.isZeroCopy && a.delegate.frames.allSatisfy { $0.pixelFormat == .yuyv })
        #expect(b.delegate.frames.allSatisfy { $0.pixelFormat == .bgra && $0.width == 320 })
        let aSequence = Set(a.delegate.frames.map(\.sequenceNumber))
        let bSequence = b.delegate.frames.map(\.sequenceNumber)
        #expect(bSequence.allSatisfy(aSequence.contains), "one stream: the same frames")
        #expect(a.delegate.frames.allSatisfy { $0.patternNumber == $0.sequenceNumber % 4 })
        for stats in [a.output.statistics, b.output.statistics] {
            #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured, "\(stats)")
            #expect(stats.inFlight == 0)
        }
    }

    @Test("a second session at a size the running format cannot give interrupts the first, which resumes after it")
    func incompatible() throws {
        let rig = try FakeCameraRig()
        let camera = LibV4L2PluginTests.smallCamera(frames: 4)
        try rig.plug(camera)
        let device = try rig.device(camera)
        let a = try SharingMember(device, preset: .low, pixelFormat: nil)
        let c = try SharingMember(device, preset: .vga640x480, pixelFormat: nil)
        let interrupted = a.record(CaptureSession.wasInterruptedNotification)
        let ended = a.record(CaptureSession.interruptionEndedNotification)
        a.start()
        #expect(a.delegate.waitForFrames(2))
        c.start()
        #expect(interrupted.next().error?.code == .sessionWasInterrupted)
        #expect(c.delegate.waitForFrames(2))
        #expect(c.delegate.frames.allSatisfy { $0.width == 640 })
        c.session.stopRunning()
        #expect(ended.wait())
        let before = a.delegate.frames.count
        #expect(a.delegate.waitForFrames(before + 2))
        a.session.stopRunning()
    }
}
