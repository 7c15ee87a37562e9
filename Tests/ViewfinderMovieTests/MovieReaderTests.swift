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

@Suite("Movie file reader", .enabled(if: FFmpegTools.ffmpeg != nil, FFmpegTools.missing))
struct MovieReaderTests {
    /// Writes 12 test-pattern frames raw and has the ffmpeg CLI turn them into `name`.
    private func makeFile(_ name: String, codecArguments: [String], in scratch: MovieScratch) throws -> URL {
        let raw = scratch.url("pattern.nv12")
        if !FileManager.default.fileExists(atPath: raw.path) {
            let frames = try PatternFrames(format: .nv12VideoRange)
            var data = Data()
            for number in 0..<12 {
                let buffer = try frames.frame(number)
                for plane in 0..<buffer.planeCount { data.append(Data(buffer.bytes(ofPlane: plane))) }
            }
            try data.write(to: raw)
        }
        let url = scratch.url(name)
        let ffmpeg = try #require(FFmpegTools.ffmpeg)
        let result = try FFmpegTools.run(
            ffmpeg,
            ["-v", "error", "-f", "rawvideo", "-pix_fmt", "nv12", "-s", "320x240", "-r", "30", "-i", raw.path]
                + codecArguments + [url.path])
        #expect(result.status == 0)
        return url
    }

    static let files: [(String, [String], String)] = [
        ("pattern.y4m", ["-pix_fmt", "yuv420p"], "rawvideo"),
        ("pattern.avi", ["-c:v", "mjpeg", "-q:v", "2", "-pix_fmt", "yuvj420p"], "mjpeg"),
        ("pattern.mkv", ["-c:v", "libx264", "-qp", "0", "-bf", "0"], "h264"),
    ]

    @Test("Files made by ffmpeg decode with their frames and times", arguments: files)
    func readsFFmpegFiles(name: String, codecArguments: [String], codec: String) throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = try makeFile(name, codecArguments: codecArguments, in: scratch)
        for format in [PixelFormat.nv12VideoRange, .i420, .bgra] {
            let reader = try MovieFileReader(url: url, outputPixelFormat: format)
            #expect(reader.video.codecName == codec)
            #expect(reader.video.width == 320 && reader.video.height == 240)
            #expect(reader.video.frameRate == 30)
            var numbers: [UInt64] = []
            var times: [Double] = []
            while let (buffer, time) = try reader.nextFrame() {
                #expect(buffer.pixelFormat == format)
                numbers.append(TestPattern.readSequenceNumber(from: buffer) ?? .max)
                times.append(time.seconds)
            }
            #expect(numbers == (0..<12).map(UInt64.init), "\(name) as \(format.name)")
            for (index, time) in times.enumerated() {
                #expect(abs(time - times[0] - Double(index) / 30) < 0.0011)
            }
            // Rewinding starts over from the first frame (looping replay).
            try reader.rewind()
            let first = try #require(try reader.nextFrame())
            #expect(TestPattern.readSequenceNumber(from: first.buffer) == 0)
        }
    }

    @Test("Missing files and files without video fail with typed errors")
    func badFiles() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        #expect { try MovieFileReader(url: scratch.url("missing.mp4")) } throws: {
            ($0 as? CaptureError)?.code == .ioError
        }
        let text = scratch.url("text.mov")
        try Data("not a movie".utf8).write(to: text)
        #expect(throws: CaptureError.self) { try MovieFileReader(url: text) }
        let ffmpeg = try #require(FFmpegTools.ffmpeg)
        let audioOnly = scratch.url("tone.m4a")
        _ = try FFmpegTools.run(
            ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "sine=duration=0.2", "-c:a", "aac", audioOnly.path])
        #expect { try MovieFileReader(url: audioOnly) } throws: { ($0 as? CaptureError)?.code == .unsupportedFormat }
        #expect { try MovieFileReader(url: audioOnly, outputPixelFormat: .yuyv) } throws: {
            ($0 as? CaptureError)?.code == .unsupportedPixelFormat
        }
    }

    @Test("Held frames exhaust the pool instead of growing memory")
    func poolBound() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = try makeFile("pattern.y4m", codecArguments: ["-pix_fmt", "yuv420p"], in: scratch)
        let reader = try MovieFileReader(url: url, poolCapacity: 2)
        var held = [try #require(try reader.nextFrame()), try #require(try reader.nextFrame())]
        #expect { try reader.nextFrame() } throws: { ($0 as? CaptureError)?.code == .outOfBuffers }
        // The frame that found no buffer is not lost.
        held.removeAll()
        let third = try #require(try reader.nextFrame())
        #expect(TestPattern.readSequenceNumber(from: third.buffer) == 2)
    }
}
