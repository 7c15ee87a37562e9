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

@Suite("Recording: Motion-JPEG replay camera, recorded as it is")
struct RecordingReplayPassthroughTests {
    /// `count` JPEG images of the test pattern, numbered.
    static func jpegs(_ count: Int) throws -> [[UInt8]] {
        let encoder = try JPEGEncoder(quality: 0.85, chromaSubsampling: .yuv422)
        let frames = try PatternFrames(format: .bgra)
        return try (0..<count).map { try encoder.encode(try frames.frame($0)) }
    }

    /// Writes `jpegs` as a Motion-JPEG `.mkv` at 30 fps.
    static func writeMJPEG(_ jpegs: [[UInt8]], to url: URL) throws {
        let writer = try MovieFileWriter(url: url)
        try writer.addVideoStream(MovieVideoSettings(codec: .mjpegPassthrough, width: 320, height: 240))
        for (index, jpeg) in jpegs.enumerated() {
            try jpeg.withUnsafeBytes { bytes in
                try writer.appendVideoPacket(bytes, presentationTime: MediaTime(value: Int64(index), timescale: 30))
            }
        }
        try writer.finish()
    }

    @Test("a movie reader hands out a Motion-JPEG file's frames undecoded, and refuses that for other codecs")
    func readerPassesJPEGThrough() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let jpegs = try Self.jpegs(4)
        let url = scratch.url("frames.mkv")
        try Self.writeMJPEG(jpegs, to: url)
        let reader = try MovieFileReader(url: url, outputPixelFormat: .mjpeg, poolCapacity: 2)
        var held: [PixelBuffer] = []
        var times: [Double] = []
        for _ in 0..<2 {
            let (buffer, time) = try #require(try reader.nextFrame())
            #expect(buffer.pixelFormat == .mjpeg && buffer.width == 320 && buffer.height == 240)
            held.append(buffer)
            times.append(time.seconds)
        }
        #expect(throws: CaptureError.self, "at most poolCapacity frames are out at once") { try reader.nextFrame() }
        held.removeAll()
        while let (buffer, time) = try reader.nextFrame() {
            times.append(time.seconds)
            #expect(buffer.dataSize == jpegs[times.count - 1].count)
        }
        #expect(times.count == 4 && times.isStrictlyIncreasing)

        let h264 = scratch.url("h264.mov")
        let writer = try MovieFileWriter(url: h264)
        try writer.addVideoStream(MovieVideoSettings(codec: .h264, width: 320, height: 240))
        try writer.append(try PatternFrames(format: .nv12VideoRange).frame(0), presentationTime: .zero)
        try writer.finish()
        let error = #expect(throws: CaptureError.self) { try MovieFileReader(url: h264, outputPixelFormat: .mjpeg) }
        #expect(error?.code == .unsupportedPixelFormat)
    }

    @Test("a replay camera on a Motion-JPEG file, recorded with the JPEG codec: the file's packets are the source's")
    func replayRecordedAsItIs() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let jpegs = try Self.jpegs(8)
        let source = scratch.url("camera.mkv")
        try Self.writeMJPEG(jpegs, to: source)
        let clock = ManualClock()
        try DeviceRegistry.$current.withValue(DeviceRegistry(providers: [])) {
            let device = try CaptureDevice.replaying(
                source, options: .init(clock: clock, isPaced: true, loops: true, pixelFormat: .mjpeg))
            #expect(device.formats.map(\.pixelFormat) == [.mjpeg])
            let session = CaptureSession(notificationCenter: NotificationCenter())
            let movie = CaptureMovieFileOutput()
            try session.tryAddInput(try CaptureDeviceInput(device: device))
            try session.tryAddOutput(movie)
            try movie.setOutputSettings(
                MovieOutputSettings(codec: .jpeg), for: try #require(movie.connection(with: .video)))
            let recorder = FileRecorder()
            let url = scratch.url("recorded.mov")
            movie.startRecording(to: url, recordingDelegate: recorder)
            session.startRunning()
            #expect(session.isRunning)
            #expect(clock.waitUntilSleeping())
            for _ in 1..<jpegs.count {
                clock.advance(by: .fps(30))
                #expect(clock.waitUntilSleeping())  // the last frame out, it waits to loop
                #expect(movie.waitUntilIdle(timeout: 30))
            }
            #expect(movie.recordedFrameCount == jpegs.count)
            movie.stopRecording()
            #expect(recorder.waitForFinish())
            session.stopRunning()
            #expect(recorder.lastError == nil)
            #expect(movie.statistics.dropped == 0)

            let reader = try MovieFileReader(url: url)
            #expect(reader.video.codecName == "mjpeg")
            var packets: [[UInt8]] = []
            while let packet = try reader.nextPacket() { packets.append(packet.data) }
            #expect(packets == jpegs, "no decode, no re-encode")
        }
    }
}
