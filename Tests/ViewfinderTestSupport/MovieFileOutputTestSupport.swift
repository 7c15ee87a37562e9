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
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// A recording delegate that logs every call.
package final class FileRecorder: CaptureFileOutputRecordingDelegate {
    package struct Finish: Sendable {
        package var url: URL
        package var error: CaptureError?
        package var connections: Int
    }
    package let starts = Mutex<[URL]>([])
    package let finishes = Mutex<[Finish]>([])
    /// Whether a start came after its recording's finish.
    private let outOfOrder = Atomic<Bool>(false)
    package var sawStartAfterFinish: Bool { outOfOrder.load(ordering: .relaxed) }
    private let finished = DispatchSemaphore(value: 0)

    package func fileOutput(
        _ output: CaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]
    ) {
        let count = finishes.withLock { $0.count }
        starts.withLock {
            if count > $0.count { outOfOrder.store(true, ordering: .relaxed) }
            $0.append(fileURL)
        }
    }

    package func fileOutput(
        _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
        error: (any Error)?
    ) {
        let error = error as? CaptureError
        finishes.withLock { $0.append(Finish(url: outputFileURL, error: error, connections: connections.count)) }
        finished.signal()
    }

    /// Waits for the next `didFinishRecordingTo`.
    package func waitForFinish(timeout: Double = 30) -> Bool {
        finished.wait(timeout: .now() + timeout) == .success
    }

    package var finishCount: Int { finishes.withLock { $0.count } }
    package var startCount: Int { starts.withLock { $0.count } }
    package var lastError: CaptureError? { finishes.withLock { $0.last?.error } }
}

/// Thirty frames a second, at `width` x `height` in `pixelFormat`, only.
package func thirtyFPSFormat(_ pixelFormat: PixelFormat = .nv12VideoRange, _ width: Int = 320, _ height: Int = 240)
    -> CaptureDevice.Format
{
    CaptureDevice.Format(
        pixelFormat: pixelFormat, width: width, height: height, frameRateRanges: [FrameRateRange(framesPerSecond: 30)])
}

/// A virtual camera on a manual clock into a movie file output (and optionally more outputs).
package struct MovieRig {
    package let clock = ManualClock()
    package let camera: VirtualCamera
    package let session = CaptureSession(notificationCenter: NotificationCenter())
    package let movie: CaptureMovieFileOutput

    package init(
        format: CaptureDevice.Format = thirtyFPSFormat(), quality: Double? = nil, others: [CaptureOutput] = [],
        movie: CaptureMovieFileOutput = CaptureMovieFileOutput()
    ) throws {
        camera = VirtualCamera(configuration: .init(clock: clock, formats: [format]))
        self.movie = movie
        session.beginConfiguration()
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        try session.tryAddOutput(movie)
        for output in others { try session.tryAddOutput(output) }
        session.commitConfiguration()
        if let quality {
            var settings = MovieOutputSettings()
            settings.quality = quality
            try movie.setOutputSettings(settings, for: try #require(movie.connection(with: .video)))
        }
    }

    /// Starts the session and waits until frame 0 has been recorded.
    package func start() {
        session.startRunning()
        #expect(session.isRunning)
        #expect(clock.waitUntilSleeping())
        #expect(movie.waitUntilIdle(timeout: 30))
    }

    /// `count` more frames, one at a time, each waited for until the encoder has taken it.
    package func step(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        for _ in 0..<count {
            clock.advance(by: .fps(30))
            #expect(clock.waitUntilSleeping(), sourceLocation: sourceLocation)
            #expect(movie.waitUntilIdle(timeout: 30), sourceLocation: sourceLocation)
        }
    }

    /// Blocks the recording queue (returning once it is blocked) until the returned semaphore is
    /// signalled: frames that come meanwhile wait for it.
    package func blockRecordingQueue(sourceLocation: SourceLocation = #_sourceLocation) -> DispatchSemaphore {
        let gate = DispatchSemaphore(value: 0)
        let blocked = DispatchSemaphore(value: 0)
        movie.recorder.queue.async {
            blocked.signal()
            gate.wait()
        }
        #expect(blocked.wait(timeout: .now() + 10) == .success, sourceLocation: sourceLocation)
        return gate
    }

    /// `count` more frames, each waited for until the camera has handed it to the output (not
    /// until it is written).
    package func capture(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        for _ in 0..<count {
            clock.advance(by: .fps(30))
            #expect(clock.waitUntilSleeping(), sourceLocation: sourceLocation)
        }
    }

    /// Steps until `recorder` has seen a finish, at most `limit` frames; returns the frames stepped.
    package func step(until recorder: FileRecorder, limit: Int) -> Int {
        var stepped = 0
        while recorder.finishCount == 0, stepped < limit {
            step(1)
            stepped += 1
        }
        return stepped
    }
}
