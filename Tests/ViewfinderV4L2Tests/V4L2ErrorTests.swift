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

@Suite("V4L2 errors a user can act on")
struct V4L2ErrorTests {
    private func start(_ backend: V4L2CameraBackend) throws(CaptureError) {
        let format = backend.formats.first {
            $0.pixelFormat == .yuyv && $0.dimensions.width == 160 && $0.dimensions.height == 120
        }!
        _ = try backend.startStreaming(format: format, frameDuration: thirtyFPS, sink: RecordingSink())
        backend.stopStreaming()
    }

    @Test("EACCES: permission denied, says to join the video group")
    func permissionDenied() throws {
        let rig = try SimulatedRig()
        let backend = try rig.backend
        rig.camera.setOpenError(EACCES)
        let error = try #require(throws: CaptureError.self) { try start(backend) }
        #expect(error.code == .permissionDenied)
        #expect(error.errno == EACCES)
        #expect(error.message.contains("'video' group"))
        #expect(error.message.contains("/dev/video0"))
    }

    @Test("EBUSY: another program has the camera")
    func busy() throws {
        let rig = try SimulatedRig()
        let backend = try rig.backend
        rig.camera.setInUseByAnotherProgram(true)
        let error = try #require(throws: CaptureError.self) { try start(backend) }
        #expect(error.code == .deviceBusy)
        #expect(error.errno == EBUSY)
        #expect(error.message.contains("another program"))
        #expect(rig.camera.openDescriptorCount == 0, "the failed start closed what it opened")
    }

    @Test("EMFILE: the process's camera table is full (libv4l2's 16), not the camera busy")
    func processFull() throws {
        let rig = try SimulatedRig()
        let backend = try rig.backend
        rig.camera.setOpenError(EMFILE)
        let error = try #require(throws: CaptureError.self) { try start(backend) }
        #expect(error.code == .systemError)
        #expect(error.errno == EMFILE)
        #expect(error.message.contains("16 a process"))
        #expect(error.message.contains("second process"))
        #expect(!error.message.contains("another program"))
        #expect(rig.camera.openDescriptorCount == 0)
    }

    @Test("EINVAL: a driver that refuses the format")
    func refusedFormat() throws {
        let rig = try SimulatedRig()
        let backend = try rig.backend
        rig.camera.refuseFormats(["YUYV"])
        let error = try #require(throws: CaptureError.self) { try start(backend) }
        #expect(error.code == .unsupportedFormat)
        #expect(error.errno == EINVAL)
        #expect(error.message.contains("refused YUYV 4:2:2 160x120"))
        #expect(rig.camera.openDescriptorCount == 0)
    }

    @Test("a running session posts EIO as a runtime error and stops")
    func ioError() throws {
        let rig = try SimulatedRig()
        let delegate = RecordingDelegate()
        let (session, _) = try makeSession(device: try rig.device, delegate: delegate)
        let errors = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: session)
        let stopped = NotificationRecorder(CaptureSession.didStopRunningNotification, object: session)
        session.startRunning()
        rig.clock.advance(by: thirtyFPS)
        #expect(delegate.waitForMoreFrames())
        rig.camera.injectIOError()
        rig.clock.advance(by: thirtyFPS)
        #expect(errors.wait())
        #expect(stopped.wait())
        let error = try #require(errors.lastError)
        #expect(error.code == .ioError)
        #expect(error.errno == EIO)
        #expect(error.message.contains("replug"))
        #expect(!session.isRunning)
        delegate.queue.sync {}
        #expect(rig.bus.mappedBufferCount == 0)
        #expect(rig.camera.openDescriptorCount == 0)
    }

    @Test("unplugging mid-stream interrupts the session; the same camera returning resumes it")
    func unplugAndReplug() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        let delegate = RecordingDelegate()
        let (session, _) = try makeSession(device: device, delegate: delegate)
        let errors = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: session)
        let interrupted = NotificationRecorder(CaptureSession.wasInterruptedNotification, object: session)
        let ended = NotificationRecorder(CaptureSession.interruptionEndedNotification, object: session)
        session.startRunning()
        defer { session.stopRunning() }
        rig.clock.advance(by: thirtyFPS)
        #expect(delegate.waitForMoreFrames())

        rig.bus.unplug(rig.camera)
        #expect(interrupted.wait())
        #expect(session.isRunning)
        #expect(session.isInterrupted)
        #expect(!device.isConnected)
        let error = try #require(errors.lastError)
        #expect(error.code == .deviceDisconnected)
        #expect(error.errno == ENODEV)
        #expect(error.message.contains("reconnect"))
        delegate.queue.sync {}
        #expect(rig.bus.mappedBufferCount == 0, "the lost stream's buffers are released")
        #expect(rig.camera.openDescriptorCount == 0)

        rig.bus.plug(rig.camera)
        #expect(ended.wait())
        #expect(!session.isInterrupted)
        #expect(rig.camera.isStreaming)
        rig.clock.advance(by: thirtyFPS)
        #expect(delegate.waitForMoreFrames())
        #expect(delegate.frames.map(\.patternNumber) == [0, 0], "the camera restarted its stream")
        #expect(errors.count == 1)
    }

    @Test("a device that is gone cannot start")
    func startWhileUnplugged() throws {
        let rig = try SimulatedRig()
        let backend = try rig.backend
        rig.bus.unplug(rig.camera)
        let error = try #require(throws: CaptureError.self) { try start(backend) }
        #expect(error.code == .deviceDisconnected)
    }
}
