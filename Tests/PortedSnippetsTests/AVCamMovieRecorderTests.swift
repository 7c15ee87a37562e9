// AVCam's movie recording (toggleMovieRecording and its AVCaptureFileOutputRecordingDelegate),
// after deleting "AV" only, with one line as the README's porting table says: the
// recording-finished flag is read `as? Bool` (Linux has no `AnyObject` member lookup, so
// `(… as AnyObject).boolValue` does not compile). The virtual devices' clock is advanced by hand.
import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// AVCam's recorder: HEVC when available, rotation from the rotation coordinator, and the
/// delegate that reads `ErrorRecordingSuccessfullyFinishedKey`.
final class MovieRecorder: NSObject, CaptureFileOutputRecordingDelegate {
    let movieFileOutput = CaptureMovieFileOutput()
    var videoRotationCoordinator: CaptureDevice.RotationCoordinator!
    let finished = DispatchSemaphore(value: 0)
    var success: Bool?
    var finishedURL: URL?
    var startedURL: URL?

    func startRecording(to outputURL: URL) {
        let videoRotationAngle = self.videoRotationCoordinator.videoRotationAngleForHorizonLevelCapture
        let movieFileOutputConnection = movieFileOutput.connection(with: .video)
        movieFileOutputConnection?.videoRotationAngle = videoRotationAngle

        let availableVideoCodecTypes = movieFileOutput.availableVideoCodecTypes
        if availableVideoCodecTypes.contains(.hevc) {
            movieFileOutput.setOutputSettings([VideoCodecKey: VideoCodecType.hevc], for: movieFileOutputConnection!)
        }
        movieFileOutput.startRecording(to: outputURL, recordingDelegate: self)
    }

    func fileOutput(
        _ output: CaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]
    ) {
        startedURL = fileURL
    }

    func fileOutput(
        _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
        error: Error?
    ) {
        // Note: Because we use a unique file path for each recording, a new recording won't overwrite a recording mid-save.
        var success = true
        if error != nil {
            print("Movie file finishing error: \(String(describing: error))")
            success = ((error! as NSError).userInfo[ErrorRecordingSuccessfullyFinishedKey] as? Bool)!
        }
        self.success = success
        finishedURL = outputFileURL
        finished.signal()
    }
}

@Suite("AVCam: the movie recorder", .serialized)
struct AVCamMovieRecorderTests {
    @Test("a recording stopped by its duration limit reports ErrorRecordingSuccessfullyFinishedKey = true")
    func durationLimitFinishesSuccessfully() throws {
        let clock = ManualClock()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("avcam-movie-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let recorder = MovieRecorder()
        let url = folder.appendingPathComponent("movie.mov")
        try withVirtualCameraAndMicrophone(clock: clock) {
            let session = CaptureSession()
            let camera = try CaptureDeviceInput(device: CaptureDevice.default(for: .video)!)
            session.addInput(camera)
            session.addInput(try CaptureDeviceInput(device: CaptureDevice.default(for: .audio)!))
            session.addOutput(recorder.movieFileOutput)
            let previewLayer = CaptureVideoPreviewLayer(session: session)
            recorder.videoRotationCoordinator = CaptureDevice.RotationCoordinator(
                device: camera.device, previewLayer: previewLayer)
            var previewAngles: [Double] = []
            let observation = recorder.videoRotationCoordinator.observe(
                \.videoRotationAngleForHorizonLevelPreview, options: .new
            ) { _, change in
                previewLayer.connection?.videoRotationAngle = change.newValue!
                previewAngles.append(change.newValue!)
            }
            defer { observation.invalidate() }
            // Linux has no gravity sensor: the coordinator follows the preview's rotation.
            previewLayer.connection?.videoRotationAngle = 180
            #expect(previewAngles == [180])
            #expect(recorder.videoRotationCoordinator.videoRotationAngleForHorizonLevelCapture == 180)

            recorder.movieFileOutput.maxRecordedDuration = MediaTime(value: 1, timescale: 2)
            session.startRunning()
            #expect(clock.waitUntilSleeping(count: 2))
            recorder.startRecording(to: url)
            #expect(recorder.movieFileOutput.connection(with: .video)?.videoRotationAngle == 180)
            var ticks = 0
            while recorder.finished.wait(timeout: .now()) == .timedOut, ticks < 300 {
                clock.advance(by: MediaTime(value: 1, timescale: 100))
                #expect(clock.waitUntilSleeping(count: 2))
                #expect(recorder.movieFileOutput.waitUntilIdle(timeout: 30))
                ticks += 1
            }
            #expect(ticks < 300, "the duration limit ended the recording")
            session.stopRunning()
        }
        #expect(recorder.success == true)
        #expect(recorder.startedURL == url && recorder.finishedURL == url)
        let probe = try ffprobe(url, "stream=codec_name,width,height")
        let expectedCodec = recorder.movieFileOutput.availableVideoCodecTypes.contains(.hevc) ? "hevc" : "h264"
        #expect(probe.contains { $0.hasPrefix("h264") || $0.hasPrefix("hevc") }, "ffprobe: \(probe)")
        // The codec set just before startRecording on a running session reaches the device's
        // stream at its next frame; the recording starts with the first frame of that stream.
        #expect(probe.contains { $0.hasPrefix(expectedCodec) }, "ffprobe: \(probe)")
    }

    @Test("the dictionary form of setOutputSettings reads back through outputSettings(for:)")
    func dictionaryOutputSettings() throws {
        try withOnlyVirtualCameras {
            let session = CaptureSession()
            session.addInput(try CaptureDeviceInput(device: CaptureDevice.default(for: .video)!))
            let movieFileOutput = CaptureMovieFileOutput()
            session.addOutput(movieFileOutput)
            let connection = try #require(movieFileOutput.connection(with: .video))
            movieFileOutput.setOutputSettings(
                [
                    VideoCodecKey: VideoCodecType.h264,
                    VideoCompressionPropertiesKey: [
                        VideoAverageBitRateKey: 2_000_000, VideoMaxKeyFrameIntervalDurationKey: 2,
                    ],
                ], for: connection)
            let settings = movieFileOutput.outputSettings(for: connection)
            #expect(settings[VideoCodecKey] as? VideoCodecType == .h264)
            #expect(settings.averageBitRate == 2_000_000)
            #expect(settings.maxKeyFrameInterval.seconds == 2)
            movieFileOutput.setOutputSettings(nil, for: connection)
            #expect(movieFileOutput.outputSettings(for: connection) == MovieOutputSettings())
        }
    }

    /// ffprobe's lines for `entries` of `url`.
    func ffprobe(_ url: URL, _ entries: String) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        process.arguments = ["-v", "error", "-show_entries", entries, "-of", "csv=p=0", url.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}
