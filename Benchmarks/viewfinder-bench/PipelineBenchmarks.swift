import Dispatch
import Foundation
import Synchronization
import Viewfinder

/// The whole pipeline: a virtual camera (drawn once per ring buffer) -> session -> video data
/// output -> a delegate that only counts. Zero-copy (native format) and with a conversion (a
/// YUYV-only camera, BGRA or NV12 out).
///
/// Two kinds of rows, never mixed:
/// - throughput (`pipeline/throughput/…`): an unpaced camera that waits for a free buffer (no
///   invented sequence gaps), frames per second and CPU per frame; its latency is queueing and is
///   not reported.
/// - paced (`pipeline/paced/…/<rate>fps`): a camera paced by the host clock at 30, 60 and 1000 fps;
///   capture-to-delegate latency beside the parked-queue wake-up floor measured in the same run at
///   the same rate, and heap allocations per delivered frame (the checked figure).
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
        let sizes = settings.pipelineSizes ?? settings.sizes
        var cases: [BenchmarkCase] = []
        if !settings.allocationsOnly {
            for size in sizes {
                for setup in setups {
                    let dimensions = CaptureDevice.Dimensions(width: size.0, height: size.1)
                    cases.append(
                        BenchmarkCase(name: "pipeline/throughput/\(setup.label)/\(dimensions)", group: "pipeline") {
                            settings in
                            [try measure(setup, dimensions, settings, prefix: "pipeline/throughput")]
                        })
                }
            }
        }
        for size in sizes {
            for setup in setups {
                for rate in settings.latencyRates {
                    let dimensions = CaptureDevice.Dimensions(width: size.0, height: size.1)
                    cases.append(
                        BenchmarkCase(
                            name: "pipeline/paced/\(setup.label)/\(dimensions)/\(rate)fps", group: "pipeline-paced"
                        ) { settings in
                            [try paced(setup, dimensions, rate: rate, settings)]
                        })
                }
            }
        }
        return cases
    }

    /// Counts delivered frames and drop reports, and notes the process's allocation count at each
    /// delivered frame (into storage allocated up front), so allocations are attributed per
    /// frame interval and intervals with a drop report are counted apart.
    // unchecked: the marks are written only on the delegate's serial queue and read after the
    // counted frames were delivered (the semaphore orders the two).
    final class CountingDelegate: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
        let delivered = Atomic<Int>(0)
        let dropReports = Atomic<Int>(0)
        let target = Atomic<Int>(Int.max)
        let reached = DispatchSemaphore(value: 0)
        /// Per delivered frame (index = delivered count - 1, while below `capacity`): allocations
        /// so far, and drop reports so far. Written only on the delegate queue.
        let capacity: Int
        let allocationMarks: UnsafeMutablePointer<UInt64>
        let reportMarks: UnsafeMutablePointer<Int>

        init(capacity: Int = 1 << 16) {
            self.capacity = capacity
            allocationMarks = .allocate(capacity: capacity)
            reportMarks = .allocate(capacity: capacity)
        }

        deinit {
            allocationMarks.deallocate()
            reportMarks.deallocate()
        }

        func captureOutput(
            _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
        ) {
            let allocations = Measure.allocations()
            let count = delivered.add(1, ordering: .relaxed).newValue
            if count <= capacity {
                allocationMarks[count - 1] = allocations
                reportMarks[count - 1] = dropReports.load(ordering: .relaxed)
            }
            if count >= target.load(ordering: .relaxed) {
                target.store(Int.max, ordering: .relaxed)
                reached.signal()
            }
        }

        func captureOutput(
            _ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection
        ) {
            dropReports.add(1, ordering: .relaxed)
        }

        /// Blocks until `frames` more frames are delivered (or `timeout` passes); returns the
        /// frames, seconds and CPU seconds between.
        func wait(frames: Int, timeout: Double) -> (first: Int, frames: Int, seconds: Double, cpu: Double)? {
            let start = delivered.load(ordering: .relaxed)
            let c0 = Measure.cpuSeconds()
            let t0 = Measure.now()
            target.store(start + frames, ordering: .relaxed)
            guard reached.wait(timeout: .now() + timeout) == .success else { return nil }
            let t1 = Measure.now()
            let c1 = Measure.cpuSeconds()
            return (start, delivered.load(ordering: .relaxed) - start, t1 - t0, c1 - c0)
        }

        /// Allocations per delivered frame over frames `range` (indices into the marks): the
        /// mode and mean of the per-interval counts over intervals without a drop report, and
        /// how many intervals had one.
        func allocations(over range: Range<Int>) -> (mode: Double, mean: Double, clean: Int, withReports: Int) {
            let upper = min(range.upperBound, min(capacity, delivered.load(ordering: .relaxed)))
            var counts: [UInt64: Int] = [:]
            var total: UInt64 = 0
            var clean = 0
            var withReports = 0
            var index = max(1, range.lowerBound + 1)
            while index < upper {
                if reportMarks[index] != reportMarks[index - 1] {
                    withReports += 1
                } else {
                    let delta = allocationMarks[index] - allocationMarks[index - 1]
                    counts[delta, default: 0] += 1
                    total += delta
                    clean += 1
                }
                index += 1
            }
            let mode = counts.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }?.key ?? 0
            return (Double(mode), clean > 0 ? Double(total) / Double(clean) : .nan, clean, withReports)
        }
    }

    /// A session around a virtual camera in `setup`'s format, delivering to a counting delegate.
    final class Rig {
        let session = CaptureSession()
        let output = CaptureVideoDataOutput()
        let delegate = CountingDelegate()
        let camera: VirtualCamera
        var destination: CaptureDevice.Dimensions

        init(_ setup: Setup, _ size: CaptureDevice.Dimensions, paced rate: Int?) throws {
            let format = CaptureDevice.Format(
                pixelFormat: setup.cameraFormat, width: size.pixelWidth, height: size.pixelHeight,
                frameRateRanges: [FrameRateRange(framesPerSecond: Int32(rate ?? 60))])
            camera = VirtualCamera(
                configuration: .init(
                    name: "Bench Camera", isPaced: rate != nil, bufferCount: 4, rendersEveryFrame: false,
                    formats: [format]))
            let input = try CaptureDeviceInput(device: camera.device)
            destination = setup.halves ? CaptureDevice.Dimensions(width: size.width / 2, height: size.height / 2) : size
            if let outputFormat = setup.outputFormat {
                output.typedVideoSettings =
                    setup.halves
                    ? try VideoSettings(
                        pixelFormat: outputFormat, width: destination.pixelWidth, height: destination.pixelHeight)
                    : try VideoSettings(pixelFormat: outputFormat)
            }
            // Queue rather than discard: every accepted frame is delivered.
            output.alwaysDiscardsLateVideoFrames = false
            for (name, processor) in try setup.processors(size) { try output.addProcessor(processor, named: name) }
            output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "bench.delegate"))
            session.beginConfiguration()
            try session.tryAddInput(input)
            try session.tryAddOutput(output)
            session.commitConfiguration()
        }

        var engine: String {
            output.isZeroCopy ? "zero-copy" : output.conversionEngine?.rawValue ?? "no conversion"
        }
    }

    /// Throughput: an unpaced camera, frames per second over `settings.repeats` runs of about
    /// `settings.runSeconds`, CPU per frame, allocations per delivered frame.
    static func measure(
        _ setup: Setup, _ size: CaptureDevice.Dimensions, _ settings: MeasureSettings, prefix: String = "pipeline"
    ) throws -> BenchmarkResult {
        let rig = try Rig(setup, size, paced: nil)
        let output = rig.output
        let delegate = rig.delegate
        rig.session.startRunning()
        defer { rig.session.stopRunning() }

        // Warm up, then size runs of about runSeconds each.
        guard let warm = delegate.wait(frames: 20, timeout: 30) else {
            throw CaptureError(.ioError, "pipeline \(setup.label) delivered no frames: \(output.statistics)")
        }
        let framesPerRun = max(10, Int(Double(warm.frames) / warm.seconds * settings.runSeconds))
        var fps: [Double] = []
        var frames = 0
        var cpu = 0.0
        var wall = 0.0
        let first = delegate.delivered.load(ordering: .relaxed)
        let droppedBefore = output.statistics.dropped
        let reportsBefore = delegate.dropReports.load(ordering: .relaxed)
        for _ in 0..<settings.repeats {
            guard let run = delegate.wait(frames: framesPerRun, timeout: 30) else { break }
            fps.append(Double(run.frames) / run.seconds)
            frames += run.frames
            cpu += run.cpu
            wall += run.seconds
        }
        let allocations = delegate.allocations(over: first..<(first + frames))
        let figures = Measure.Figures(fps: fps, allocationsPerFrame: allocations.mode)
        _ = figures.allocationsPerFrame  // Not checked: an unpaced run's counts depend on timing (see `paced`).

        let sourceBytes = setup.cameraFormat.frameSize(width: size.pixelWidth, height: size.pixelHeight)
        var destination = rig.destination
        var outputBytes =
            setup.outputFormat.map { $0.frameSize(width: destination.pixelWidth, height: destination.pixelHeight) } ?? 0
        if !output.processors.isEmpty, let delivered = output.deliveredFormat {
            // The conversion's output (if any) plus the chain's last new image.
            outputBytes += delivered.pixelFormat.frameSize(
                width: delivered.size.pixelWidth, height: delivered.size.pixelHeight)
            destination = delivered.size
        }
        let bytes = sourceBytes + outputBytes
        let floor = Measure.memcpyFloor(bytes: bytes, settings: settings)
        var result = BenchmarkResult(
            name: "\(prefix)/\(setup.label)/\(size)", group: "pipeline", width: size.pixelWidth,
            height: size.pixelHeight,
            destinationWidth: destination.pixelWidth, destinationHeight: destination.pixelHeight,
            threads: PixelConverter.Options.defaultThreadCount, engine: rig.engine, fpsMin: figures.min,
            fpsMedian: figures.median, gbPerS: Double(bytes) * figures.median / 1e9, floor: floor,
            ratioToFloor: figures.median / floor)
        result.usPerFrame = 1e6 / figures.median
        result.cpuPerWall = wall > 0 ? cpu / wall : nil
        result.cpuUsPerFrame = frames > 0 ? cpu * 1e6 / Double(frames) : nil
        result.dropped = output.statistics.dropped - droppedBefore
        result.dropReports = delegate.dropReports.load(ordering: .relaxed) - reportsBefore
        result.frames = allocations.clean
        result.note =
            "allocations (unchecked: unpaced) mode \(format(allocations.mode, 0)), mean \(format(allocations.mean, 3)); \(output.statistics)"
        return result
    }

    /// A paced run at `rate`: first the wake-up floor at that rate, then the pipeline, each for
    /// `settings.latencySeconds` (at least `settings.latencyMinimumFrames` frames).
    static func paced(
        _ setup: Setup, _ size: CaptureDevice.Dimensions, rate: Int, _ settings: MeasureSettings,
        prefix: String = "pipeline"
    ) throws -> BenchmarkResult {
        let frames = max(settings.latencyMinimumFrames, Int(settings.latencySeconds * Double(rate)))
        let floor = WakeUpFloor.measure(rate: rate, count: frames)

        let rig = try Rig(setup, size, paced: rate)
        let output = rig.output
        let delegate = rig.delegate
        rig.session.startRunning()
        defer { rig.session.stopRunning() }
        // A few frames to settle (the first ones also grow pools); the latency window keeps the last
        // 1,024 deliveries, so at most a handful of these are in it.
        let warmUp = 5
        guard delegate.wait(frames: warmUp, timeout: 30) != nil else {
            throw CaptureError(.ioError, "pipeline \(setup.label) delivered no frames: \(output.statistics)")
        }
        let droppedBefore = output.statistics.dropped
        let reportsBefore = delegate.dropReports.load(ordering: .relaxed)
        let first = delegate.delivered.load(ordering: .relaxed)
        guard let run = delegate.wait(frames: frames, timeout: Double(frames) / Double(rate) * 3 + 30) else {
            throw CaptureError(.ioError, "pipeline \(setup.label) stalled: \(output.statistics)")
        }
        let latency = output.deliveryLatency
        let allocations = delegate.allocations(over: first..<(first + run.frames))
        let fps = Double(run.frames) / run.seconds

        var result = BenchmarkResult(
            name: "\(prefix)/paced/\(setup.label)/\(size)/\(rate)fps", group: "pipeline-paced", width: size.pixelWidth,
            height: size.pixelHeight, destinationWidth: rig.destination.pixelWidth,
            destinationHeight: rig.destination.pixelHeight,
            threads: PixelConverter.Options.defaultThreadCount, engine: rig.engine, fpsMin: fps, fpsMedian: fps,
            gbPerS: 0, floor: 0, ratioToFloor: 0)
        result.pacedFps = Double(rate)
        result.latencyP50Us = latency.p50
        result.latencyP99Us = latency.p99
        result.wakeUpP50Us = floor.p50
        result.wakeUpP99Us = floor.p99
        result.allocationsPerFrame = allocations.mode
        result.frames = allocations.clean
        result.cpuPerWall = run.cpu / run.seconds
        result.cpuUsPerFrame = run.cpu * 1e6 / Double(max(1, run.frames))
        result.dropped = output.statistics.dropped - droppedBefore
        result.dropReports = delegate.dropReports.load(ordering: .relaxed) - reportsBefore
        result.note =
            "allocations mean \(format(allocations.mean, 3)) over \(allocations.clean) intervals, \(allocations.withReports) with drop reports; \(output.statistics)"
        return result
    }
}

/// The cost of waking a parked queue, the floor under any hand-off from a capture thread: a thread
/// paced like the camera (HostClock's sleep to each due time) signals a dispatch source whose
/// handler runs on an idle serial queue; the figure is the time from the signal to the handler.
enum WakeUpFloor {
    // unchecked: written only on the handler's serial queue, read after it finished.
    final class Recorder: @unchecked Sendable {
        let times: UnsafeMutablePointer<Double>
        let capacity: Int
        var count = 0
        let signalledAt = Atomic<UInt64>(0)
        let done = DispatchSemaphore(value: 0)

        init(capacity: Int) {
            self.capacity = capacity
            times = .allocate(capacity: capacity)
        }

        deinit { times.deallocate() }
    }

    final class SourceBox: @unchecked Sendable {  // unchecked: a dispatch source may be signalled from any thread.
        let source: any DispatchSourceUserDataAdd
        init(_ source: any DispatchSourceUserDataAdd) { self.source = source }
    }

    static func nanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    static func measure(rate: Int, count: Int) -> (p50: Double, p99: Double) {
        let recorder = Recorder(capacity: count)
        let queue = DispatchQueue(label: "bench.wake-up-floor")
        let source = SourceBox(DispatchSource.makeUserDataAddSource(queue: queue))
        source.source.setEventHandler {
            let woke = nanoseconds()
            let signalled = recorder.signalledAt.load(ordering: .acquiring)
            if recorder.count < recorder.capacity {
                recorder.times[recorder.count] = Double(woke - signalled) / 1000
                recorder.count += 1
            }
            if recorder.count == recorder.capacity { recorder.done.signal() }
        }
        source.source.activate()
        let clock = HostClock()
        let thread = Thread {
            let start = clock.now()
            let interval = MediaTime(value: 1, timescale: Int32(rate))
            for index in 0..<count {
                _ = clock.wait(until: start + interval * Int64(index + 1)) { false }
                recorder.signalledAt.store(nanoseconds(), ordering: .releasing)
                source.source.add(data: 1)
            }
        }
        thread.start()
        _ = recorder.done.wait(timeout: .now() + Double(count) / Double(rate) * 3 + 10)
        source.source.cancel()
        let times = (0..<recorder.count).map { recorder.times[$0] }.sorted()
        guard !times.isEmpty else { return (.nan, .nan) }
        return (times[times.count / 2], times[min(times.count - 1, times.count * 99 / 100)])
    }
}
