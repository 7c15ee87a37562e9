import Dispatch
import Foundation
import Synchronization
import Viewfinder
import ViewfinderMetadata

/// The metadata output's detection (ZXing-cpp): frames per second one lane decodes, on a
/// webcam-like scene with a QR code in it and on the same scene with none (the cost of scanning
/// while nothing is in view), and the whole output's rate with its two lanes, fed as fast as it
/// takes frames, at 1280x720 and 1920x1080 (NV12, luma read in place).
enum MetadataBenchmarks {
    static func cases(settings: MeasureSettings) -> [BenchmarkCase] {
        guard !settings.allocationsOnly else { return [] }
        let sizes = settings.groupSizes ?? [(1280, 720), (1920, 1080)]
        return sizes.flatMap { size in
            let name = "\(size.0)x\(size.1)"
            return [
                BenchmarkCase(name: "metadata/decode/qr/nv12/\(name)", group: "metadata") { settings in
                    [try decode(width: size.0, height: size.1, withCode: true, settings)]
                },
                BenchmarkCase(name: "metadata/decode/none/nv12/\(name)", group: "metadata") { settings in
                    [try decode(width: size.0, height: size.1, withCode: false, settings)]
                },
                BenchmarkCase(name: "metadata/output/qr/nv12/\(name)", group: "metadata") { settings in
                    [try output(width: size.0, height: size.1, settings)]
                },
            ]
        }
    }

    static let text = "https://viewfinder.example/bench/metadata"

    /// A QR code's modules from qrencode (`nil` when it is not installed).
    static func qrModules(_ text: String) -> [[Bool]]? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/qrencode")
        process.arguments = ["-t", "ASCII", "-m", "0", text]
        let pipe = Pipe()
        process.standardOutput = pipe
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map { line in
            let characters = Array(line)
            return stride(from: 0, to: characters.count, by: 2).map { characters[$0] == "#" }
        }
    }

    /// NV12 frames of a webcam-like scene (the photo benchmark's), with a QR code (a sixth of the
    /// frame's height, a little off centre) drawn into the luma when `withCode`.
    static func frames(width: Int, height: Int, withCode: Bool, count: Int) throws -> [PixelBuffer] {
        let scenes = try PhotoBenchmarks.scenes(.nv12VideoRange, count: count)
        let pool = try PixelBufferPool(pixelFormat: .nv12VideoRange, width: width, height: height, capacity: count)
        let modules = withCode ? qrModules(text) : nil
        if withCode && modules == nil { throw BenchError("qrencode is missing: Scripts/install-dependencies.sh bench") }
        return try scenes.map { scene in
            guard let frame = pool.makePixelBuffer() else { throw BenchError("frame pool exhausted") }
            // The scene (1920x1080) cropped to the frame's size, plane by plane.
            for plane in 0..<2 {
                let rows = frame.height(ofPlane: plane)
                let bytes = min(frame.bytesPerRow(ofPlane: plane), scene.bytesPerRow(ofPlane: plane))
                for row in 0..<rows {
                    memcpy(
                        frame.baseAddress(ofPlane: plane) + row * frame.bytesPerRow(ofPlane: plane),
                        scene.baseAddress(ofPlane: plane) + row * scene.bytesPerRow(ofPlane: plane), bytes)
                }
            }
            if let modules {
                let module = max(2, height / 6 / (modules.count + 8))
                let quiet = 4 * module
                let left = width / 2 + width / 10
                let top = height / 3
                let luma = frame.baseAddress(ofPlane: 0).assumingMemoryBound(to: UInt8.self)
                let stride = frame.bytesPerRow(ofPlane: 0)
                let side = modules.count * module
                for y in (top - quiet)..<(top + side + quiet) {
                    for x in (left - quiet)..<(left + side + quiet) {
                        let row = (y - top) / module
                        let column = (x - left) / module
                        let inside = y >= top && x >= left && row < modules.count && column < modules[row].count
                        luma[y * stride + x] = inside && modules[row][column] ? 30 : 220
                    }
                }
            }
            return frame
        }
    }

    /// One lane: ``CodeDetector`` on frame after frame.
    static func decode(width: Int, height: Int, withCode: Bool, _ settings: MeasureSettings) throws -> BenchmarkResult {
        let ring = try frames(width: width, height: height, withCode: withCode, count: 4)
        let detector = CodeDetector()
        let request = CodeDetector.Request(
            types: [.qr, .ean13, .code128], rectOfInterest: CGRect(x: 0, y: 0, width: 1, height: 1))
        var found = 0
        let figures = try Measure.frames(settings) { index in
            let codes = try detector.detect(
                in: ring[index % ring.count], request: request, time: .zero, duration: .zero)
            found = codes.count
        }
        if withCode && found != 1 { throw BenchError("the benchmark's QR code was not found (\(found) codes)") }
        let lumaBytes = width * height
        var result = BenchmarkResult(
            name: "metadata/decode/\(withCode ? "qr" : "none")/nv12/\(width)x\(height)", group: "metadata",
            width: width, height: height, threads: 1, engine: "ZXing-cpp", pixelFormat: "NV12",
            fpsMin: figures.min, fpsMedian: figures.median, gbPerS: Double(lumaBytes) * figures.median / 1e9,
            floor: Measure.memcpyFloor(bytes: lumaBytes, settings: settings), ratioToFloor: 0)
        result.ratioToFloor = figures.median / result.floor
        result.usPerFrame = 1e6 / figures.median
        result.allocationsPerFrame = figures.allocationsPerFrame
        result.cpuPerWall = figures.cpuPerWall
        result.note =
            "types qr, ean13, code128; one lane; "
            + (withCode ? "a QR code of \(text.count) characters in a webcam-like scene" : "the scene with no code")
        return result
    }

    /// Collects the output's reports.
    final class Counter: CaptureMetadataOutputObjectsDelegate, @unchecked Sendable {
        // unchecked: written on the output's callback queue only, read after it drained.
        var objects = 0
        func metadataOutput(
            _ output: CaptureMetadataOutput, didOutput metadataObjects: [MetadataObject],
            from connection: CaptureConnection
        ) { objects += metadataObjects.count }
    }

    /// The whole output, as a camera far faster than detection feeds it: a frame every 5 ms
    /// (200 fps offered), its two lanes decoding, the delegate (doing nothing) called on its
    /// queue; frames analysed (delivered) per second of wall time, the rest dropped as late.
    static func output(width: Int, height: Int, _ settings: MeasureSettings) throws -> BenchmarkResult {
        let ring = try frames(width: width, height: height, withCode: true, count: 6)
        let format = CaptureDevice.Format(
            pixelFormat: .nv12VideoRange, width: width, height: height, frameRateRanges: [.init(framesPerSecond: 30)])
        let camera = VirtualCamera(configuration: .init(clock: ManualClock(), isPaced: false, formats: [format]))
        let session = CaptureSession()
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let output = CaptureMetadataOutput()
        try session.tryAddOutput(output)
        guard let connection = output.connection(with: .video) else { throw BenchError("no connection") }
        let counter = Counter()
        let queue = DispatchQueue(label: "bench.metadata")
        output.setMetadataObjectsDelegate(counter, queue: queue)
        try output.setMetadataObjectTypes([.qr, .ean13, .code128])
        output.sessionWillStartRunning()
        try output.prepareToStream(format: format, frameDuration: MediaTime(value: 1, timescale: 30))
        var sequence: UInt64 = 0
        var rates: [Double] = []
        let frameCount = max(40, Int(settings.runSeconds * 200))
        for _ in 0..<settings.repeats {
            let before = output.statistics
            let start = Measure.now()
            for index in 0..<frameCount {
                sequence += 1
                output.receive(
                    CapturedSample(
                        buffer: ring[index % ring.count],
                        presentationTime: MediaTime(value: Int64(sequence), timescale: 200),
                        duration: MediaTime(value: 1, timescale: 200), sequenceNumber: sequence,
                        hostArrivalTime: HostClock().now()),
                    from: connection)
                usleep(5000)
            }
            let seconds = Measure.now() - start
            let delivered = output.statistics.delivered - before.delivered
            guard output.waitUntilDelivered(timeout: 60) else { throw BenchError("the output did not drain") }
            rates.append(Double(delivered) / seconds)
        }
        let stats = output.statistics
        let found = queue.sync { counter.objects }
        if found == 0 { throw BenchError("the output found no code") }
        let sorted = rates.sorted()
        var result = BenchmarkResult(
            name: "metadata/output/qr/nv12/\(width)x\(height)", group: "metadata", width: width, height: height,
            threads: 2, engine: "ZXing-cpp", pixelFormat: "NV12", fpsMin: sorted.first ?? 0,
            fpsMedian: sorted[sorted.count / 2], gbPerS: 0, floor: 0, ratioToFloor: 0)
        result.usPerFrame = 1e6 / result.fpsMedian
        result.dropped = stats.dropped
        result.frames = stats.captured
        result.note =
            "two lanes; 200 fps offered, \(frameCount) frames a run; \(stats.delivered) analysed, \(stats.dropped) dropped as late, \(found) codes reported"
        return result
    }
}
