import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Viewfinder
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderTestSupport

@Suite("Shared Motion-JPEG decode with a movie")
struct SharedDecodeMovieTests {
    @Test("a data output, a movie output recording H.264 and a photo output decode each frame once")
    func dataMoviePhotoDecodeOnce() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("shared-decode.mov")
        let camera = JPEGFrameCamera()
        let device = CaptureDevice(backend: camera)
        let session = CaptureSession(notificationCenter: NotificationCenter())
        session.sessionPreset = .inputPriority
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        let data = CaptureVideoDataOutput()
        data.typedVideoSettings = try VideoSettings(pixelFormat: .nv12VideoRange)
        let delegate = RecordingDelegate()
        data.setSampleBufferDelegate(delegate, queue: delegate.queue)
        let movie = CaptureMovieFileOutput()
        let photos = CapturePhotoOutput()
        try session.tryAddOutput(data)
        try session.tryAddOutput(movie)
        try session.tryAddOutput(photos)
        let connection = try #require(movie.connection(with: .video))
        try movie.setOutputSettings(MovieOutputSettings(codec: .h264), for: connection)
        let recorder = FileRecorder()
        movie.startRecording(to: url, recordingDelegate: recorder)
        session.startRunning()
        #expect(session.isRunning)
        let plan = try #require(device.sharedDecodePlan)
        #expect(plan.decoded == FrameFormat(pixelFormat: .nv12VideoRange, width: 640, height: 480), "\(plan)")

        let photoRecorder = PhotoRecorder()
        let bgra = CapturePhotoSettings(format: [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA])
        let frames = 10
        for sequence in 0..<frames {
            if sequence == 4 { photos.capturePhoto(with: bgra, delegate: photoRecorder) }
            #expect(camera.push(try JPEGTestSupport.jpeg(UInt64(sequence)), sequence: UInt64(sequence)))
            #expect(delegate.waitForFrames(sequence + 1))
            #expect(movie.waitUntilIdle(timeout: 30))
            if sequence == 4 { #expect(photoRecorder.waitForFinished(1)) }
        }
        #expect(data.waitUntilDelivered(timeout: 20))
        let statistics = try #require(device.sharedDecodeStatistics)
        movie.stopRecording()
        #expect(recorder.waitForFinish())
        session.stopRunning()

        #expect(statistics.decodes == frames, "one decode per frame for three outputs: \(statistics)")
        #expect(statistics.shared >= frames, "every frame's image went to a second output: \(statistics)")
        #expect(statistics.failures == 0)
        #expect(recorder.lastError == nil, "\(String(describing: recorder.lastError))")
        let dataCounts = data.statistics
        #expect(dataCounts.delivered == frames && dataCounts.dropped == 0, "\(dataCounts)")
        let movieCounts = movie.statistics
        #expect(movieCounts.dropped == 0 && movieCounts.captured == movieCounts.delivered, "\(movieCounts)")
        #expect(try readBack(url).numbers == (0..<UInt64(frames)).map { $0 }, "every frame recorded, in order")
        let pixels = try #require(photoRecorder.results(bgra.uniqueID).first?.photo.pixelBuffer)
        #expect(TestPattern.readSequenceNumber(from: pixels) == 4)
        #expect(delegate.frames.map(\.patternNumber) == (0..<UInt64(frames)).map { $0 })
    }
}
