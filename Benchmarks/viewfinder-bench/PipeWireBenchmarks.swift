import Foundation
import Synchronization
import Viewfinder

/// `pipewire/`: CPU-ms per delivered frame of one camera reached three ways, in the same repeats:
///
/// - **PipeWire**: a Viewfinder session on a PipeWire camera node (the PipeWire backend, through
///   the private daemon `Scripts/pipewire.sh` starts);
/// - **V4L2**: a Viewfinder session on the plug-in V4L2 camera (Tests/V4L2Plugin through the real
///   libv4l2: `Scripts/v4l2-plugin.sh run`), the direct route;
/// - **GStreamer**: `gst-launch-1.0 pipewiresrc target-object=NODE ! [jpegdec !] videoconvert !
///   video/x-raw,format=F ! fakesink` on the same node.
///
/// Every contender delivers the same frames (one frame made once: the test pattern, as YUYV or as
/// a JPEG of it) at the same rate (60 fps). The node's producer is another process
/// (`viewfinder-bench pipewire-produce`: it copies the stored frame into each buffer), so its cost
/// is in no contender's figure; it is measured beside (its CPU per frame), as is the daemon's
/// (`pipewire` and `wireplumber` of this run's `XDG_RUNTIME_DIR`, per frame while Viewfinder
/// captures through it) and the cost of one `memcpy` of a frame (the copy the PipeWire backend
/// makes of each buffer, so that a frame a user holds never pins the producer's buffer). The
/// plug-in camera copies each frame into the dequeued buffer too, in the capturing process (where a
/// kernel driver's DMA costs no CPU): that copy is in the V4L2 figure.
///
/// Viewfinder's figure is the process's CPU (all threads) over delivered frames after an untimed
/// pre-roll; GStreamer's is the slope between a short and a long run (so its start-up cancels).
/// The contenders of a case run in ``Measure/order(repeat:count:)``'s order (rotated, reversed
/// every other repeat); ratios are medians of same-repeat ratios.
///
/// Needs `Scripts/pipewire.sh run -- Scripts/v4l2-plugin.sh run -- …`; `--quick` runs one small
/// case when a daemon is there and nothing otherwise; `--allocations-only` runs nothing.
enum PipeWireBenchmarks {
    struct Case {
        var source: PixelFormat
        var output: PixelFormat
        var width: Int
        var height: Int

        var label: String {
            "\(source == .mjpeg ? "mjpeg" : "yuyv")-\(output == .bgra ? "bgra" : "nv12")"
        }
    }

    static let framesPerSecond = 60

    static var remote: String? { ProcessInfo.processInfo.environment["VIEWFINDER_PIPEWIRE_REMOTE"] }

    static func cases(settings: MeasureSettings) -> [BenchmarkCase] {
        guard !settings.allocationsOnly else { return [] }
        if settings.quick {
            // A smoke test of the path, only where the daemon is (bench.sh --quick runs without it).
            guard remote != nil else { return [] }
            let small = Case(source: .yuyv, output: .bgra, width: 640, height: 480)
            return [benchmark(small)]
        }
        var result: [BenchmarkCase] = []
        for (width, height) in [(1280, 720), (1920, 1080)] {
            // MJPEG → full-range NV12, what JFIF frames decode to (and what GStreamer's jpegdec and
            // videoconvert keep): no range mapping on either side.
            for (source, output) in [
                (PixelFormat.yuyv, PixelFormat.bgra), (.yuyv, .nv12VideoRange), (.mjpeg, .nv12FullRange),
            ] {
                result.append(benchmark(Case(source: source, output: output, width: width, height: height)))
            }
        }
        return result
    }

    static func benchmark(_ c: Case) -> BenchmarkCase {
        BenchmarkCase(name: "pipewire/\(c.label)/\(c.width)x\(c.height)", group: "pipewire") { settings in
            try run(c, settings: settings)
        }
    }

    // MARK: The frame

    /// The one frame every contender delivers: the test pattern in YUYV, or a JPEG of it with
    /// luma noise (4:2:0, quality 85).
    static func frame(_ c: Case) throws -> [UInt8] {
        let format: PixelFormat = c.source == .mjpeg ? .i420 : .yuyv
        let pool = try PixelBufferPool(pixelFormat: format, width: c.width, height: c.height, capacity: 1)
        guard let image = pool.makePixelBuffer() else { throw BenchError("no buffer for the frame") }
        TestPattern.render(sequenceNumber: 7, into: image)
        if c.source == .mjpeg {
            // Luma noise (a fixed pseudo-random sequence, ±6), so the JPEG is webcam-like (about
            // 1–2 bits a pixel) instead of flat colour bars, which decode several times faster.
            var state: UInt32 = 1
            let luma = image.baseAddress(ofPlane: 0).assumingMemoryBound(to: UInt8.self)
            for row in 0..<c.height {
                for column in 0..<c.width {
                    state = state &* 1_664_525 &+ 1_013_904_223
                    let pixel = luma + row * image.bytesPerRow(ofPlane: 0) + column
                    pixel.pointee = UInt8(clamping: Int(pixel.pointee) + Int(state >> 28) - 8)
                }
            }
            return try JPEGEncoder(quality: 0.85).encode(image)
        }
        return [UInt8](UnsafeRawBufferPointer(start: image.baseAddress(ofPlane: 0), count: image.dataSize))
    }

    // MARK: The run

    static func run(_ c: Case, settings: MeasureSettings) throws -> [BenchmarkResult] {
        guard let remote else {
            throw BenchError(
                "pipewire/ needs a PipeWire daemon: run it as Scripts/pipewire.sh run -- Scripts/v4l2-plugin.sh run -- .build/release/viewfinder-bench --filter pipewire/"
            )
        }
        let bytes = try frame(c)
        let name = "viewfinder-bench-\(getpid())-\(c.label)-\(c.width)x\(c.height)"
        let producer = try ProducerProcess(name: name, case: c, frame: bytes, remote: remote)
        defer { producer.stop() }
        let pipeWire = PipeWireDeviceProvider(remoteName: remote)
        let pipeWireDevice = try device(in: pipeWire) { $0.uniqueID == "pipewire:\(name)" }
        let camera = try PluginCamera(case: c, frame: bytes)
        let v4l2Device = try device(in: camera.provider) { _ in true }
        let frames = settings.quick ? 30 : 180
        let preRoll = settings.quick ? 5 : 20
        let gstShort = settings.quick ? 10 : 30
        let gstLong = settings.quick ? 40 : 150
        let daemons = DaemonProcesses()
        var samples: [String: [Double]] = [:]
        var (daemonTotal, producerTotal, framesTotal) = (0.0, 0.0, 0)
        let contenders = ["pipewire", "v4l2", "gstreamer"]
        for repeatIndex in 0..<settings.repeats {
            for index in Measure.order(repeat: repeatIndex, count: contenders.count) {
                switch contenders[index] {
                case "pipewire":
                    let daemonBefore = daemons.cpuSeconds
                    let producerBefore = producer.cpuSeconds
                    let run = try capture(pipeWireDevice, c, frames: frames, preRoll: preRoll)
                    samples["pipewire", default: []].append(run.cpuMsPerFrame)
                    // The daemon's and producer's CPU over whole runs (pre-roll included), summed
                    // over the repeats: /proc counts in clock ticks (10 ms), a few per run.
                    daemonTotal += daemons.cpuSeconds - daemonBefore
                    producerTotal += producer.cpuSeconds - producerBefore
                    framesTotal += run.totalFrames
                case "v4l2":
                    let run = try capture(v4l2Device, c, frames: frames, preRoll: preRoll)
                    samples["v4l2", default: []].append(run.cpuMsPerFrame)
                default:
                    let short = try gstreamerCPU(node: name, c, frames: gstShort, remote: remote)
                    let long = try gstreamerCPU(node: name, c, frames: gstLong, remote: remote)
                    samples["gstreamer", default: []].append((long - short) * 1000 / Double(gstLong - gstShort))
                }
            }
        }
        let copy = copyMilliseconds(bytes: bytes.count)
        samples["daemon"] = [daemonTotal * 1000 / Double(max(1, framesTotal))]
        samples["producer"] = [producerTotal * 1000 / Double(max(1, framesTotal))]
        func row(_ contender: String, _ values: [Double], note: String? = nil) -> BenchmarkResult {
            var result = BenchmarkResult(
                name: "pipewire/\(c.label)/\(c.width)x\(c.height)/\(contender)", group: "pipewire", width: c.width,
                height: c.height, fpsMin: 0, fpsMedian: Double(framesPerSecond), gbPerS: 0, floor: 0, ratioToFloor: 0)
            result.engine = contender
            result.pixelFormat = "\(c.source) → \(c.output)"
            result.cpuMsPerFrame = Measure.median(values)
            result.pacedFps = Double(framesPerSecond)
            result.note = note
            // Over the direct route, per repeat.
            let ratios = Measure.pairedRatios(values, samples["v4l2"] ?? [])
            if contender != "v4l2", !ratios.isEmpty, values.count == samples["v4l2"]?.count {
                result.cpuRatioToFloor = Measure.median(ratios)
                result.cpuRatioToFloorMin = ratios.min()
                result.cpuRatioToFloorMax = ratios.max()
            }
            if contender == "gstreamer" {
                result.ratioToPeer = Measure.pairedRatio(values, samples["pipewire"] ?? [])
            }
            return result
        }
        return [
            row("pipewire", samples["pipewire"] ?? []), row("v4l2", samples["v4l2"] ?? []),
            row("gstreamer", samples["gstreamer"] ?? []),
            row(
                "daemon", samples["daemon"] ?? [],
                note: "pipewire + wireplumber while Viewfinder captures, over \(framesTotal) frames"),
            row("producer", samples["producer"] ?? [], note: "the node's producer process, over \(framesTotal) frames"),
            row("copy", [copy], note: "one memcpy of a \(bytes.count)-byte frame"),
        ]
    }

    /// The device of `provider` whose backend `matches`, waiting (bounded) for it to be listed.
    static func device(in provider: any DeviceProvider, matching matches: (any DeviceBackend) -> Bool) throws
        -> CaptureDevice
    {
        let registry = DeviceRegistry(providers: [provider])
        let deadline = Measure.now() + 10
        repeat {
            if let backend = provider.discoverBackends().first(where: matches) { return registry.device(for: backend) }
            usleep(20_000)
        } while Measure.now() < deadline
        throw BenchError("the camera did not appear in 10 s")
    }

    /// Counts delivered frames; `wait(for:)` blocks until a count is reached.
    final class Counter: CaptureVideoDataOutputSampleBufferDelegate, Sendable {
        private let count = Mutex(0)
        private let condition = NSCondition()

        func captureOutput(
            _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
        ) {
            count.withLock { $0 += 1 }
            condition.lock()
            condition.broadcast()
            condition.unlock()
        }

        var delivered: Int { count.withLock { $0 } }

        func wait(for target: Int, timeout: Double = 30) -> Bool {
            let deadline = Date(timeIntervalSinceNow: timeout)
            condition.lock()
            defer { condition.unlock() }
            while delivered < target {
                if !condition.wait(until: deadline) { return delivered >= target }
            }
            return true
        }
    }

    struct CaptureRun {
        var cpuMsPerFrame: Double
        var totalFrames: Int
    }

    /// A session on `device` in the case's camera format delivering the case's output format: CPU
    /// of this process per delivered frame over `frames` frames after `preRoll` untimed ones.
    static func capture(_ device: CaptureDevice, _ c: Case, frames: Int, preRoll: Int) throws -> CaptureRun {
        guard
            let format = device.formats.first(where: {
                !$0.isEmulated && $0.pixelFormat == c.source && $0.dimensions.width == c.width
                    && $0.dimensions.height == c.height
            })
        else {
            throw BenchError("'\(device.localizedName)' has no \(c.source) \(c.width)x\(c.height): \(device.formats)")
        }
        let counter = Counter()
        let session = CaptureSession()
        let output = CaptureVideoDataOutput()
        try device.lockForConfiguration()
        try device.setActiveFormat(format)
        device.unlockForConfiguration()
        output.typedVideoSettings = try VideoSettings(pixelFormat: c.output)
        output.alwaysDiscardsLateVideoFrames = false
        output.setSampleBufferDelegate(counter, queue: DispatchQueue(label: "bench.pipewire.delegate"))
        session.beginConfiguration()
        session.sessionPreset = .inputPriority
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        try session.tryAddOutput(output)
        session.commitConfiguration()
        session.startRunning()
        defer { session.stopRunning() }
        guard counter.wait(for: preRoll) else { throw BenchError("no frames from '\(device.localizedName)'") }
        let startCPU = Measure.cpuSeconds()
        let startFrames = counter.delivered
        guard counter.wait(for: startFrames + frames) else {
            throw BenchError("'\(device.localizedName)' stalled after \(counter.delivered) frames")
        }
        let cpu = Measure.cpuSeconds() - startCPU
        let delivered = counter.delivered - startFrames
        return CaptureRun(cpuMsPerFrame: cpu * 1000 / Double(delivered), totalFrames: counter.delivered)
    }

    /// CPU seconds of one `gst-launch-1.0 pipewiresrc … num-buffers=frames` run on `node`.
    static func gstreamerCPU(node: String, _ c: Case, frames: Int, remote: String) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
        let format = c.output == .bgra ? "BGRA" : "NV12"
        var pipeline = ["pipewiresrc", "target-object=\(node)", "num-buffers=\(frames)", "!"]
        if c.source == .mjpeg { pipeline += ["jpegdec", "!"] }
        pipeline += ["videoconvert", "!", "video/x-raw,format=\(format)", "!", "fakesink"]
        process.arguments = ["-q"] + pipeline
        var environment = ProcessInfo.processInfo.environment
        environment["PIPEWIRE_REMOTE"] = remote
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        let before = childCPUSeconds()
        try process.run()
        let text = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError(
                "gst-launch-1.0 failed (\(process.terminationStatus)): \(String(decoding: text, as: UTF8.self)) (gstreamer1.0-pipewire installed?)"
            )
        }
        return childCPUSeconds() - before
    }

    static func childCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// Milliseconds of one `memcpy` of `bytes` between two buffers (median of 200, after 20 untimed).
    static func copyMilliseconds(bytes: Int) -> Double {
        let source = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        let destination = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        defer {
            source.deallocate()
            destination.deallocate()
        }
        memset(source, 0x5A, bytes)
        var times: [Double] = []
        for index in 0..<220 {
            let start = Measure.now()
            memcpy(destination, source, bytes)
            if index >= 20 { times.append((Measure.now() - start) * 1000) }
        }
        return Measure.median(times)
    }

    // MARK: The two cameras

    /// The node's producer: this executable again (`pipewire-produce`), copying the stored frame
    /// into each buffer at 60 fps.
    final class ProducerProcess {
        let process = Process()
        private let input = Pipe()
        private let file: String

        init(name: String, case c: Case, frame: [UInt8], remote: String) throws {
            file = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).frame").path
            try Data(frame).write(to: URL(fileURLWithPath: file))
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            process.arguments = [
                "pipewire-produce", name, c.source == .mjpeg ? "mjpeg" : "yuyv", "\(c.width)x\(c.height)",
                "\(PipeWireBenchmarks.framesPerSecond)", file,
            ]
            var environment = ProcessInfo.processInfo.environment
            environment["PIPEWIRE_REMOTE"] = remote
            process.environment = environment
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            let line = String(decoding: output.fileHandleForReading.availableLine(), as: UTF8.self)
            guard line == "ready" else { throw BenchError("the producer said '\(line)' instead of ready") }
        }

        var cpuSeconds: Double { LatencyPeer.cpuSeconds(of: process.processIdentifier) }

        func stop() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: file)
        }
    }

    /// The plug-in V4L2 camera: a device file in a directory of its own offering the case's format
    /// at 60 fps (paced), serving the stored frame.
    final class PluginCamera {
        let directory: String
        let provider: V4L2DeviceProvider

        init(case c: Case, frame: [UInt8]) throws {
            directory =
                FileManager.default.temporaryDirectory.appendingPathComponent("vf-bench-pw-\(UUID().uuidString)")
                .path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let fourCC = c.source == .mjpeg ? "MJPG" : "YUYV"
            let header = """
                VIEWFINDER-FAKE-CAMERA 1
                card Bench Camera
                driver uvcvideo
                bus usb-bench-pipewire
                paced 1
                format \(fourCC) \(c.source == .mjpeg ? 1 : 0) \(fourCC)
                size \(c.width) \(c.height)
                interval 1 \(PipeWireBenchmarks.framesPerSecond)
                frame \(fourCC) \(c.width) \(c.height) 0 \(frame.count)
                data

                """
            var data = Data(header.utf8)
            data.append(contentsOf: frame)
            try data.write(to: URL(fileURLWithPath: "\(directory)/video0"))
            provider = V4L2DeviceProvider.libV4L2(directory: directory, pipeWire: nil)
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// The PipeWire daemon and session manager of this run (`Scripts/pipewire.sh`'s, found by
    /// their `XDG_RUNTIME_DIR`), for their CPU.
    struct DaemonProcesses {
        let pids: [pid_t]

        init() {
            let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? ""
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            pids = entries.compactMap { pid_t($0) }.filter { pid in
                guard let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
                    ["pipewire", "wireplumber"].contains(comm.trimmingCharacters(in: .whitespacesAndNewlines)),
                    let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ")
                else { return false }
                return environ.split(separator: 0).contains { Array($0) == Array("XDG_RUNTIME_DIR=\(runtime)".utf8) }
            }
        }

        var cpuSeconds: Double { pids.reduce(0) { $0 + LatencyPeer.cpuSeconds(of: $1) } }
    }
}

extension FileHandle {
    /// One line (without its newline), read a byte at a time.
    func availableLine() -> Data {
        var bytes = Data()
        var byte: UInt8 = 0
        while Glibc.read(fileDescriptor, &byte, 1) == 1, byte != UInt8(ascii: "\n") { bytes.append(byte) }
        return bytes
    }
}

/// `viewfinder-bench pipewire-produce NAME FORMAT WxH FPS FILE`: publishes camera node NAME whose
/// every frame is FILE's bytes (a YUYV frame or a JPEG), paced at FPS; prints "ready" and runs
/// until stdin closes.
enum PipeWireProduceCommand {
    static func main(_ arguments: [String]) -> Int32 {
        guard arguments.count == 5, let fps = Int32(arguments[3]),
            case let size = arguments[2].split(separator: "x").compactMap({ Int($0) }), size.count == 2,
            let frame = FileManager.default.contents(atPath: arguments[4])
        else {
            FileHandle.standardError.write(Data("usage: pipewire-produce NAME yuyv|mjpeg WxH FPS FILE\n".utf8))
            return 2
        }
        let pixelFormat: PixelFormat = arguments[1] == "mjpeg" ? .mjpeg : .yuyv
        let bytes = [UInt8](frame)
        do {
            let connection = try PipeWireConnection()
            let format = PipeWireFormat.published(
                pixelFormat, width: size[0], height: size[1], frameDuration: MediaTime(value: 1, timescale: fps))
            let producer = try PipeWireProducer(
                connection: connection, name: arguments[0], description: "viewfinder-bench \(arguments[0])",
                format: format
            ) { target, _ in
                switch target {
                case .raw(let buffer):
                    let count = min(bytes.count, buffer.dataSize)
                    bytes.withUnsafeBytes {
                        buffer.baseAddress(ofPlane: 0).copyMemory(from: $0.baseAddress!, byteCount: count)
                    }
                    return count
                case .compressed(let memory, let capacity):
                    guard bytes.count <= capacity else { return 0 }
                    bytes.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
                    return bytes.count
                }
            }
            FileHandle.standardOutput.write(Data("ready\n".utf8))
            _ = FileHandle.standardInput.readDataToEndOfFile()
            producer.close()
            connection.close()
            return 0
        } catch {
            FileHandle.standardError.write(Data("pipewire-produce: \(error)\n".utf8))
            return 1
        }
    }
}

extension ReportTable {
    /// `pipewire/`: one line per case, the contenders side by side.
    static let pipewire = ReportTable(
        group: "pipewire",
        columns: [
            "camera → delivered", "size", "PipeWire CPU-ms", "V4L2 CPU-ms", "PipeWire ÷ V4L2", "per repeat",
            "GStreamer CPU-ms", "GStreamer ÷ PipeWire", "daemon CPU-ms", "producer CPU-ms", "one copy ms",
        ].enumerated().map { index, header in (header, index >= 2, { _ in "" }) },
        pivot: { results in
            var cases: [String] = []
            for result in results {
                let name = result.name.split(separator: "/").prefix(3).joined(separator: "/")
                if !cases.contains(name) { cases.append(name) }
            }
            return cases.map { name in
                let rows = results.filter { $0.name.hasPrefix(name + "/") }
                func row(_ engine: String) -> BenchmarkResult? { rows.first { $0.engine == engine } }
                func cpu(_ engine: String, _ digits: Int = 2) -> String { format(row(engine)?.cpuMsPerFrame, digits) }
                let pipeWire = row("pipewire")
                let first = rows.first
                return [
                    first?.pixelFormat ?? "", first.map { "\($0.width)x\($0.height)" } ?? "", cpu("pipewire"),
                    cpu("v4l2"), format(pipeWire?.cpuRatioToFloor, 2),
                    ratioRange(pipeWire?.cpuRatioToFloorMin, pipeWire?.cpuRatioToFloorMax), cpu("gstreamer"),
                    format(row("gstreamer")?.ratioToPeer, 2), cpu("daemon"), cpu("producer"), cpu("copy", 3),
                ]
            }
        })
}
