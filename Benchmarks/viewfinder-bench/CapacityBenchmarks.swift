import Dispatch
import Foundation
import Synchronization
import Viewfinder

#if canImport(Glibc)
    import Glibc
#endif

/// How many cameras one machine carries (`capacity/…`): N plug-in cameras (Tests/V4L2Plugin,
/// paced at 30 fps, Motion-JPEG) read at once, N = 1, 2, 3, 4, 5, 6, 8, … until every contender
/// drops frames at two counts in a row (or the cap), by three contenders in the same run, interleaved (the first
/// rotated and the direction reversed every other repeat):
/// - `viewfinder`: one ``CaptureMultiCamSession``, one ``CaptureVideoDataOutput`` per camera
///   delivering full-range NV12 (the decode and the layout change to NV12) to a counting delegate,
///   late frames queued (`alwaysDiscardsLateVideoFrames = false`, as the peers queue theirs);
/// - `gstreamer`: one `gst-launch-1.0` with N branches `v4l2src ! image/jpeg ! jpegdec ! fakesink`
///   (decoded to planar 4:2:2, no NV12 conversion);
/// - `ffmpeg`: N processes `ffmpeg -f v4l2 -input_format mjpeg … -f null -` (decoded, no
///   conversion).
/// Every contender opens the same device files through libv4l2 and the plug-in camera, in a
/// private mount namespace with a tmpfs over /dev (Scripts/capacity-env.sh says how the peers get
/// there). The plug-in counts, per camera, the frames each reader dequeued and those it lost (due
/// while no buffer was queued), so all three are counted by the same code; a Viewfinder output's
/// own drops (late frames) are added to its count. CPU is the whole process's (user + system; for
/// ffmpeg the sum of its N processes) over the measured window, after a pre-roll.
///
/// `capacity/recording/…`: two cameras at once, each recorded by a ``CaptureMovieFileOutput``
/// with a video data output beside it, for several encoder settings: whether both files get
/// every frame in real time, and what they cost.
///
/// The measurement runs in a child process of the bench (`viewfinder-bench capacity-worker`,
/// started through Scripts/capacity-env.sh), which hands its rows back as JSON.
enum CapacityBenchmarks {
    static let rate = 30

    /// Camera counts tried, in order, until every contender drops frames at two in a row. The caps: 16
    /// cameras (16 ffmpeg processes, 16 streaming threads per contender), and the worker's time
    /// budget (``CapacityWorker/Options/budgetSeconds``, 420 s per size: no larger N starts after
    /// it; each N takes about 40 s, 3 contenders × 2 windows of 4 s with start, pre-roll and stop).
    static let fullCounts = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16]

    static func cases(settings: MeasureSettings) -> [BenchmarkCase] {
        guard !settings.allocationsOnly else { return [] }
        let quick = settings.quick
        let sizes = quick ? [(640, 480)] : [(1920, 1080), (1280, 720)]
        let repeats = quick ? 1 : min(settings.repeats, 2)
        let window = quick ? 0.3 : 4.0
        let preRoll = quick ? 0.2 : 1.0
        // Scaled delivery: 1080p cameras delivered at 960x540 and 640x360 (every contender decodes at
        // a reduced scale where it can: TurboJPEG's 1/2, FFmpeg's -lowres 1; GStreamer's jpegdec
        // cannot), then scales the rest of the way and converts to NV12.
        let scaled: [((Int, Int), (Int, Int))] =
            quick ? [((640, 480), (320, 240))] : [((1920, 1080), (960, 540)), ((1920, 1080), (640, 360))]
        var cases = scaled.map { size, output in
            let name = "capacity/mjpeg-nv12/\(size.0)x\(size.1)-to-\(output.0)x\(output.1)@\(rate)"
            let counts = quick ? [2] : fullCounts
            return BenchmarkCase(name: name, group: "capacity") { _ in
                try runWorker([
                    "--mode", "capacity", "--sizes", "\(size.0)x\(size.1)", "--output-size", "\(output.0)x\(output.1)",
                    "--counts", counts.map(String.init).joined(separator: ","), "--repeats", "\(repeats)",
                    "--window", "\(window)", "--pre-roll", "\(preRoll)",
                ])
            }
        }
        // The decode floor at 1/1, 1/2, 1/4, interleaved: what a scaled decode saves, in one run.
        cases.append(
            BenchmarkCase(name: "capacity/decode-floor/\(quick ? "640x480" : "1920x1080")", group: "capacity") { _ in
                try runWorker([
                    "--mode", "floors", "--sizes", quick ? "640x480" : "1920x1080", "--repeats", quick ? "1" : "5",
                    "--window", quick ? "0.1" : "1",
                ])
            })
        cases += sizes.map { size in
            let name = "capacity/mjpeg-nv12/\(size.0)x\(size.1)@\(rate)"
            // --quick: two cameras, one short window each (a smoke test of every path).
            let counts = quick ? [2] : fullCounts
            return BenchmarkCase(name: name, group: "capacity") { _ in
                try runWorker([
                    "--mode", "capacity", "--sizes", "\(size.0)x\(size.1)",
                    "--counts", counts.map(String.init).joined(separator: ","), "--repeats", "\(repeats)",
                    "--window", "\(window)", "--pre-roll", "\(preRoll)",
                ])
            }
        }
        let recordingSizes = quick ? "640x480" : "1920x1080,1280x720"
        cases.append(
            BenchmarkCase(name: "capacity/recording/2-cameras@\(rate)", group: "capacity") { _ in
                try runWorker([
                    "--mode", "recording", "--sizes", recordingSizes, "--window", quick ? "0.5" : "8", "--pre-roll",
                    "\(preRoll)",
                ])
            })
        // The Motion-JPEG cameras' recordings (1080p, H.264 veryfast, data outputs beside), shared
        // decode and unshared, with the YUYV cameras' recording as the control, repeated and
        // interleaved: the rows the shared decode changes.
        cases.append(
            BenchmarkCase(name: "capacity/recording/2-mjpeg-cameras@\(rate)", group: "capacity") { _ in
                try runWorker([
                    "--mode", "recording", "--sizes", quick ? "640x480" : "1920x1080", "--recording-cameras", "mjpeg",
                    "--repeats", "\(quick ? 1 : 3)", "--window", quick ? "0.5" : "8", "--pre-roll", "\(preRoll)",
                ])
            })
        return cases
    }

    /// Runs `viewfinder-bench capacity-worker ARGUMENTS` in Scripts/capacity-env.sh's room and
    /// returns the rows it wrote.
    static func runWorker(_ arguments: [String]) throws -> [BenchmarkResult] {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        var candidates = [FileManager.default.currentDirectoryPath]
        var folder = URL(fileURLWithPath: executable).deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(folder.path)
            folder = folder.deletingLastPathComponent()
        }
        guard
            let script = candidates.map({ "\($0)/Scripts/capacity-env.sh" }).first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            throw BenchError(
                "Scripts/capacity-env.sh not found (run the bench from the repository: Scripts/bench.sh --filter capacity)"
            )
        }
        let json = FileManager.default.temporaryDirectory.appendingPathComponent(
            "viewfinder-capacity-\(getpid())-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: json) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = ["--", executable, "capacity-worker"] + arguments + ["--json", json.path]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError(
                "the capacity worker (\(script) -- viewfinder-bench capacity-worker \(arguments.joined(separator: " "))) failed with status \(process.terminationStatus): see its lines above"
            )
        }
        let data = try Data(contentsOf: json)
        return try JSONDecoder().decode([BenchmarkResult].self, from: data)
    }
}

// MARK: - The worker

/// `viewfinder-bench capacity-worker`: the measurement itself, in Scripts/capacity-env.sh's mount
/// namespace (the plug-in camera installed, a tmpfs over /dev).
enum CapacityWorker {
    struct Options {
        var mode = "capacity"
        var sizes: [CaptureDevice.Dimensions] = []
        var counts: [Int] = [1, 2]
        var repeats = 1
        var window = 1.0
        var preRoll = 0.5
        var json: String?
        /// The group's time budget: no larger N is started after it (the cap in time).
        var budgetSeconds = 420.0
        /// The size delivered (each contender scales the camera's frames to it); `nil`: the camera's.
        var outputSize: CaptureDevice.Dimensions?
        /// `recording` mode: `all` variants, or only the Motion-JPEG cameras' (`mjpeg`).
        var recordingCameras = "all"
    }

    static func main(_ arguments: [String]) -> Int32 {
        var options = Options()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            guard let value = rest.popFirst() else { return fail("\(argument) needs a value") }
            switch argument {
            case "--mode": options.mode = value
            case "--sizes":
                options.sizes = value.split(separator: ",").compactMap { text in
                    let parts = text.split(separator: "x").compactMap { Int($0) }
                    return parts.count == 2 ? CaptureDevice.Dimensions(width: parts[0], height: parts[1]) : nil
                }
            case "--counts": options.counts = value.split(separator: ",").compactMap { Int($0) }
            case "--repeats": options.repeats = max(1, Int(value) ?? 1)
            case "--window": options.window = Double(value) ?? 1
            case "--pre-roll": options.preRoll = Double(value) ?? 0.5
            case "--json": options.json = value
            case "--budget": options.budgetSeconds = Double(value) ?? 420
            case "--output-size":
                let parts = value.split(separator: "x").compactMap { Int($0) }
                guard parts.count == 2 else { return fail("--output-size takes WxH, got \(value)") }
                options.outputSize = CaptureDevice.Dimensions(width: parts[0], height: parts[1])
            case "--recording-cameras": options.recordingCameras = value
            default: return fail("unknown argument \(argument)")
            }
        }
        guard ProcessInfo.processInfo.environment["VIEWFINDER_CAPACITY_ENV"] == "1" else {
            return fail("run through Scripts/capacity-env.sh (viewfinder-bench --filter capacity does)")
        }
        guard !options.sizes.isEmpty, !options.counts.isEmpty, let json = options.json else {
            return fail("--sizes, --counts and --json are needed")
        }
        do {
            let results: [BenchmarkResult]
            switch options.mode {
            case "recording": results = try Recording.measure(options)
            case "floors": results = try Capacity.floors(options)
            default: results = try Capacity.measure(options)
            }
            let encoder = JSONEncoder()
            try encoder.encode(results).write(to: URL(fileURLWithPath: json))
            return 0
        } catch {
            return fail("\(error)")
        }
    }

    static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("viewfinder-bench capacity-worker: \(message)\n".utf8))
        return 1
    }

    // MARK: Cameras

    /// The plug-in cameras: /dev/video0… (device files the plug-in serves), each with a stats file.
    final class Cameras {
        let count: Int
        let statsDirectory: String

        /// Writes `count` cameras offering Motion-JPEG at `sizes` (and YUYV at `rawSizes`), 30 fps,
        /// paced, each serving the bench's webcam-like JPEG frames (MJPEGBenchmarks.frames: a
        /// gradient scene with sensor noise, 4:2:2, quality 85; YUYV: a gradient with noise), and
        /// on a bus position of its own (`usb-capacity-K`).
        /// `paced: false` serves each frame as soon as it is dequeued (a floor's reader, not a camera
        /// at 30 fps).
        init(
            count: Int, sizes: [CaptureDevice.Dimensions], rawSizes: [CaptureDevice.Dimensions] = [],
            paced: Bool = true
        ) throws {
            self.count = count
            statsDirectory = "/dev/shm/viewfinder-capacity-\(getpid())"
            try FileManager.default.createDirectory(atPath: statsDirectory, withIntermediateDirectories: true)
            var payload: [[UInt8]] = []
            var frameLines = ""
            var offset = 0
            var formatLines = "format MJPG 1 Motion-JPEG\n"
            for size in sizes {
                formatLines += "size \(size.width) \(size.height)\ninterval 1 \(CapacityBenchmarks.rate)\n"
                for jpeg in try MJPEGBenchmarks.frames(size) {
                    frameLines += "frame MJPG \(size.width) \(size.height) \(offset) \(jpeg.count)\n"
                    offset += jpeg.count
                    payload.append(jpeg)
                }
            }
            if !rawSizes.isEmpty {
                formatLines += "format YUYV 0 YUYV 4:2:2\n"
                for size in rawSizes {
                    formatLines += "size \(size.width) \(size.height)\ninterval 1 \(CapacityBenchmarks.rate)\n"
                    for frame in Self.yuyvFrames(size, count: 2) {
                        frameLines += "frame YUYV \(size.width) \(size.height) \(offset) \(frame.count)\n"
                        offset += frame.count
                        payload.append(frame)
                    }
                }
            }
            for index in 0..<count {
                var data = Data(
                    ("VIEWFINDER-FAKE-CAMERA 1\ncard Capacity Camera \(index)\ndriver uvcvideo\nbus usb-capacity-\(index)\npaced \(paced ? 1 : 0)\n"
                        + "stats \(statsPath(index))\n" + formatLines + frameLines + "data\n").utf8)
                for frame in payload { data.append(contentsOf: frame) }
                let temporary = "/dev/.video\(index).tmp"
                try data.write(to: URL(fileURLWithPath: temporary))
                guard rename(temporary, "/dev/video\(index)") == 0 else {
                    throw BenchError("cannot place /dev/video\(index): \(String(cString: strerror(errno)))")
                }
            }
        }

        /// `count` YUYV frames: a moving gradient with sensor-like noise.
        static func yuyvFrames(_ size: CaptureDevice.Dimensions, count: Int) -> [[UInt8]] {
            var seed: UInt32 = 0x9E37_79B9
            return (0..<count).map { index in
                var bytes = [UInt8](repeating: 0, count: size.pixelWidth * size.pixelHeight * 2)
                for y in 0..<size.pixelHeight {
                    for x in 0..<size.pixelWidth {
                        seed ^= seed << 13
                        seed ^= seed >> 17
                        seed ^= seed << 5
                        let o = (y * size.pixelWidth + x) * 2
                        bytes[o] = UInt8(clamping: (x + index * 7) * 220 / size.pixelWidth + 16 + Int(seed & 7) - 3)
                        bytes[o + 1] = UInt8(
                            clamping: x % 2 == 0 ? 128 + y * 64 / size.pixelHeight : 160 - y * 64 / size.pixelHeight)
                    }
                }
                return bytes
            }
        }

        deinit {
            for index in 0..<count { unlink("/dev/video\(index)") }
            try? FileManager.default.removeItem(atPath: statsDirectory)
        }

        func statsPath(_ index: Int) -> String { "\(statsDirectory)/video\(index).stats" }

        /// What the plug-in counted for camera `index` since its last STREAMON.
        struct Stats {
            var delivered: Int
            var lost: Int
            var sequence: Int
        }

        /// Camera `index`'s counters (zeros before its first STREAMON). The file is rewritten after
        /// every frame, so it is read until two reads agree.
        func stats(_ index: Int) -> Stats {
            var previous = ""
            for _ in 0..<20 {
                let text = (try? String(contentsOfFile: statsPath(index), encoding: .utf8)) ?? ""
                if text == previous {
                    let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
                    if fields.count == 3 { return Stats(delivered: fields[0], lost: fields[1], sequence: fields[2]) }
                    if text.isEmpty { break }
                }
                previous = text
            }
            return Stats(delivered: 0, lost: 0, sequence: 0)
        }

        /// The Viewfinder devices of the first `count` cameras, found by name (waits for discovery).
        func devices(_ count: Int) throws -> [CaptureDevice] {
            let deadline = Measure.now() + 15
            while true {
                let all = CaptureDevice.devices(for: .video)
                let found = (0..<count).compactMap { index in
                    all.first { $0.localizedName == "Capacity Camera \(index)" }
                }
                if found.count == count { return found }
                if Measure.now() > deadline {
                    throw BenchError(
                        "Viewfinder found \(found.count) of \(count) plug-in cameras in /dev: \(all.map(\.localizedName))"
                    )
                }
                usleep(50_000)
            }
        }
    }

    /// The native (not emulated) `pixelFormat` format of `device` at `size`.
    static func nativeFormat(
        _ device: CaptureDevice, _ size: CaptureDevice.Dimensions, _ pixelFormat: PixelFormat = .mjpeg
    ) throws -> CaptureDevice.Format {
        guard
            let format = device.formats.first(where: {
                !$0.isEmulated && $0.pixelFormat == pixelFormat && $0.dimensions.width == size.width
                    && $0.dimensions.height == size.height
            })
        else {
            throw BenchError("'\(device.localizedName)' has no native \(pixelFormat.name) \(size): \(device.formats)")
        }
        return format
    }

    /// CPU seconds (user + system, all threads) of process `pid` so far, to the nanosecond
    /// (its process CPU clock; /proc's ticks are 10 ms), or /proc's figure when the clock is refused.
    static func processCPU(_ pid: pid_t) -> Double {
        var clock = clockid_t()
        var time = timespec()
        guard clock_getcpuclockid(pid, &clock) == 0, clock_gettime(clock, &time) == 0 else {
            return LatencyPeer.cpuSeconds(of: pid)
        }
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Counts a data output's frames and drops.
    final class Counter: CaptureVideoDataOutputSampleBufferDelegate, Sendable {
        let delivered = Atomic<Int>(0)
        let dropped = Atomic<Int>(0)

        func captureOutput(
            _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
        ) {
            delivered.add(1, ordering: .relaxed)
        }

        func captureOutput(
            _ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection
        ) {
            dropped.add(max(1, sampleBuffer.droppedFrameCount), ordering: .relaxed)
        }
    }

    /// Runtime errors a session posted.
    final class Errors: Sendable {
        let list = Mutex<[String]>([])

        /// Notes the error of a runtime-error notification.
        func note(_ notification: Notification) {
            let error = notification.userInfo?[CaptureSessionErrorKey].map { "\($0)" } ?? "\(notification)"
            list.withLock { $0.append(error) }
        }

        var all: [String] { list.withLock { $0 } }
    }

    /// The UTC time of day (HH:MM:SS), for progress lines read beside the machine's load.
    static func clock() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        return String(format: "%02d:%02d:%02d", parts.tm_hour, parts.tm_min, parts.tm_sec)
    }

    /// CPU seconds (user + system) of this process.
    static func ownCPU() -> Double { RecordingBenchmarks.cpuSeconds(RUSAGE_SELF.rawValue) }
}

// MARK: - Capacity

extension CapacityWorker {
    /// One contender reading N cameras, started; `stop()` ends it.
    protocol Running: AnyObject {
        /// CPU seconds so far of everything the contender runs.
        var cpuSeconds: Double { get }
        /// Frames the contender dropped itself so far (beyond the camera's lost frames).
        var ownDrops: Int { get }
        /// Why it stopped early, if it did.
        var failure: String? { get }
        /// What it runs, for the results page.
        var detail: String { get }
        func stop()
    }

    /// Viewfinder: one multi-camera session, a data output per camera (full-range NV12).
    final class ViewfinderRun: Running {
        var sessions: [CaptureSession] = []
        var outputs: [CaptureVideoDataOutput] = []
        let counters: [Counter]
        var detail: String
        let errors = Errors()
        var observers: [NSObjectProtocol] = []
        let center = NotificationCenter()

        init(_ devices: [CaptureDevice], size: CaptureDevice.Dimensions, output: CaptureDevice.Dimensions? = nil) throws
        {
            counters = devices.map { _ in Counter() }
            let outputSize = output
            for device in devices {
                try device.lockForConfiguration()
                try device.setActiveFormat(try nativeFormat(device, size))
                device.unlockForConfiguration()
            }
            observers.append(
                center.addObserver(forName: CaptureSession.runtimeErrorNotification, object: nil, queue: nil) {
                    [errors] in errors.note($0)
                })
            let multi = CaptureMultiCamSession(notificationCenter: center)
            multi.sessionPreset = .inputPriority
            for (index, device) in devices.enumerated() {
                let input = try CaptureDeviceInput(device: device)
                try multi.tryAddInputWithNoConnections(input)
                let output = try Self.output(counters[index], index, size: outputSize)
                try multi.tryAddOutputWithNoConnections(output)
                try multi.tryAddConnection(CaptureConnection(inputPorts: input.ports(for: .video), output: output))
                outputs.append(output)
            }
            let costs =
                "hardwareCost \(format(Double(multi.hardwareCost), 2)), systemPressureCost \(format(Double(multi.systemPressureCost), 2))"
            multi.startRunning()
            if multi.isRunning {
                sessions = [multi]
                detail = "one CaptureMultiCamSession (\(costs))"
                return
            }
            // Refused (its cost estimate is over 1): the same cameras, one session each, to
            // measure what the machine does.
            let refusal = errors.list.withLock { list in
                defer { list.removeAll() }
                return list.last ?? "?"
            }
            multi.stopRunning()
            for input in multi.inputs { multi.removeInput(input) }
            for output in multi.outputs { multi.removeOutput(output) }
            outputs = []
            for (index, device) in devices.enumerated() {
                let session = CaptureSession(notificationCenter: center)
                session.sessionPreset = .inputPriority
                try session.tryAddInput(try CaptureDeviceInput(device: device))
                let output = try Self.output(counters[index], index, size: outputSize)
                try session.tryAddOutput(output)
                outputs.append(output)
                sessions.append(session)
            }
            for session in sessions { session.startRunning() }
            detail =
                "CaptureMultiCamSession refused to start (\(costs): \(refusal.prefix(160))…), so one CaptureSession per camera"
            if let stopped = sessions.first(where: { !$0.isRunning }) {
                _ = stopped
                throw BenchError("a session did not start: \(errors.all)")
            }
        }

        static func output(_ counter: Counter, _ index: Int, size: CaptureDevice.Dimensions? = nil) throws
            -> CaptureVideoDataOutput
        {
            let output = CaptureVideoDataOutput()
            output.typedVideoSettings = try VideoSettings(
                pixelFormat: .nv12FullRange, width: size?.pixelWidth, height: size?.pixelHeight)
            // Late frames wait in the output's budget instead of being replaced by newer ones, as
            // the peers' queues hold theirs: a reader that keeps up on average loses nothing.
            output.alwaysDiscardsLateVideoFrames = false
            output.setSampleBufferDelegate(counter, queue: DispatchQueue(label: "bench.capacity.camera\(index)"))
            return output
        }

        var cpuSeconds: Double { CapacityWorker.ownCPU() }
        var ownDrops: Int {
            outputs.map {
                $0.statistics.droppedLate + $0.statistics.droppedOutOfBuffers + $0.statistics.droppedByProcessor
            }
            .reduce(0, +)
        }
        var failure: String? { errors.all.isEmpty ? nil : errors.all.joined(separator: "; ") }

        func stop() {
            for session in sessions { session.stopRunning() }
            for observer in observers { center.removeObserver(observer) }
            observers = []
        }
    }

    /// A peer: one or more processes.
    final class PeerRun: Running {
        let processes: [Process]
        let logs: [String]
        let detail: String
        let stopping = Atomic<Bool>(false)

        init(
            _ commands: [(arguments: [String], environment: [String: String])], executable: String, detail: String,
            logDirectory: String
        ) throws {
            self.detail = detail
            var processes: [Process] = []
            var logs: [String] = []
            for (index, command) in commands.enumerated() {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: executable)
                process.arguments = command.arguments
                process.environment = ProcessInfo.processInfo.environment.merging(command.environment) { $1 }
                let log = "\(logDirectory)/\(URL(fileURLWithPath: executable).lastPathComponent)-\(index).log"
                guard FileManager.default.createFile(atPath: log, contents: nil) else {
                    throw BenchError("cannot create \(log)")
                }
                process.standardError = FileHandle(forWritingAtPath: log)
                process.standardOutput = FileHandle.nullDevice
                process.standardInput = FileHandle.nullDevice
                try process.run()
                processes.append(process)
                logs.append(log)
            }
            self.processes = processes
            self.logs = logs
        }

        var cpuSeconds: Double {
            processes.map { CapacityWorker.processCPU($0.processIdentifier) }.reduce(0, +)
        }
        var ownDrops: Int { 0 }
        var failure: String? {
            guard let gone = processes.firstIndex(where: { !$0.isRunning }) else { return nil }
            let text = (try? String(contentsOfFile: logs[gone], encoding: .utf8)) ?? ""
            let meaningful = text.split(separator: "\n").filter { !$0.contains("error dequeuing buf") }
            return
                "\(processes[gone].executableURL?.lastPathComponent ?? "peer") exited (status \(processes[gone].terminationStatus)): \(meaningful.suffix(3).joined(separator: " / "))"
        }

        func stop() {
            for process in processes where process.isRunning { process.terminate() }
            let deadline = Measure.now() + 3
            for process in processes {
                while process.isRunning && Measure.now() < deadline { usleep(10_000) }
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                process.waitUntilExit()
            }
            for log in logs { unlink(log) }
        }
    }

    enum Contender: String, CaseIterable {
        case viewfinder, gstreamer, ffmpeg

        func start(
            _ cameras: Cameras, count: Int, size: CaptureDevice.Dimensions, output: CaptureDevice.Dimensions? = nil
        ) throws -> Running {
            let environment = ProcessInfo.processInfo.environment
            let chardev = environment["VIEWFINDER_CAPACITY_CHARDEV"] ?? ""
            let convert = environment["VIEWFINDER_CAPACITY_V4L2CONVERT"] ?? ""
            // Scaled delivery: the scale each decoder reaches (1/2, 1/4, 1/8 at least as large as
            // asked), then bilinear scaling and NV12 in every contender.
            let lowres = output.map { CapacityWorker.lowres(size, $0) } ?? 0
            switch self {
            case .viewfinder:
                return try ViewfinderRun(try cameras.devices(count), size: size, output: output)
            case .gstreamer:
                guard let gst = LatencyPeer.Kind.gstreamer.executable else {
                    throw BenchError("gst-launch-1.0 is not installed (Scripts/install-dependencies.sh)")
                }
                var arguments = ["-q"]
                let scaling =
                    output.map {
                        [
                            "videoscale", "!", "videoconvert", "!",
                            "video/x-raw,format=NV12,width=\($0.width),height=\($0.height)", "!",
                        ]
                    } ?? []
                for index in 0..<count {
                    arguments += [
                        "v4l2src", "device=/dev/video\(index)", "!",
                        "image/jpeg,width=\(size.width),height=\(size.height),framerate=\(CapacityBenchmarks.rate)/1",
                        "!",
                        "jpegdec", "!",
                    ]
                    arguments += scaling + ["fakesink", "sync=false"]
                }
                let pipeline =
                    output.map {
                        "jpegdec ! videoscale ! videoconvert ! video/x-raw,format=NV12,width=\($0.width),height=\($0.height)"
                    } ?? "jpegdec"
                return try PeerRun(
                    [(arguments, ["GST_V4L2_USE_LIBV4L2": "1", "LD_PRELOAD": chardev])], executable: gst,
                    detail: "one gst-launch-1.0, \(count) × v4l2src ! image/jpeg ! \(pipeline) ! fakesink sync=false",
                    logDirectory: cameras.statsDirectory)
            case .ffmpeg:
                guard let ffmpeg = LatencyPeer.Kind.ffmpeg.executable else {
                    throw BenchError("ffmpeg is not installed (Scripts/install-dependencies.sh)")
                }
                // -lowres N: the MJPEG decoder's own 1/2^N scale (TurboJPEG's idea); then swscale
                // (bilinear, as libyuv and videoscale) to the size and NV12.
                let decoderOptions = lowres > 0 ? ["-lowres", "\(lowres)"] : []
                let filter =
                    output.map { ["-vf", "scale=\($0.width):\($0.height):flags=bilinear,format=nv12"] } ?? []
                let commands = (0..<count).map { index in
                    (
                        [
                            "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "v4l2", "-input_format", "mjpeg",
                            "-video_size", "\(size.width)x\(size.height)", "-framerate", "\(CapacityBenchmarks.rate)",
                        ] + decoderOptions + ["-i", "/dev/video\(index)"] + filter + [
                            "-fps_mode", "passthrough", "-f", "null", "-",
                        ], ["LD_PRELOAD": "\(chardev):\(convert)"]
                    )
                }
                let scaledDetail =
                    output.map { " -lowres \(lowres) … -vf scale=\($0.width):\($0.height):flags=bilinear,format=nv12" }
                    ?? ""
                return try PeerRun(
                    commands, executable: ffmpeg,
                    detail:
                        "\(count) × ffmpeg -f v4l2 -input_format mjpeg\(scaledDetail) -i /dev/videoK -fps_mode passthrough -f null -",
                    logDirectory: cameras.statsDirectory)
            }
        }
    }

    /// One measured window of one contender at one N.
    struct Sample {
        var delivered: Int
        /// Frames lost at the camera (due while no buffer was queued) plus the contender's own drops.
        var dropped: Int
        var ownDrops: Int
        var cpu: Double
        var wall: Double
        var detail: String
    }

    /// Starts `contender` on the first `count` cameras, waits until every camera delivers, pre-rolls,
    /// and measures one window.
    static func sample(
        _ contender: Contender, _ cameras: Cameras, count: Int, size: CaptureDevice.Dimensions, options: Options
    ) throws -> Sample {
        let running = try contender.start(cameras, count: count, size: size, output: options.outputSize)
        defer { running.stop() }
        // Every camera streaming and delivering (a few frames each), or the reason why not.
        let deadline = Measure.now() + 30
        while (0..<count).contains(where: { cameras.stats($0).delivered < 3 }) {
            if let failure = running.failure {
                throw BenchError("\(contender.rawValue) at \(count) cameras: \(failure)")
            }
            if Measure.now() > deadline {
                let waiting = (0..<count).filter { cameras.stats($0).delivered < 3 }
                throw BenchError(
                    "\(contender.rawValue) at \(count) cameras: camera(s) \(waiting) delivered no frames within 30 s")
            }
            usleep(20_000)
        }
        Thread.sleep(forTimeInterval: options.preRoll)
        let before = (0..<count).map { cameras.stats($0) }
        let drops0 = running.ownDrops
        let cpu0 = running.cpuSeconds
        let t0 = Measure.now()
        Thread.sleep(forTimeInterval: options.window)
        let after = (0..<count).map { cameras.stats($0) }
        let cpu1 = running.cpuSeconds
        let t1 = Measure.now()
        let drops1 = running.ownDrops
        if let failure = running.failure { throw BenchError("\(contender.rawValue) at \(count) cameras: \(failure)") }
        var delivered = 0
        var lost = drops1 - drops0
        let due = Int(((t1 - t0) * Double(CapacityBenchmarks.rate)).rounded(.down))
        var restarts: [String] = []
        for (index, (a, b)) in zip(before, after).enumerated() {
            guard b.delivered >= a.delivered, b.sequence >= a.sequence else {
                // The reader started the camera's stream again (its counters restarted): what it got
                // before is unknown, so only the frames after count, and every other frame due in
                // the window counts as lost.
                restarts.append("camera \(index): \(a.delivered)/\(a.sequence) → \(b.delivered)/\(b.sequence)")
                delivered += b.delivered
                lost += b.lost + max(0, due - 1 - b.sequence)
                continue
            }
            delivered += b.delivered - a.delivered
            lost += b.lost - a.lost
            // Frames due by the window's end that the reader has not asked for yet (a reader that
            // stalled shows its loss only at its next dequeue): counted as lost too.
            lost += max(0, due - 1 - (b.sequence - a.sequence))
        }
        if !restarts.isEmpty {
            progress(
                "    \(contender.rawValue) at \(count) cameras restarted streams in the window (delivered/sequence): \(restarts)"
            )
        }
        return Sample(
            delivered: delivered, dropped: lost, ownDrops: drops1 - drops0, cpu: cpu1 - cpu0, wall: t1 - t0,
            detail: running.detail + (restarts.isEmpty ? "" : "; \(restarts.count) stream(s) restarted in a window"))
    }

    /// FFmpeg's `-lowres` for delivering `size` frames at `output`: the largest 1/2^N scale still at
    /// least as large (the rule Viewfinder's shared decode follows).
    static func lowres(_ size: CaptureDevice.Dimensions, _ output: CaptureDevice.Dimensions) -> Int {
        var level = 0
        while level < 3 {
            let next = 1 << (level + 1)
            let (w, h) = ((size.pixelWidth + next - 1) / next, (size.pixelHeight + next - 1) / next)
            guard w >= output.pixelWidth, h >= output.pixelHeight else { break }
            level += 1
        }
        return level
    }

    enum Capacity {
        /// CPU-ms per frame of decoding the cameras' JPEG frames and nothing else, on one thread:
        /// TurboJPEG to planar Y'CbCr (the floor every contender's decode sits on), and
        /// Viewfinder's decoder to full-range NV12 (its decode and layout change, without a
        /// camera, session or delivery). About `seconds` of each.
        /// With `camera` (an unpaced plug-in camera's device file serving the same frames), a third
        /// floor pays the camera's read too: each frame dequeued from it through libv4l2 (the path
        /// every contender reads by), TurboJPEG-decoded to planes, requeued (``CameraReadFloor``).
        /// The contenders' order rotates with `round`.
        static func decodeFloors(
            _ size: CaptureDevice.Dimensions, seconds: Double, scale: Int = 1, camera: String? = nil, round: Int = 0
        ) throws -> (turbo: Double, viewfinder: Double, read: Double?) {
            let jpegs = try MJPEGBenchmarks.frames(size)
            var contenders = [
                try MJPEGBenchmarks.turboJPEG(jpegs, size, bgra: false, scale: scale),
                try MJPEGBenchmarks.viewfinder(jpegs, size, .nv12FullRange, threads: 1, scale: scale),
            ]
            if let camera {
                do {
                    contenders.append(try CameraReadFloor.contender(camera, size, scale: scale))
                } catch {
                    progress("    the camera-read floor cannot run on \(camera): \(error)")
                }
            }
            var figures = [Double?](repeating: nil, count: contenders.count)
            for index in Measure.order(repeat: round, count: contenders.count) {
                let contender = contenders[index]
                do {
                    guard let pilot = try contender.run(10) else { throw BenchError("\(contender.name) did not run") }
                    let frames = max(10, Int(seconds * Double(pilot.frames) / max(pilot.seconds, 1e-3)))
                    guard let run = try contender.run(frames) else { throw BenchError("\(contender.name) did not run") }
                    figures[index] = run.cpu * 1000 / Double(run.frames)
                } catch  where index >= 2 {
                    progress("    the camera-read floor failed: \(error)")
                }
            }
            guard let turbo = figures[0], let viewfinder = figures[1] else {
                throw BenchError("a decode floor did not run")
            }
            return (turbo, viewfinder, figures.count > 2 ? figures[2] : nil)
        }

        /// The decode floors at 1/1, 1/2 and 1/4, interleaved (`repeats` rounds, the order rotated):
        /// what a scaled decode saves, measured in one run.
        static func floors(_ options: Options) throws -> [BenchmarkResult] {
            let size = options.sizes[0]
            let scales = [1, 2, 4]
            // One unpaced plug-in camera serving the same frames, for the floor that reads them.
            let cameras = try Cameras(count: 1, sizes: [size], paced: false)
            var figures: [Int: [(turbo: Double, viewfinder: Double, read: Double?)]] = [:]
            for round in 0..<options.repeats {
                for index in Measure.order(repeat: round, count: scales.count) {
                    let scale = scales[index]
                    let floor = try decodeFloors(
                        size, seconds: options.window, scale: scale, camera: "/dev/video0", round: round)
                    figures[scale, default: []].append(floor)
                    progress(
                        "    floor 1/\(scale): TurboJPEG \(format(floor.turbo, 2)) ms, Viewfinder \(format(floor.viewfinder, 2)) ms, camera read + TurboJPEG \(format(floor.read ?? .nan, 2)) ms"
                    )
                }
            }
            _ = cameras
            let whole = Measure.median(figures[1]!.map(\.turbo))
            return scales.flatMap { scale in
                let list = figures[scale]!
                let turbo = Measure.median(list.map(\.turbo))
                let viewfinder = Measure.median(list.map(\.viewfinder))
                let read = Measure.median(list.compactMap(\.read))
                var row = BenchmarkResult(
                    name: "capacity/decode-floor/\(size)/1-\(scale)", group: "capacity", width: size.pixelWidth,
                    height: size.pixelHeight, fpsMin: 0, fpsMedian: 1000 / turbo, gbPerS: 0, floor: 0, ratioToFloor: 0)
                row.engine = "turbojpeg"
                row.cpuMsPerFrame = turbo
                row.note =
                    "TurboJPEG to planes at 1/\(scale), one thread: \(format(turbo, 2)) CPU-ms (\(format(turbo / whole, 2))× the whole decode); Viewfinder's decoder to NV12 at 1/\(scale): \(format(viewfinder, 2)) ms; a frame read from the plug-in camera (libv4l2 DQBUF/QBUF, unpaced) + TurboJPEG to planes at 1/\(scale): \(format(read, 2)) ms (the read \(format(read - turbo, 2)) ms); \(list.count) interleaved rounds"
                var reading = BenchmarkResult(
                    name: "capacity/decode-floor/\(size)/1-\(scale)/camera-read", group: "capacity",
                    width: size.pixelWidth, height: size.pixelHeight, fpsMin: 0, fpsMedian: 1000 / read, gbPerS: 0,
                    floor: 0, ratioToFloor: 0)
                reading.engine = "libv4l2 + turbojpeg"
                reading.cpuMsPerFrame = read
                reading.note =
                    "each frame dequeued from the plug-in camera (libv4l2, MMAP, unpaced: the plug-in copies the JPEG into the buffer at DQBUF), TurboJPEG-decoded to planes at 1/\(scale) on the same thread, requeued: \(format(read, 2)) CPU-ms, \(format(read / turbo, 2))× TurboJPEG alone in the same rounds"
                return [row, reading]
            }
        }

        static func measure(_ options: Options) throws -> [BenchmarkResult] {
            let size = options.sizes[0]
            let cameras = try Cameras(count: options.counts.max() ?? 1, sizes: [size])
            let floorSeconds = options.window >= 1 ? 1.0 : 0.1
            let scale = options.outputSize.map { 1 << CapacityWorker.lowres(size, $0) } ?? 1
            let label = options.outputSize.map { "\(size)-to-\($0)" } ?? "\(size)"
            // The floors, with the one that also reads each frame from camera 0 (paced, like the
            // contenders' cameras; idle before and after the contenders run).
            let floorsBefore = try decodeFloors(size, seconds: floorSeconds, scale: scale, camera: "/dev/video0")
            let contenders = Contender.allCases
            let start = Measure.now()
            var results: [BenchmarkResult] = []
            var carried: [Contender: Int] = [:]
            var failures: [Contender: String] = [:]
            var lastCount = 0
            var previousAllDropped = false
            var stopReason = "the cap of \(options.counts.max() ?? 0) cameras"
            for count in options.counts {
                if Measure.now() - start > options.budgetSeconds {
                    stopReason = "the group's time budget (\(Int(options.budgetSeconds)) s) before \(count) cameras"
                    break
                }
                lastCount = count
                var samples: [Contender: [Sample]] = [:]
                for repeatIndex in 0..<options.repeats {
                    for index in Measure.order(repeat: repeatIndex + count, count: contenders.count) {
                        let contender = contenders[index]
                        if failures[contender] != nil { continue }
                        do {
                            let sample = try sample(contender, cameras, count: count, size: size, options: options)
                            samples[contender, default: []].append(sample)
                            progress(
                                "    \(CapacityWorker.clock()) \(count) cameras \(contender.rawValue): \(format(Double(sample.delivered) / sample.wall / Double(count))) fps per camera, \(format(sample.cpu * 1000 / Double(max(1, sample.delivered)), 2)) CPU-ms/frame, CPU/wall \(format(sample.cpu / sample.wall, 2)), dropped \(sample.dropped) (\(sample.ownDrops) by the contender itself)"
                                    + (contender == .viewfinder ? "; \(sample.detail)" : "")
                            )
                        } catch {
                            failures[contender] = "\(error)"
                            progress("    \(contender.rawValue): cannot run: \(error)")
                        }
                    }
                }
                var allDropped = true
                for contender in contenders {
                    var row = BenchmarkResult(
                        name:
                            "capacity/mjpeg-nv12/\(label)@\(CapacityBenchmarks.rate)/\(count)-cameras/\(contender.rawValue)",
                        group: "capacity", width: size.pixelWidth, height: size.pixelHeight, fpsMin: 0, fpsMedian: 0,
                        gbPerS: 0,
                        floor: 0, ratioToFloor: 0)
                    row.cameras = count
                    row.engine = contender.rawValue
                    row.pacedFps = Double(CapacityBenchmarks.rate)
                    guard let list = samples[contender], !list.isEmpty else {
                        row.note = "not measured: \(failures[contender] ?? "?")"
                        results.append(row)
                        continue
                    }
                    let fps = list.map { Double($0.delivered) / $0.wall / Double(count) }
                    row.fpsMedian = Measure.median(fps)
                    row.fpsMin = fps.min() ?? 0
                    row.cpuMsPerFrame = Measure.median(list.map { $0.cpu * 1000 / Double(max(1, $0.delivered)) })
                    row.cpuPerWall = Measure.median(list.map { $0.cpu / $0.wall })
                    // The best window's drops: the machine is shared, and another tenant's burst can
                    // cost a contender a frame in one window; the other windows' are in the note.
                    row.dropped = list.map(\.dropped).min() ?? 0
                    row.frames = list.map(\.delivered).reduce(0, +)
                    let own = list.map(\.ownDrops).reduce(0, +)
                    row.note =
                        "\(list.count) windows of \(format(options.window)) s, frames dropped in each: \(list.map { String($0.dropped) }.joined(separator: ", ")) (\(own) in all by the contender itself, the rest lost at the camera); \(list[0].detail)"
                    if row.dropped == 0 {
                        carried[contender] = count
                        allDropped = false
                    }
                    results.append(row)
                }
                // Two camera counts in a row where every contender dropped: one such count can be
                // another tenant's burst on the shared machine.
                if allDropped, previousAllDropped {
                    stopReason = "every contender dropping frames at two camera counts in a row (the last \(count))"
                    break
                }
                previousAllDropped = allDropped
            }
            let floorsAfter = try decodeFloors(
                size, seconds: floorSeconds, scale: scale, camera: "/dev/video0", round: 1)
            let turbo = (floorsBefore.turbo + floorsAfter.turbo) / 2
            let decoder = (floorsBefore.viewfinder + floorsAfter.viewfinder) / 2
            let reads = [floorsBefore.read, floorsAfter.read].compactMap { $0 }
            let read = reads.isEmpty ? nil : reads.reduce(0, +) / Double(reads.count)
            let cores = ProcessInfo.processInfo.activeProcessorCount
            let ceiling = Double(cores) * 1000 / (Double(CapacityBenchmarks.rate) * turbo)
            // The contenders' CPU per frame over the floor's, at the largest N each carried.
            func overFloor(_ contender: Contender) -> String {
                let rows = results.filter { $0.engine == contender.rawValue && $0.dropped == 0 && $0.frames != nil }
                guard let row = rows.last, let cpu = row.cpuMsPerFrame else { return "–" }
                return "\(format(cpu, 2)) ms = \(format(cpu / turbo, 2))× at \(row.cameras ?? 0)"
            }
            // The headline row.
            var summary = BenchmarkResult(
                name: "capacity/mjpeg-nv12/\(label)@\(CapacityBenchmarks.rate)/carries", group: "capacity",
                width: size.pixelWidth, height: size.pixelHeight, fpsMin: 0, fpsMedian: 0, gbPerS: 0, floor: 0,
                ratioToFloor: 0)
            summary.engine = "summary"
            let tried = options.counts.filter { $0 <= lastCount }
            func carries(_ contender: Contender) -> String {
                guard let n = carried[contender] else { return "0" }
                return n == tried.last && n == options.counts.max() ? "≥ \(n)" : "\(n)"
            }
            let peers = [Contender.gstreamer, .ffmpeg].map { carried[$0] ?? 0 }
            let ours = carried[.viewfinder] ?? 0
            let better = peers.max() ?? 0
            let ratio = better > 0 ? format(Double(ours) / Double(better), 2) : "–"
            summary.cameras = ours
            summary.note =
                "largest N with a window of no frame dropped (of N = \(tried.map(String.init).joined(separator: ", ")); stopped at \(stopReason)): viewfinder \(carries(.viewfinder)), gstreamer \(carries(.gstreamer)), ffmpeg \(carries(.ffmpeg)); viewfinder ÷ better peer \(ratio) (goal ≥ 1.5). Why: decoding one frame with TurboJPEG alone (one thread, to planar 4:2:2\(scale > 1 ? ", at 1/\(scale) scale" : "")) takes \(format(turbo, 2)) CPU-ms (Viewfinder's decoder to NV12 alone \(format(decoder, 2)) ms; before/after the run \(format(floorsBefore.turbo, 2))/\(format(floorsAfter.turbo, 2)) ms; a frame read from the paced plug-in camera through libv4l2 + the same TurboJPEG decode \(read.map { format($0, 2) } ?? "–") ms), so \(cores) cores decode at most \(format(ceiling)) cameras at \(CapacityBenchmarks.rate) fps with nothing else running; CPU per frame where each carried most: viewfinder \(overFloor(.viewfinder)), gstreamer \(overFloor(.gstreamer)), ffmpeg \(overFloor(.ffmpeg)) the floor"
            results.append(summary)
            progress("    \(summary.note!)")
            return results
        }
    }
}

// MARK: - Two recordings at once

extension CapacityWorker {
    enum Recording {
        struct Variant {
            var label: String
            var size: CaptureDevice.Dimensions
            var codec: VideoCodecType
            var preset: String
            /// What the cameras deliver.
            var camera: PixelFormat
            /// Whether the device's outputs share one decode (off: each output decodes for itself,
            /// as before the shared decode, for an A/B in one run).
            var sharesDecode = true

            var name: String {
                "capacity/recording/2x\(size)@\(CapacityBenchmarks.rate)/\(camera == .mjpeg ? "mjpeg" : "yuyv")-camera-\(label)"
                    + (sharesDecode ? "" : "-unshared")
            }
        }

        static func measure(_ options: Options) throws -> [BenchmarkResult] {
            let cameras = try Cameras(count: 2, sizes: options.sizes, rawSizes: options.sizes)
            let devices = try cameras.devices(2)
            let large = options.sizes[0]
            // Raw (YUYV) cameras and Motion-JPEG ones (what a USB 2 webcam gives at 1080p30: the
            // movie output decodes each frame once, then encodes), H.264 and passthrough.
            var variants = [
                Variant(label: "h264-veryfast", size: large, codec: .h264, preset: "veryfast", camera: .yuyv)
            ]
            if options.recordingCameras == "mjpeg" {
                // The Motion-JPEG cameras with the shared decode and without it (every output
                // decoding for itself), and the YUYV cameras' same recording as the control (what
                // recording costs without any decode, on this machine at this moment), each
                // `repeats` times, interleaved in one rotation (the order rotated and reversed
                // every other repeat, ``Measure/order(repeat:count:)``).
                var unshared = Variant(
                    label: "h264-veryfast", size: large, codec: .h264, preset: "veryfast", camera: .mjpeg)
                unshared.sharesDecode = false
                let arms = [
                    Variant(label: "h264-veryfast", size: large, codec: .h264, preset: "veryfast", camera: .yuyv),
                    Variant(label: "h264-veryfast", size: large, codec: .h264, preset: "veryfast", camera: .mjpeg),
                    unshared,
                ]
                variants = (0..<options.repeats).flatMap { round in
                    Measure.order(repeat: round, count: arms.count).map { arms[$0] }
                }
            } else if options.sizes.count > 1 {
                variants.append(
                    Variant(label: "h264-ultrafast", size: large, codec: .h264, preset: "ultrafast", camera: .yuyv))
                for size in options.sizes.dropFirst() {
                    variants.append(
                        Variant(label: "h264-veryfast", size: size, codec: .h264, preset: "veryfast", camera: .yuyv))
                }
                variants.append(
                    Variant(label: "mjpeg-passthrough", size: large, codec: .jpeg, preset: "", camera: .mjpeg))
                variants.append(
                    Variant(label: "h264-veryfast", size: large, codec: .h264, preset: "veryfast", camera: .mjpeg))
                variants.append(
                    Variant(label: "h264-ultrafast", size: large, codec: .h264, preset: "ultrafast", camera: .mjpeg))
            }
            var results: [BenchmarkResult] = []
            for variant in variants {
                do {
                    results.append(try run(variant, devices, cameras, options))
                } catch {
                    progress("    \(variant.label) \(variant.size): cannot run: \(error)")
                    var row = BenchmarkResult(
                        name: variant.name, group: "capacity-recording", width: variant.size.pixelWidth,
                        height: variant.size.pixelHeight, fpsMin: 0,
                        fpsMedian: 0, gbPerS: 0, floor: 0, ratioToFloor: 0)
                    row.cameras = 2
                    row.engine = "recording"
                    row.pixelFormat = variant.codec == .jpeg ? "MJPEG passthrough" : "H.264 libx264 \(variant.preset)"
                    row.note = "not measured: \(error)"
                    results.append(row)
                }
            }
            return results
        }

        static func run(_ variant: Variant, _ devices: [CaptureDevice], _ cameras: Cameras, _ options: Options) throws
            -> BenchmarkResult
        {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "viewfinder-capacity-recording-\(getpid())", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            for device in devices {
                try device.lockForConfiguration()
                try device.setActiveFormat(try nativeFormat(device, variant.size, variant.camera))
                device.unlockForConfiguration()
            }
            let center = NotificationCenter()
            DeviceFrameDecoder.sharingEnabled.store(variant.sharesDecode, ordering: .relaxed)
            defer { DeviceFrameDecoder.sharingEnabled.store(true, ordering: .relaxed) }
            let session = CaptureMultiCamSession(notificationCenter: center)
            session.sessionPreset = .inputPriority
            var movies: [CaptureMovieFileOutput] = []
            var datas: [CaptureVideoDataOutput] = []
            let counters = devices.map { _ in Counter() }
            for (index, device) in devices.enumerated() {
                let input = try CaptureDeviceInput(device: device)
                try session.tryAddInputWithNoConnections(input)
                let movie = CaptureMovieFileOutput()
                movie.movieFragmentInterval = MediaTime(value: 10, timescale: 1)
                try session.tryAddOutputWithNoConnections(movie)
                let movieConnection = CaptureConnection(inputPorts: input.ports(for: .video), output: movie)
                try session.tryAddConnection(movieConnection)
                var settings = MovieOutputSettings(codec: variant.codec)
                if !variant.preset.isEmpty { settings.encoderPreset = variant.preset }
                try movie.setOutputSettings(settings, for: movieConnection)
                let data = try ViewfinderRun.output(counters[index], index)
                try session.tryAddOutputWithNoConnections(data)
                try session.tryAddConnection(CaptureConnection(inputPorts: input.ports(for: .video), output: data))
                movies.append(movie)
                datas.append(data)
            }
            let errors = Errors()
            let observer = center.addObserver(forName: CaptureSession.runtimeErrorNotification, object: nil, queue: nil)
            { [errors] in errors.note($0) }
            defer { center.removeObserver(observer) }
            session.startRunning()
            defer { session.stopRunning() }
            guard session.isRunning else { throw BenchError("the session did not start: \(errors.all)") }
            let deadline = Measure.now() + 30
            while (0..<2).contains(where: { cameras.stats($0).delivered < 3 }) {
                guard Measure.now() < deadline else { throw BenchError("the cameras delivered no frames within 30 s") }
                usleep(20_000)
            }
            Thread.sleep(forTimeInterval: options.preRoll)
            let before = (0..<2).map { cameras.stats($0) }
            let delivered0 = counters.map { $0.delivered.load(ordering: .relaxed) }
            let finishes = movies.map { _ in RecordingBenchmarks.Finish() }
            let cpu0 = ownCPU()
            let t0 = Measure.now()
            for (index, movie) in movies.enumerated() {
                movie.startRecording(
                    to: folder.appendingPathComponent("camera\(index).\(variant.codec == .jpeg ? "mov" : "mp4")"),
                    recordingDelegate: finishes[index])
            }
            // The window, or until a recording ends early (it failed: its error is thrown below).
            if finishes[0].done.wait(timeout: .now() + options.window) == .success { finishes[0].done.signal() }
            let after = (0..<2).map { cameras.stats($0) }
            let delivered1 = counters.map { $0.delivered.load(ordering: .relaxed) }
            let stopAt = Measure.now()
            for movie in movies { movie.stopRecording() }
            for finish in finishes {
                guard finish.done.wait(timeout: .now() + 120) == .success else {
                    throw BenchError("a recording did not finish within 120 s of stopRecording")
                }
                if let error = finish.error.withLock({ $0 }) { throw BenchError("a recording failed: \(error)") }
            }
            let t1 = Measure.now()
            let cpu = ownCPU() - cpu0
            let recorded = movies.map(\.recordedFrameCount)
            // The outputs' own drops (the frames the cameras lost are counted from the cameras).
            let movieDrops = movies.map {
                $0.statistics.droppedLate + $0.statistics.droppedOutOfBuffers + $0.statistics.droppedByProcessor
            }.reduce(0, +)
            let due = Int(((stopAt - t0) * Double(CapacityBenchmarks.rate)).rounded(.down))
            var lost = 0
            for (a, b) in zip(before, after) {
                lost += b.lost - a.lost + max(0, due - 1 - (b.sequence - a.sequence))
            }
            let dataFrames = zip(delivered0, delivered1).map { $1 - $0 }
            let recordedFps = recorded.map { Double($0) / (stopAt - t0) }
            let drain = t1 - stopAt
            let realTime = movieDrops == 0 && lost == 0 && recorded.allSatisfy { $0 >= due - 2 } && drain < 1
            var row = BenchmarkResult(
                name: variant.name, group: "capacity-recording", width: variant.size.pixelWidth,
                height: variant.size.pixelHeight,
                fpsMin: recordedFps.min() ?? 0, fpsMedian: Measure.median(recordedFps), gbPerS: 0, floor: 0,
                ratioToFloor: 0)
            row.cameras = 2
            row.engine = "recording"
            row.pixelFormat =
                (variant.codec == .jpeg ? "MJPEG passthrough" : "H.264 libx264 \(variant.preset)")
                + " (camera \(variant.camera.name))"
            row.cpuMsPerFrame = cpu * 1000 / Double(max(1, recorded.reduce(0, +)))
            row.cpuPerWall = cpu / (t1 - t0)
            row.dropped = movieDrops + lost
            row.frames = recorded.reduce(0, +)
            row.note =
                (variant.sharesDecode ? "" : "each output decoding for itself (shared decode off): ")
                + "\(realTime ? "real time" : "NOT real time"): recorded \(recorded.map(String.init).joined(separator: " + ")) of \(due) frames due per camera in \(format(stopAt - t0)) s (\(recordedFps.map { format($0) }.joined(separator: " / ")) fps), movie outputs dropped \(movieDrops), cameras lost \(lost), files finished \(format(drain, 2)) s after stopRecording; data outputs beside delivered \(dataFrames.map(String.init).joined(separator: " + ")) NV12 frames; one CaptureMultiCamSession (hardwareCost \(format(Double(session.hardwareCost), 2)), systemPressureCost \(format(Double(session.systemPressureCost), 2)))"
            progress("    2 × \(variant.size) \(variant.label): \(row.note!), CPU/wall \(format(row.cpuPerWall, 2))")
            return row
        }
    }
}
