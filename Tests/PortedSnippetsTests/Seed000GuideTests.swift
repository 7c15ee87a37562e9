// Seed 000: the AVFoundation Programming Guide's capture chapter (Chinese translation), ObjC
// snippets written as the straightforward Swift a user would write, then "AV" deleted.
import Testing
import Viewfinder

/// The guide's "Putting It All Together" delegate: frames as BGRA, 15 fps at most.
final class GuideFrameHandler: NSObject, CaptureVideoDataOutputSampleBufferDelegate {
    var sizes: [(Int, Int)] = []
    var formats: [OSType] = []
    var timestamps: [MediaTime] = []
    let arrived = DispatchSemaphore(value: 0)

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        // imageFromSampleBuffer(sampleBuffer): the Core Video calls it makes.
        guard let imageBuffer = SampleBufferGetImageBuffer(sampleBuffer) else { return }
        PixelBufferLockBaseAddress(imageBuffer, .readOnly)
        let width = PixelBufferGetWidth(imageBuffer)
        let height = PixelBufferGetHeight(imageBuffer)
        _ = PixelBufferGetBaseAddress(imageBuffer)
        PixelBufferUnlockBaseAddress(imageBuffer, .readOnly)
        sizes.append((width, height))
        formats.append(PixelBufferGetPixelFormatType(imageBuffer))
        timestamps.append(SampleBufferGetPresentationTimeStamp(sampleBuffer))
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

    func wait(for count: Int) -> Bool {
        (0..<count).allSatisfy { _ in arrived.wait(timeout: .now() + 10) == .success }
    }
}

@Suite("Seed 000: the Programming Guide's capture snippets", .serialized)
struct Seed000GuideTests {
    @Test("a session with an input and an output runs, and stops")
    func sessionRuns() throws {
        try withOnlyVirtualCameras {
            let session = CaptureSession()
            // Add inputs and outputs.
            let input = try CaptureDeviceInput(device: CaptureDevice.default(for: .video)!)
            session.addInput(input)
            session.addOutput(CaptureVideoDataOutput())
            session.startRunning()
            #expect(session.isRunning)
            session.stopRunning()
            #expect(!session.isRunning)
        }
    }

    @Test("canSetSessionPreset / sessionPreset, and begin/commitConfiguration switching cameras while running")
    func presetAndSwitching() throws {
        try withOnlyVirtualCameras([virtualFormats(width: 1280), virtualFormats(width: 640)]) {
            let devices = CaptureDevice.devices(for: .video)
            let frontFacingCameraDeviceInput = try CaptureDeviceInput(device: devices[0])
            let backFacingCameraDeviceInput = try CaptureDeviceInput(device: devices[1])
            let session = CaptureSession()
            session.addInput(frontFacingCameraDeviceInput)
            if session.canSetSessionPreset(.hd1280x720) {
                session.sessionPreset = .hd1280x720
            } else {
                Issue.record("the virtual camera offers 1280x720")
            }
            let handler = GuideFrameHandler()
            let output = CaptureVideoDataOutput()
            let queue = DispatchQueue(label: "guide")
            output.setSampleBufferDelegate(handler, queue: queue)
            session.addOutput(output)
            session.startRunning()
            #expect(handler.waitUntil(on: queue) { handler.sizes.last! == (1280, 720) })

            session.beginConfiguration()
            session.removeInput(frontFacingCameraDeviceInput)
            session.addInput(backFacingCameraDeviceInput)
            session.sessionPreset = .vga640x480  // Reset the preset.
            session.commitConfiguration()
            #expect(handler.waitUntil(on: queue) { handler.sizes.last! == (640, 480) })
            session.stopRunning()
        }
    }

    @Test("listing devices with their position; finding torch devices that support 640x480")
    func devicesAndTorch() {
        withOnlyVirtualCameras {
            var log: [String] = []
            let devices = CaptureDevice.devices()
            for device in devices {
                log.append("Device name: \(device.localizedName)")
                if device.hasMediaType(.video) {
                    if device.position == .back {
                        log.append("Device position : back")
                    } else {
                        log.append("Device position : front")
                    }
                }
            }
            #expect(log == ["Device name: Virtual Camera 0", "Device position : front"])

            var torchDevices: [CaptureDevice] = []
            for device in CaptureDevice.devices(for: .video) {
                if device.hasTorch && device.supportsSessionPreset(.vga640x480) {
                    torchDevices.append(device)
                }
            }
            #expect(torchDevices.isEmpty)  // no Linux camera here has a torch
            #expect(CaptureDevice.devices(for: .video).allSatisfy { $0.supportsSessionPreset(.vga640x480) })
        }
    }

    @Test("focus and exposure reset to continuous auto at the centre; flash; locking focus", arguments: [false, true])
    func deviceSettings(webcam: Bool) throws {
        let body = {
            let currentDevice = CaptureDevice.default(for: .video)!
            let device = currentDevice
            try currentDevice.lockForConfiguration()
            if currentDevice.isFocusModeSupported(.continuousAutoFocus) {
                let autofocusPoint = CGPoint(x: 0.5, y: 0.5)
                currentDevice.focusPointOfInterest = autofocusPoint
                currentDevice.focusMode = .continuousAutoFocus
            }
            if currentDevice.isExposureModeSupported(.continuousAutoExposure) {
                let exposurePoint = CGPoint(x: 0.5, y: 0.5)
                currentDevice.exposurePointOfInterest = exposurePoint
                currentDevice.exposureMode = .continuousAutoExposure
            }
            currentDevice.unlockForConfiguration()
            #expect(currentDevice.isFocusModeSupported(.continuousAutoFocus) == webcam)
            if webcam {
                #expect(currentDevice.focusMode == .continuousAutoFocus)
                #expect(currentDevice.exposureMode == .continuousAutoExposure)
            }
            #expect(currentDevice.focusPointOfInterest == CGPoint(x: 0.5, y: 0.5))

            var flashModes: [CaptureDevice.FlashMode] = []
            if device.hasFlash && device.isFlashModeSupported(.auto) { flashModes.append(.auto) }
            #expect(flashModes.isEmpty)

            if device.isFocusModeSupported(.locked) {
                do {
                    try device.lockForConfiguration()
                    device.focusMode = .locked
                    device.unlockForConfiguration()
                } catch {
                    // Respond to the failure as appropriate.
                    Issue.record(error)
                }
                #expect(device.focusMode == .locked)
            }
            #expect(device.isFocusModeSupported(.locked) == webcam)
            #expect(!device.isLockedForConfiguration)
        }
        if webcam { try withSimulatedWebcam(body) } else { try withOnlyVirtualCameras(body) }
    }

    @Test("the video data output: BGRA by dictionary, late frames discarded, a serial queue, 15 fps, the medium preset")
    func putTogether() throws {
        withOnlyVirtualCameras {
            let session = CaptureSession()
            session.sessionPreset = .medium
            let device = CaptureDevice.default(for: .video)!
            let input: CaptureDeviceInput
            do {
                input = try CaptureDeviceInput(device: device)
            } catch {
                Issue.record(error)  // Handle the error appropriately.
                return
            }
            session.addInput(input)

            let output = CaptureVideoDataOutput()
            session.addOutput(output)
            output.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA]
            output.minFrameDuration = MediaTimeMake(value: 1, timescale: 15)
            output.alwaysDiscardsLateVideoFrames = true
            let handler = GuideFrameHandler()
            let queue = DispatchQueue(label: "MyQueue")
            output.setSampleBufferDelegate(handler, queue: queue)

            let deviceAuthorized = Box<Bool?>(nil)
            let answered = DispatchSemaphore(value: 0)
            let mediaType = MediaType.video
            CaptureDevice.requestAccess(for: mediaType) { granted in
                if granted {
                    // Granted access to mediaType
                    deviceAuthorized.value = true
                } else {
                    // Not granted access to mediaType
                    deviceAuthorized.value = false
                }
                answered.signal()
            }
            #expect(answered.wait(timeout: .now() + 10) == .success)
            #expect(deviceAuthorized.value == true)

            session.startRunning()
            #expect(handler.wait(for: 4))
            session.stopRunning()
            #expect(handler.formats.allSatisfy { $0 == kCVPixelFormatType_32BGRA })
            #expect(handler.sizes.allSatisfy { $0 == (640, 480) })
            let gaps = zip(handler.timestamps.dropFirst(), handler.timestamps).map { MediaTimeGetSeconds($0 - $1) }
            #expect(gaps.allSatisfy { $0 >= 1.0 / 15 * 0.96 })
        }
    }

    @Test("the connection's orientation, and finding the connection that carries video")
    func connections() throws {
        try withOnlyVirtualCameras {
            let session = CaptureSession()
            session.addInput(try CaptureDeviceInput(device: CaptureDevice.default(for: .video)!))
            let stillImageOutput = CaptureVideoDataOutput()
            if session.canAddOutput(stillImageOutput) {
                session.addOutput(stillImageOutput)
            }
            var videoConnection: CaptureConnection? = nil
            for connection in stillImageOutput.connections {
                for port in connection.inputPorts {
                    if port.mediaType == .video {
                        videoConnection = connection
                        break
                    }
                }
                if videoConnection != nil { break }
            }
            let captureConnection = try #require(videoConnection)
            if captureConnection.isVideoOrientationSupported {
                let orientation = CaptureVideoOrientation.landscapeLeft
                captureConnection.videoOrientation = orientation
            }
            #expect(captureConnection.videoRotationAngle == 180)
        }
    }

    @Test("runtime errors arrive as CaptureSessionRuntimeError with the error under CaptureSessionErrorKey")
    func runtimeErrorNotification() {
        let session = CaptureSession()
        let counter = NotificationCounter(.CaptureSessionRuntimeError, object: session)
        let codes = Box<[CaptureError.Code]>([])
        let token = NotificationCenter.default.addObserver(
            forName: .CaptureSessionRuntimeError, object: session, queue: nil
        ) { notification in
            let error = notification.userInfo?[CaptureSessionErrorKey] as? Error
            if let code = (error as? CaptureError)?.code { codes.value.append(code) }
        }
        session.startRunning()  // no inputs
        #expect(counter.wait().count == 1)
        #expect(codes.value == [.noInputs])
        #expect(!session.isRunning && !session.isInterrupted)
        NotificationCenter.default.removeObserver(token)
        // Device list changes: observed under AVFoundation's names.
        #expect(Notification.Name.CaptureDeviceWasConnected == CaptureDevice.wasConnectedNotification)
        #expect(Notification.Name.CaptureDeviceWasDisconnected == CaptureDevice.wasDisconnectedNotification)
    }
}
