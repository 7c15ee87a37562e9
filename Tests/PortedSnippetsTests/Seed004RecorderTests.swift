// Seed 004 (a camera + microphone recorder: AVCaptureMovieFileOutput), after deleting "AV" only.
// The preview layer (Core Animation) has no counterpart on Linux and is left out; the clock of the
// virtual devices is advanced by hand so the recording's length is exact.
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

@Suite("Seed 004: the camera and microphone recorder", .serialized)
struct Seed004RecorderTests {
    @Test("seed 004 records a movie file with a video and an audio track")
    func recordsBothTracks() throws {
        class Recorder: NSObject, CaptureFileOutputRecordingDelegate {
            var captureSession: CaptureSession!
            var fileOutput: CaptureMovieFileOutput?
            let serialQ = DispatchQueue(label: "com.wenyongyang.createCaptureSession")
            var saveURL: URL!
            let finished = DispatchSemaphore(value: 0)
            var finishError: Error?

            func setupCameraInput() throws -> CaptureDeviceInput {
                let cameraDevice = CaptureDevice.default(for: .video)

                do {
                    let cameraInput = try CaptureDeviceInput(device: cameraDevice!)
                    return cameraInput
                } catch {
                    throw error
                }
            }

            func setupMicInput() throws -> CaptureDeviceInput {
                let micDevice = CaptureDevice.default(for: .audio)

                do {
                    let audioInput = try CaptureDeviceInput(device: micDevice!)
                    return audioInput
                } catch {
                    throw error
                }
            }

            func setupCaptureSession(camera: CaptureDeviceInput, mic: CaptureDeviceInput) -> CaptureSession {
                let captureSession = CaptureSession()
                if captureSession.canAddInput(camera) {
                    captureSession.addInput(camera)
                }
                if captureSession.canAddInput(mic) {
                    captureSession.addInput(mic)
                }
                return captureSession
            }

            func savePath() -> URL { saveURL }

            func fileOutput(
                _ output: CaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]
            ) {
                print("start")
            }

            func fileOutput(
                _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL,
                from connections: [CaptureConnection], error: Error?
            ) {
                print("\(outputFileURL)")
                print("finish")
                finishError = error
                finished.signal()
            }
        }

        let clock = ManualClock()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("seed004-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let recorder = Recorder()
        recorder.saveURL = folder.appendingPathComponent("movie.mov")
        try withVirtualCameraAndMicrophone(clock: clock) {
            // The device lookups run in the test's task (its registry); the session work on the
            // serial queue, as in the seed.
            let camera = try recorder.setupCameraInput()
            let mic = try recorder.setupMicInput()
            recorder.serialQ.sync {
                recorder.captureSession = recorder.setupCaptureSession(camera: camera, mic: mic)
                recorder.fileOutput = CaptureMovieFileOutput()
                if recorder.captureSession.canAddOutput(recorder.fileOutput!) {
                    recorder.captureSession.addOutput(recorder.fileOutput!)
                }
                recorder.captureSession.startRunning()
            }
            #expect(recorder.captureSession.isRunning)
            #expect(clock.waitUntilSleeping(count: 2))
            recorder.serialQ.sync {
                let saveURL = recorder.savePath()
                if !recorder.captureSession.isRunning { recorder.captureSession.startRunning() }
                recorder.fileOutput?.startRecording(to: saveURL, recordingDelegate: recorder)
            }
            for _ in 0..<100 {
                clock.advance(by: MediaTime(value: 1, timescale: 100))
                #expect(clock.waitUntilSleeping(count: 2))
                #expect(recorder.fileOutput!.waitUntilIdle(timeout: 30))
            }
            recorder.serialQ.sync {
                recorder.fileOutput?.stopRecording()
            }
            #expect(recorder.finished.wait(timeout: .now() + 30) == .success)
            recorder.captureSession.stopRunning()
        }
        #expect(recorder.finishError == nil)
        let codecs = try streamCodecs(of: recorder.saveURL)
        #expect(codecs.contains("h264") && codecs.contains("aac"), "ffprobe shows both tracks: \(codecs)")
    }

    /// The codec of every stream in `url`, as ffprobe lists them.
    func streamCodecs(of url: URL) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        process.arguments = ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", url.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}
