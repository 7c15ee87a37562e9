// Issue 39's porting corpus, continued: two classes written (for this project) in the patterns
// public iOS capture code uses — a document camera that asks for a preview and an EXIF thumbnail,
// turns the photo into a CGImage and crops the page out of it, and a scanner that reads codes in
// step with the video frames through a data output synchronizer — with "AV" deleted and nothing
// else changed (Swift 5 mode, as apps are; the app's `UIImage(cgImage:)` lines are left out).
// They run on the virtual camera.
import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderCore
@testable import ViewfinderTesting

// MARK: A document camera

/// Takes a photo with a preview and an embedded thumbnail, and keeps the page cropped out of it.
final class DocumentCamera: NSObject, CapturePhotoCaptureDelegate {
    let session = CaptureSession()
    let photoOutput = CapturePhotoOutput()
    let done = DispatchSemaphore(value: 0)
    private(set) var page: CGImage?
    private(set) var previewSize: (Int, Int)?
    private(set) var thumbnailFormat: [String: Any]?
    private(set) var photoSize: (Int, Int)?

    func configure() throws {
        session.beginConfiguration()
        session.sessionPreset = .photo
        let camera = CaptureDevice.default(for: .video)!
        let input = try CaptureDeviceInput(device: camera)
        if session.canAddInput(input) { session.addInput(input) }
        if session.canAddOutput(photoOutput) { session.addOutput(photoOutput) }
        session.commitConfiguration()
    }

    func capture() {
        let settings = CapturePhotoSettings(format: [VideoCodecKey: VideoCodecType.jpeg])
        if let previewType = settings.availablePreviewPhotoPixelFormatTypes.first {
            settings.previewPhotoFormat = [
                kCVPixelBufferPixelFormatTypeKey as String: previewType,
                kCVPixelBufferWidthKey as String: 320,
                kCVPixelBufferHeightKey as String: 320,
            ]
        }
        if settings.availableEmbeddedThumbnailPhotoCodecTypes.contains(.jpeg) {
            settings.embeddedThumbnailPhotoFormat = [
                VideoCodecKey: VideoCodecType.jpeg,
                VideoWidthKey: 240,
                VideoHeightKey: 240,
            ]
        }
        photoOutput.capturePhoto(with: settings, delegate: self)
    }

    func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: Error?) {
        defer { done.signal() }
        if let error = error {
            print("Error capturing photo: \(error)")
            return
        }
        guard let cgImage = photo.cgImageRepresentation() else { return }
        photoSize = (cgImage.width, cgImage.height)
        if let preview = photo.previewCGImageRepresentation() {
            previewSize = (preview.width, preview.height)
        }
        thumbnailFormat = photo.embeddedThumbnailPhotoFormat
        // The page: the middle half of the picture, as a crop rectangle in pixels.
        let width = CGFloat(cgImage.width)
        let height = CGFloat(cgImage.height)
        let pageRect = CGRect(x: width / 4, y: height / 4, width: width / 2, height: height / 2)
        page = cgImage.cropping(to: pageRect)
    }
}

// MARK: A synchronized scanner

/// Reads codes in step with the video frames: each synchronized collection pairs a frame with
/// the codes found in it.
final class SynchronizedScanner: NSObject, CaptureDataOutputSynchronizerDelegate {
    let session = CaptureSession()
    let videoOutput = CaptureVideoDataOutput()
    let metadataOutput = CaptureMetadataOutput()
    var synchronizer: CaptureDataOutputSynchronizer?
    let queue = DispatchQueue(label: "scanner.sync")
    private(set) var frames: [(time: MediaTime, codes: [String])] = []

    func configure() throws {
        session.beginConfiguration()
        let camera = CaptureDevice.default(for: .video)!
        let input = try CaptureDeviceInput(device: camera)
        guard session.canAddInput(input) else { return }
        session.addInput(input)
        videoOutput.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA]
        if session.canAddOutput(videoOutput) { session.addOutput(videoOutput) }
        if session.canAddOutput(metadataOutput) { session.addOutput(metadataOutput) }
        if metadataOutput.availableMetadataObjectTypes.contains(.qr) {
            metadataOutput.metadataObjectTypes = [.qr]
        }
        session.commitConfiguration()
        synchronizer = CaptureDataOutputSynchronizer(dataOutputs: [videoOutput, metadataOutput])
        synchronizer?.setDelegate(self, queue: queue)
    }

    func dataOutputSynchronizer(
        _ synchronizer: CaptureDataOutputSynchronizer,
        didOutput synchronizedDataCollection: CaptureSynchronizedDataCollection
    ) {
        guard
            let syncedVideo = synchronizedDataCollection.synchronizedData(for: videoOutput)
                as? CaptureSynchronizedSampleBufferData, !syncedVideo.sampleBufferWasDropped
        else { return }
        var codes: [String] = []
        if let syncedMetadata = synchronizedDataCollection.synchronizedData(for: metadataOutput)
            as? CaptureSynchronizedMetadataObjectData
        {
            for case let code as MetadataMachineReadableCodeObject in syncedMetadata.metadataObjects {
                if let value = code.stringValue { codes.append(value) }
            }
        }
        frames.append((syncedVideo.timestamp, codes))
    }
}

@Suite("Issue 39 corpus: a document camera's CGImage, a synchronized scanner", .serialized)
struct Issue39PhotoCorpusTests {
    @Test("the document camera gets the photo as a CGImage, its preview and thumbnail, and crops the page")
    func documentCamera() throws {
        let clock = ManualClock()
        try withVirtualCameraAndMicrophone(clock: clock) {
            let camera = DocumentCamera()
            try camera.configure()
            camera.session.startRunning()
            #expect(clock.waitUntilSleeping())
            camera.capture()
            clock.advance(by: MediaTime(value: 1, timescale: 30))
            #expect(camera.done.wait(timeout: .now() + 30) == .success)
            camera.session.stopRunning()
            #expect(camera.photoSize.map { [$0.0, $0.1] } == [640, 480])
            #expect(camera.previewSize.map { [$0.0, $0.1] } == [320, 240])
            #expect(camera.thumbnailFormat?[VideoWidthKey] as? Int == 240)
            #expect(camera.thumbnailFormat?[VideoHeightKey] as? Int == 180)
            let page = try #require(camera.page)
            #expect(page.width == 320 && page.height == 240)
        }
    }

    @Test("the synchronized scanner pairs every frame with the codes found in it (none in the test pattern)")
    func synchronizedScanner() throws {
        let clock = ManualClock()
        try withVirtualCameraAndMicrophone(clock: clock) {
            let scanner = SynchronizedScanner()
            try scanner.configure()
            scanner.session.startRunning()
            #expect(clock.waitUntilSleeping())
            for _ in 0..<4 {
                clock.advance(by: MediaTime(value: 1, timescale: 30))
                #expect(clock.waitUntilSleeping())
                #expect(scanner.videoOutput.waitUntilDelivered(timeout: 30))
                #expect(scanner.metadataOutput.waitUntilDelivered(timeout: 30))
            }
            scanner.session.stopRunning()
            scanner.queue.sync {}
            #expect(scanner.frames.count >= 3)
            #expect(scanner.frames.allSatisfy { $0.codes.isEmpty })
            let times = scanner.frames.map(\.time)
            #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
        }
    }
}
