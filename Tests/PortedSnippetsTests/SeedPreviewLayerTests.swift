// The seeds' preview-layer snippets (seed 001's `initWithSession:`, seed 002's tap-point
// conversion, seed 004's `AVCaptureVideoPreviewLayer(session:)` with `frame = view.bounds`) after
// deleting "AV", plus the one documented change: `view.layer.insertSublayer(previewLayer, ...)`
// becomes a presenter (a `PreviewWindow(layer:)` on a desktop; here frames handed to a closure,
// since tests have no display).
import Dispatch
import Foundation
import Testing
import Viewfinder

@Suite("Seeds 001, 002, 004: the preview layer")
struct SeedPreviewLayerTests {
    @Test("seed 004's preview layer shows the session's frames at the view's bounds")
    func seed004PreviewShowsFrames() throws {
        final class Controller {
            var captureSession: CaptureSession!
            var fileOutput: CaptureMovieFileOutput?
            let view = (bounds: CGRect(x: 0, y: 0, width: 375, height: 667), name: "view")
            let frames = DispatchSemaphore(value: 0)
            var sizes: [String] = []
            var previewLayer: CaptureVideoPreviewLayer!
            let ui = DispatchQueue(label: "ui")
            lazy var presenter = CallbackPreviewPresenter(queue: ui) { [unowned self] frame in
                self.sizes.append("\(frame.width)x\(frame.height)")
                self.frames.signal()
            }

            func start() throws {
                captureSession = CaptureSession()
                let cameraInput = try CaptureDeviceInput(device: CaptureDevice.default(for: .video)!)
                if captureSession.canAddInput(cameraInput) { captureSession.addInput(cameraInput) }
                self.fileOutput = CaptureMovieFileOutput()
                if self.captureSession.canAddOutput(self.fileOutput!) {
                    self.captureSession.addOutput(self.fileOutput!)
                }
                captureSession.startRunning()

                let previewLayer = CaptureVideoPreviewLayer(session: self.captureSession)
                DispatchQueue(label: "main").sync {
                    previewLayer.frame = self.view.bounds
                    // was: self.view.layer.insertSublayer(previewLayer, below: self.btnStart.layer)
                    previewLayer.addPresenter(self.presenter)
                }
                self.previewLayer = previewLayer
            }
        }
        try withOnlyVirtualCameras {
            let controller = Controller()
            try controller.start()
            defer { controller.captureSession.stopRunning() }
            #expect(controller.frames.wait(timeout: .now() + 10) == .success)
            #expect(controller.frames.wait(timeout: .now() + 10) == .success)
            #expect(controller.previewLayer.videoGravity == .resizeAspect)
            controller.captureSession.stopRunning()
            let sizes = controller.ui.sync { controller.sizes }
            #expect(!sizes.isEmpty && sizes.allSatisfy { $0 == "375x667" })
        }
    }

    @Test("seed 001's initWithSession: and seed 002's point conversion (top-left to bottom-right is 0,0 to 1,1)")
    func seed001And002() throws {
        try withOnlyVirtualCameras {
            let captureSession = CaptureSession()
            captureSession.addInput(try CaptureDeviceInput(device: CaptureDevice.default(for: .video)!))
            let captureVideoPreviewLayer = CaptureVideoPreviewLayer(session: captureSession)
            captureVideoPreviewLayer.frame = CGRect(x: 0, y: 0, width: 640, height: 480)
            captureVideoPreviewLayer.videoGravity = .resize
            // Seed 002: the conversions between screen and device coordinates.
            let devicePoint = captureVideoPreviewLayer.captureDevicePointConverted(
                fromLayerPoint: CGPoint(x: 640, y: 480))
            #expect(devicePoint == CGPoint(x: 1, y: 1))
            let layerPoint = captureVideoPreviewLayer.layerPointConverted(fromCaptureDevicePoint: .zero)
            #expect(layerPoint == .zero)
            #expect(captureVideoPreviewLayer.connection?.isVideoMirroringSupported == true)
        }
    }

    @Test("seed 000: no output is needed to show the preview")
    func seed000PreviewNeedsNoOutput() throws {
        try withOnlyVirtualCameras {
            let captureSession = CaptureSession()
            captureSession.addInput(try CaptureDeviceInput(device: CaptureDevice.default(for: .video)!))
            let captureVideoPreviewLayer = CaptureVideoPreviewLayer(session: captureSession)
            captureVideoPreviewLayer.frame = CGRect(x: 0, y: 0, width: 320, height: 240)
            let shown = DispatchSemaphore(value: 0)
            captureVideoPreviewLayer.addPresenter(
                CallbackPreviewPresenter(queue: DispatchQueue(label: "ui")) { _ in shown.signal() })
            captureSession.startRunning()
            defer { captureSession.stopRunning() }
            #expect(captureSession.isRunning && captureSession.outputs.isEmpty)
            #expect(shown.wait(timeout: .now() + 10) == .success)
        }
    }
}
