// AVCam's PhotoCaptureProcessor and its capturePhoto code, after deleting "AV" only, compiled in
// Swift 6 language mode (this target's; the other snippets are Swift 5): a delegate class with
// plain mutable state compiles because no delegate protocol requires `Sendable`, and works
// because the output calls one delegate on one serial queue. (Its Live Photo, depth and
// semantic-matte branches are left out: no Linux camera has them, and the properties that say
// so read `false`.)
import Foundation
import Testing
import Viewfinder

final class PhotoCaptureProcessor: NSObject {
    private(set) var requestedPhotoSettings: CapturePhotoSettings
    private let willCapturePhotoAnimation: () -> Void
    private let completionHandler: (PhotoCaptureProcessor) -> Void
    private let photoProcessingHandler: (Bool) -> Void
    private(set) var photoData: Data?
    private(set) var events: [String] = []

    init(
        with requestedPhotoSettings: CapturePhotoSettings, willCapturePhotoAnimation: @escaping () -> Void,
        completionHandler: @escaping (PhotoCaptureProcessor) -> Void,
        photoProcessingHandler: @escaping (Bool) -> Void
    ) {
        self.requestedPhotoSettings = requestedPhotoSettings
        self.willCapturePhotoAnimation = willCapturePhotoAnimation
        self.completionHandler = completionHandler
        self.photoProcessingHandler = photoProcessingHandler
    }
}

extension PhotoCaptureProcessor: CapturePhotoCaptureDelegate {
    // This extension adopts all of the CapturePhotoCaptureDelegate protocol methods.

    /// - Tag: WillBeginCapture
    func photoOutput(_ output: CapturePhotoOutput, willBeginCaptureFor resolvedSettings: CaptureResolvedPhotoSettings) {
        events.append("willBegin")
    }

    /// - Tag: WillCapturePhoto
    func photoOutput(_ output: CapturePhotoOutput, willCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings) {
        events.append("willCapture")
        willCapturePhotoAnimation()
    }

    /// - Tag: DidFinishProcessingPhoto
    func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: Error?) {
        events.append("didFinishProcessing")
        photoProcessingHandler(false)
        if let error = error {
            print("Error capturing photo: \(error)")
            return
        } else {
            photoData = photo.fileDataRepresentation()
        }
    }

    /// - Tag: DidFinishCapture
    func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings, error: Error?
    ) {
        events.append("didFinishCapture")
        if let error = error {
            print("Error capturing photo: \(error)")
        }
        guard photoData != nil else {
            print("No photo data resource")
            completionHandler(self)
            return
        }
        completionHandler(self)
    }
}

@Suite("AVCam: the photo capture processor (Swift 6 mode)", .serialized)
struct AVCamPhotoCaptureProcessorTests {
    @Test("two photos, each processor with its own mutable state, complete in order")
    func capturesWithProcessors() throws {
        let camera = VirtualCamera()
        let session = CaptureSession()
        session.addInput(try CaptureDeviceInput(device: camera.device))
        let photoOutput = CapturePhotoOutput()
        session.addOutput(photoOutput)
        photoOutput.maxPhotoQualityPrioritization = .quality
        session.startRunning()
        defer { session.stopRunning() }

        // AVCam's capturePhoto(_:), minus the session queue (its closures capture `self`, which
        // Swift 6 refuses for DispatchQueue.async whatever the capture API; not Viewfinder's).
        let completed = DispatchSemaphore(value: 0)
        var inProgressPhotoCaptureDelegates = [Int64: PhotoCaptureProcessor]()
        var animations = 0
        for _ in 0..<2 {
            var photoSettings = CapturePhotoSettings()
            // Capture HEIF photos when supported.
            if photoOutput.availablePhotoCodecTypes.contains(.hevc) {
                photoSettings = CapturePhotoSettings(format: [VideoCodecKey: VideoCodecType.hevc])
            }
            photoSettings.maxPhotoDimensions = photoOutput.maxPhotoDimensions
            photoSettings.photoQualityPrioritization = photoOutput.maxPhotoQualityPrioritization
            let photoCaptureProcessor = PhotoCaptureProcessor(
                with: photoSettings, willCapturePhotoAnimation: { animations += 1 },
                completionHandler: { _ in completed.signal() }, photoProcessingHandler: { _ in })
            // The photo output holds a weak reference to the photo capture delegate and stores
            // it in an array to maintain a strong reference.
            inProgressPhotoCaptureDelegates[photoCaptureProcessor.requestedPhotoSettings.uniqueID] =
                photoCaptureProcessor
            photoOutput.capturePhoto(with: photoSettings, delegate: photoCaptureProcessor)
        }
        #expect(completed.wait(timeout: .now() + 10) == .success)
        #expect(completed.wait(timeout: .now() + 10) == .success)
        #expect(inProgressPhotoCaptureDelegates.count == 2)
        for processor in inProgressPhotoCaptureDelegates.values {
            #expect(processor.events == ["willBegin", "willCapture", "didFinishProcessing", "didFinishCapture"])
            let jpeg = try #require(processor.photoData)
            #expect(jpeg.starts(with: [0xFF, 0xD8]), "a JPEG")
            #expect(processor.requestedPhotoSettings.photoQualityPrioritization == .quality)
        }
        #expect(animations == 2)
    }
}
