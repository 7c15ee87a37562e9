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

@Suite("Recording with sound")
struct MovieWithSoundTests {
    /// Each stream's codec and start time, from ffprobe.
    func streams(_ url: URL) throws -> [(codec: String, start: Double)] {
        guard let ffprobe = FFmpegTools.ffprobe else { return [] }
        let result = try FFmpegTools.run(ffprobe, ["-v", "error", "-show_streams", "-of", "json", url.path])
        let json = try JSONSerialization.jsonObject(with: result.output) as? [String: Any]
        let list = json?["streams"] as? [[String: Any]] ?? []
        return list.map {
            ($0["codec_name"] as? String ?? "", Double($0["start_time"] as? String ?? "") ?? .nan)
        }
    }

    @Test(
        "a camera and a microphone record H.264 and AAC side by side, starting together",
        arguments: [AudioFormat.SampleFormat.int16, .float32])
    func cameraAndMicrophone(sampleFormat: AudioFormat.SampleFormat) throws {
        try #require(FFmpegTools.ffprobe != nil, FFmpegTools.missing)
        let clock = ManualClock()
        let camera = VirtualCamera(configuration: .init(clock: clock, formats: [thirtyFPSFormat()]))
        let stereo = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: sampleFormat)
        let microphone = VirtualMicrophone(configuration: .init(clock: clock, formats: [stereo]))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let movie = CaptureMovieFileOutput()
        session.beginConfiguration()
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        try session.tryAddInput(try CaptureDeviceInput(device: microphone.makeDevice()))
        try session.tryAddOutput(movie)
        session.commitConfiguration()
        #expect(Set(movie.connections.map(\.mediaType)) == [.video, .audio])
        session.startRunning()
        #expect(session.isRunning)
        #expect(clock.waitUntilSleeping(count: 2))

        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("with-sound.mov")
        let recorder = FileRecorder()
        movie.startRecording(to: url, recordingDelegate: recorder)
        // Two seconds in 10 ms steps: 60 frames and 200 microphone buffers.
        for _ in 0..<200 {
            clock.advance(by: MediaTime(value: 1, timescale: 100))
            #expect(clock.waitUntilSleeping(count: 2))
            #expect(movie.waitUntilIdle(timeout: 30))
        }
        movie.stopRecording()
        #expect(recorder.waitForFinish())
        session.stopRunning()
        #expect(recorder.lastError == nil)

        let found = try streams(url)
        let video = try #require(found.first { $0.codec == "h264" })
        let audio = try #require(found.first { $0.codec == "aac" }, "the file has an AAC track")
        #expect(abs(video.start - audio.start) <= 1024.0 / 48_000, "tracks start within one AAC packet")
        let probe = try #require(try FFmpegTools.probe(url))
        #expect(probe.frameCount >= 59, "every frame of the two seconds")
        let stats = movie.statistics
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
    }
}

@Suite("Motion-JPEG passthrough adds missing Huffman tables")
struct PassthroughHuffmanTests {
    @Test("a UVC frame without Huffman tables is written with the standard ones; a complete one as it is")
    func tablesAdded() throws {
        let complete = try JPEGTestSupport.jpeg(3, width: 320, height: 240)
        let stripped = try JPEGTestSupport.strippingHuffmanTables(complete)
        #expect(!JPEGFrame.hasHuffmanTables(stripped))
        for (frame, isComplete) in [(complete, true), (stripped, false)] {
            let buffer = JPEGBytes.pixelBuffer(holding: Data(frame), width: 320, height: 240)
            let written = MovieRecorder.frameToWrite(buffer)
            let bytes = [UInt8](UnsafeRawBufferPointer(start: written.baseAddress, count: written.dataSize))
            if isComplete {
                #expect(written === buffer, "a complete frame is passed through untouched")
            } else {
                #expect(bytes == JPEGFrame.withStandardHuffmanTables(stripped))
                #expect(JPEGFrame.hasHuffmanTables(bytes))
                let decoder = try JPEGDecoder(width: 320, height: 240, pixelFormat: .nv12FullRange)
                let pool = try PixelBufferPool(pixelFormat: .nv12FullRange, width: 320, height: 240, capacity: 1)
                let decoded = try #require(pool.makePixelBuffer())
                try decoder.decode(bytes, into: decoded)
                #expect(TestPattern.readSequenceNumber(from: decoded) == 3)
            }
        }
    }
}
