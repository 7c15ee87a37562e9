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
///
/// Motion-JPEG passthrough (`recording/mjpeg-passthrough/<size>`): webcam-like JPEG frames
/// (``MJPEGBenchmarks/frames(_:)``) in a Motion-JPEG `.mkv`, replayed undecoded by an unpaced,
/// looping file-replay camera → session → ``CaptureMovieFileOutput`` with the `.jpeg` codec
/// (no decode, no re-encode) → fragmented `.mov`; against the copy floor (the same JPEG bytes
/// written to a file with one `write(2)` per frame) and `ffmpeg -c:v copy` of the same `.mkv`
/// into a `.mov` with the same fragment flags. Every contender ends with an fsync of its file
/// (ours does it before `didFinishRecordingTo`; the floor and ffmpeg's file get one in the timed
/// window), so all pay the same disk. Each repeat rotates the order (reversed every other repeat),
/// each timed run follows an untimed pre-roll run.
enum RecordingBenchmarks {
    static let sizes = [(1280, 720), (1920, 1080)]

    static func cases(settings: MeasureSettings) -> [BenchmarkCase] {
        (settings.groupSizes ?? sizes).flatMap { size in
            let dimensions = CaptureDevice.Dimensions(width: size.0, height: size.1)
            return [
                BenchmarkCase(name: "recording/h264-veryfast/\(dimensions)", group: "recording") { settings in
                    [try measure(dimensions, settings)]
                },
                BenchmarkCase(name: "recording/mjpeg-passthrough/\(dimensions)", group: "recording") { settings in
                    [try measurePassthrough(dimensions, settings)]
                },
            ]
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

    /// Starts `session`, records into `url` until `frames` frames are in (polling every `poll` µs,
    /// at most 120 s), stops and waits for the file to finish: wall seconds and process CPU
    /// seconds from the start of the recording to its finish.
    static func record(
        session: CaptureSession, movie: CaptureMovieFileOutput, to url: URL, frames: Int, poll: UInt32
    ) throws -> (seconds: Double, cpu: Double) {
        let finish = Finish()
        session.startRunning()
        guard session.isRunning else { throw Failure(description: "the replay session did not start") }
        let cpu0 = cpuSeconds(RUSAGE_SELF.rawValue)
        let t0 = Measure.now()
        movie.startRecording(to: url, recordingDelegate: finish)
        while movie.recordedFrameCount < frames, Measure.now() - t0 < 120 { usleep(poll) }
        movie.stopRecording()
        _ = finish.done.wait(timeout: .now() + 60)
        let seconds = Measure.now() - t0
        let cpu = cpuSeconds(RUSAGE_SELF.rawValue) - cpu0
        session.stopRunning()
        if let error = finish.error.withLock({ $0 }) { throw Failure(description: "recording failed: \(error)") }
        return (seconds, cpu)
    }

    static func measure(_ size: CaptureDevice.Dimensions, _ settings: MeasureSettings) throws -> BenchmarkResult {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "viewfinder-bench-recording-\(getpid())-\(size)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("frames.y4m")
        try writeFrames(to: source, size: size, count: 30)
        let frames = settings.quick ? 30 : settings.repeats >= 7 ? 240 : 90

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
        let url = folder.appendingPathComponent("ours.mp4")
        let (seconds, cpu) = try record(session: session, movie: movie, to: url, frames: frames, poll: 2_000)
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
        let bytes = size.area * 3 / 2
        let floor = Measure.memcpyFloor(bytes: bytes * 2, settings: settings)
        let cpuPerFrame = cpu * 1000 / Double(max(1, recorded))
        return BenchmarkResult(
            name: "recording/h264-veryfast/\(size)", group: "recording", width: size.pixelWidth,
            height: size.pixelHeight,
            engine: "libx264 veryfast", pixelFormat: "I420", fpsMin: ours, fpsMedian: ours,
            gbPerS: Double(bytes) * ours / 1e9, floor: floor, ratioToFloor: ours / floor,
            peer: "ffmpeg -c:v libx264 -preset veryfast -bf 0 -g 30", peerFps: peerFps,
            ratioToPeer: peerFps.map { ours / $0 }, usPerFrame: 1e6 / ours, cpuMsPerFrame: cpuPerFrame,
            peerCpuMsPerFrame: peerCpu,
            note:
                "\(recorded) frames recorded, \(statistics.dropped) dropped (\(statistics.droppedOutOfBuffers) encoder behind); data output beside: \(counter.delivered.load(ordering: .relaxed)) delivered"
        )
    }

    // MARK: Motion-JPEG passthrough

    /// One contender of the passthrough rows: writes about `frames` frames (returns how many it
    /// did), timed in wall and CPU seconds.
    struct Contender {
        var name: String
        var run: (_ frames: Int) throws -> (frames: Int, seconds: Double, cpu: Double)?
    }

    /// A count kept across a contender's runs (on the benchmark's thread only).
    final class Tally {
        var count = 0
    }

    static func measurePassthrough(_ size: CaptureDevice.Dimensions, _ settings: MeasureSettings) throws
        -> BenchmarkResult
    {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "viewfinder-bench-passthrough-\(getpid())-\(size)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let jpegs = try MJPEGBenchmarks.frames(size)
        let source = folder.appendingPathComponent("frames.mkv")
        try writeMJPEG(jpegs, to: source, size: size, count: 60)
        let bytesPerFrame = Double(jpegs.map(\.count).reduce(0, +)) / Double(jpegs.count)
        var runNumber = 0
        func nextFile(_ stem: String) -> URL {
            runNumber += 1
            return folder.appendingPathComponent("\(stem)-\(runNumber).mov")
        }

        let dropped = Tally()
        var contenders = [
            try viewfinderPassthrough(source: source, dropped: dropped, nextFile: { nextFile("ours") }),
            Contender(name: "write(2) per frame") { frames in
                try copyFloor(jpegs, frames: frames, to: nextFile("floor"))
            },
        ]
        if let ffmpeg = settings.ffmpeg {
            contenders.append(
                Contender(name: "ffmpeg -c:v copy") { frames in
                    ffmpegCopy(ffmpeg, source: source, frames: frames, to: nextFile("ffmpeg"))
                })
        }
        // Pilot: frames per run of about runSeconds for each.
        var framesPerRun: [Int] = []
        for contender in contenders {
            let pilot = try contender.run(30)
            let fps = pilot.map { Double($0.frames) / $0.seconds } ?? 0
            framesPerRun.append(
                min(20_000, max(60, Int(fps * max(settings.runSeconds, settings.minimumRunSeconds ?? 0.5)))))
        }
        var fps = [[Double]](repeating: [], count: contenders.count)
        var cpu = [[Double]](repeating: [], count: contenders.count)
        for repeatIndex in 0..<settings.repeats {
            for index in Measure.order(repeat: repeatIndex, count: contenders.count) {
                _ = try contenders[index].run(30)  // untimed pre-roll
                guard let run = try contenders[index].run(framesPerRun[index]) else { continue }
                fps[index].append(Double(run.frames) / run.seconds)
                cpu[index].append(run.cpu * 1000 / Double(max(1, run.frames)))
            }
        }
        let figures = fps.map { Measure.Figures(fps: $0, allocationsPerFrame: 0) }
        let cpuMedians = cpu.map { $0.isEmpty ? nil : Measure.median($0) }
        let ours = figures[0]
        let floor = figures[1].median
        let peer = contenders.count > 2 && !fps[2].isEmpty ? figures[2].median : nil
        var result = BenchmarkResult(
            name: "recording/mjpeg-passthrough/\(size)", group: "recording", width: size.pixelWidth,
            height: size.pixelHeight,
            engine: "passthrough", pixelFormat: "MJPEG", fpsMin: ours.min, fpsMedian: ours.median,
            gbPerS: bytesPerFrame * ours.median / 1e9, floor: floor, ratioToFloor: floor > 0 ? ours.median / floor : 0)
        result.peer = peer == nil ? nil : "ffmpeg -c:v copy"
        result.peerFps = peer
        result.ratioToPeer = peer.map { ours.median / $0 }
        result.usPerFrame = ours.median > 0 ? 1e6 / ours.median : nil
        result.cpuMsPerFrame = cpuMedians[0]
        result.peerCpuMsPerFrame = peer == nil ? nil : cpuMedians[2]
        result.note =
            "\(Int(bytesPerFrame) / 1024) KiB per frame, \(framesPerRun[0]) frames per run, \(dropped.count) dropped; floor (write(2) per frame + fsync) CPU \(format(cpuMedians[1], 3)) ms/frame"
        return result
    }

    /// Ours: an unpaced, looping replay camera handing out the file's JPEG frames undecoded →
    /// session → movie file output recording them as they are. A run starts the session, records
    /// `frames` frames (from `startRecording` to `didFinishRecordingTo`: trailer written, file
    /// fsynced) and stops the session.
    /// Frames it dropped in all its runs go to `dropped` (the budget exceeds the camera's ring, so
    /// none should).
    static func viewfinderPassthrough(source: URL, dropped: Tally, nextFile: @escaping () -> URL) throws
        -> Contender
    {
        let device = try CaptureDevice.replaying(
            source, options: .init(isPaced: false, loops: true, pixelFormat: .mjpeg, bufferCount: 4))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let movie = CaptureMovieFileOutput(bufferBudget: 6)
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        try session.tryAddOutput(movie)
        guard let connection = movie.connection(with: .video) else {
            throw Failure(description: "the movie output has no video connection")
        }
        try movie.setOutputSettings(MovieOutputSettings(codec: .jpeg), for: connection)
        return Contender(name: "viewfinder") { frames in
            let url = nextFile()
            defer { try? FileManager.default.removeItem(at: url) }
            let (seconds, cpu) = try record(session: session, movie: movie, to: url, frames: frames, poll: 1_000)
            dropped.count += movie.statistics.dropped
            return (movie.recordedFrameCount, seconds, cpu)
        }
    }

    /// The copy floor: the same JPEG bytes written to a new file with one `write(2)` per frame,
    /// then fsynced and closed.
    static func copyFloor(_ jpegs: [[UInt8]], frames: Int, to url: URL) throws -> (
        frames: Int, seconds: Double, cpu: Double
    )? {
        defer { unlink(url.path) }
        let cpu0 = cpuSeconds(RUSAGE_SELF.rawValue)
        let t0 = Measure.now()
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Failure(description: "cannot create \(url.path): errno \(errno)") }
        for index in 0..<frames {
            let jpeg = jpegs[index % jpegs.count]
            let written = jpeg.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written == jpeg.count else {
                close(descriptor)
                throw Failure(description: "write(2) of a frame wrote \(written) of \(jpeg.count) bytes")
            }
        }
        fsync(descriptor)
        close(descriptor)
        return (frames, Measure.now() - t0, cpuSeconds(RUSAGE_SELF.rawValue) - cpu0)
    }

    /// `ffmpeg -c:v copy` of `frames` frames of the looped source into a fragmented `.mov` (our
    /// fragment flags and interval), then an fsync of its file; CPU from `RUSAGE_CHILDREN`.
    static func ffmpegCopy(_ ffmpeg: String, source: URL, frames: Int, to url: URL) -> (
        frames: Int, seconds: Double, cpu: Double
    )? {
        defer { unlink(url.path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ffmpeg)
        process.arguments = [
            "-hide_banner", "-nostdin", "-nostats", "-v", "error", "-stream_loop", "-1", "-i", source.path,
            "-frames:v", "\(frames)", "-c:v", "copy", "-movflags", "empty_moov+default_base_moof", "-frag_duration",
            "10000000", "-y", url.path,
        ]
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let cpu0 = cpuSeconds(RUSAGE_CHILDREN.rawValue)
        let t0 = Measure.now()
        guard (try? process.run()) != nil else { return nil }
        process.waitUntilExit()
        let descriptor = open(url.path, O_WRONLY | O_CLOEXEC)
        if descriptor >= 0 {
            fsync(descriptor)
            close(descriptor)
        }
        let seconds = Measure.now() - t0
        guard process.terminationStatus == 0 else { return nil }
        return (frames, seconds, cpuSeconds(RUSAGE_CHILDREN.rawValue) - cpu0)
    }

    /// Writes `count` frames cycling through `jpegs` as a Motion-JPEG `.mkv` at 30 fps.
    static func writeMJPEG(_ jpegs: [[UInt8]], to url: URL, size: CaptureDevice.Dimensions, count: Int) throws {
        let writer = try MovieFileWriter(url: url)
        try writer.addVideoStream(
            MovieVideoSettings(codec: .mjpegPassthrough, width: size.pixelWidth, height: size.pixelHeight))
        for index in 0..<count {
            try jpegs[index % jpegs.count].withUnsafeBytes { bytes in
                try writer.appendVideoPacket(bytes, presentationTime: MediaTime(value: Int64(index), timescale: 30))
            }
        }
        try writer.finish()
    }

    /// Writes `count` frames of the test pattern with sensor-like noise as a `.y4m` file.
    static func writeFrames(to url: URL, size: CaptureDevice.Dimensions, count: Int) throws {
        let pool = try PixelBufferPool(
            pixelFormat: .i420, width: size.pixelWidth, height: size.pixelHeight, capacity: 1)
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
