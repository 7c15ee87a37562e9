import Foundation
import Synchronization
import Testing

@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting

/// Logs pauses and resumes besides what ``FileRecorder`` logs.
private final class PausingRecorder: CaptureFileOutputRecordingDelegate, @unchecked Sendable {
    let inner = FileRecorder()
    let events = Mutex<[String]>([])
    func fileOutput(
        _ output: CaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]
    ) {
        events.withLock { $0.append("start") }
        inner.fileOutput(output, didStartRecordingTo: fileURL, from: connections)
    }
    func fileOutput(
        _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
        error: (any Error)?
    ) {
        events.withLock { $0.append("finish") }
        inner.fileOutput(output, didFinishRecordingTo: outputFileURL, from: connections, error: error)
    }
    func fileOutput(
        _ output: CaptureFileOutput, didPauseRecordingTo fileURL: URL, from connections: [CaptureConnection]
    ) {
        events.withLock { $0.append("pause") }
    }
    func fileOutput(
        _ output: CaptureFileOutput, didResumeRecordingTo fileURL: URL, from connections: [CaptureConnection]
    ) {
        events.withLock { $0.append("resume") }
    }
}

@Suite("Movie pause and resume")
struct MoviePauseResumeTests {
    @Test("a paused recording skips the paused frames and its file's timestamps have no gap")
    func pauseLeavesNoGap() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("paused.mov")
        let rig = try MovieRig()
        let recorder = PausingRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        rig.start()
        rig.step(9)  // frames 0…9 written
        rig.movie.pauseRecording()
        #expect(rig.movie.isRecordingPaused)
        rig.step(15)  // frames 10…24 held back
        rig.movie.resumeRecording()
        #expect(!rig.movie.isRecordingPaused)
        rig.step(10)  // frames 25…34 written
        rig.movie.stopRecording()
        #expect(recorder.inner.waitForFinish())
        rig.session.stopRunning()
        #expect(recorder.inner.lastError == nil)
        #expect(recorder.events.withLock { $0 } == ["start", "pause", "resume", "finish"])

        let back = try readBack(url)
        #expect(back.numbers == Array(0...9) + Array(25...34), "\(back.numbers)")
        let steps = zip(back.times, back.times.dropFirst()).map { $1 - $0 }
        #expect(steps.count == 19)
        #expect(steps.allSatisfy { abs($0 - 1.0 / 30) < 0.002 }, "every step one frame: \(steps)")
        #expect(abs(rig.movie.recordedDuration.seconds - 20.0 / 30) < 0.002)
    }

    @Test("pausing when not recording does nothing")
    func pauseWithoutRecording() throws {
        let movie = CaptureMovieFileOutput()
        movie.pauseRecording()
        #expect(!movie.isRecordingPaused)
        movie.resumeRecording()
        #expect(!movie.isRecordingPaused)
    }
}
