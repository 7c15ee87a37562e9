import Dispatch
import Foundation
import Synchronization
import Viewfinder

#if canImport(Glibc)
    import Glibc
#endif

/// Recording benchmarks: H.264 (libx264 `veryfast`, no B-frames, a keyframe a second) through the
/// whole recording path — a file-replay camera (unpaced, looping) → session →
/// ``CaptureMovieFileOutput`` → file — against `ffmpeg -c:v libx264 -preset veryfast` encoding
/// the same frames from the same `.y4m` file in the same run (a video data output with a no-op
/// delegate runs beside ours). Both read the file and decode
/// nothing (raw I420); both figures are frames per second of wall time and CPU-milliseconds per
/// recorded frame (all threads: ours from `getrusage(RUSAGE_SELF)`, ffmpeg's from
/// `RUSAGE_CHILDREN`).
///
/// The frames are the test pattern with a little deterministic noise on every pixel, like a
/// sensor's, so the encoder has real work (a clean pattern compresses to almost nothing).
enum RecordingBenchmarks {
    static let sizes = [(1280, 720), (1920, 1080)]

    static func cases(settings: MeasureSettings) -> [BenchmarkCase] {
        sizes.map { size in
            let dimensions = CaptureDevice.Dimensions(width: size.0, height: size.1)
            return BenchmarkCase(name: "recording/h264-veryfast/\(dimensions)", group: "recording") { settings in
                [try measure(dimensions, settings)]
            }
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Ends when the recording finishes.
    final class Finish: CaptureFileOutputRecordingDelegate {
        let done = DispatchSemaphore(value: 0)
        let error = Mutex<CaptureError?>(nil)
        func fileOutput(
            _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
            error: (any Error)?
        ) {
            self.error.withLock { $0 = error as? CaptureError }
            done.signal()
        }
    }

    static func cpuSeconds(_ who: Int32) -> Double {
        var usage = rusage()
        getrusage(who, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    static func measure(_ size: CaptureDevice.Dimensions, _ settings: MeasureSettings) throws -> BenchmarkResult {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "viewfinder-bench-recording-\(getpid())-\(size)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("frames.y4m")
        try writeFrames(to: source, size: size, count: 30)
        let frames = settings.repeats >= 7 ? 240 : 90

        // Ours: replay → session → movie file output.
        let device = try CaptureDevice.replaying(
            source, options: .init(isPaced: false, loops: true, pixelFormat: .i420, bufferCount: 2))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let movie = CaptureMovieFileOutput(bufferBudget: 3)
        movie.movieFragmentInterval = MediaTime(value: 10, timescale: 1)
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        try session.tryAddOutput(movie)
        // A video data output runs beside the recording, as in an app that also shows or analyses frames.
        let counter = PipelineBenchmarks.CountingDelegate()
        let data = CaptureVideoDataOutput()
        data.setSampleBufferDelegate(counter, queue: DispatchQueue(label: "bench.recording.frames"))
        try session.tryAddOutput(data)
        let finish = Finish()
        let url = folder.appendingPathComponent("ours.mp4")
        session.startRunning()
        guard session.isRunning else { throw Failure(description: "the replay session did not start") }
        let cpu0 = cpuSeconds(RUSAGE_SELF.rawValue)
        let t0 = Measure.now()
        movie.startRecording(to: url, recordingDelegate: finish)
        while movie.recordedFrameCount < frames, Measure.now() - t0 < 120 { usleep(2_000) }
        movie.stopRecording()
        _ = finish.done.wait(timeout: .now() + 60)
        let seconds = Measure.now() - t0
        let cpu = cpuSeconds(RUSAGE_SELF.rawValue) - cpu0
        session.stopRunning()
        if let error = finish.error.withLock({ $0 }) { throw Failure(description: "recording failed: \(error)") }
        let recorded = movie.recordedFrameCount
        let statistics = movie.statistics
        let ours = Double(recorded) / seconds

        // ffmpeg on the same frames.
        var peerFps: Double?
        var peerCpu: Double?
        if let ffmpeg = settings.ffmpeg {
            let out = folder.appendingPathComponent("ffmpeg.mp4")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: ffmpeg)
            process.arguments = [
                "-hide_banner", "-nostdin", "-nostats", "-v", "error", "-stream_loop", "-1", "-i", source.path,
                "-frames:v", "\(recorded)", "-c:v", "libx264", "-preset", "veryfast", "-bf", "0", "-g", "30",
                "-threads", "2", "-y", out.path,
            ]
            process.standardError = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            let childCpu0 = cpuSeconds(RUSAGE_CHILDREN.rawValue)
            let start = Measure.now()
            try process.run()
            process.waitUntilExit()
            let wall = Measure.now() - start
            if process.terminationStatus == 0 {
                peerFps = Double(recorded) / wall
                peerCpu = (cpuSeconds(RUSAGE_CHILDREN.rawValue) - childCpu0) * 1000 / Double(recorded)
            }
        }
        let bytes = size.width * size.height * 3 / 2
        let floor = Measure.memcpyFloor(bytes: bytes * 2, settings: settings)
        let cpuPerFrame = cpu * 1000 / Double(max(1, recorded))
        return BenchmarkResult(
            name: "recording/h264-veryfast/\(size)", group: "recording", width: size.width, height: size.height,
            engine: "libx264 veryfast", pixelFormat: "I420", fpsMin: ours, fpsMedian: ours,
            gbPerS: Double(bytes) * ours / 1e9, floor: floor, ratioToFloor: ours / floor,
            peer: "ffmpeg -c:v libx264 -preset veryfast -bf 0 -g 30", peerFps: peerFps,
            ratioToPeer: peerFps.map { ours / $0 }, usPerFrame: 1e6 / ours, cpuMsPerFrame: cpuPerFrame,
            peerCpuMsPerFrame: peerCpu,
            note:
                "\(recorded) frames recorded, \(statistics.dropped) dropped (\(statistics.droppedOutOfBuffers) encoder behind); data output beside: \(counter.delivered.load(ordering: .relaxed)) delivered"
        )
    }

    /// Writes `count` frames of the test pattern with sensor-like noise as a `.y4m` file.
    static func writeFrames(to url: URL, size: CaptureDevice.Dimensions, count: Int) throws {
        let pool = try PixelBufferPool(pixelFormat: .i420, width: size.width, height: size.height, capacity: 1)
        var data = Data("YUV4MPEG2 W\(size.width) H\(size.height) F30:1 Ip A1:1 C420mpeg2\n".utf8)
        var seed: UInt32 = 0x9E37_79B9
        for number in 0..<count {
            guard let buffer = pool.makePixelBuffer() else { throw Failure(description: "no frame buffer") }
            TestPattern.render(sequenceNumber: UInt64(number), into: buffer)
            data.append(contentsOf: Array("FRAME\n".utf8))
            for plane in 0..<buffer.planeCount {
                let width = buffer.width(ofPlane: plane)
                let height = buffer.height(ofPlane: plane)
                let base = buffer.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self)
                for row in 0..<height {
                    let line = base + row * buffer.bytesPerRow(ofPlane: plane)
                    for column in 0..<width {
                        seed ^= seed << 13
                        seed ^= seed >> 17
                        seed ^= seed << 5
                        let noise = Int(seed & 7) - 3
                        line[column] = UInt8(clamping: Int(line[column]) + noise)
                    }
                    data.append(UnsafeBufferPointer(start: line, count: width))
                }
            }
        }
        try data.write(to: url)
    }
}
