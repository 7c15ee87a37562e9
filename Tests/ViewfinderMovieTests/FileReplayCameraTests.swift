import Dispatch
import Foundation
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

/// Records `frames` frames of the virtual camera, lossless, through the movie file output.
private func recordPattern(frames: Int, to url: URL) throws {
    let rig = try MovieRig(quality: 1)
    let recorder = FileRecorder()
    rig.movie.startRecording(to: url, recordingDelegate: recorder)
    rig.start()
    rig.step(frames - 1)
    rig.movie.stopRecording()
    #expect(recorder.waitForFinish())
    rig.session.stopRunning()
    #expect(recorder.lastError == nil)
}

/// A session from `device` into a video data output delivering NV12 to `delegate`.
private func replaySession(_ device: CaptureDevice, delegate: RecordingDelegate) throws -> CaptureSession {
    let session = CaptureSession(notificationCenter: NotificationCenter())
    let output = CaptureVideoDataOutput()
    output.alwaysDiscardsLateVideoFrames = false
    output.setSampleBufferDelegate(delegate, queue: delegate.queue)
    try session.tryAddInput(try CaptureDeviceInput(device: device))
    try session.tryAddOutput(output)
    return session
}

@Suite("File-replay camera")
struct FileReplayCameraTests {
    @Test("a recording of the virtual camera, replayed unpaced, gives back its sequence numbers")
    func replaysRecording() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("pattern.mkv")
        try recordPattern(frames: 20, to: url)
        try DeviceRegistry.$current.withValue(DeviceRegistry(providers: [])) {
            let device = try CaptureDevice.replaying(url, options: .init(isPaced: false))
            #expect(CaptureDevice.devices(for: .video).contains(device), "listed like any camera")
            #expect(CaptureDevice.device(withUniqueID: device.uniqueID) === device)
            #expect(device.localizedName == "Replay of pattern.mkv")
            #expect(device.formats.map(\.dimensions) == [.init(width: 320, height: 240)])
            #expect(device.formats.first?.minFrameDuration == .fps(30))
            let delegate = RecordingDelegate()
            let session = try replaySession(device, delegate: delegate)
            session.startRunning()
            #expect(session.isRunning)
            #expect(delegate.waitForFrames(20))
            session.stopRunning()
            #expect(delegate.frames.map(\.patternNumber) == (0..<20).map { UInt64($0) })
            #expect(delegate.frames.map(\.sequenceNumber) == (0..<20).map { UInt64($0) })
            let times = delegate.frames.map(\.presentationTime)
            #expect(
                zip(times, times.dropFirst()).allSatisfy { abs(($1 - $0).seconds - 1.0 / 30) < 0.001 },
                "the file's own spacing (Matroska keeps milliseconds)")
        }
    }

    @Test("paced by a manual clock: one frame per frame interval")
    func paced() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("pattern.mp4")
        try recordPattern(frames: 10, to: url)
        let clock = ManualClock()
        try DeviceRegistry.$current.withValue(DeviceRegistry(providers: [])) {
            let device = try CaptureDevice.replaying(url, options: .init(clock: clock))
            let delegate = RecordingDelegate()
            let session = try replaySession(device, delegate: delegate)
            session.startRunning()
            #expect(clock.waitUntilSleeping())
            #expect(delegate.waitForFrames(1))
            for _ in 0..<3 {
                clock.advance(by: .fps(30))
                #expect(clock.waitUntilSleeping())
            }
            #expect(delegate.waitForFrames(4))
            session.stopRunning()
            #expect(delegate.frames.map(\.patternNumber) == [0, 1, 2, 3], "nothing ahead of its time")
            #expect(delegate.frames.map(\.presentationTime) == (0..<4).map { MediaTime.fps(30) * Int64($0) })
        }
    }

    @Test("looping starts over with timestamps that keep increasing")
    func loops() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("pattern.mov")
        try recordPattern(frames: 8, to: url)
        try DeviceRegistry.$current.withValue(DeviceRegistry(providers: [])) {
            let device = try CaptureDevice.replaying(url, options: .init(isPaced: false, loops: true))
            let delegate = RecordingDelegate()
            let session = try replaySession(device, delegate: delegate)
            session.startRunning()
            #expect(delegate.waitForFrames(20))
            session.stopRunning()
            let numbers = delegate.frames.prefix(20).map(\.patternNumber)
            #expect(numbers == (0..<20).map { UInt64($0 % 8) })
            let gaps = zip(delegate.frames, delegate.frames.dropFirst()).map {
                ($1.presentationTime - $0.presentationTime).seconds
            }
            #expect(gaps.allSatisfy { abs($0 - 1.0 / 30) < 0.0001 }, "\(gaps)")
        }
    }

    @Test("a file that is not a movie is refused with a typed error")
    func badFile() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("not-a-movie.mp4")
        try Data("hello".utf8).write(to: url)
        #expect { try CaptureDevice.replaying(url) } throws: { ($0 as? CaptureError)?.code == .ioError }
        #expect { try CaptureDevice.replaying(scratch.url("missing.mkv")) } throws: {
            ($0 as? CaptureError)?.code == .ioError
        }
    }
}
