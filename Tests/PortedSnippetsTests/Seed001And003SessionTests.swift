// Seeds 001 ("taking photos, recording, grabbing frames with AVCaptureSession") and 003 (session
// configuration, switching cameras, focus and exposure locking): their ObjC written as the
// Swift a user would write, then "AV" deleted.
import Testing
import Viewfinder

/// Counts frames and remembers the last one's size and format.
final class FrameGrabber: NSObject, CaptureVideoDataOutputSampleBufferDelegate {
    var count = 0
    var lastSize = (0, 0)
    var lastFormat: OSType = 0
    let arrived = DispatchSemaphore(value: 0)

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        guard let image = SampleBufferGetImageBuffer(sampleBuffer) else { return }
        count += 1
        lastSize = (PixelBufferGetWidth(image), PixelBufferGetHeight(image))
        lastFormat = PixelBufferGetPixelFormatType(image)
        arrived.signal()
    }

    /// Waits for frames until `condition`, read on the delegate's `queue` (where the state lives), holds.
    func waitUntil(on queue: DispatchQueue, _ condition: @escaping () -> Bool) -> Bool {
        for _ in 0..<300 {
            guard arrived.wait(timeout: .now() + 10) == .success else { return false }
            if queue.sync(execute: condition) { return true }
        }
        return false
    }

    func wait(for frames: Int = 1) -> Bool {
        (0..<frames).allSatisfy { _ in arrived.wait(timeout: .now() + 10) == .success }
    }
}

/// Seed 003's camera helper, in Swift.
final class CameraHelper {
    let session = CaptureSession()
    var videoDeviceInput: CaptureDeviceInput?
    var videoDevice: CaptureDevice?
    let videoDataOutPut = CaptureVideoDataOutput()
    var videoConnection: CaptureConnection?
    var captureSessionPreset: CaptureSession.Preset = .vga640x480
    let sessionQueue = DispatchQueue(label: "session")
    var isAutoExposureAndFocusLock = true
    var lockSettingBlock: ((Bool, Error?) -> Void)?

    func changeCaptureDevicePosition(
        _ captureDevicePosition: CaptureDevice.Position, newVideoDeviceInput: CaptureDeviceInput
    ) {
        session.stopRunning()
        session.beginConfiguration()

        // Remove the existing device input first, since using the front and back camera simultaneously is not supported
        if let videoDeviceInput = videoDeviceInput { session.removeInput(videoDeviceInput) }

        if session.canAddInput(newVideoDeviceInput) {
            session.addInput(newVideoDeviceInput)
            videoDeviceInput = newVideoDeviceInput
            videoDevice = newVideoDeviceInput.device
        } else {
            if let videoDeviceInput = videoDeviceInput {
                session.addInput(videoDeviceInput)
            }
        }

        let preset = captureSessionPreset
        if session.canSetSessionPreset(preset) {
            session.sessionPreset = preset
        }

        videoConnection = videoDataOutPut.connection(with: .video)
        if let videoConnection = videoConnection {
            if videoConnection.isVideoStabilizationSupported {
                videoConnection.preferredVideoStabilizationMode = .standard
            }
            videoConnection.videoOrientation = .landscapeRight
            if captureDevicePosition == .front {  // mirror the front camera
                videoConnection.isVideoMirrored = true
            } else {
                videoConnection.isVideoMirrored = false
            }
        }

        session.commitConfiguration()
        session.startRunning()
    }

    /// The adjustingFocus observer's body once focusing finished.
    func focusDidFinish(_ device: CaptureDevice, done: DispatchSemaphore) {
        if !device.isAdjustingFocus {
            if isAutoExposureAndFocusLock && device.isFocusModeSupported(.locked) {
                sessionQueue.async {
                    do {
                        try device.lockForConfiguration()
                        device.focusMode = .locked
                        device.isSubjectAreaChangeMonitoringEnabled = false
                        device.unlockForConfiguration()
                        DispatchQueue.global().async { self.lockSettingBlock?(true, nil) }
                    } catch {
                        self.lockSettingBlock?(false, error)
                    }
                    done.signal()
                }
                return
            }
        }
        done.signal()
    }

    /// The adjustingExposure observer's body.
    func exposureDidFinish(_ device: CaptureDevice, adjustingExposure: Bool, done: DispatchSemaphore) {
        if !device.isAdjustingExposure {
            if isAutoExposureAndFocusLock && device.isExposureModeSupported(.locked) {
                sessionQueue.async {
                    if adjustingExposure {
                        do {
                            try device.lockForConfiguration()
                            device.exposureMode = .locked
                            device.unlockForConfiguration()
                        } catch {}
                    }
                    done.signal()
                }
                return
            }
        }
        done.signal()
    }
}

@Suite("Seeds 001 and 003: sessions, outputs, switching, locking", .serialized)
struct Seed001And003SessionTests {
    @Test("the frame grabber: an output added, a queue, BGRA or the recommended NV12 by dictionary, then stopped")
    func frameGrabber() throws {
        try withOnlyVirtualCameras {
            let session = CaptureSession()
            if session.canSetSessionPreset(.hd1280x720) {
                session.sessionPreset = .hd1280x720
            } else {
                // Handle the failure.
            }
            let device = CaptureDevice.default(for: .video)!
            let input = try CaptureDeviceInput(device: device)
            if session.canAddInput(input) {
                session.addInput(input)
            } else {
                Issue.record("cannot add the input")
            }
            // Create a VideoDataOutput and add it to the session
            let output = CaptureVideoDataOutput()
            session.addOutput(output)
            // Configure your output.
            let grabber = FrameGrabber()
            let queue = DispatchQueue(label: "myQueue")
            output.setSampleBufferDelegate(grabber, queue: queue)
            // Specify the pixel format
            output.videoSettings = [
                kCVPixelBufferPixelFormatTypeKey as String: NSNumber(value: kCVPixelFormatType_32BGRA)
            ]
            var avCaptureSession: CaptureSession? = session
            avCaptureSession?.startRunning()
            #expect(
                grabber.waitUntil(on: queue) {
                    grabber.lastFormat == kCVPixelFormatType_32BGRA && grabber.lastSize == (1280, 720)
                })

            output.videoSettings = [
                kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            ]
            #expect(
                grabber.waitUntil(on: queue) { grabber.lastFormat == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange })

            // stopVideoCapture
            if let running = avCaptureSession {
                running.stopRunning()
                avCaptureSession = nil
            }
            #expect(!session.isRunning)
        }
    }

    @Test("changeCaptureDevicePosition: swapped input, preset, orientation, mirroring for the front camera")
    func changePosition() throws {
        try withOnlyVirtualCameras([virtualFormats(width: 640), virtualFormats(width: 1280)]) {
            let helper = CameraHelper()
            let grabber = FrameGrabber()
            let queue = DispatchQueue(label: "frames")
            helper.videoDataOutPut.setSampleBufferDelegate(grabber, queue: queue)
            let cameras = CaptureDevice.devices(for: .video)
            let first = try CaptureDeviceInput(device: cameras[0])
            helper.session.addInput(first)
            helper.videoDeviceInput = first
            helper.session.addOutput(helper.videoDataOutPut)
            helper.session.startRunning()
            #expect(grabber.waitUntil(on: queue) { grabber.lastSize == (640, 480) })

            helper.captureSessionPreset = .hd1280x720
            helper.changeCaptureDevicePosition(.front, newVideoDeviceInput: try CaptureDeviceInput(device: cameras[1]))
            #expect(helper.session.isRunning)
            #expect(helper.videoDevice === cameras[1])
            #expect(helper.session.sessionPreset == .hd1280x720)
            let connection = try #require(helper.videoConnection)
            #expect(connection.isVideoMirrored && connection.videoOrientation == .landscapeRight)
            #expect(connection.activeVideoStabilizationMode == .off)
            #expect(grabber.waitUntil(on: queue) { grabber.lastSize == (1280, 720) })
            helper.session.stopRunning()
        }
    }

    @Test("locking focus and exposure once adjusting has finished", arguments: [false, true])
    func lockAfterAdjusting(webcam: Bool) throws {
        let body = {
            let helper = CameraHelper()
            let device = CaptureDevice.default(for: .video)!
            let done = DispatchSemaphore(value: 0)
            helper.focusDidFinish(device, done: done)
            #expect(done.wait(timeout: .now() + 10) == .success)
            helper.exposureDidFinish(device, adjustingExposure: true, done: done)
            #expect(done.wait(timeout: .now() + 10) == .success)
            if device.isFocusModeSupported(.locked) {
                #expect(device.focusMode == .locked)
            }
            if device.isExposureModeSupported(.locked) {
                #expect(device.exposureMode == .locked)
            }
            #expect(!device.isSubjectAreaChangeMonitoringEnabled)
            #expect(device.isFocusModeSupported(.locked) == webcam)
        }
        if webcam { try withSimulatedWebcam(body) } else { withOnlyVirtualCameras(body) }
    }
}
