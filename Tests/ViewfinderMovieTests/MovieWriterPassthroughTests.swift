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

/// JPEG frames made by the ffmpeg CLI (its test source at 320x240, 4:2:2 like a webcam's).
private func makeJPEGs(count: Int, in scratch: MovieScratch) throws -> [[UInt8]] {
    let ffmpeg = try #require(FFmpegTools.ffmpeg)
    let pattern = scratch.url("frame-%03d.jpg").path
    let result = try FFmpegTools.run(
        ffmpeg,
        [
            "-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30", "-frames:v", String(count),
            "-pix_fmt", "yuvj422p", "-c:v", "mjpeg", "-q:v", "5", pattern,
        ])
    #expect(result.status == 0)
    return try (1...count).map { index in
        try [UInt8](Data(contentsOf: scratch.url(String(format: "frame-%03d.jpg", index))))
    }
}

@Suite("Movie file writer: Motion-JPEG passthrough and audio")
struct MovieWriterPassthroughTests {
    @Test(
        "JPEG frames are stored byte for byte", .enabled(if: FFmpegTools.ffmpeg != nil, FFmpegTools.missing),
        arguments: ["mov", "mp4", "mkv"])
    func passthrough(fileExtension: String) throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let jpegs = try makeJPEGs(count: 20, in: scratch)
        let url = scratch.url("mjpeg.\(fileExtension)")
        var options = MovieWriterOptions()
        options.fragmentInterval = MediaTime(value: 1, timescale: 4)
        let writer = try MovieFileWriter(url: url, options: options)
        try writer.addVideoStream(MovieVideoSettings(codec: .mjpegPassthrough, width: 320, height: 240))
        for (index, jpeg) in jpegs.enumerated() {
            let time = MediaTime(value: 500, timescale: 1) + MediaTime(value: Int64(index), timescale: 30)
            if index % 2 == 0 {
                try withBytes(of: jpeg) { try writer.appendVideoPacket($0, presentationTime: time) }
            } else {
                // The zero-copy path: a Motion-JPEG pixel buffer the packet references.
                let memory = UnsafeMutableRawPointer.allocate(byteCount: jpeg.count, alignment: 64)
                memory.copyMemory(from: jpeg, byteCount: jpeg.count)
                let owner = FreeOnReclaim(memory)
                let buffer = PixelBuffer(
                    memory: memory, layout: PlaneLayout(pixelFormat: .mjpeg, width: 320, height: 240),
                    dataSize: jpeg.count, owner: owner, slot: 0)
                try writer.append(buffer, presentationTime: time)
            }
        }
        let summary = try writer.finish()
        #expect(summary.videoFramesWritten == jpegs.count)

        let reader = try MovieFileReader(url: url)
        #expect(reader.video.codecName == "mjpeg")
        var packets: [MovieFileReader.Packet] = []
        while let packet = try reader.nextPacket() { packets.append(packet) }
        #expect(packets.map(\.data) == jpegs)
        #expect(packets.allSatisfy { $0.isKeyframe })
        #expect(packets.map(\.presentationTime.seconds).isStrictlyIncreasing)

        let probe = try #require(try FFmpegTools.probe(url))
        #expect(probe.codecName == "mjpeg")
        #expect(probe.frameCount == jpegs.count)
        #expect(abs((probe.duration ?? 0) - Double(jpegs.count) / 30) <= 1.0 / 30)
    }

    @Test("Passthrough refuses what is not a JPEG")
    func passthroughRefusesGarbage() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let writer = try MovieFileWriter(url: scratch.url("bad.mov"))
        try writer.addVideoStream(MovieVideoSettings(codec: .mjpegPassthrough, width: 320, height: 240))
        let garbage: [UInt8] = [1, 2, 3, 4, 5, 6]
        #expect {
            try withBytes(of: garbage) { try writer.appendVideoPacket($0, presentationTime: .zero) }
        } throws: { ($0 as? RecordingError)?.code == .invalidArgument }
        let frames = try PatternFrames(format: .nv12VideoRange)
        #expect { try writer.append(frames.frame(0), presentationTime: .zero) } throws: {
            ($0 as? RecordingError)?.code == .unsupportedFormat
        }
    }

    @Test(
        "An AAC track records beside the video",
        arguments: [MovieAudioSampleFormat.float32Interleaved, .int16Interleaved])
    func audio(format: MovieAudioSampleFormat) throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("av.mp4")
        let writer = try MovieFileWriter(url: url)
        var settings = MovieVideoSettings(codec: .h264, width: 320, height: 240)
        settings.preset = "ultrafast"
        try writer.addVideoStream(settings)
        try writer.addAudioStream(sampleRate: 48_000, channels: 2)
        let frames = try PatternFrames(format: .nv12VideoRange)
        let start = MediaTime(value: 77, timescale: 1)
        // One second: 30 frames, and 100 chunks of 480 stereo samples of a 440 Hz tone.
        for chunk in 0..<100 {
            let samples = (0..<480).flatMap { index -> [Float] in
                let value = Float(sin(2 * Double.pi * 440 * Double(chunk * 480 + index) / 48_000) * 0.5)
                return [value, value]
            }
            let time = start + MediaTime(value: Int64(chunk * 480), timescale: 48_000)
            switch format {
            case .float32Interleaved:
                try withBytes(of: samples) { try writer.appendAudio($0, format: format, presentationTime: time) }
            case .int16Interleaved:
                let ints = samples.map { Int16($0 * 32767) }
                try withBytes(of: ints) { try writer.appendAudio($0, format: format, presentationTime: time) }
            }
            if chunk % 10 < 3 {
                let number = chunk / 10 * 3 + chunk % 10
                try writer.append(
                    frames.frame(number), presentationTime: start + MediaTime(value: Int64(number), timescale: 30))
            }
        }
        let summary = try writer.finish()
        #expect(summary.audioSamplesWritten == 48_000)
        #expect(summary.videoFramesWritten == 30)
        #expect(abs(summary.durationWritten.seconds - 1) < 0.05)
        #expect {
            try writer.appendAudio(
                UnsafeRawBufferPointer(start: nil, count: 0), format: format, presentationTime: start)
        } throws: {
            ($0 as? RecordingError)?.code == .invalidState
        }
        guard let ffprobe = FFmpegTools.ffprobe else { return }
        let result = try FFmpegTools.run(
            ffprobe,
            [
                "-v", "error", "-select_streams", "a:0", "-show_entries",
                "stream=codec_name,sample_rate,channels,duration", "-of", "json", url.path,
            ])
        let json = try #require(try JSONSerialization.jsonObject(with: result.output) as? [String: Any])
        let stream = try #require((json["streams"] as? [[String: Any]])?.first)
        #expect(stream["codec_name"] as? String == "aac")
        #expect(stream["sample_rate"] as? String == "48000")
        #expect(stream["channels"] as? Int == 2)
        #expect(abs((Double(stream["duration"] as? String ?? "") ?? 0) - 1) < 0.05)
        #expect(try readBack(url).numbers == (0..<30).map(UInt64.init))
    }
}

/// Calls `body` with a copy of `array`'s bytes. (Swift 6.3 crashes compiling a typed-throws
/// closure passed to `Array.withUnsafeBytes`, so the bytes are copied into a plain buffer.)
private func withBytes<T>(of array: [T], _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
    let count = array.count * MemoryLayout<T>.stride
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, count), alignment: 16)
    defer { buffer.deallocate() }
    array.withUnsafeBytes { buffer.copyMemory(from: $0) }
    try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
}

/// Frees one block of memory when the pixel buffer over it goes.
// unchecked: the pointer is immutable and freed once, by reclaim.
private final class FreeOnReclaim: PixelMemoryOwner, @unchecked Sendable {
    let memory: UnsafeMutableRawPointer
    init(_ memory: UnsafeMutableRawPointer) { self.memory = memory }
    func reclaim(slot: Int) { memory.deallocate() }
}
