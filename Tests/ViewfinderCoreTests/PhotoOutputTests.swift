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

/// A running session with a virtual camera on a manual clock and a photo output.
private struct PhotoRig {
    let clock = ManualClock()
    let camera: VirtualCamera
    let session = CaptureSession(notificationCenter: NotificationCenter())
    let photos = CapturePhotoOutput()
    let recorder = PhotoRecorder()

    init(
        _ format: CaptureDevice.Format = PhotoTestSupport.format(.nv12VideoRange), video: CaptureVideoDataOutput? = nil
    )
        throws
    {
        camera = VirtualCamera(configuration: .init(clock: clock, formats: [format]))
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        if let video { try session.tryAddOutput(video) }
        try session.tryAddOutput(photos)
        recorder.watch(photos.pipeline.queue)
    }

    /// Starts the session; frame 0 has arrived when it returns.
    func start() {
        session.startRunning()
        #expect(session.isRunning)
        #expect(clock.waitUntilSleeping())
    }

    /// Lets the camera produce its next frame (and waits until it has been handed on).
    func nextFrame() {
        clock.advance(by: .fps(30))
        #expect(clock.waitUntilSleeping())
    }
}

@Suite("Photo output")
struct PhotoOutputTests {
    @Test("the photo is the frame after the request, with its size, EXIF and orientation")
    func photoIsNextFrame() throws {
        let rig = try PhotoRig()
        rig.start()
        rig.nextFrame()
        rig.nextFrame()  // frames 0…2 have arrived
        let settings = CapturePhotoSettings()
        settings.metadata = ["{TIFF}": ["Artist": "Ada"], "{Exif}": ["UserComment": "über"]]  // Image I/O's shape
        rig.photos.capturePhoto(with: settings, delegate: rig.recorder)
        #expect(rig.photos.waitUntilIdle(timeout: 10))
        #expect(rig.recorder.finishedCount == 0, "no frame arrived after the request yet: no photo")
        #expect(rig.recorder.kinds(settings.uniqueID) == [.willBegin])
        rig.nextFrame()  // frame 3
        #expect(rig.recorder.waitForFinished())
        rig.session.stopRunning()

        #expect(rig.recorder.kinds(settings.uniqueID) == PhotoRecorder.expectedOrder)
        #expect(rig.recorder.events.allSatisfy { $0.onOutputQueue })
        let result = try #require(rig.recorder.results(settings.uniqueID).first)
        #expect(result.error == nil)
        let photo = result.photo
        #expect(photo.sequenceNumber == 3)
        #expect(photo.timestamp == MediaTime(value: 3, timescale: 30))
        #expect(photo.photoCount == 1 && photo.pixelBuffer == nil)
        #expect(photo.resolvedSettings.photoDimensions == CaptureDevice.Dimensions(width: 640, height: 480))
        #expect(photo.resolvedSettings.photoCodecType == .jpeg)
        let file = [UInt8](try #require(photo.fileDataRepresentation()))
        #expect(try PhotoTestSupport.patternNumber(file, width: 640, height: 480) == 3)
        let exif = try #require(EXIFWriter.read(from: file))
        #expect(exif.make == "Viewfinder")
        #expect(exif.model == "Test Pattern Camera")
        #expect(exif.pixelWidth == 640 && exif.pixelHeight == 480)
        #expect(exif.orientation == 1)
        #expect(exif.artist == "Ada" && exif.userComment == "über")
        #expect(exif.software == "Viewfinder")
        let date = try #require(exif.dateTimeOriginal)
        #expect(date.count == 19 && date.hasPrefix(String(Calendar.current.component(.year, from: Date()))))
        #expect((photo.metadata["{TIFF}"] as? [String: Any])?["Artist"] as? String == "Ada")
        #expect((photo.metadata["{Exif}"] as? [String: Any])?["PixelXDimension"] as? Int == 640)
        // Image I/O's shape: orientation and size at the top level, nothing else flat.
        #expect(photo.metadata[kCGImagePropertyOrientation] as? Int == 1)
        #expect(photo.metadata[kCGImagePropertyPixelWidth] as? Int == 640)
        #expect(
            (photo.metadata[kCGImagePropertyTIFFDictionary] as? [String: Any])?[kCGImagePropertyTIFFMake] as? String
                == "Viewfinder")
        #expect(photo.metadata["Artist"] == nil && photo.metadata["Make"] == nil)
        #expect(rig.photos.statistics.captured == 1, "the engine saw the photo's frame only")
        #expect(rig.photos.statistics.delivered == 1)
    }

    @Test(
        "orientation comes from the connection's rotation and mirroring; pixels are not turned",
        arguments: [(0.0, false, 1), (90, false, 6), (180, false, 3), (270, false, 8), (90, true, 7), (0, true, 2)])
    func orientation(angle: Double, mirrored: Bool, expected: Int) throws {
        let rig = try PhotoRig()
        let connection = try #require(rig.photos.connection(with: .video))
        try connection.setVideoRotationAngle(angle)
        try connection.setVideoMirrored(mirrored)
        rig.start()
        let settings = CapturePhotoSettings()
        rig.photos.capturePhoto(with: settings, delegate: rig.recorder)
        rig.nextFrame()
        #expect(rig.recorder.waitForFinished())
        rig.session.stopRunning()
        let photo = try #require(rig.recorder.results(settings.uniqueID).first?.photo)
        let file = [UInt8](try #require(photo.fileDataRepresentation()))
        let exif = try #require(EXIFWriter.read(from: file))
        #expect(exif.orientation == expected)
        #expect(exif.pixelWidth == 640 && exif.pixelHeight == 480, "stored unrotated")
        #expect(try PhotoTestSupport.patternNumber(file, width: 640, height: 480) == 1)
    }

    @Test(
        "uncompressed photos in BGRA and NV12, and JPEG, from every camera format",
        arguments: [PixelFormat.nv12VideoRange, .yuyv, .bgra],
        [PixelFormat.bgra, .nv12VideoRange, .nv12FullRange, .mjpeg])
    func formats(camera: PixelFormat, photo: PixelFormat) throws {
        let rig = try PhotoRig(PhotoTestSupport.format(camera))
        rig.start()
        let settings =
            photo == .mjpeg
            ? CapturePhotoSettings(format: [VideoCodecKey: VideoCodecType.jpeg, VideoQualityKey: 0.8])
            : CapturePhotoSettings(format: [kCVPixelBufferPixelFormatTypeKey: photo.rawValue])
        rig.photos.capturePhoto(with: settings, delegate: rig.recorder)
        rig.nextFrame()
        #expect(rig.recorder.waitForFinished())
        rig.session.stopRunning()
        let result = try #require(rig.recorder.results(settings.uniqueID).first)
        #expect(result.error == nil)
        if photo == .mjpeg {
            let file = [UInt8](try #require(result.photo.fileDataRepresentation()))
            #expect(try PhotoTestSupport.patternNumber(file, width: 640, height: 480) == 1)
            #expect(result.photo.pixelBuffer == nil)
        } else {
            let pixels = try #require(result.photo.pixelBuffer)
            #expect(pixels.pixelFormat == photo && pixels.width == 640 && pixels.height == 480)
            #expect(TestPattern.readSequenceNumber(from: pixels) == 1)
            #expect(result.photo.fileDataRepresentation() == nil)
            #expect(result.photo.resolvedSettings.photoPixelFormatType == photo)
            #expect((result.photo.metadata["{Exif}"] as? [String: Any])?["PixelYDimension"] as? Int == 480)
        }
    }

    @Test("every refused request gets all five callbacks, in order, the last two with the error")
    func refusals() throws {
        let rig = try PhotoRig()
        // Not running yet.
        let early = CapturePhotoSettings()
        rig.photos.capturePhoto(with: early, delegate: rig.recorder)
        rig.start()
        let flash = CapturePhotoSettings()
        flash.flashMode = .on
        let badKey = CapturePhotoSettings(format: ["Codec": "jpeg"])
        let badFormat = CapturePhotoSettings(format: [
            kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_422YpCbCr8_yuvs
        ])
        let badQuality = CapturePhotoSettings(format: [VideoCodecKey: VideoCodecType.jpeg, VideoQualityKey: 2.0])
        let badCodec = CapturePhotoSettings(format: [VideoCodecKey: VideoCodecType.hevc])
        let badMetadata = CapturePhotoSettings()
        badMetadata.metadata = ["Orientation": "up"]
        let good = CapturePhotoSettings()
        for settings in [flash, badKey, badFormat, badQuality, badCodec, badMetadata, good, good] {
            rig.photos.capturePhoto(with: settings, delegate: rig.recorder)
        }
        rig.nextFrame()
        #expect(rig.recorder.waitForFinished(9))
        rig.session.stopRunning()

        let refused: [(CapturePhotoSettings, CaptureError.Code)] = [
            (early, .sessionNotRunning), (flash, .invalidArgument), (badKey, .invalidArgument),
            (badFormat, .unsupportedPixelFormat), (badQuality, .invalidArgument), (badCodec, .invalidArgument),
            (badMetadata, .invalidArgument),
        ]
        for (settings, code) in refused {
            #expect(rig.recorder.kinds(settings.uniqueID) == PhotoRecorder.expectedOrder)
            let events = rig.recorder.events.filter { $0.uniqueID == settings.uniqueID }
            #expect(events[3].error?.code == code && events[4].error?.code == code, "\(code)")
            #expect(rig.recorder.results(settings.uniqueID).first?.photo.fileDataRepresentation() == nil)
        }
        // The reused settings: one photo, one refusal, ten callbacks.
        let reused = rig.recorder.events.filter { $0.uniqueID == good.uniqueID }
        #expect(reused.count == 10)
        #expect(reused.filter { $0.kind == .didFinishCapture }.compactMap(\.error).map(\.code) == [.invalidArgument])
        let results = rig.recorder.results(good.uniqueID)
        #expect(results.count == 2 && results.filter { $0.error == nil }.count == 1)
        #expect(!rig.recorder.sawOverlappingCalls)
        #expect(rig.recorder.events.allSatisfy { $0.onOutputQueue })
    }

    @Test("a camera unplugged between request and capture fails the request through every callback")
    func unpluggedCamera() throws {
        let rig = try PhotoRig()
        rig.start()
        let settings = CapturePhotoSettings()
        rig.photos.capturePhoto(with: settings, delegate: rig.recorder)
        rig.camera.simulateDisconnect()
        rig.clock.advance(by: .fps(30))
        #expect(rig.recorder.waitForFinished())
        #expect(rig.recorder.kinds(settings.uniqueID) == PhotoRecorder.expectedOrder)
        let last = try #require(rig.recorder.events.last)
        #expect(last.kind == .didFinishCapture && last.error?.code == .deviceDisconnected)
        // While interrupted, requests are refused at once.
        let later = CapturePhotoSettings()
        rig.photos.capturePhoto(with: later, delegate: rig.recorder)
        #expect(rig.recorder.waitForFinished())
        #expect(rig.recorder.kinds(later.uniqueID) == PhotoRecorder.expectedOrder)
        #expect(rig.recorder.events.last?.error?.code == .sessionNotRunning)
        rig.session.stopRunning()
    }

    @Test("a frame the engine drops for lack of buffers passes its requests on to the next frame, in order")
    func droppedFrameServedByNext() throws {
        let rig = try PhotoRig()
        rig.start()
        rig.recorder.blockFirstPhoto()
        var settings: [CapturePhotoSettings] = []
        func request() {
            let next = CapturePhotoSettings()
            settings.append(next)
            rig.photos.capturePhoto(with: next, delegate: rig.recorder)
        }
        request()
        rig.nextFrame()  // frame 1: A's photo, whose callback now blocks the output's queue
        #expect(rig.recorder.blocked.wait(timeout: .now() + 10) == .success)
        for _ in 0..<4 {
            request()
            rig.nextFrame()  // frames 2 and 3 wait; 4 and 5 find no buffer (budget 3)
        }
        rig.recorder.release()
        #expect(rig.photos.waitUntilIdle(timeout: 10))
        #expect(rig.recorder.finishedCount == 3, "A, B, C; D and E wait for a frame")
        rig.nextFrame()  // frame 6 serves D and E
        #expect(rig.recorder.waitForFinished(5))
        rig.session.stopRunning()

        let ids = settings.map(\.uniqueID)
        #expect(rig.recorder.events.filter { $0.kind == .didFinishCapture }.map(\.uniqueID) == ids)
        let sequences = ids.compactMap { rig.recorder.results($0).first?.photo.sequenceNumber }
        #expect(sequences == [1, 2, 3, 6, 6])
        for id in ids { #expect(rig.recorder.kinds(id) == PhotoRecorder.expectedOrder) }
        let stats = rig.photos.statistics
        #expect(stats.droppedOutOfBuffers == 2 && stats.delivered == 4)
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
    }

    @Test("the simulated C920 through the V4L2 backend: a photo, then an unplug between request and capture")
    func simulatedWebcamUnplug() throws {
        let rig = try SimulatedRig()
        let device = try rig.device
        let session = CaptureSession(notificationCenter: NotificationCenter())
        session.sessionPreset = .vga640x480
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        let photos = CapturePhotoOutput()
        try session.tryAddOutput(photos)
        let recorder = PhotoRecorder()
        session.startRunning()
        defer { session.stopRunning() }
        #expect(session.isRunning)
        rig.clock.advance(by: .fps(30))
        let first = CapturePhotoSettings()
        photos.capturePhoto(with: first, delegate: recorder)
        rig.clock.advance(by: .fps(30))
        #expect(recorder.waitForFinished())
        let photo = try #require(recorder.results(first.uniqueID).first?.photo)
        let file = [UInt8](try #require(photo.fileDataRepresentation()))
        #expect(EXIFWriter.read(from: file)?.model == "HD Pro Webcam C920")
        #expect(try PhotoTestSupport.patternNumber(file, width: 640, height: 480) == photo.sequenceNumber)

        let second = CapturePhotoSettings()
        photos.capturePhoto(with: second, delegate: recorder)
        rig.bus.unplug(rig.camera)
        #expect(recorder.waitForFinished())
        #expect(recorder.kinds(second.uniqueID) == PhotoRecorder.expectedOrder)
        #expect(recorder.events.last?.error?.code == .deviceDisconnected)
        #expect(recorder.results(second.uniqueID).first?.photo.fileDataRepresentation() == nil)
    }

    @Test("stopping the session fails what is still waiting")
    func stopFailsPending() throws {
        let rig = try PhotoRig()
        rig.start()
        let settings = CapturePhotoSettings()
        rig.photos.capturePhoto(with: settings, delegate: rig.recorder)
        rig.session.stopRunning()
        #expect(rig.recorder.waitForFinished())
        #expect(rig.recorder.kinds(settings.uniqueID) == PhotoRecorder.expectedOrder)
        #expect(rig.recorder.events.last?.error?.code == .sessionNotRunning)
    }

    @Test("a storm of 100 requests from four threads while video flows: each finishes once, in acceptance order")
    func storm() throws {
        let video = CaptureVideoDataOutput()
        let frames = RecordingDelegate(readsPattern: false)
        video.setSampleBufferDelegate(frames, queue: frames.queue)
        let rig = try PhotoRig(video: video)
        rig.start()
        let threads = 4
        let perThread = 25
        let submitted = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            DispatchQueue.concurrentPerform(iterations: threads) { _ in
                for _ in 0..<perThread {
                    rig.photos.capturePhoto(with: CapturePhotoSettings(), delegate: rig.recorder)
                }
            }
            submitted.signal()
        }
        // Frames keep coming while the threads submit (however late they get going) and until
        // every request has finished.
        var framesAdvanced = 0
        var allSubmitted = false
        while !allSubmitted || rig.recorder.finishedCount < threads * perThread, framesAdvanced < 20_000 {
            if !allSubmitted { allSubmitted = submitted.wait(timeout: .now()) == .success }
            rig.nextFrame()
            framesAdvanced += 1
            if framesAdvanced % 4 == 0 { _ = rig.photos.waitUntilIdle(timeout: 10) }
        }
        #expect(allSubmitted)
        #expect(rig.photos.waitUntilIdle(timeout: 10))
        rig.session.stopRunning()

        let events = rig.recorder.events
        let accepted = events.filter { $0.kind == .willBegin }.map(\.uniqueID)
        let finished = events.filter { $0.kind == .didFinishCapture }.map(\.uniqueID)
        #expect(accepted.count == threads * perThread && Set(accepted).count == accepted.count)
        #expect(finished == accepted, "requests finish in the order they were accepted")
        #expect(events.allSatisfy { $0.error == nil })
        for id in accepted { #expect(rig.recorder.kinds(id) == PhotoRecorder.expectedOrder) }
        #expect(!rig.recorder.sawOverlappingCalls)
        let sequences = finished.compactMap { rig.recorder.results($0).first?.photo.sequenceNumber }
        #expect(sequences.count == accepted.count && sequences == sequences.sorted())
        #expect(Set(sequences).count < sequences.count, "requests waiting together share a frame")

        let stats = video.statistics
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
        #expect(stats.captured == rig.camera.framesProduced, "every video frame accounted for")
        #expect(frames.frames.count == stats.delivered)
        // Every frame the photo output took served a request, or was dropped (a slow encode on a
        // loaded machine fills its 3-frame budget) and the next frame served its requests instead.
        let photoStats = rig.photos.statistics
        #expect(photoStats.delivered == Set(sequences).count)
        #expect(photoStats.delivered + photoStats.dropped == photoStats.captured)
    }

    @Test("the .photo preset picks the camera's largest size, whatever its rate")
    func photoPreset() throws {
        let formats = [
            PhotoTestSupport.format(.yuyv, 640, 480),
            CaptureDevice.Format(
                pixelFormat: .yuyv, width: 1920, height: 1080, frameRateRanges: [FrameRateRange(framesPerSecond: 5)]),
        ]
        let camera = VirtualCamera(configuration: .init(clock: ManualClock(), formats: formats))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        #expect(session.canSetSessionPreset(.photo))
        session.sessionPreset = .photo
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let photos = CapturePhotoOutput()
        try session.tryAddOutput(photos)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(camera.device.activeFormat.dimensions == CaptureDevice.Dimensions(width: 1920, height: 1080))
        #expect(photos.maxPhotoDimensions == CaptureDevice.Dimensions(width: 1920, height: 1080))
    }

    @Test("the photo output asks nothing of the device: the video output's negotiation is the same with it")
    func negotiationUnchanged() throws {
        let formats = [
            PhotoTestSupport.format(.yuyv), PhotoTestSupport.format(.bgra), PhotoTestSupport.format(.nv12VideoRange),
        ]
        func negotiated(withPhotos: Bool) throws -> (PixelFormat, Bool) {
            let camera = VirtualCamera(configuration: .init(clock: ManualClock(), formats: formats))
            let session = CaptureSession(notificationCenter: NotificationCenter())
            try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
            let video = CaptureVideoDataOutput()
            try video.setVideoSettings(try VideoSettings(pixelFormat: .nv12VideoRange))
            try session.tryAddOutput(video)
            if withPhotos { try session.tryAddOutput(CapturePhotoOutput()) }
            session.startRunning()
            defer { session.stopRunning() }
            return (camera.device.activeFormat.pixelFormat, video.isZeroCopy)
        }
        let without = try negotiated(withPhotos: false)
        let with = try negotiated(withPhotos: true)
        #expect(without == with)
        #expect(with == (.nv12VideoRange, true))
    }

    @Test("an MJPEG camera's photo is its own frame plus the standard Huffman tables, not re-encoded")
    func motionJPEGPassthrough() throws {
        let backend = JPEGFrameCamera()
        let device = CaptureDevice(backend: backend)
        let session = CaptureSession(notificationCenter: NotificationCenter())
        // Presets pick raw formats; the camera's one MJPEG format is kept as it is.
        session.sessionPreset = .inputPriority
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        let photos = CapturePhotoOutput()
        try session.tryAddOutput(photos)
        let recorder = PhotoRecorder()
        session.startRunning()
        #expect(session.isRunning)
        let frames = try (0..<4).map {
            try JPEGTestSupport.strippingHuffmanTables(try JPEGTestSupport.jpeg(UInt64($0)))
        }
        #expect(!JPEGFrame.hasHuffmanTables(frames[0]))
        #expect(backend.push(frames[0], sequence: 0))
        let jpeg = CapturePhotoSettings()
        let bgra = CapturePhotoSettings(format: [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA])
        photos.capturePhoto(with: jpeg, delegate: recorder)
        photos.capturePhoto(with: bgra, delegate: recorder)
        #expect(backend.push(frames[1], sequence: 1))
        #expect(recorder.waitForFinished(2))
        session.stopRunning()

        let photo = try #require(recorder.results(jpeg.uniqueID).first?.photo)
        let file = [UInt8](try #require(photo.fileDataRepresentation()))
        #expect(try PhotoTestSupport.withoutEXIF(file) == JPEGFrame.withStandardHuffmanTables(frames[1]))
        #expect(EXIFWriter.read(from: file)?.model == "JPEG Frame Camera")
        #expect(try PhotoTestSupport.patternNumber(file, width: 640, height: 480) == 1)
        let pixels = try #require(recorder.results(bgra.uniqueID).first?.photo.pixelBuffer)
        #expect(pixels.pixelFormat == .bgra && TestPattern.readSequenceNumber(from: pixels) == 1)
    }
}

/// The README's "Taking photos" example, with the file written where the test says.
private final class PhotoSaver: CapturePhotoCaptureDelegate {
    let url: URL
    let saved = DispatchSemaphore(value: 0)
    init(url: URL) { self.url = url }

    func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?) {
        defer { saved.signal() }
        guard error == nil, let jpeg = photo.fileDataRepresentation() else { return }
        try? jpeg.write(to: url)  // JPEG with EXIF
    }
}

@Suite("Photo output README example")
struct PhotoReadmeExampleTests {
    @Test("the README's example writes a JPEG with the settings' metadata")
    func readmeExample() throws {
        let clock = ManualClock()
        let camera = VirtualCamera(
            configuration: .init(clock: clock, formats: [PhotoTestSupport.format(.nv12VideoRange)]))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("viewfinder-readme-\(UUID()).jpg")
        defer { try? FileManager.default.removeItem(at: url) }

        let photos = CapturePhotoOutput()
        try session.tryAddOutput(photos)
        session.startRunning()
        #expect(clock.waitUntilSleeping())
        let saver = PhotoSaver(url: url)
        let settings = CapturePhotoSettings(format: [VideoCodecKey: VideoCodecType.jpeg, VideoQualityKey: 0.9])
        settings.metadata = ["Artist": "Ada"]
        photos.capturePhoto(with: settings, delegate: saver)

        clock.advance(by: .fps(30))
        #expect(saver.saved.wait(timeout: .now() + 10) == .success)
        session.stopRunning()
        let file = [UInt8](try Data(contentsOf: url))
        #expect(EXIFWriter.read(from: file)?.artist == "Ada")
        #expect(try PhotoTestSupport.patternNumber(file, width: 640, height: 480) == 1)
    }
}

@Suite("Still image output")
struct StillImageOutputTests {
    @Test("a JPEG still from the next frame, as a sample buffer holding the file")
    func jpegStill() throws {
        let clock = ManualClock()
        let camera = VirtualCamera(configuration: .init(clock: clock, formats: [PhotoTestSupport.format(.yuyv)]))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let stills = CaptureStillImageOutput()
        #expect(stills.outputSettings[VideoCodecKey] as? VideoCodecType == .jpeg)
        try session.tryAddOutput(stills)
        let connection = try #require(stills.connection(with: .video))

        let results = Mutex<[(SampleBuffer?, CaptureError?)]>([])
        let done = DispatchSemaphore(value: 0)
        let handler: @Sendable (SampleBuffer?, (any Error)?) -> Void = { buffer, error in
            results.withLock { $0.append((buffer, error as? CaptureError)) }
            done.signal()
        }
        stills.captureStillImageAsynchronously(from: connection, completionHandler: handler)
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(results.withLock { $0.last?.1?.code } == .sessionNotRunning)

        session.startRunning()
        #expect(clock.waitUntilSleeping())
        stills.captureStillImageAsynchronously(from: connection, completionHandler: handler)
        #expect(stills.isCapturingStillImage)
        clock.advance(by: .fps(30))
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(stills.waitUntilIdle(timeout: 10))
        #expect(!stills.isCapturingStillImage)
        session.stopRunning()

        let (buffer, error) = try #require(results.withLock { $0.last })
        #expect(error == nil)
        let sample = try #require(buffer)
        #expect(sample.imageBuffer?.pixelFormat == .mjpeg)
        #expect(sample.sequenceNumber == 1)
        let data = try #require(CaptureStillImageOutput.jpegStillImageNSDataRepresentation(sample))
        #expect(try PhotoTestSupport.patternNumber([UInt8](data), width: 640, height: 480) == 1)
        #expect(EXIFWriter.read(from: [UInt8](data))?.pixelWidth == 640)
        #expect((sample.attachment(forKey: .exifMetadata) as? EXIFMetadata)?.make == "Viewfinder")
        #expect(results.withLock { $0.count } == 2, "one completion per request")
    }

    @Test("uncompressed stills carry the pixels; JPEG data is nil for them")
    func uncompressedStill() throws {
        let clock = ManualClock()
        let camera = VirtualCamera(
            configuration: .init(clock: clock, formats: [PhotoTestSupport.format(.nv12VideoRange)]))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let stills = CaptureStillImageOutput()
        stills.outputSettings = [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA]
        try session.tryAddOutput(stills)
        session.startRunning()
        #expect(clock.waitUntilSleeping())
        let result = Mutex<SampleBuffer?>(nil)
        let done = DispatchSemaphore(value: 0)
        stills.captureStillImageAsynchronously(from: try #require(stills.connection(with: .video))) { buffer, _ in
            result.withLock { $0 = buffer }
            done.signal()
        }
        clock.advance(by: .fps(30))
        #expect(done.wait(timeout: .now() + 10) == .success)
        session.stopRunning()
        let sample = try #require(result.withLock { $0 })
        let pixels = try #require(sample.imageBuffer)
        #expect(pixels.pixelFormat == .bgra && TestPattern.readSequenceNumber(from: pixels) == 1)
        #expect(CaptureStillImageOutput.jpegStillImageNSDataRepresentation(sample) == nil)
    }
}
