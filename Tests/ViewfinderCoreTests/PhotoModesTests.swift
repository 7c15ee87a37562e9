import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Viewfinder
@testable import ViewfinderCore
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting

/// A camera whose frames the test pushes, each drawn with its number (``TestPattern``) and
/// stamped as arriving at a time the test chooses on a ``ManualClock`` (the clock the photo
/// output's requests are stamped with, set by the test).
final class PushedFrameCamera: DeviceBackend, @unchecked Sendable {
    // unchecked: the sink is in a Mutex; the rest is immutable.
    let uniqueID = "test.pushed-frame-camera"
    let localizedName = "Pushed Frame Camera"
    let modelID = "pushed-frame-camera"
    let manufacturer = "Viewfinder Tests"
    let deviceType = CaptureDevice.DeviceType.external
    let formats: [CaptureDevice.Format]
    var isConnected: Bool { true }
    private let sink = Mutex<(any DeviceStreamSink)?>(nil)
    private let pool: PixelBufferPool
    let width: Int
    let height: Int

    init(_ pixelFormat: PixelFormat = .nv12VideoRange, width: Int = 640, height: Int = 480) throws {
        self.width = width
        self.height = height
        formats = [PhotoTestSupport.format(pixelFormat, width, height)]
        pool = try PixelBufferPool(pixelFormat: pixelFormat, width: width, height: height, capacity: 4)
    }

    func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: any DeviceStreamSink
    ) throws(CaptureError) -> MediaTime {
        self.sink.withLock { $0 = sink }
        return frameDuration
    }

    func stopStreaming() { sink.withLock { $0 = nil } }

    /// Sends frame `sequence`, captured at `sequence`/30 s and arriving at `arrival`.
    func push(_ sequence: UInt64, arrival: MediaTime) throws {
        let sink = try #require(sink.withLock { $0 })
        let buffer = try #require(pool.makePixelBuffer())
        TestPattern.render(sequenceNumber: sequence, into: buffer)
        sink.deviceDidCapture(
            CapturedSample(
                buffer: buffer, presentationTime: MediaTime(value: Int64(sequence), timescale: 30),
                duration: MediaTime(value: 1, timescale: 30), sequenceNumber: sequence, hostArrivalTime: arrival))
    }
}

/// A session on a ``PushedFrameCamera`` with a photo output whose requests are stamped on `clock`.
struct ModesRig {
    let clock = ManualClock()
    let camera: PushedFrameCamera
    let session = CaptureSession(notificationCenter: NotificationCenter())
    let photos = CapturePhotoOutput()
    let recorder = PhotoRecorder()

    init(_ pixelFormat: PixelFormat = .nv12VideoRange) throws {
        camera = try PushedFrameCamera(pixelFormat)
        try session.tryAddInput(try CaptureDeviceInput(device: CaptureDevice(backend: camera)))
        try session.tryAddOutput(photos)
        photos.pipeline.clock = clock
        recorder.watch(photos.pipeline.queue)
    }

    /// Frame `n`'s arrival: `n` frame intervals (1/30 s) after zero.
    static func arrival(_ frames: Double) -> MediaTime { MediaTime(seconds: frames / 30) }

    /// Pushes frames `range`, each arriving on time, and waits until the output has them.
    func push(_ range: ClosedRange<UInt64>) throws {
        for sequence in range {
            try camera.push(sequence, arrival: Self.arrival(Double(sequence)))
            #expect(photos.waitUntilDelivered(timeout: 10))
        }
    }

    /// Requests a photo at `frames` frame intervals on the clock.
    func request(at frames: Double, _ settings: CapturePhotoSettings = CapturePhotoSettings()) -> CapturePhotoSettings {
        clock.advance(to: Self.arrival(frames))
        photos.capturePhoto(with: settings, delegate: recorder)
        return settings
    }

    func photo(_ settings: CapturePhotoSettings) throws -> CapturePhoto {
        let result = try #require(recorder.results(settings.uniqueID).first)
        #expect(result.error == nil)
        return result.photo
    }

    /// The number drawn in a JPEG photo's pixels.
    func number(_ photo: CapturePhoto) throws -> UInt64? {
        let file = [UInt8](try #require(photo.fileDataRepresentation()))
        return try PhotoTestSupport.patternNumber(file, width: camera.width, height: camera.height)
    }
}

@Suite("Photo modes: zero shutter lag, responsive capture, deferred delivery, previews")
struct PhotoModesTests {
    @Test("zero shutter lag: the photo is the kept frame that arrived nearest the request, the ring within its budget")
    func zeroShutterLagNearestFrame() throws {
        let rig = try ModesRig()
        #expect(!rig.photos.isZeroShutterLagEnabled && rig.photos.isZeroShutterLagSupported)
        rig.photos.isZeroShutterLagEnabled = true
        rig.session.startRunning()
        #expect(rig.session.isRunning)
        try rig.push(0...9)
        #expect(rig.photos.pipeline.ring.count == PhotoFrameRing.frameCapacity)

        // 6.8 frames: 6 and 7 are kept (6…9), 7 is nearer.
        let a = rig.request(at: 6.8)
        // 8.4: nearer 8 than 9.
        let b = rig.request(at: 8.4)
        // 9.3: the newest kept frame is within half a frame: taken at once, no frame waited for.
        let c = rig.request(at: 9.3)
        #expect(rig.recorder.waitForFinished(3))
        #expect(try rig.photo(a).sequenceNumber == 7)
        #expect(try rig.photo(b).sequenceNumber == 8)
        #expect(try rig.photo(c).sequenceNumber == 9)
        #expect(
            try rig.number(rig.photo(a)) == 7, "the pixels are frame 7's, copied before the camera reused its buffer")
        #expect(try rig.number(rig.photo(c)) == 9)

        // 9.7: frame 10 (due at 10) may be nearer than 9: the request waits for it.
        let d = rig.request(at: 9.7)
        #expect(rig.photos.waitUntilIdle(timeout: 10))
        #expect(rig.recorder.kinds(d.uniqueID) == [.willBegin], "waits for the next frame")
        #expect(rig.photos.captureReadiness == .notReadyWaitingForCapture)
        try rig.camera.push(10, arrival: ModesRig.arrival(10))
        #expect(rig.recorder.waitForFinished())
        #expect(try rig.photo(d).sequenceNumber == 10)
        // 11.9 frames, but frame 11 arrives late (at 12.5): 11 is still the nearest kept frame.
        let e = rig.request(at: 11.9)
        try rig.camera.push(11, arrival: ModesRig.arrival(12.5))
        #expect(rig.recorder.waitForFinished())
        #expect(try rig.photo(e).sequenceNumber == 11)
        #expect(rig.photos.waitUntilIdle(timeout: 10))
        #expect(rig.photos.captureReadiness == .ready)

        // Every request got its five callbacks, in order, and they finished in order.
        let ids = [a, b, c, d, e].map(\.uniqueID)
        for id in ids { #expect(rig.recorder.kinds(id) == PhotoRecorder.expectedOrder) }
        #expect(rig.recorder.events.filter { $0.kind == .didFinishCapture }.map(\.uniqueID) == ids)

        // The ring's memory: within the stated budget of 6 NV12 640x480 frames, and it keeps 4.
        let budget = PhotoFrameRing.byteBudget(pixelFormat: .nv12VideoRange, width: 640, height: 480)
        #expect(budget == 6 * PlaneLayout(pixelFormat: .nv12VideoRange, width: 640, height: 480).totalBytes)
        #expect(rig.photos.pipeline.ring.allocatedBytes > 0)
        #expect(rig.photos.pipeline.ring.allocatedBytes <= budget)
        #expect(rig.photos.pipeline.ring.count == PhotoFrameRing.frameCapacity)
        #expect(rig.photos.pipeline.ring.heldByPhotos == 0, "photos made give their frames back")
        let stats = rig.photos.statistics
        #expect(stats.captured == 12 && stats.delivered == 12, "every frame went to the ring")

        rig.photos.isZeroShutterLagEnabled = false
        #expect(rig.photos.pipeline.ring.count == 0, "turning it off lets the frames go")
        rig.session.stopRunning()
        #expect(rig.photos.captureReadiness == .sessionNotRunning)
    }

    @Test("zero shutter lag on a Motion-JPEG camera keeps the compressed frames and passes them on")
    func zeroShutterLagMotionJPEG() throws {
        let backend = JPEGFrameCamera()
        let session = CaptureSession(notificationCenter: NotificationCenter())
        session.sessionPreset = .inputPriority
        try session.tryAddInput(try CaptureDeviceInput(device: CaptureDevice(backend: backend)))
        let photos = CapturePhotoOutput()
        try session.tryAddOutput(photos)
        let recorder = PhotoRecorder()
        photos.isZeroShutterLagEnabled = true
        session.startRunning()
        let frames = try (0..<3).map { try JPEGTestSupport.jpeg(UInt64($0)) }
        for (index, frame) in frames.enumerated() { #expect(backend.push(frame, sequence: UInt64(index))) }
        #expect(photos.waitUntilDelivered(timeout: 10))
        // Requested well after frame 2 arrived (real clock): it waits for the next frame and takes it.
        let settings = CapturePhotoSettings()
        photos.capturePhoto(with: settings, delegate: recorder)
        #expect(photos.waitUntilIdle(timeout: 10))
        let later = try JPEGTestSupport.jpeg(3)
        #expect(backend.push(later, sequence: 3))
        #expect(recorder.waitForFinished())
        session.stopRunning()
        let photo = try #require(recorder.results(settings.uniqueID).first?.photo)
        #expect([2, 3].contains(photo.sequenceNumber))
        let file = [UInt8](try #require(photo.fileDataRepresentation()))
        let expected = photo.sequenceNumber == 3 ? later : frames[2]
        #expect(try PhotoTestSupport.withoutEXIF(file) == expected, "the camera's own JPEG, copied whole")
    }

    @Test("responsive capture: two overlapping captures, callbacks in order and balanced")
    func overlappingCaptures() throws {
        let rig = try ModesRig()
        #expect(!rig.photos.isResponsiveCaptureSupported)
        rig.photos.isZeroShutterLagEnabled = true
        #expect(rig.photos.isResponsiveCaptureSupported && !rig.photos.isFastCapturePrioritizationSupported)
        rig.photos.isResponsiveCaptureEnabled = true
        rig.photos.isFastCapturePrioritizationEnabled = true
        rig.session.startRunning()
        try rig.push(0...5)
        // Hold the processing queue, so the first photo is still being made when the second is taken.
        let hold = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        rig.photos.pipeline.processingQueue.async {
            holding.signal()
            hold.wait()
        }
        #expect(holding.wait(timeout: .now() + 10) == .success)
        let preview: [String: Any] = [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA]
        let first = CapturePhotoSettings()
        first.previewPhotoFormat = preview
        _ = rig.request(at: 4.1, first)
        let second = CapturePhotoSettings()
        second.previewPhotoFormat = preview
        _ = rig.request(at: 5.0, second)
        // Both frames are taken while neither photo is made.
        rig.photos.pipeline.queue.sync {}
        #expect(rig.recorder.kinds(first.uniqueID) == [.willBegin, .willCapture, .didCapture])
        #expect(rig.recorder.kinds(second.uniqueID) == [.willBegin, .willCapture, .didCapture])
        #expect(rig.photos.captureReadiness == .notReadyMomentarily, "two photos hold the ring's spare slots")
        hold.signal()
        #expect(rig.recorder.waitForFinished(2))
        rig.session.stopRunning()

        let ids = [first.uniqueID, second.uniqueID]
        for id in ids { #expect(rig.recorder.kinds(id) == PhotoRecorder.expectedOrder) }
        let events = rig.recorder.events
        #expect(events.filter { $0.kind == .didFinishProcessing }.map(\.uniqueID) == ids)
        #expect(events.filter { $0.kind == .didFinishCapture }.map(\.uniqueID) == ids)
        // The second capture overlapped the first: taken before the first photo was finished.
        let secondTaken = try #require(events.firstIndex { $0.uniqueID == ids[1] && $0.kind == .didCapture })
        let firstDone = try #require(events.firstIndex { $0.uniqueID == ids[0] && $0.kind == .didFinishProcessing })
        #expect(secondTaken < firstDone)
        #expect(!rig.recorder.sawOverlappingCalls && events.allSatisfy(\.onOutputQueue))
        #expect(try rig.photo(first).sequenceNumber == 4 && rig.photo(second).sequenceNumber == 5)
        // The second came while the first was being made: fast capture prioritization, no preview.
        #expect(!(try rig.photo(first)).resolvedSettings.isFastCapturePrioritizationEnabled)
        #expect(try rig.photo(first).previewPixelBuffer != nil)
        #expect(try rig.photo(second).resolvedSettings.isFastCapturePrioritizationEnabled)
        #expect(try rig.photo(second).previewPixelBuffer == nil)
    }

    @Test("the readiness coordinator counts a tracked request until the output has it, and observers see changes")
    func readinessCoordinator() throws {
        let rig = try ModesRig()
        let coordinator = CapturePhotoOutputReadinessCoordinator(photoOutput: rig.photos)
        #expect(coordinator.captureReadiness == .sessionNotRunning)
        let seen = Mutex<[CapturePhotoOutput.CaptureReadiness]>([])
        let observation = rig.photos.observe(\.captureReadiness, options: [.new]) { _, change in
            if let value = change.newValue { seen.withLock { $0.append(value) } }
        }
        rig.session.startRunning()
        try rig.push(0...1)
        #expect(rig.photos.waitUntilIdle(timeout: 10))
        #expect(coordinator.captureReadiness == .ready)
        let settings = CapturePhotoSettings()
        coordinator.startTrackingCaptureRequest(using: settings)
        #expect(coordinator.captureReadiness == .notReadyMomentarily)
        coordinator.stopTrackingCaptureRequest(using: settings.uniqueID)
        #expect(coordinator.captureReadiness == .ready)
        coordinator.startTrackingCaptureRequest(using: settings)
        _ = rig.request(at: 1.5, settings)  // without zero shutter lag: waits for the next frame
        #expect(rig.photos.waitUntilIdle(timeout: 10))
        #expect(coordinator.captureReadiness == .notReadyWaitingForCapture, "the output's own readiness now")
        try rig.camera.push(2, arrival: ModesRig.arrival(2))
        #expect(rig.recorder.waitForFinished())
        #expect(rig.photos.waitUntilIdle(timeout: 10))
        #expect(coordinator.captureReadiness == .ready)
        rig.session.stopRunning()
        #expect(rig.photos.waitUntilIdle(timeout: 10))
        observation.invalidate()
        let changes = seen.withLock { $0 }
        #expect(changes.first == .ready)
        #expect(changes.contains(.notReadyWaitingForCapture))
        #expect(changes.last == .sessionNotRunning)
        #expect(zip(changes, changes.dropFirst()).allSatisfy { $0 != $1 }, "one report per change")
    }

    @Test("deferred delivery: a proxy as soon as the frame is copied, the JPEG made when asked for")
    func deferredProxy() throws {
        let rig = try ModesRig()
        let proxies = ProxyRecorder()
        rig.photos.isAutoDeferredPhotoDeliveryEnabled = true
        rig.session.startRunning()
        try rig.push(0...1)
        let settings = CapturePhotoSettings()
        settings.metadata = ["Artist": "Ada"]
        rig.photos.capturePhoto(with: settings, delegate: proxies)
        try rig.camera.push(2, arrival: ModesRig.arrival(2))
        #expect(proxies.finished.wait(timeout: .now() + 10) == .success)
        rig.session.stopRunning()
        #expect(proxies.calls == ["willBegin", "willCapture", "didCapture", "proxy", "didFinishCapture"])
        let proxy = try #require(proxies.proxy)
        #expect(
            proxy.resolvedSettings.deferredPhotoProxyDimensions == CaptureDevice.Dimensions(width: 640, height: 480))
        #expect(proxy.sequenceNumber == 2 && !proxy.isProcessed)
        // Processed on the caller's thread, once; the frame is the proxy's own copy.
        let file = [UInt8](try #require(proxy.fileDataRepresentation()))
        #expect(proxy.isProcessed)
        #expect(try PhotoTestSupport.patternNumber(file, width: 640, height: 480) == 2)
        #expect(EXIFWriter.read(from: file)?.artist == "Ada")
        let photo = try proxy.processedPhoto()
        #expect(photo.fileDataRepresentation() == Data(file), "processing happens once")
    }

    @Test("a preview image at the size asked for (aspect kept), and a bad preview format fails the request")
    func previewImages() throws {
        let rig = try ModesRig(.yuyv)
        rig.session.startRunning()
        try rig.push(0...0)
        let settings = CapturePhotoSettings()
        settings.previewPhotoFormat = [
            kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA, kCVPixelBufferWidthKey: 160,
            kCVPixelBufferHeightKey: 160,
        ]
        _ = rig.request(at: 0.5, settings)
        let bad = CapturePhotoSettings()
        bad.previewPhotoFormat = [kCVPixelBufferPixelFormatTypeKey: PixelFormat.nv12VideoRange.rawValue]
        _ = rig.request(at: 0.6, bad)
        try rig.camera.push(1, arrival: ModesRig.arrival(1))
        #expect(rig.recorder.waitForFinished(2))
        rig.session.stopRunning()
        let photo = try rig.photo(settings)
        let preview = try #require(photo.previewPixelBuffer)
        #expect(preview.pixelFormat == .bgra && preview.width == 160 && preview.height == 120)
        #expect(photo.resolvedSettings.previewDimensions == CaptureDevice.Dimensions(width: 160, height: 120))
        #expect(TestPattern.readSequenceNumber(from: preview) == 1, "the photo's own frame, scaled")
        let failed = try #require(rig.recorder.results(bad.uniqueID).first)
        #expect(failed.error?.code == .invalidArgument)
        #expect(rig.recorder.kinds(bad.uniqueID) == PhotoRecorder.expectedOrder)
    }

    @Test("deferred start: a deferred output starts after the first non-deferred output's first frame")
    func deferredStart() throws {
        let rig = try ModesRig()
        let immediate = CaptureVideoDataOutput()
        let deferred = CaptureVideoDataOutput()
        for output in [immediate, deferred] { output.alwaysDiscardsLateVideoFrames = false }
        #expect(deferred.isDeferredStartSupported && !deferred.isDeferredStartEnabled)
        deferred.isDeferredStartEnabled = true
        let first = SequenceRecorder()
        let later = SequenceRecorder()
        immediate.setSampleBufferDelegate(first, queue: DispatchQueue(label: "immediate"))
        deferred.setSampleBufferDelegate(later, queue: DispatchQueue(label: "deferred"))
        // The deferred output is added first, so it sees each frame before the immediate one does.
        rig.session.removeOutput(rig.photos)
        try rig.session.tryAddOutput(deferred)
        try rig.session.tryAddOutput(immediate)
        let events = DeferredStartRecorder()
        rig.session.setDeferredStartDelegate(events, deferredStartDelegateCallbackQueue: DispatchQueue(label: "ds"))
        #expect(rig.session.automaticallyRunsDeferredStart)
        rig.session.startRunning()
        func push(_ sequence: UInt64) throws {
            try rig.camera.push(sequence, arrival: ModesRig.arrival(Double(sequence)))
            #expect(immediate.waitUntilDelivered(timeout: 10) && deferred.waitUntilDelivered(timeout: 10))
        }
        for sequence: UInt64 in 0...3 { try push(sequence) }
        #expect(events.done.wait(timeout: .now() + 10) == .success)
        rig.session.stopRunning()
        #expect(first.sequences == [0, 1, 2, 3])
        #expect(
            later.sequences == [1, 2, 3], "frame 0 reached the immediate output first; the deferred one starts after it"
        )
        #expect(events.calls == ["will", "did"])
        #expect(deferred.statistics.captured == 3, "the frame before its start is not counted")

        // By hand: nothing starts until runDeferredStartWhenNeeded().
        first.reset()
        later.reset()
        rig.session.automaticallyRunsDeferredStart = false
        rig.session.startRunning()
        for sequence: UInt64 in 10...11 { try push(sequence) }
        #expect(later.sequences.isEmpty)
        rig.session.runDeferredStartWhenNeeded()
        #expect(events.done.wait(timeout: .now() + 10) == .success)
        try push(12)
        rig.session.stopRunning()
        #expect(first.sequences == [10, 11, 12] && later.sequences == [12])
    }
}

/// Records the sequence numbers a video data output delivers.
private final class SequenceRecorder: CaptureVideoDataOutputSampleBufferDelegate, Sendable {
    private let seen = Mutex<[UInt64]>([])
    var sequences: [UInt64] { seen.withLock { $0 } }
    func reset() { seen.withLock { $0 = [] } }
    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        seen.withLock { $0.append(sampleBuffer.sequenceNumber) }
    }
}

/// Records the deferred-start delegate's calls.
private final class DeferredStartRecorder: CaptureSessionDeferredStartDelegate, Sendable {
    private let log = Mutex<[String]>([])
    let done = DispatchSemaphore(value: 0)
    var calls: [String] { log.withLock { $0 } }
    func sessionWillRunDeferredStart(_ session: CaptureSession) { log.withLock { $0.append("will") } }
    func sessionDidRunDeferredStart(_ session: CaptureSession) {
        log.withLock { $0.append("did") }
        done.signal()
    }
}

/// Records a deferred request's callbacks and its proxy.
final class ProxyRecorder: CapturePhotoCaptureDelegate, Sendable {
    private let state = Mutex<(calls: [String], proxy: CaptureDeferredPhotoProxy?)>(([], nil))
    let finished = DispatchSemaphore(value: 0)
    var calls: [String] { state.withLock { $0.calls } }
    var proxy: CaptureDeferredPhotoProxy? { state.withLock { $0.proxy } }
    private func log(_ call: String) { state.withLock { $0.calls.append(call) } }
    func photoOutput(_ output: CapturePhotoOutput, willBeginCaptureFor resolvedSettings: CaptureResolvedPhotoSettings) {
        log("willBegin")
    }
    func photoOutput(_ output: CapturePhotoOutput, willCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings) {
        log("willCapture")
    }
    func photoOutput(_ output: CapturePhotoOutput, didCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings) {
        log("didCapture")
    }
    func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?) {
        log("didFinishProcessing")
    }
    func photoOutput(
        _ output: CapturePhotoOutput,
        didFinishCapturingDeferredPhotoProxy deferredPhotoProxy: CaptureDeferredPhotoProxy?,
        error: (any Error)?
    ) {
        state.withLock {
            $0.calls.append("proxy")
            $0.proxy = deferredPhotoProxy
        }
    }
    func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings,
        error: (any Error)?
    ) {
        log("didFinishCapture")
        finished.signal()
    }
}

/// Replaces the artist, keeping the rest of the photo's metadata.
private final class ArtistCustomizer: CapturePhotoFileDataRepresentationCustomizer {
    func replacementMetadata(for photo: CapturePhoto) -> [String: Any]? {
        var metadata = photo.metadata
        var tiff = metadata[kCGImagePropertyTIFFDictionary] as? [String: Any] ?? [:]
        tiff["Artist"] = "Grace"
        metadata[kCGImagePropertyTIFFDictionary] = tiff
        return metadata
    }
}

/// Gives a field no photo can take.
private final class BadCustomizer: CapturePhotoFileDataRepresentationCustomizer {
    func replacementMetadata(for photo: CapturePhoto) -> [String: Any]? { ["Artist": 42] }
}

extension PhotoModesTests {
    @Test("fileDataRepresentation(with:) writes the customizer's metadata; a field it cannot take gives nil")
    func customizedFile() throws {
        let rig = try ModesRig()
        rig.session.startRunning()
        try rig.push(0...0)
        let settings = CapturePhotoSettings()
        settings.metadata = ["Artist": "Ada"]
        _ = rig.request(at: 0.5, settings)
        try rig.camera.push(1, arrival: ModesRig.arrival(1))
        #expect(rig.recorder.waitForFinished())
        rig.session.stopRunning()
        let photo = try rig.photo(settings)
        let file = [UInt8](try #require(photo.fileDataRepresentation(with: ArtistCustomizer())))
        let exif = try #require(EXIFWriter.read(from: file))
        #expect(exif.artist == "Grace" && exif.software == "Viewfinder" && exif.pixelWidth == 640)
        #expect(try PhotoTestSupport.patternNumber(file, width: 640, height: 480) == 1)
        #expect(photo.fileDataRepresentation(with: BadCustomizer()) == nil)
        #expect(EXIFWriter.read(from: [UInt8](try #require(photo.fileDataRepresentation())))?.artist == "Ada")
    }
}
