import Dispatch
import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderSimulator
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// `maxRecordedFileSize` as AVFoundation documents it: the file on disk — container boxes, the
/// frames the encoder held and the index written at the end included — never passes the limit.
@Suite("maxRecordedFileSize: the file on disk")
struct MovieFileSizeLimitTests {
    enum Video: String, CaseIterable, Sendable {
        /// The virtual camera's frames through libx264 (its lookahead holds about a dozen frames).
        case h264
        /// The simulated UVC camera's JPEG frames, written as they are.
        case mjpegPassthrough
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var video: Video
        var limit: Int64
        var withAudio: Bool
        var fileExtension = "mov"
        /// `false`: one index (moov) written at the end instead of fragments.
        var fragmented = true
        var testDescription: String {
            "\(video.rawValue), \(limit / 1000) kB, \(withAudio ? "with" : "without") audio, .\(fileExtension)"
                + (fragmented ? "" : ", one index at the end")
        }
    }

    static let cases: [Case] =
        [Video.h264, .mjpegPassthrough].flatMap { video in
            [Int64(200_000), 1_000_000, 3_000_000].flatMap { limit in
                [false, true].map { Case(video: video, limit: limit, withAudio: $0) }
            }
        } + [
            Case(video: .h264, limit: 1_000_000, withAudio: true, fileExtension: "mp4"),
            Case(video: .h264, limit: 1_000_000, withAudio: true, fileExtension: "mkv"),
            Case(video: .mjpegPassthrough, limit: 1_000_000, withAudio: false, fileExtension: "mkv"),
            Case(video: .h264, limit: 1_000_000, withAudio: true, fragmented: false),
            Case(video: .mjpegPassthrough, limit: 1_000_000, withAudio: true, fileExtension: "mp4", fragmented: false),
        ]

    /// A camera (and a microphone) on one manual clock, into a movie file output.
    struct Rig {
        let clock: ManualClock
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let movie = CaptureMovieFileOutput()
        let sleepers: Int
        /// Keeps the simulated camera's bus (and the virtual devices) alive.
        let keep: [Any]
        /// Frames the simulated camera captured and lost (for the log line).
        var cameraFrames: String {
            guard let camera = keep.compactMap({ $0 as? SimulatedUVCCamera }).first else { return "-" }
            return "\(camera.framesCaptured) captured, \(camera.framesLost) lost"
        }
        /// Frames the simulated camera lost because every buffer was held (0 for the virtual camera,
        /// whose losses show as drops).
        var cameraFramesLost: Int { keep.compactMap { $0 as? SimulatedUVCCamera }.first?.framesLost ?? 0 }

        init(_ test: Case) throws {
            var devices: [CaptureDevice] = []
            var keep: [Any] = []
            switch test.video {
            case .h264:
                clock = ManualClock()
                let camera = VirtualCamera(
                    configuration: .init(clock: clock, formats: [thirtyFPSFormat(.nv12VideoRange, 640, 480)]))
                devices.append(camera.device)
                keep.append(camera)
            case .mjpegPassthrough:
                let listing = """
                    \t[0]: 'MJPG' (Motion-JPEG, compressed)
                    \t\tSize: Discrete 640x480
                    \t\t\tInterval: Discrete 0.033s (30.000 fps)
                    """
                let simulated = try SimulatedRig(listing: listing)
                clock = simulated.clock
                devices.append(try simulated.device)
                keep.append(simulated.bus)
                keep.append(simulated.camera)
            }
            if test.withAudio {
                let stereo = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16)
                let microphone = VirtualMicrophone(configuration: .init(clock: clock, formats: [stereo]))
                devices.append(microphone.makeDevice())
                keep.append(microphone)
            }
            sleepers = devices.count
            self.keep = keep
            session.beginConfiguration()
            for device in devices { try session.tryAddInput(try CaptureDeviceInput(device: device)) }
            try session.tryAddOutput(movie)
            session.commitConfiguration()
            let connection = try #require(movie.connection(with: .video))
            var settings = MovieOutputSettings(codec: test.video == .h264 ? .h264 : .jpeg)
            if test.video == .h264 { settings.quality = 1 }
            try movie.setOutputSettings(settings, for: connection)
        }

        /// One frame's time, waited for until the output has taken what it brought.
        func step() {
            clock.advance(by: .fps(30))
            #expect(clock.waitUntilSleeping(count: sleepers))
            #expect(movie.waitUntilIdle(timeout: 30))
        }
    }

    @Test(
        "the closed file is within the limit, close to it, playable, and the reason is maximumFileSizeReached",
        arguments: cases)
    func fileWithinLimit(_ test: Case) throws {
        let ffprobe = try #require(FFmpegTools.ffprobe, FFmpegTools.missing)
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("limited.\(test.fileExtension)")
        let rig = try Rig(test)
        rig.movie.maxRecordedFileSize = test.limit
        if !test.fragmented { rig.movie.movieFragmentInterval = .invalid }
        rig.session.startRunning()
        #expect(rig.session.isRunning)
        #expect(rig.clock.waitUntilSleeping(count: rig.sleepers))
        let recorder = FileRecorder()
        rig.movie.startRecording(to: url, recordingDelegate: recorder)
        var steps = 0
        // Bounded: the largest limit takes some 10,000 frames of the lightest stream (lossless
        // H.264 of the test pattern: about 300 bytes a frame).
        while recorder.finishCount == 0, steps < 12_000 {
            rig.step()
            steps += 1
        }
        #expect(recorder.waitForFinish())
        rig.session.stopRunning()

        let error = try #require(recorder.lastError, "the recording ended by itself within \(steps) frames")
        #expect(error.code == .maximumFileSizeReached, "\(error)")
        #expect(error.recordingSuccessfullyFinished == true)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        #expect(Int64(size) <= test.limit, "the file on disk (\(size) bytes) stays within \(test.limit)")
        // How close: the room kept before each frame is an upper bound — the largest of the last
        // 64 packets for the next frame (a keyframe, or the JPEG frame itself), half again the
        // mean packet for each of the ~12 frames libx264 holds, six AAC packets — and the index is
        // bounded at 16 (fragments, Matroska) or 36 (one index) bytes a packet against 6-13 bytes
        // measured, beside the 4 KiB metadata reserve. Here a JPEG frame is about 10 kB and an
        // H.264 GOP about 10 kB, so the room is under 8 % of the smallest limit and the index
        // bound's excess under 5 % of the media (measured: 96-99 % of the limit in fragments,
        // 2026-12-03). Below 85 % the bound would be loose beyond what these figures explain.
        #expect(Int64(size) * 100 >= test.limit * 85, "the file (\(size) bytes) got close to \(test.limit)")
        #expect(rig.movie.recordedFileSize == Int64(size))

        let probe = try #require(try FFmpegTools.probe(url), "ffprobe reads the file")
        #expect(probe.codecName == (test.video == .h264 ? "h264" : "mjpeg"))
        #expect(probe.frameCount == rig.movie.recordedFrameCount, "every recorded frame, and only those, decodes")
        #expect(probe.frameCount > 0)
        if test.withAudio { #expect(probe.streamCodecs.contains("aac"), "\(probe.streamCodecs)") }
        let check = try FFmpegTools.run(
            ffprobe, ["-v", "error", "-show_entries", "format=size", "-of", "csv=p=0", url.path])
        #expect(check.status == 0)
        if test.video == .h264 {
            // The recording starts with the first frame after `startRecording`.
            let numbers = try readBack(url).numbers
            let first = numbers.first ?? 0
            #expect(numbers.count == rig.movie.recordedFrameCount)
            #expect(
                numbers == (first..<first + UInt64(numbers.count)).map { $0 },
                "the frames in order, none lost in between (from \(first): \(numbers.count) frames)")
        }
        let stats = rig.movie.statistics
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
        // Stepped one frame at a time, nothing is lost: in particular Motion-JPEG passthrough with
        // audio must not hold the camera's ring in libavformat's interleaving queue (it lost two
        // frames in three before the writer copied such frames).
        #expect(stats.dropped == 0, "\(stats)")
        #expect(rig.cameraFramesLost == 0, "the camera lost no frame for want of buffers")
        print(
            "size-limit \(test.testDescription): \(size) bytes of \(test.limit) (\(size * 100 / Int(test.limit)) %), \(probe.frameCount) frames, \(steps) steps; captured \(stats.captured), delivered \(stats.delivered), dropped \(stats.dropped), camera frames \(rig.cameraFrames)"
        )
    }

    @Test(
        "the writer withholds what would pass the limit: a packet too large for the room left ends it, within the limit"
    )
    func writerWithholds() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("writer.mov")
        let frames = try PatternFrames(format: .nv12VideoRange)
        var settings = MovieVideoSettings(width: 320, height: 240)
        settings.quality = .constantQuantizer(0)
        let writer = try MovieFileWriter(url: url)
        try writer.addVideoStream(settings)
        writer.maxFileSize = 40_000
        var appended = 0
        var reason: RecordingError?
        for number in 0..<300 {
            let frame = try frames.frame(number)
            do throws(RecordingError) {
                try writer.append(frame, presentationTime: MediaTime(value: Int64(number), timescale: 30))
                appended += 1
            } catch {
                reason = error
                break
            }
        }
        #expect(reason?.code == .fileSizeLimitReached)
        #expect(writer.reachedSizeLimit)
        let summary = try writer.finish()
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        #expect(Int64(size) <= 40_000)
        #expect(summary.bytesWritten == Int64(size))
        #expect(summary.isPlayable)
        let numbers = try readBack(url).numbers
        #expect(numbers.count == summary.videoFramesWritten)
        #expect(numbers == (0..<UInt64(numbers.count)).map { $0 })
        #expect(numbers.count + writer.packetsWithheld <= appended + 1)
    }

    @Test(
        "a packet that would pass the limit is withheld, with everything after it: audio, which has no room kept ahead")
    func packetWithheld() throws {
        let ffprobe = try #require(FFmpegTools.ffprobe, FFmpegTools.missing)
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("audio.mov")
        let writer = try MovieFileWriter(url: url)
        try writer.addAudioStream(sampleRate: 48_000, channels: 2)
        writer.maxFileSize = 30_000
        // A noisy two-tone signal, 10 ms a call, so AAC packets are not all alike.
        var seed: UInt32 = 1
        var chunks = 0
        var reason: RecordingError?
        while reason == nil, chunks < 2_000 {
            var samples = [Int16](repeating: 0, count: 960)
            for frame in 0..<480 {
                seed = seed &* 1_103_515_245 &+ 12_345
                let t = Double(chunks * 480 + frame) / 48_000
                let value = 8_000 * sin(2 * .pi * 440 * t) + Double(Int16(truncatingIfNeeded: seed >> 16) / 8)
                samples[2 * frame] = Int16(value)
                samples[2 * frame + 1] = Int16(value / 2)
            }
            let time = MediaTime(value: Int64(chunks * 480), timescale: 48_000)
            do {
                try samples.withUnsafeBytes {
                    try writer.appendAudio($0, format: .int16Interleaved, presentationTime: time)
                }
                chunks += 1
            } catch let error as RecordingError {
                reason = error
            }
        }
        #expect(reason?.code == .fileSizeLimitReached, "\(String(describing: reason))")
        #expect(writer.reachedSizeLimit)
        #expect(writer.packetsWithheld >= 1, "the packet that did not fit was withheld")
        let summary = try writer.finish()
        #expect(writer.packetsWithheld >= 2, "the encoder's drained packets after it too")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        #expect(Int64(size) <= 30_000, "\(size) bytes")
        #expect(Int64(size) * 100 >= 30_000 * 85, "\(size) bytes")
        #expect(summary.isPlayable)
        let probe = try FFmpegTools.run(
            ffprobe, ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", url.path])
        #expect(probe.status == 0)
        #expect(String(decoding: probe.output, as: UTF8.self).contains("aac"))
    }
}
