// AVCam's session handling (Apple's sample: configureSession, addObservers, focus(with:…)), after
// deleting "AV" only. Two lines change, each as the README's porting table says: the
// `#selector` observers become block observers (no Objective-C runtime on Linux), and the
// interruption reason is read with `as? CaptureSession.InterruptionReason` instead of through
// `AnyObject`'s `integerValue`.
import Foundation
import Testing
import Viewfinder

/// AVCam's session manager: a session on its own queue, key-value observations kept in an
/// array, notification observers, tap-to-focus.
final class SessionManager: NSObject {
    let session = CaptureSession()
    private let sessionQueue = DispatchQueue(label: "session queue")
    private(set) var videoDeviceInput: CaptureDeviceInput!
    let photoOutput = CapturePhotoOutput()
    private var keyValueObservations = [NSKeyValueObservation]()
    private var notificationTokens = [NSObjectProtocol]()

    // What the observers saw, read by the test under `lock`.
    let lock = NSCondition()
    var runningChanges: [Bool] = []
    var interruptions: [CaptureSession.InterruptionReason] = []
    var interruptionEnded = 0
    var pressureLevels: [CaptureDevice.SystemPressureState.Level] = []
    var livePhotoSupported: [Bool] = []
    var focusPoints: [CGPoint] = []

    func configureSession() {
        sessionQueue.sync {
            session.beginConfiguration()
            session.sessionPreset = .photo
            do {
                var defaultVideoDevice: CaptureDevice?
                if let dualCameraDevice = CaptureDevice.default(.builtInDualCamera, for: .video, position: .back) {
                    defaultVideoDevice = dualCameraDevice
                } else if let backCameraDevice = CaptureDevice.default(
                    .builtInWideAngleCamera, for: .video, position: .back)
                {
                    defaultVideoDevice = backCameraDevice
                } else if let frontCameraDevice = CaptureDevice.default(
                    .builtInWideAngleCamera, for: .video, position: .front)
                {
                    defaultVideoDevice = frontCameraDevice
                }
                guard let videoDevice = defaultVideoDevice else {
                    print("Default video device is unavailable.")
                    session.commitConfiguration()
                    return
                }
                let videoDeviceInput = try CaptureDeviceInput(device: videoDevice)
                if session.canAddInput(videoDeviceInput) {
                    session.addInput(videoDeviceInput)
                    self.videoDeviceInput = videoDeviceInput
                }
            } catch {
                print("Couldn't create video device input: \(error)")
            }
            if session.canAddOutput(photoOutput) {
                session.addOutput(photoOutput)
                photoOutput.isLivePhotoCaptureEnabled = photoOutput.isLivePhotoCaptureSupported
                photoOutput.maxPhotoQualityPrioritization = .quality
            }
            session.commitConfiguration()
        }
    }

    func addObservers() {
        let keyValueObservation = session.observe(\.isRunning, options: .new) { _, change in
            guard let isSessionRunning = change.newValue else { return }
            self.record { $0.runningChanges.append(isSessionRunning) }
        }
        keyValueObservations.append(keyValueObservation)

        let systemPressureStateObservation = videoDeviceInput.device.observe(
            \.systemPressureState, options: [.initial, .new]
        ) { _, change in
            guard let systemPressureState = change.newValue else { return }
            self.record { $0.pressureLevels.append(systemPressureState.level) }
        }
        keyValueObservations.append(systemPressureStateObservation)

        let livePhotoObservation = photoOutput.observe(\.isLivePhotoCaptureSupported, options: [.initial, .new]) {
            _, change in
            guard let supported = change.newValue else { return }
            self.record { $0.livePhotoSupported.append(supported) }
        }
        keyValueObservations.append(livePhotoObservation)

        let focusObservation = videoDeviceInput.device.observe(\.focusPointOfInterest, options: .new) { _, change in
            guard let point = change.newValue else { return }
            self.record { $0.focusPoints.append(point) }
        }
        keyValueObservations.append(focusObservation)

        // AVCam: addObserver(self, selector: #selector(sessionWasInterrupted), name: …, object: session)
        notificationTokens.append(
            NotificationCenter.default.addObserver(forName: .CaptureSessionWasInterrupted, object: session, queue: nil)
            {
                notification in self.sessionWasInterrupted(notification: notification)
            })
        notificationTokens.append(
            NotificationCenter.default.addObserver(
                forName: .CaptureSessionInterruptionEnded, object: session, queue: nil
            ) { notification in self.sessionInterruptionEnded(notification: notification) })
        notificationTokens.append(
            NotificationCenter.default.addObserver(
                forName: .CaptureDeviceSubjectAreaDidChange, object: videoDeviceInput.device, queue: nil
            ) { notification in self.subjectAreaDidChange(notification: notification) })
    }

    func removeObservers() {
        for token in notificationTokens { NotificationCenter.default.removeObserver(token) }
        for keyValueObservation in keyValueObservations { keyValueObservation.invalidate() }
        keyValueObservations.removeAll()
    }

    func sessionWasInterrupted(notification: Notification) {
        if let reason = notification.userInfo?[CaptureSessionInterruptionReasonKey]
            as? CaptureSession.InterruptionReason
        {
            print("Capture session was interrupted with reason \(reason)")
            record { $0.interruptions.append(reason) }
        }
    }

    func sessionInterruptionEnded(notification: Notification) {
        print("Capture session interruption ended")
        record { $0.interruptionEnded += 1 }
    }

    func subjectAreaDidChange(notification: Notification) {
        let devicePoint = CGPoint(x: 0.5, y: 0.5)
        focus(
            with: .continuousAutoFocus, exposureMode: .continuousAutoExposure, at: devicePoint,
            monitorSubjectAreaChange: false)
    }

    func focus(
        with focusMode: CaptureDevice.FocusMode, exposureMode: CaptureDevice.ExposureMode, at devicePoint: CGPoint,
        monitorSubjectAreaChange: Bool
    ) {
        sessionQueue.async {
            let device = self.videoDeviceInput.device
            do {
                try device.lockForConfiguration()
                // Setting (focus/exposure)PointOfInterest alone does not initiate a (focus/exposure) operation.
                // Call set(Focus/Exposure)Mode() to apply the new point of interest.
                if device.isFocusPointOfInterestSupported && device.isFocusModeSupported(focusMode) {
                    device.focusPointOfInterest = devicePoint
                    device.focusMode = focusMode
                } else if device.isFocusPointOfInterestSupported {
                    device.focusPointOfInterest = devicePoint
                }
                if device.isExposurePointOfInterestSupported && device.isExposureModeSupported(exposureMode) {
                    device.exposurePointOfInterest = devicePoint
                    device.exposureMode = exposureMode
                } else if device.isExposurePointOfInterestSupported {
                    device.exposurePointOfInterest = devicePoint
                }
                device.isSubjectAreaChangeMonitoringEnabled = monitorSubjectAreaChange
                device.unlockForConfiguration()
            } catch {
                print("Could not lock device for configuration: \(error)")
            }
        }
    }

    func start() { sessionQueue.sync { session.startRunning() } }
    func stop() { sessionQueue.sync { session.stopRunning() } }
    /// Waits until the session queue ran everything queued so far.
    func drain() { sessionQueue.sync {} }

    private func record(_ change: (SessionManager) -> Void) {
        lock.lock()
        change(self)
        lock.broadcast()
        lock.unlock()
    }

    /// Waits until `condition` holds for what the observers saw.
    func wait(_ condition: (SessionManager) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 10)
        lock.lock()
        defer { lock.unlock() }
        while !condition(self) {
            guard lock.wait(until: deadline) else { return condition(self) }
        }
        return true
    }
}

@Suite("AVCam: the session manager (KVO, notifications, tap to focus)", .serialized)
struct AVCamSessionManagerTests {
    @Test("isRunning is observed with KVO; an interruption arrives by notification and ends")
    func observesRunningAndInterruptions() throws {
        try withOnlyVirtualCameras {
            let manager = SessionManager()
            manager.configureSession()
            try #require(manager.videoDeviceInput != nil)
            manager.addObservers()
            manager.start()
            #expect(manager.wait { $0.runningChanges == [true] })

            // Another session takes the camera: at a size the running one cannot give it (the
            // manager's .photo runs 1920x1080), the last to start gets it (iOS's rule; sessions
            // that can run on the running format share it instead).
            let other = CaptureSession()
            other.sessionPreset = .vga640x480
            let otherInput = try CaptureDeviceInput(device: manager.videoDeviceInput.device)
            other.addInput(otherInput)
            let otherOutput = CaptureVideoDataOutput()
            other.addOutput(otherOutput)
            other.startRunning()
            #expect(manager.wait { $0.interruptions == [.videoDeviceInUseByAnotherClient] })
            #expect(manager.session.isInterrupted)
            other.stopRunning()
            #expect(manager.wait { $0.interruptionEnded == 1 })

            manager.stop()
            #expect(manager.wait { $0.runningChanges == [true, false] })
            // Constant properties report their value once, for `.initial`.
            #expect(manager.pressureLevels == [.nominal])
            #expect(manager.livePhotoSupported == [false])
            #expect(manager.photoOutput.maxPhotoQualityPrioritization == .quality)

            // Invalidated observations report nothing more.
            manager.removeObservers()
            manager.start()
            manager.stop()
            #expect(manager.runningChanges == [true, false])
        }
    }

    @Test("a tap on the preview becomes the device's focus and exposure point")
    func tapToFocus() throws {
        try withOnlyVirtualCameras {
            let manager = SessionManager()
            manager.configureSession()
            try #require(manager.videoDeviceInput != nil)
            manager.addObservers()
            defer { manager.removeObservers() }
            let previewLayer = CaptureVideoPreviewLayer(session: manager.session)
            manager.start()
            defer { manager.stop() }
            // A layer of the camera's own shape: device points are layer points over its size.
            let size = manager.videoDeviceInput.device.activeFormat.dimensions
            previewLayer.frame = CGRect(x: 0, y: 0, width: CGFloat(size.width), height: CGFloat(size.height))
            previewLayer.videoGravity = .resizeAspect

            // AVCam's focusAndExposeTap(_:), with the gesture's location given.
            let tap = CGPoint(x: Double(size.width) / 4, y: Double(size.height) * 3 / 4)
            let devicePoint = previewLayer.captureDevicePointConverted(fromLayerPoint: tap)
            manager.focus(with: .autoFocus, exposureMode: .autoExpose, at: devicePoint, monitorSubjectAreaChange: true)
            manager.drain()

            let device = manager.videoDeviceInput.device
            #expect(device.isFocusPointOfInterestSupported, "the virtual camera takes points of interest")
            #expect(
                abs(device.focusPointOfInterest.x - 0.25) < 0.01 && abs(device.focusPointOfInterest.y - 0.75) < 0.01)
            #expect(device.exposurePointOfInterest == device.focusPointOfInterest)
            #expect(device.isSubjectAreaChangeMonitoringEnabled)
            #expect(manager.wait { $0.focusPoints == [device.focusPointOfInterest] }, "KVO saw the new point")
        }
    }
}
