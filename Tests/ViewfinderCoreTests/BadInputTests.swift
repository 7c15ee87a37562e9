import Dispatch
import Foundation
import Synchronization
import Testing
import ViewfinderSimulator

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

@Suite("Bad input gets a clear, typed error")
struct BadInputTests {
    @Test("adding the same output or input twice is refused")
    func duplicates() throws {
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let camera = VirtualCamera(configuration: .init(clock: ManualClock()))
        let input = try CaptureDeviceInput(device: camera.device)
        let output = CaptureVideoDataOutput()
        try session.tryAddInput(input)
        try session.tryAddOutput(output)
        #expect(!session.canAddOutput(output))
        #expect(!session.canAddInput(input))
        let outputError = #expect(throws: CaptureError.self) { try session.tryAddOutput(output) }
        #expect(outputError?.code == .cannotAddOutput)
        #expect(outputError?.message.contains("already in the session") == true)
        let inputError = #expect(throws: CaptureError.self) { try session.tryAddInput(input) }
        #expect(inputError?.code == .cannotAddInput)
        // A second input for the same camera is refused too.
        let again = try CaptureDeviceInput(device: camera.device)
        #expect(throws: CaptureError.self) { try session.tryAddInput(again) }
        #expect(session.outputs.count == 1 && session.inputs.count == 1 && session.connections.count == 1)

        // An output that belongs to another session.
        let other = CaptureSession(notificationCenter: NotificationCenter())
        let stolen = #expect(throws: CaptureError.self) { try other.tryAddOutput(output) }
        #expect(stolen?.message.contains("another session") == true)
        session.removeOutput(output)
        #expect(throws: Never.self) { try other.tryAddOutput(output) }
    }

    @Test("an input for an unknown or disconnected device is refused")
    func unknownDevice() throws {
        let unknown = #expect(throws: CaptureError.self) {
            try CaptureDeviceInput(deviceWithUniqueID: "no-such-camera")
        }
        #expect(unknown?.code == .deviceNotFound)
        #expect(unknown?.message.contains("no-such-camera") == true)

        let camera = VirtualCamera(configuration: .init(clock: ManualClock()))
        camera.backend.setConnected(false)
        let gone = #expect(throws: CaptureError.self) { try CaptureDeviceInput(device: camera.device) }
        #expect(gone?.code == .deviceNotFound)
    }

    @Test(
        "a pixel format the output cannot deliver is refused",
        arguments: [PixelFormat(fourCC: "ABCD")!, PixelFormat(fourCC: "H264")!])
    func undeliverableFormat(format: PixelFormat) {
        let error = #expect(throws: CaptureError.self) { try VideoSettings(pixelFormat: format) }
        #expect(error?.code == .unsupportedPixelFormat)
        #expect(error?.message.contains("choose one of") == true)
    }

    @Test(
        "zero, negative, half-given or odd sizes are refused",
        arguments: [(0, 480), (640, 0), (-2, 480), (640, -480), (641, 480)] as [(Int, Int)])
    func badSizes(size: (Int, Int)) {
        let error = #expect(throws: CaptureError.self) {
            try VideoSettings(pixelFormat: .nv12VideoRange, width: size.0, height: size.1)
        }
        #expect(error?.code == .invalidArgument)
        #expect(throws: CaptureError.self) { try VideoSettings(pixelFormat: .bgra, width: 640, height: nil) }
        // BGRA has no subsampling: odd sizes are fine.
        #expect(throws: Never.self) { try VideoSettings(pixelFormat: .bgra, width: 641, height: 479) }
    }

    @Test("pools and converters refuse sizes and formats they cannot make")
    func poolAndConverter() {
        #expect(throws: CaptureError.self) {
            try PixelBufferPool(pixelFormat: .bgra, width: 0, height: 10, capacity: 1)
        }
        #expect(throws: CaptureError.self) {
            try PixelBufferPool(pixelFormat: .bgra, width: 10, height: 10, capacity: 0)
        }
        let size = CaptureDevice.Dimensions(width: 64, height: 64)
        let error = #expect(throws: CaptureError.self) {
            try PixelConverter(from: .mjpeg, size: size, to: .bgra, size: size)
        }
        #expect(error?.code == .unsupportedPixelFormat)
    }

    @Test("changing the active format or frame duration without the lock throws")
    func configurationLock() throws {
        let device = VirtualCamera(configuration: .init(clock: ManualClock())).device
        let format = try #require(device.formats.last)
        let unlocked = #expect(throws: CaptureError.self) { try device.setActiveFormat(format) }
        #expect(unlocked?.code == .configurationNotLocked)
        #expect(unlocked?.message.contains("lockForConfiguration()") == true)
        #expect(throws: CaptureError.self) { try device.setActiveVideoMinFrameDuration(.fps(30)) }
        #expect(device.activeFormat != format)

        try device.lockForConfiguration()
        try device.setActiveFormat(format)
        #expect(device.activeFormat == format)
        // Outside the format's ranges, zero and negative are refused even with the lock.
        let outside = #expect(throws: CaptureError.self) { try device.setActiveVideoMinFrameDuration(.fps(25)) }
        #expect(outside?.code == .unsupportedFormat)
        #expect(throws: CaptureError.self) { try device.setActiveVideoMinFrameDuration(.zero) }
        #expect(throws: CaptureError.self) {
            try device.setActiveVideoMinFrameDuration(MediaTime(value: -1, timescale: 30))
        }
        try device.setActiveVideoMinFrameDuration(.fps(15))
        #expect(device.activeVideoMinFrameDuration == .fps(15))
        // A format the device does not have.
        var foreign = format
        foreign.dimensions = .init(width: 123, height: 456)
        let missing = #expect(throws: CaptureError.self) { try device.setActiveFormat(foreign) }
        #expect(missing?.code == .unsupportedFormat)
        device.unlockForConfiguration()
        #expect(!device.isLockedForConfiguration)
    }

    @Test("startRunning() with no inputs posts a runtime error and stays stopped")
    func startWithoutInputs() throws {
        let center = NotificationCenter()
        let session = CaptureSession(notificationCenter: center)
        try session.tryAddOutput(CaptureVideoDataOutput())
        let errors = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: session, center: center)
        session.startRunning()
        let posted = errors.next()
        #expect(posted.received)
        #expect(posted.error?.code == .noInputs)
        #expect(posted.error?.message.contains("CaptureDeviceInput") == true)
        #expect(!session.isRunning)
    }

    @Test("a preset the camera cannot meet posts an error instead of starting")
    func unsupportedPreset() throws {
        let center = NotificationCenter()
        let session = CaptureSession(notificationCenter: center)
        let only720 = VirtualCamera.standardFormats.filter { $0.dimensions.width == 1280 }
        let camera = VirtualCamera(configuration: .init(clock: ManualClock(), formats: only720))
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        try session.tryAddOutput(CaptureVideoDataOutput())
        #expect(!session.canSetSessionPreset(.hd1920x1080))
        #expect(session.canSetSessionPreset(.hd1280x720))
        session.sessionPreset = .hd1920x1080
        let errors = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: session, center: center)
        session.startRunning()
        #expect(errors.next().error?.code == .unsupportedFormat)
        #expect(!session.isRunning)
    }

    @Test(
        "two sessions on one camera at sizes that cannot coexist: the later takes it, the earlier is interrupted and resumes"
    )
    func twoSessionsOneCamera() throws {
        let camera = VirtualCamera(configuration: .init())
        let center = NotificationCenter()
        let a = CaptureSession(notificationCenter: center)
        let b = CaptureSession(notificationCenter: center)
        b.sessionPreset = .vga640x480  // a runs the camera at 1920x1080 (.high): b cannot share it
        let delegates = [RecordingDelegate(), RecordingDelegate()]
        for (session, delegate) in zip([a, b], delegates) {
            try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
            let output = CaptureVideoDataOutput()
            output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "busy"))
            try session.tryAddOutput(output)
        }
        a.startRunning()
        #expect(a.isRunning)
        #expect(delegates[0].waitForFrames(2))
        let reasons = Mutex<[CaptureSession.InterruptionReason]>([])
        let observer = center.addObserver(forName: .CaptureSessionWasInterrupted, object: a, queue: nil) { note in
            if let reason = note.userInfo?[CaptureSessionInterruptionReasonKey] as? CaptureSession.InterruptionReason {
                reasons.withLock { $0.append(reason) }
            }
        }
        defer { center.removeObserver(observer) }
        let interrupted = NotificationRecorder(.CaptureSessionWasInterrupted, object: a, center: center)
        let ended = NotificationRecorder(.CaptureSessionInterruptionEnded, object: a, center: center)
        let bErrors = NotificationRecorder(.CaptureSessionRuntimeError, object: b, center: center)
        let aErrors = NotificationRecorder(.CaptureSessionRuntimeError, object: a, center: center)

        b.startRunning()
        #expect(b.isRunning)
        let interruption = interrupted.next()
        #expect(interruption.error?.code == .sessionWasInterrupted)
        #expect(reasons.withLock { $0 } == [.videoDeviceInUseByAnotherClient])
        #expect(a.isRunning && a.isInterrupted)
        #expect(delegates[1].waitForFrames(2))
        #expect(bErrors.count == 0)
        #expect(aErrors.count == 0)  // an interruption, not a runtime error (as on iOS)
        let aFramesWhileInterrupted = delegates[0].frames.count

        b.stopRunning()
        #expect(ended.wait())
        #expect(!a.isInterrupted)
        #expect(delegates[0].waitForFrames(aFramesWhileInterrupted + 2))
        a.stopRunning()
        #expect(!a.isRunning)
    }

    @Test("a device failing mid-run posts its typed error and stops the session")
    func deviceFailure() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate()
        let rig = try Rig(camera: .init(clock: clock), delegate: delegate)
        let errors = rig.record(CaptureSession.runtimeErrorNotification)
        let stopped = rig.record(CaptureSession.didStopRunningNotification)
        rig.start()
        rig.settle(clock)
        rig.camera.simulateFailure(CaptureError(.ioError, "the camera reported an I/O error", errno: EIO))
        clock.advance(by: .fps(60))
        let posted = errors.next()
        #expect(posted.error?.code == .ioError)
        #expect(posted.error?.errno == EIO)
        #expect(stopped.next().received)
        #expect(!rig.session.isRunning)
        #expect(rig.output.statistics.inFlight == 0)
    }

    @Test("an unplugged device interrupts the session, which resumes when it returns")
    func disconnect() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate()
        let rig = try Rig(camera: .init(clock: clock), delegate: delegate)
        let interrupted = rig.record(CaptureSession.wasInterruptedNotification)
        let ended = rig.record(CaptureSession.interruptionEndedNotification)
        rig.start()
        rig.settle(clock)
        rig.camera.simulateDisconnect()
        clock.advance(by: .fps(60))
        let posted = interrupted.next()
        #expect(posted.received)
        #expect(posted.error?.code == .deviceDisconnected)
        #expect(rig.session.isInterrupted && rig.session.isRunning)
        #expect(!rig.camera.device.isConnected)
        #expect(rig.output.statistics.inFlight == 0, "buffers released")

        let before = delegate.frames.count
        let capturedBefore = rig.output.statistics.captured
        rig.camera.simulateReconnect()
        #expect(ended.next().received)
        #expect(!rig.session.isInterrupted)
        rig.step(clock, by: .fps(60))
        #expect(delegate.frames.count > before, "frames flow again")
        #expect(rig.output.statistics.captured > capturedBefore, "counters carry on across the interruption")
        rig.session.stopRunning()
        #expect(!rig.session.isInterrupted)
    }
}
