// Seeds 002 (an iOS camera controller: audio session, authorization, session setup) and 004 (a
// Swift recorder: camera input, session, prepareCapture on a serial queue). Swift snippets
// after the mechanical rename; ObjC written as the Swift a user would write.
import Testing
import Viewfinder

@Suite("Seeds 002 and 004: controllers and recorders", .serialized)
struct Seed002And004ControllerTests {
    @Test("seed 002's audio session finds no microphone here and returns before adding anything")
    func audioSession() {
        withOnlyVirtualCameras {
            // Create the capture session.
            let captureSession = CaptureSession()
            func configure() {
                // Find the default audio device.
                guard let audioDevice = CaptureDevice.default(for: .audio) else { return }
                do {
                    // Wrap the audio device in a capture device input.
                    let audioInput = try CaptureDeviceInput(device: audioDevice)
                    // If the input can be added, add it to the session.
                    if captureSession.canAddInput(audioInput) {
                        captureSession.addInput(audioInput)
                    }
                } catch {
                    // Configuration failed. Handle error.
                }
            }
            configure()
            #expect(captureSession.inputs.count == (CaptureDevice.default(for: .audio) == nil ? 0 : 1))
        }
    }

    @Test("seed 002's authorization check: authorized from the device nodes, no prompt")
    func authorization() {
        withOnlyVirtualCameras {
            var granted = false
            func ifAVAuthorizationValid(_ targetAVMediaType: MediaType, grantedCallback: @escaping () -> Void) -> Bool {
                let mediaType = targetAVMediaType
                var result = false
                let authStatus = CaptureDevice.authorizationStatus(for: mediaType)
                switch authStatus {
                case .notDetermined:  // 尚未请求授权
                    CaptureDevice.requestAccess(for: targetAVMediaType) { granted in
                        DispatchQueue.main.async {
                            if granted { grantedCallback() }
                        }
                    }
                case .denied:  // 明确拒绝
                    break
                case .restricted:  // 限制权限更改
                    break
                case .authorized:  // 已授权
                    result = true
                @unknown default:  // 兜底
                    break
                }
                return result
            }
            #expect(ifAVAuthorizationValid(.video) { granted = true })
            #expect(!granted)  // authorized already: nothing was requested
        }
    }

    @Test("seed 002's setupSession, startSession and stopSession on a serial queue")
    func cameraController() throws {
        try withOnlyVirtualCameras {
            final class CameraController {
                var captureSession: CaptureSession!
                var activeVideoInput: CaptureDeviceInput?
                var videoQueue: DispatchQueue!
                let output = CaptureVideoDataOutput()

                func setupSession() throws -> Bool {
                    captureSession = CaptureSession()
                    captureSession.sessionPreset = .high
                    guard let videoDevice = CaptureDevice.default(for: .video) else { return false }
                    let videoInput = try CaptureDeviceInput(device: videoDevice)
                    if captureSession.canAddInput(videoInput) {
                        captureSession.addInput(videoInput)
                        activeVideoInput = videoInput
                    }
                    if let audioDevice = CaptureDevice.default(for: .audio) {
                        let audioInput = try CaptureDeviceInput(device: audioDevice)
                        if captureSession.canAddInput(audioInput) {
                            captureSession.addInput(audioInput)
                        }
                    }
                    if captureSession.canAddOutput(output) {
                        captureSession.addOutput(output)
                    }
                    videoQueue = DispatchQueue(label: "com.kongyulu.VideoQueue")
                    return true
                }

                func startSession() {
                    if !captureSession.isRunning {
                        videoQueue.async { self.captureSession.startRunning() }
                    }
                }

                func stopSession() {
                    if captureSession.isRunning {
                        videoQueue.async { self.captureSession.stopRunning() }
                    }
                }
            }
            let controller = CameraController()
            let isSetUp = try controller.setupSession()
            #expect(isSetUp)
            let started = NotificationCounter(.CaptureSessionDidStartRunning, object: controller.captureSession)
            let stopped = NotificationCounter(.CaptureSessionDidStopRunning, object: controller.captureSession)
            controller.startSession()
            #expect(started.wait().count == 1)
            #expect(controller.captureSession.sessionPreset == .high)
            controller.stopSession()
            #expect(stopped.wait().count == 1)
            #expect(!controller.captureSession.isRunning)
        }
    }

    @Test("seed 004's setupCameraInput, setupCaptureSession and prepareCapture on a serial queue")
    func recorder() throws {
        final class Recorder {
            var captureSession: CaptureSession!
            let serialQ = DispatchQueue(label: "com.wenyongyang.createCaptureSession")

            func setupCameraInput() throws -> CaptureDeviceInput {
                let cameraDevice = CaptureDevice.default(for: .video)

                do {
                    let cameraInput = try CaptureDeviceInput(device: cameraDevice!)
                    return cameraInput
                } catch {
                    throw error
                }
            }

            // setupMicInput() is left out: it force-unwraps `CaptureDevice.default(for: .audio)`,
            // and this machine's registry has no microphone provider yet.

            func setupCaptureSession(camera: CaptureDeviceInput) throws -> CaptureSession {
                let captureSession = CaptureSession()
                if captureSession.canAddInput(camera) {
                    captureSession.addInput(camera)
                }
                return captureSession
            }

            func prepareCapture(completion: @escaping (Bool, CaptureSession?, Error?) -> Void) {
                // The device lookup happens on the caller's thread here (task-local registry);
                // the session setup runs on the serial queue as in the seed.
                let camera = Result { try self.setupCameraInput() }
                serialQ.async { [unowned self] in
                    do {
                        let captureSession = try self.setupCaptureSession(camera: camera.get())
                        completion(true, captureSession, nil)
                    } catch {
                        completion(false, nil, error)
                    }
                }
            }
        }
        try withOnlyVirtualCameras {
            let recorder = Recorder()
            let done = DispatchSemaphore(value: 0)
            let result = Box<(Bool, CaptureSession?, Error?)?>(nil)
            recorder.prepareCapture { success, session, error in
                result.value = (success, session, error)
                done.signal()
            }
            #expect(done.wait(timeout: .now() + 10) == .success)
            let outcome = result.value
            let (success, session, error) = try #require(outcome)
            #expect(success && error == nil)
            guard let session = session else { return }
            recorder.captureSession = session
            let output = CaptureVideoDataOutput()
            if recorder.captureSession.canAddOutput(output) {
                recorder.captureSession.addOutput(output)
            }
            recorder.captureSession.startRunning()
            #expect(recorder.captureSession.isRunning)
            recorder.serialQ.sync {
                if !recorder.captureSession.isRunning { recorder.captureSession.startRunning() }
                recorder.captureSession.stopRunning()
            }
            #expect(!recorder.captureSession.isRunning)
        }
    }
}
