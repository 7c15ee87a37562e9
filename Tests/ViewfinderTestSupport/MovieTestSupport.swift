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

/// A fresh folder for one test's movies, removed with `remove()`.
package struct MovieScratch {
    package let folder: URL

    package init() throws {
        folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("viewfinder-movie-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    package func url(_ name: String) -> URL { folder.appendingPathComponent(name) }

    package func remove() { try? FileManager.default.removeItem(at: folder) }
}

/// The ffmpeg command-line tools the recording tests check files with.
package enum FFmpegTools {
    /// The path of `tool` on PATH, if installed.
    package static func path(_ tool: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for directory in paths {
            let candidate = "\(directory)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    package static let ffprobe = path("ffprobe")
    package static let ffmpeg = path("ffmpeg")
    /// Why the checks that need ffprobe are skipped.
    package static let missing: Comment = "ffprobe/ffmpeg are not installed: run Scripts/install-dependencies.sh"

    /// Runs `executable` with `arguments`; returns its exit status and standard output.
    package static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: Data) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    /// What ffprobe says about a file's first video stream.
    package struct Probe {
        package var codecName: String
        package var width: Int
        package var height: Int
        /// Frames decoded by `-count_frames`.
        package var frameCount: Int
        /// The stream's duration in seconds (the format's when the stream has none).
        package var duration: Double?
        /// Presentation times of the video packets, in file order.
        package var packetTimes: [Double]
        /// The codec names of all streams.
        package var streamCodecs: [String]
    }

    /// ffprobe's view of `url`, or `nil` when ffprobe fails to open it.
    package static func probe(_ url: URL) throws -> Probe? {
        guard let ffprobe else { return nil }
        let streams = try run(
            ffprobe, ["-v", "error", "-count_frames", "-show_streams", "-show_format", "-of", "json", url.path])
        guard streams.status == 0,
            let json = try JSONSerialization.jsonObject(with: streams.output) as? [String: Any],
            let list = json["streams"] as? [[String: Any]],
            let video = list.first(where: { $0["codec_type"] as? String == "video" })
        else { return nil }
        let packets = try run(
            ffprobe,
            ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "json", url.path])
        let packetList =
            ((try? JSONSerialization.jsonObject(with: packets.output)) as? [String: Any])?["packets"]
            as? [[String: Any]]
            ?? []
        let format = json["format"] as? [String: Any]
        return Probe(
            codecName: video["codec_name"] as? String ?? "",
            width: video["width"] as? Int ?? 0, height: video["height"] as? Int ?? 0,
            frameCount: Int(video["nb_read_frames"] as? String ?? "") ?? -1,
            duration: Double(video["duration"] as? String ?? "") ?? Double(format?["duration"] as? String ?? ""),
            packetTimes: packetList.compactMap { Double($0["pts_time"] as? String ?? "") },
            streamCodecs: list.compactMap { $0["codec_name"] as? String })
    }
}

/// Test-pattern frames for the recording tests.
package struct PatternFrames {
    package let pool: PixelBufferPool

    package init(format: PixelFormat, width: Int = 320, height: Int = 240) throws {
        pool = try PixelBufferPool(pixelFormat: format, width: width, height: height, capacity: 4)
    }

    /// Frame `number` of the test pattern.
    package func frame(_ number: Int) throws -> PixelBuffer {
        let buffer = try #require(pool.makePixelBuffer())
        TestPattern.render(sequenceNumber: UInt64(number), into: buffer)
        return buffer
    }
}

/// Reads every decoded frame of a movie: sequence numbers and presentation times in seconds.
package func readBack(_ url: URL, format: PixelFormat = .nv12VideoRange) throws -> (numbers: [UInt64], times: [Double])
{
    let reader = try MovieFileReader(url: url, outputPixelFormat: format)
    var numbers: [UInt64] = []
    var times: [Double] = []
    while let (buffer, time) = try reader.nextFrame() {
        numbers.append(TestPattern.readSequenceNumber(from: buffer) ?? .max)
        times.append(time.seconds)
    }
    return (numbers, times)
}

extension Array where Element == Double {
    /// Whether every element is greater than the one before.
    package var isStrictlyIncreasing: Bool { zip(self, dropFirst()).allSatisfy { $0 < $1 } }
}
