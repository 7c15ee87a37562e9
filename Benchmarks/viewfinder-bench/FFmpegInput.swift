import Foundation
import Synchronization
import Viewfinder

/// A ring of frames written once as a raw video file, for running ffmpeg filters on exactly the
/// frames a benchmark measured, looped as often as needed.
///
/// Besides the filter's own figure it measures, once per format and size, ffmpeg with `-vf null`
/// on the same file: what reading raw frames and handing them to the null muxer costs. Subtracting
/// that time estimates the filter alone (the whole-run figure flatters Viewfinder, which pays no
/// demuxing).
final class FFmpegInput {
    let ffmpeg: String
    let pixelFormat: String
    let size: CaptureDevice.Dimensions
    let ring: Int
    let file: URL

    /// Writes `sources` (all `pixelFormat`, ffmpeg's name `ffmpegFormat`) to a temporary file.
    init?(ffmpeg: String, ffmpegFormat: String, sources: [PixelBuffer]) {
        guard let first = sources.first else { return nil }
        self.ffmpeg = ffmpeg
        pixelFormat = ffmpegFormat
        size = CaptureDevice.Dimensions(width: first.width, height: first.height)
        ring = sources.count
        file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "viewfinder-bench-\(getpid())-\(ffmpegFormat)-\(size)-\(UInt32.random(in: 0...UInt32.max)).raw")
        var data = Data()
        for buffer in sources {
            for plane in 0..<buffer.planeCount {
                // Rows without padding, as rawvideo expects.
                let geometry = buffer.pixelFormat.planeGeometry(plane, width: buffer.width, height: buffer.height)
                let bytes = buffer.bytes(ofPlane: plane)
                for row in 0..<geometry.height {
                    let start = row * buffer.bytesPerRow(ofPlane: plane)
                    data.append(contentsOf: bytes[start..<(start + geometry.bytesPerRow)])
                }
            }
        }
        guard (try? data.write(to: file)) != nil else { return nil }
    }

    deinit { try? FileManager.default.removeItem(at: file) }

    /// One ffmpeg run: `frames` frames (rounded to whole loops of the ring) through `filter`.
    /// Returns the frames per second over ffmpeg's own `-benchmark` real time (demuxing included).
    func run(filter: String, frames: Int) -> (frames: Int, fps: Double)? {
        run(arguments: ["-vf", filter], frames: frames)
    }

    /// One ffmpeg run of `frames` frames (rounded to whole loops of the ring) with the output
    /// `arguments` (a filter, an encoder) into the null muxer; frames per second over ffmpeg's own
    /// `-benchmark` real time (demuxing included).
    func run(arguments output: [String], frames: Int) -> (frames: Int, fps: Double)? {
        let loops = max(0, (frames + ring - 1) / ring - 1)
        let arguments =
            [
                "-hide_banner", "-nostdin", "-nostats", "-benchmark", "-stream_loop", "\(loops)", "-f", "rawvideo",
                "-pix_fmt", pixelFormat, "-s", "\(size.width)x\(size.height)", "-i", file.path,
            ] + output + ["-f", "null", "-"]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ffmpeg)
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let range = output.range(of: #"rtime=([0-9.]+)s"#, options: .regularExpression),
            let seconds = Double(output[range].dropFirst(6).dropLast()), seconds > 0
        else { return nil }
        let total = ring * (loops + 1)
        return (total, Double(total) / seconds)
    }

    /// `filter` timed for about `seconds`: a short pilot run sizes the real one.
    func measure(filter: String, seconds: Double) -> (frames: Int, fps: Double)? {
        guard let pilot = run(filter: filter, frames: ring) else { return nil }
        let frames = min(800, max(2 * ring, Int(pilot.fps * seconds)))
        return run(filter: filter, frames: frames)
    }

    private static let nullRuns = Mutex<[String: Double]>([:])

    /// Frames per second of `-vf null` on this format and size (measured once per process).
    func nullFPS(seconds: Double) -> Double? {
        let key = "\(pixelFormat)-\(size)"
        if let known = Self.nullRuns.withLock({ $0[key] }) { return known }
        guard let figure = measure(filter: "null", seconds: seconds) else { return nil }
        Self.nullRuns.withLock { $0[key] = figure.fps }
        return figure.fps
    }
}
