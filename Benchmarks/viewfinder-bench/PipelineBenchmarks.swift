import Dispatch
import Foundation
import Synchronization
import Viewfinder

/// The whole pipeline: an unpaced virtual camera (drawn once per ring buffer) -> session ->
/// video data output -> a delegate that only counts. Zero-copy (native format) and with a
/// conversion (a YUYV-only camera, BGRA or NV12 out).
enum PipelineBenchmarks {
    struct Setup {
        var label: String
        var cameraFormat: PixelFormat
        var outputFormat: PixelFormat?
        var halves = false
        /// Processors added to the output (name, processor) for a frame size.
        var processors: @Sendable (CaptureDevice.Dimensions) throws -> [(String, any FrameProcessor)] = { _ in [] }
    }

    static let setups: [Setup] = [
        Setup(label: "zero-copy-yuyv", cameraFormat: .yuyv, outputFormat: nil),
        Setup(label: "yuyv-bgra", cameraFormat: .yuyv, outputFormat: .bgra),
        Setup(label: "yuyv-nv12", cameraFormat: .yuyv, outputFormat: .nv12VideoRange),
        Setup(label: "yuyv-bgra-half", cameraFormat: .yuyv, outputFormat: .bgra, halves: true),
    ]

    static func cases(settings: MeasureSettings) -> [BenchmarkCase] {
        settings.sizes.flatMap { size in
            setups.map { setup in
                let dimensions = CaptureDevice.Dimensions(width: size.0, height: size.1)
                return BenchmarkCase(name: "pipeline/\(setup.label)/\(dimensions)", group: "pipeline") { settings in
                    [try measure(setup, dimensions, settings)]
                }
            }
        }
    }

    /// Counts delivered frames and wakes the runner when a target count is reached.
    final class CountingDelegate: CaptureVideoDataOutputSampleBufferDelegate {
        let delivered = Atomic<Int>(0)
        let target = Atomic<Int>(Int.max)
        let reached = DispatchSemaphore(value: 0)

        func captureOutput(
            _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
        ) {
            let count = delivered.add(1, ordering: .relaxed).newValue
            if count >= target.load(ordering: .relaxed) {
                target.store(Int.max, ordering: .relaxed)
                reached.signal()
            }
        }

        /// Blocks until `frames` more frames are delivered (or `timeout` passes); returns the
        /// count and time at the start and at the end.
        func wait(frames: Int, timeout: Double) -> (frames: Int, seconds: Double, allocations: UInt64)? {
            let start = delivered.load(ordering: .relaxed)
            let allocations = Measure.allocations()
            let t0 = Measure.now()
            target.store(start + frames, ordering: .relaxed)
            guard reached.wait(timeout: .now() + timeout) == .success else { return nil }
            let t1 = Measure.now()
            let used = Measure.allocations() - allocations
            return (delivered.load(ordering: .relaxed) - start, t1 - t0, used)
        }
    }

    static func measure(
        _ setup: Setup, _ size: CaptureDevice.Dimensions, _ settings: MeasureSettings, prefix: String = "pipeline"
    ) throws -> BenchmarkResult {
        let format = CaptureDevice.Format(
            pixelFormat: setup.cameraFormat, width: size.width, height: size.height,
            frameRateRanges: [FrameRateRange(framesPerSecond: 60)])
        let camera = VirtualCamera(
            configuration: .init(
                name: "Bench Camera", isPaced: false, bufferCount: 4, rendersEveryFrame: false, formats: [format]))
        let session = CaptureSession()
        let input = try CaptureDeviceInput(device: camera.device)
        let output = CaptureVideoDataOutput()
        var destination = setup.halves ? CaptureDevice.Dimensions(width: size.width / 2, height: size.height / 2) : size
        if let outputFormat = setup.outputFormat {
            output.videoSettings =
                setup.halves
                ? try VideoSettings(pixelFormat: outputFormat, width: destination.width, height: destination.height)
                : try VideoSettings(pixelFormat: outputFormat)
        }
        // Queue rather than discard: every accepted frame is delivered and extra frames drop as
        // out-of-buffers, so the delivered rate is what the pipeline itself sustains.
        output.alwaysDiscardsLateVideoFrames = false
        for (name, processor) in try setup.processors(size) { try output.addProcessor(processor, named: name) }
        let delegate = CountingDelegate()
        output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "bench.delegate"))
        session.beginConfiguration()
        try session.tryAddInput(input)
        try session.tryAddOutput(output)
        session.commitConfiguration()
        session.startRunning()
        defer { session.stopRunning() }

        // Warm up, then size runs of about runSeconds each.
        guard let warm = delegate.wait(frames: 20, timeout: 30) else {
            throw CaptureError(.ioError, "pipeline \(setup.label) delivered no frames: \(output.statistics)")
        }
        let framesPerRun = max(10, Int(Double(warm.frames) / warm.seconds * settings.runSeconds))
        var fps: [Double] = []
        var frames = 0
        var allocations: UInt64 = 0
        for _ in 0..<settings.repeats {
            guard let run = delegate.wait(frames: framesPerRun, timeout: 30) else { break }
            fps.append(Double(run.frames) / run.seconds)
            frames += run.frames
            allocations += run.allocations
        }
        let latency = output.deliveryLatency
        let figures = Measure.Figures(fps: fps, allocationsPerFrame: Double(allocations) / Double(max(1, frames)))

        let sourceBytes = setup.cameraFormat.frameSize(width: size.width, height: size.height)
        var outputBytes =
            setup.outputFormat.map { $0.frameSize(width: destination.width, height: destination.height) } ?? 0
        if !output.processors.isEmpty, let delivered = output.deliveredFormat {
            // The conversion's output (if any) plus the chain's last new image.
            outputBytes += delivered.pixelFormat.frameSize(width: delivered.size.width, height: delivered.size.height)
            destination = delivered.size
        }
        let bytes = sourceBytes + outputBytes
        let floor = Measure.memcpyFloor(bytes: bytes, settings: settings)
        var result = BenchmarkResult(
            name: "\(prefix)/\(setup.label)/\(size)", group: "pipeline", width: size.width, height: size.height,
            destinationWidth: destination.width, destinationHeight: destination.height,
            threads: PixelConverter.Options.defaultThreadCount,
            engine: output.isZeroCopy ? "zero-copy" : output.conversionEngine?.rawValue ?? "no conversion",
            fpsMin: figures.min,
            fpsMedian: figures.median, gbPerS: Double(bytes) * figures.median / 1e9, floor: floor,
            ratioToFloor: figures.median / floor)
        result.usPerFrame = 1e6 / figures.median
        result.allocationsPerFrame = figures.allocationsPerFrame
        result.latencyP50Us = latency.p50
        result.latencyP99Us = latency.p99
        result.note = "\(output.statistics)"
        return result
    }
}
