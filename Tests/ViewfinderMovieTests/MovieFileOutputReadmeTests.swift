import Dispatch
import Foundation
import Synchronization
import Testing

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

// The README's "Recording movies" example, kept compiling and working: if it must change, change
// the README with it.

private final class Recorder: CaptureFileOutputRecordingDelegate {
    let finished = DispatchSemaphore(value: 0)
    let lines = Mutex<[String]>([])

    func fileOutput(
        _ output: CaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]
    ) {
        lines.withLock { $0.append("recording to \(fileURL.path)") }
    }

    func fileOutput(
        _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL,
        from connections: [CaptureConnection], error: (any Error)?
    ) {
        let error = error as? CaptureError
        defer { finished.signal() }
        if let error, error.recordingSuccessfullyFinished != true {
            lines.withLock { $0.append("lost: \(error)") }
            return
        }
        lines.withLock { $0.append("done: \(outputFileURL.path) \(output.recordedDuration.seconds) s") }
    }
}

@Suite("README: recording movies")
struct MovieFileOutputReadmeTests {
    @Test("the recording example records, and the replay example plays the file back")
    func example() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let clock = ManualClock()
        let camera = VirtualCamera(configuration: .init(clock: clock, formats: [thirtyFPSFormat()]))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))

        let movie = CaptureMovieFileOutput()
        movie.maxRecordedDuration = MediaTime(value: 60, timescale: 1)
        movie.movieFragmentInterval = MediaTime(value: 2, timescale: 1)
        movie.metadata = ["title": "Front door"]
        if session.canAddOutput(movie) { try session.tryAddOutput(movie) }
        var settings = MovieOutputSettings(codec: .h264)
        settings.averageBitRate = 4_000_000
        try movie.setOutputSettings(settings, for: movie.connection(with: .video)!)
        session.startRunning()
        #expect(clock.waitUntilSleeping())
        #expect(movie.waitUntilIdle(timeout: 30), "frame 0 came before the recording: not in it")

        let recorder = Recorder()
        let url = scratch.url("clip.mov")
        movie.startRecording(to: url, recordingDelegate: recorder)
        for _ in 0..<15 {
            clock.advance(by: .fps(30))
            #expect(clock.waitUntilSleeping())
            #expect(movie.waitUntilIdle(timeout: 30))
        }
        movie.stopRecording()
        #expect(recorder.finished.wait(timeout: .now() + 30) == .success)
        session.stopRunning()
        #expect(recorder.lines.withLock { $0 } == ["recording to \(url.path)", "done: \(url.path) 0.5 s"])

        try DeviceRegistry.$current.withValue(DeviceRegistry(providers: [])) {
            let replay = try CaptureDevice.replaying(url, options: .init(isPaced: false, loops: true))
            let input = try CaptureDeviceInput(device: replay)
            #expect(input.ports.map(\.mediaType) == [.video])
        }
        if let probe = try FFmpegTools.ffprobe.map({
            try FFmpegTools.run($0, ["-v", "error", "-show_format", "-of", "json", url.path])
        }) {
            #expect(
                String(decoding: probe.output, as: UTF8.self).contains("Front door"), "the metadata reached the file")
        }
    }
}
