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

/// The one rule for settings (DESIGN.md, "Settings"): a setting changed on a running session
/// applies at the next frame boundary it can, renegotiating through one path when the device
/// must change, and every frame stays accounted for. One test per family of settings.
@Suite("Settings apply on a running session by one rule")
struct SettingsRuleTests {
    /// A running session on a paced virtual camera driven by a manual clock.
    private struct Rig {
        let clock = ManualClock()
        let camera: VirtualCamera
        let center = NotificationCenter()
        let session: CaptureSession
        let output = CaptureVideoDataOutput()
        let delegate = RecordingDelegate()

        /// The rig, with `extra` (a movie or photo output) beside the video data output.
        init(formats: [CaptureDevice.Format], extra: CaptureOutput? = nil) throws {
            camera = VirtualCamera(configuration: .init(clock: clock, formats: formats))
            session = CaptureSession(notificationCenter: center)
            output.setSampleBufferDelegate(delegate, queue: delegate.queue)
            try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
            try session.tryAddOutput(output)
            if let extra { try session.tryAddOutput(extra) }
            session.startRunning()
            #expect(session.isRunning)
            #expect(clock.waitUntilSleeping())
        }

        /// Lets `count` more 1/30 s ticks pass, waiting after each until its frame is handed over
        /// (so a busy machine's slow delegate queue cannot make a newer frame replace it as late).
        func frames(_ count: Int) {
            for _ in 0..<count {
                clock.advance(by: .fps(30))
                #expect(clock.waitUntilSleeping())
                #expect(output.waitUntilDelivered(timeout: 10))
            }
        }

        /// Stops, then checks every frame was delivered or dropped by a reason.
        func stopAndCheckAccounting(sourceLocation: SourceLocation = #_sourceLocation) {
            session.stopRunning()
            let statistics = output.statistics
            #expect(
                statistics.delivered + statistics.dropped + statistics.rateGated == statistics.captured,
                "\(statistics)", sourceLocation: sourceLocation)
            #expect(statistics.delivered == delegate.frames.count, sourceLocation: sourceLocation)
        }
    }

    @Test("output: videoSettings changed mid-run deliver the new format from the next frame")
    func outputSetting() throws {
        let rig = try Rig(formats: virtualFormats(.nv12VideoRange).filter { $0.dimensions.width == 640 })
        rig.frames(3)
        let before = rig.delegate.frames.count
        #expect(rig.delegate.frames.allSatisfy { $0.pixelFormat == .nv12VideoRange })
        try rig.output.setVideoSettings(try VideoSettings(pixelFormat: .bgra))
        rig.frames(3)
        let after = rig.delegate.frames.dropFirst(before)
        #expect(!after.isEmpty)
        #expect(after.allSatisfy { $0.pixelFormat == .bgra }, "\(after.map(\.pixelFormat))")
        rig.stopAndCheckAccounting()
    }

    @Test("connection: a rotation set mid-run turns the frames from the next one")
    func connectionSetting() throws {
        let rig = try Rig(formats: virtualFormats(.nv12VideoRange).filter { $0.dimensions.width == 640 })
        rig.frames(2)
        let before = rig.delegate.frames.count
        let connection = try #require(rig.output.connection(with: .video))
        try connection.setVideoRotationAngle(90)
        rig.frames(3)
        let after = rig.delegate.frames.dropFirst(before)
        #expect(!after.isEmpty)
        #expect(after.allSatisfy { $0.width == 480 && $0.height == 640 }, "\(after.map { "\($0.width)x\($0.height)" })")
        rig.stopAndCheckAccounting()
    }

    @Test("device: setActiveFormat under the lock on a running session restarts the stream in that format")
    func deviceSetting() throws {
        let formats = virtualFormats(.yuyv)
        let rig = try Rig(formats: formats)
        rig.frames(2)
        let first = try #require(rig.delegate.frames.last)
        let other = try #require(formats.first { $0.dimensions.width != first.width })
        try rig.camera.device.lockForConfiguration()
        try rig.camera.device.setActiveFormat(other)
        rig.camera.device.unlockForConfiguration()
        #expect(rig.session.isRunning)
        #expect(rig.clock.waitUntilSleeping())
        let before = rig.delegate.frames.count
        rig.frames(3)
        let after = rig.delegate.frames.dropFirst(before)
        #expect(!after.isEmpty)
        #expect(
            after.allSatisfy { $0.width == other.dimensions.width && $0.height == other.dimensions.height },
            "\(after.map { "\($0.width)x\($0.height)" }) after choosing \(other)")
        #expect(rig.camera.device.activeFormat == other)
        rig.stopAndCheckAccounting()
    }

    @Test("device: setActiveVideoMinFrameDuration under the lock on a running session slows the stream from then on")
    func deviceFrameDurationSetting() throws {
        let rig = try Rig(formats: virtualFormats(.yuyv).filter { $0.dimensions.width == 640 })
        rig.frames(4)
        let before = rig.delegate.frames.count
        let gaps = zip(rig.delegate.frames, rig.delegate.frames.dropFirst()).map {
            ($1.presentationTime - $0.presentationTime).seconds
        }
        // The camera starts faster than 15 fps (the negotiator's default rate).
        #expect(!gaps.isEmpty && gaps.allSatisfy { $0 < 1.0 / 15 - 0.002 }, "\(gaps) at the default rate")
        try rig.camera.device.lockForConfiguration()
        try rig.camera.device.setActiveVideoMinFrameDuration(.fps(15))
        rig.camera.device.unlockForConfiguration()
        #expect(rig.session.isRunning)
        #expect(rig.camera.device.activeVideoMinFrameDuration == .fps(15))
        #expect(rig.clock.waitUntilSleeping())
        rig.frames(8)
        let after = Array(rig.delegate.frames.dropFirst(before))
        // Eight 1/30 s ticks at 15 fps: a frame as the camera restarts and one each 1/15 s after.
        #expect((4...5).contains(after.count), "\(after.count) frames in eight 1/30 s ticks after choosing 15 fps")
        let slowed = zip(after, after.dropFirst()).map { ($1.presentationTime - $0.presentationTime).seconds }
        #expect(slowed.allSatisfy { abs($0 - 1.0 / 15) < 0.002 }, "\(slowed) after choosing 15 fps")
        rig.stopAndCheckAccounting()
    }

    @Test("input port: isEnabled off pauses its connections from the next frame, on resumes them without a gap")
    func portSetting() throws {
        let rig = try Rig(formats: virtualFormats(.nv12VideoRange).filter { $0.dimensions.width == 640 })
        rig.frames(2)
        let port = try #require(rig.output.connection(with: .video)?.inputPorts.first)
        port.isEnabled = false
        let paused = rig.delegate.frames.count
        #expect(rig.output.connection(with: .video)?.isActive == false)
        rig.frames(3)
        #expect(rig.delegate.frames.count == paused, "no frame while the port is off")
        port.isEnabled = true
        rig.frames(2)
        #expect(rig.delegate.frames.count > paused)
        #expect(rig.delegate.dropped(.discontinuity) == 0, "a paused port is no camera gap")
        rig.stopAndCheckAccounting()
    }

    @Test("a property setter's error is posted by the session that runs it, or on the default centre without one")
    func settingFailuresArePosted() throws {
        let loose = CaptureVideoDataOutput()
        let unowned = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: loose)
        loose.minFrameDuration = MediaTime(value: -1, timescale: 30)
        let alone = unowned.next()
        #expect(alone.received, "an output in no session posts on NotificationCenter.default")
        #expect(alone.error?.code == .invalidArgument)

        let rig = try Rig(formats: virtualFormats(.nv12VideoRange).filter { $0.dimensions.width == 640 })
        let owned = NotificationRecorder(
            CaptureSession.runtimeErrorNotification, object: rig.session, center: rig.center)
        rig.output.minFrameDuration = MediaTime(value: -1, timescale: 30)
        let posted = owned.next()
        #expect(posted.received, "the session that runs the output posts it, with itself as the object")
        #expect(posted.error?.code == .invalidArgument)
        #expect(rig.output.minFrameDuration == .invalid, "the old value stays")
        rig.stopAndCheckAccounting()
    }

    @Test("movie: setOutputSettings mid-run installs the new encoding between frames, without a restart")
    func movieSetting() throws {
        let movie = CaptureMovieFileOutput()
        let rig = try Rig(formats: virtualFormats(.nv12VideoRange).filter { $0.dimensions.width == 640 }, extra: movie)
        rig.frames(2)
        #expect(movie.videoCore.context?.settings?.averageBitRate == nil)
        let connection = try #require(movie.connection(with: .video))
        var settings = MovieOutputSettings(codec: .h264)
        settings.averageBitRate = 2_000_000
        try movie.setOutputSettings(settings, for: connection)
        #expect(movie.outputSettings(for: connection) == settings)
        #expect(movie.videoCore.context?.settings == settings, "the stream's context carries the new settings")
        rig.frames(3)

        // Settings that cannot run are refused and the old ones stay.
        settings.averageBitRate = -1
        #expect(throws: CaptureError.self) { try movie.setOutputSettings(settings, for: connection) }
        #expect(movie.videoCore.context?.settings?.averageBitRate == 2_000_000)
        rig.stopAndCheckAccounting()
        #expect(rig.output.statistics.droppedOutOfBuffers + rig.output.statistics.droppedDiscontinuity == 0)
        let movieFrames = movie.statistics
        #expect(movieFrames.captured > 0)
        #expect(movieFrames.captured == movieFrames.delivered + movieFrames.dropped + movieFrames.rateGated)
    }

    @Test("photo: a photo's settings apply to the next frame of the running stream, which is not touched")
    func photoSetting() throws {
        let photos = CapturePhotoOutput()
        let rig = try Rig(formats: virtualFormats(.nv12VideoRange).filter { $0.dimensions.width == 640 }, extra: photos)
        let recorder = PhotoRecorder()
        rig.frames(2)
        let settings = CapturePhotoSettings(format: [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA])
        photos.capturePhoto(with: settings, delegate: recorder)
        rig.frames(2)
        #expect(recorder.waitForFinished())
        let result = try #require(recorder.results(settings.uniqueID).first)
        #expect(result.error == nil)
        #expect(result.photo.pixelBuffer?.pixelFormat == .bgra, "the settings' format, converted from NV12")
        #expect(result.photo.timestamp > MediaTime(value: 2, timescale: 30), "a frame after the request")
        #expect(photos.statistics.captured == 1, "the photo output took one frame")
        #expect(rig.delegate.frames.allSatisfy { $0.pixelFormat == .nv12VideoRange }, "the stream kept its format")
        rig.stopAndCheckAccounting()
        #expect(rig.output.statistics.droppedOutOfBuffers + rig.output.statistics.droppedDiscontinuity == 0)
    }
}
