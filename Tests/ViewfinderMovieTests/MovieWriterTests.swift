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

/// The frame numbers a test records: 0..<40 with 10 and 11 missing, as if the camera lost them,
/// so the file must keep the gap (timestamps stay true, never squashed).
private let recordedNumbers = (0..<40).filter { $0 != 10 && $0 != 11 }
/// A host-clock start, far from zero: the file's times start at 0 all the same.
private let hostStart = MediaTime(value: 12_345, timescale: 1)

private func hostTime(_ number: Int) -> MediaTime {
    hostStart + MediaTime(value: Int64(number), timescale: 30)
}

/// Writes `numbers` of the test pattern at 30 fps host times into `url`.
@discardableResult
private func record(
    _ url: URL, settings: MovieVideoSettings, numbers: [Int] = recordedNumbers,
    options: MovieWriterOptions = MovieWriterOptions()
) throws -> MovieWriterSummary {
    let writer = try MovieFileWriter(url: url, options: options)
    try writer.addVideoStream(settings)
    let frames = try PatternFrames(format: settings.sourcePixelFormat, width: settings.width, height: settings.height)
    for number in numbers {
        try writer.append(frames.frame(number), presentationTime: hostTime(number))
    }
    return try writer.finish()
}

private func losslessH264(_ format: PixelFormat = .nv12VideoRange) -> MovieVideoSettings {
    var settings = MovieVideoSettings(codec: .h264, width: 320, height: 240, sourcePixelFormat: format)
    settings.quality = .constantQuantizer(0)
    return settings
}

@Suite("Movie file writer")
struct MovieWriterTests {
    static let fragmentChoices: [(String, MediaTime)] = [
        ("mov", MediaTime(value: 1, timescale: 2)), ("mov", .invalid), ("mp4", MediaTime(value: 1, timescale: 2)),
        ("mp4", .invalid), ("mkv", MediaTime(value: 1, timescale: 2)),
    ]

    @Test("H.264 round trip through MovieFileReader and ffprobe", arguments: fragmentChoices)
    func h264RoundTrip(fileExtension: String, fragmentInterval: MediaTime) throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("movie.\(fileExtension)")
        var options = MovieWriterOptions()
        options.fragmentInterval = fragmentInterval
        let summary = try record(url, settings: losslessH264(), options: options)
        let last = Double(recordedNumbers.last!)
        #expect(summary.videoFramesWritten == recordedNumbers.count)
        #expect(summary.isComplete && summary.isPlayable)
        #expect(summary.bytesMuxed > 0 && summary.bytesMuxed < summary.bytesWritten)
        #expect(abs(summary.durationWritten.seconds - (last + 1) / 30) < 0.002)
        #expect(
            summary.bytesWritten
                == (try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int).map(Int64.init))

        // Decoded by libavformat: every frame, in order, at its own time (the gap kept).
        let (numbers, times) = try readBack(url)
        #expect(numbers == recordedNumbers.map(UInt64.init))
        #expect(times.isStrictlyIncreasing)
        let tolerance = fileExtension == "mkv" ? 0.0011 : 0.0001  // Matroska keeps milliseconds.
        for (time, number) in zip(times, recordedNumbers) {
            #expect(abs(time - Double(number) / 30) < tolerance, "frame \(number) at \(time)")
        }

        guard FFmpegTools.ffprobe != nil else { return }
        let probe = try #require(try FFmpegTools.probe(url), "ffprobe cannot open \(url.lastPathComponent)")
        #expect(probe.codecName == "h264")
        #expect(probe.width == 320 && probe.height == 240)
        #expect(probe.frameCount == recordedNumbers.count)
        #expect(probe.packetTimes.count == recordedNumbers.count)
        #expect(probe.packetTimes.isStrictlyIncreasing)
        let duration = try #require(probe.duration)
        #expect(abs(duration - (last + 1) / 30) <= 1.0 / 30, "ffprobe duration \(duration)")
    }

    @Test(
        "Frames in every source format are encoded with their sequence numbers",
        arguments: [PixelFormat.bgra, .i420, .yuyv, .nv12FullRange])
    func sourceFormats(format: PixelFormat) throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("movie.mov")
        try record(url, settings: losslessH264(format), numbers: Array(0..<8))
        #expect(try readBack(url).numbers == (0..<8).map(UInt64.init))
    }

    @Test("Bit rate and CRF settings encode; bad settings are refused")
    func qualitySettings() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        for (index, quality) in [MovieVideoQuality.bitRate(2_000_000), .constantRateFactor(18)].enumerated() {
            var settings = losslessH264()
            settings.quality = quality
            let url = scratch.url("q\(index).mp4")
            try record(url, settings: settings, numbers: Array(0..<10))
            #expect(try readBack(url).numbers == (0..<10).map(UInt64.init))
        }
        let writer = try MovieFileWriter(url: scratch.url("bad.mov"))
        var settings = losslessH264()
        settings.preset = "no-such-preset"
        #expect(throws: RecordingError.self) { try writer.addVideoStream(settings) }
        settings = losslessH264()
        settings.width = 321
        #expect { try writer.addVideoStream(settings) } throws: { ($0 as? RecordingError)?.code == .invalidArgument }
    }

    @Test("HEVC through libx265", .enabled(if: MovieVideoCodec.hevc.isAvailable, "this FFmpeg build has no libx265"))
    func hevc() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("movie.mp4")
        var settings = MovieVideoSettings(codec: .hevc, width: 320, height: 240, sourcePixelFormat: .nv12VideoRange)
        settings.preset = "ultrafast"
        settings.quality = .constantRateFactor(10)
        try record(url, settings: settings, numbers: Array(0..<12))
        let (numbers, times) = try readBack(url)
        #expect(numbers == (0..<12).map(UInt64.init))
        #expect(times.isStrictlyIncreasing)
        if FFmpegTools.ffprobe != nil {
            let probe = try #require(try FFmpegTools.probe(url))
            #expect(probe.codecName == "hevc")
            #expect(probe.frameCount == 12)
        }
    }

    @Test("Timestamps that do not increase are refused without failing the writer")
    func nonIncreasingTimestamps() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("movie.mov")
        let writer = try MovieFileWriter(url: url)
        try writer.addVideoStream(losslessH264())
        let frames = try PatternFrames(format: .nv12VideoRange)
        try writer.append(frames.frame(0), presentationTime: hostTime(0))
        try writer.append(frames.frame(1), presentationTime: hostTime(1))
        for bad in [hostTime(1), hostTime(0), .invalid, hostStart - MediaTime(value: 1, timescale: 1)] {
            #expect { try writer.append(frames.frame(9), presentationTime: bad) } throws: {
                ($0 as? RecordingError)?.code == .invalidTimestamp
            }
        }
        try writer.append(frames.frame(2), presentationTime: hostTime(2))
        let summary = try writer.finish()
        #expect(summary.videoFramesWritten == 3)
        #expect(try readBack(url).numbers == [0, 1, 2])
        #expect { try writer.append(frames.frame(3), presentationTime: hostTime(3)) } throws: {
            ($0 as? RecordingError)?.code == .invalidState
        }
    }

    @Test("An existing file is never overwritten")
    func refusesToOverwrite() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("taken.mov")
        let original = Data("someone's file".utf8)
        try original.write(to: url)
        #expect { try MovieFileWriter(url: url) } throws: { ($0 as? RecordingError)?.code == .fileAlreadyExists }
        #expect(try Data(contentsOf: url) == original)
        #expect { try MovieFileWriter(url: scratch.url("missing/folder.mov")) } throws: {
            ($0 as? RecordingError)?.code == .ioError
        }
    }

    @Test("A writer that never wrote a frame leaves no file")
    func nothingWritten() throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("empty.mov")
        let writer = try MovieFileWriter(url: url)
        try writer.addVideoStream(losslessH264())
        #expect(FileManager.default.fileExists(atPath: url.path))
        let summary = try writer.finish()
        #expect(summary.videoFramesWritten == 0 && summary.bytesWritten == 0 && !summary.isPlayable)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("Unknown streaming schemes are refused; streaming URLs pick their container")
    func containers() throws {
        #expect(MovieContainer(url: URL(fileURLWithPath: "/tmp/a.mov")) == .quickTime)
        #expect(MovieContainer(url: URL(fileURLWithPath: "/tmp/a")) == .quickTime)
        #expect(MovieContainer(url: URL(fileURLWithPath: "/tmp/a.MP4")) == .mpeg4)
        #expect(MovieContainer(url: URL(fileURLWithPath: "/tmp/a.mkv")) == .matroska)
        #expect(MovieContainer(url: URL(string: "srt://127.0.0.1:9000")!) == .mpegTS)
        #expect(MovieContainer(url: URL(string: "rtmp://127.0.0.1/live/cam")!) == .flv)
        #expect(MovieContainer(url: URL(string: "rtsp://127.0.0.1:8554/cam")!) == .rtsp)
        #expect { try MovieFileWriter(url: URL(string: "gopher://example.org/x")!) } throws: {
            ($0 as? RecordingError)?.code == .unsupportedContainer
        }
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        var options = MovieWriterOptions()
        options.fragmentInterval = MediaTime(value: -1, timescale: 1)
        #expect { try MovieFileWriter(url: scratch.url("negative.mov"), options: options) } throws: {
            ($0 as? RecordingError)?.code == .invalidArgument
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.url("negative.mov").path))
    }
}

@Suite("Movie file writer failures and crash safety")
struct MovieWriterSafetyTests {
    @Test("A full disk fails with diskFull and leaves a playable file", arguments: ["mov", "mp4", "mkv"])
    func diskFull(fileExtension: String) throws {
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("full.\(fileExtension)")
        var options = MovieWriterOptions()
        options.fragmentInterval = MediaTime(value: 1, timescale: 5)
        options.failAfterBytes = 150_000
        let writer = try MovieFileWriter(url: url, options: options)
        var settings = MovieVideoSettings(codec: .h264, width: 320, height: 240)
        settings.preset = "ultrafast"
        settings.quality = .constantRateFactor(20)
        try writer.addVideoStream(settings)
        let frames = try PatternFrames(format: .nv12VideoRange)
        var failure: RecordingError?
        var appended = 0
        for number in 0..<5000 {
            let frame = try frames.frame(number)
            do {
                try writer.append(frame, presentationTime: hostTime(number))
                appended += 1
            } catch {
                failure = error
                break
            }
        }
        let error = try #require(failure, "the byte limit was never reached")
        #expect(error.code == .diskFull)
        #expect(error.errno == ENOSPC)
        #expect(writer.bytesWritten <= 150_000 && writer.bytesWritten > 0)
        #expect(writer.durationWritten > .zero)
        #expect(writer.summary.isPlayable)
        // Later calls and finish report the same failure; the file stays readable.
        #expect { try writer.append(frames.frame(0), presentationTime: hostTime(10_000)) } throws: {
            ($0 as? RecordingError)?.code == .diskFull
        }
        #expect { try writer.finish() } throws: { ($0 as? RecordingError)?.code == .diskFull }
        let (numbers, _) = try readBack(url)
        #expect(numbers.count > 0 && numbers.count <= appended)
        #expect(numbers == (0..<numbers.count).map(UInt64.init))
        if FFmpegTools.ffprobe != nil {
            let probe = try #require(try FFmpegTools.probe(url), "ffprobe cannot open the cut-off file")
            #expect(probe.frameCount >= 1)
        }
    }

    @Test(
        "A recorder killed with SIGKILL leaves every completed fragment",
        .enabled(if: FFmpegTools.ffprobe != nil, FFmpegTools.missing))
    func killedMidRecording() throws {
        let probe = Bundle.main.executableURL?.deletingLastPathComponent()
            .appendingPathComponent("viewfinder-record-probe")
        let candidates: [String?] = [
            probe?.path(percentEncoded: false),
            FileManager.default.currentDirectoryPath + "/.build/debug/viewfinder-record-probe",
        ]
        guard let executable = candidates.compactMap({ $0 }).first(where: FileManager.default.isExecutableFile)
        else {
            Issue.record("viewfinder-record-probe is not built: run swift build --build-tests")
            return
        }
        let scratch = try MovieScratch()
        defer { scratch.remove() }
        let url = scratch.url("killed.mov")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [url.path, "0.25"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        // Each line: the file grew (a fragment reached the disk) with this many frames muxed.
        var lines: [String] = []
        var pending = ""
        while lines.count < 4 {
            let data = pipe.fileHandleForReading.availableData
            if data.isEmpty { break }
            pending += String(decoding: data, as: UTF8.self)
            while let newline = pending.firstIndex(of: "\n") {
                lines.append(String(pending[..<newline]))
                pending = String(pending[pending.index(after: newline)...])
            }
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        let last = try #require(lines.last?.split(separator: " ").last.flatMap { Int($0) })
        // The packet that started the newest fragment is not in a complete one yet.
        let completed = last - 1
        #expect(lines.count == 4 && completed > 0)
        let result = try #require(try FFmpegTools.probe(url), "ffprobe cannot open the killed recording")
        #expect(result.codecName == "h264")
        #expect(result.frameCount >= completed)
        let (numbers, times) = try readBack(url)
        #expect(numbers.count >= completed)
        #expect(numbers == (0..<numbers.count).map(UInt64.init))
        #expect(times.isStrictlyIncreasing)
    }
}
