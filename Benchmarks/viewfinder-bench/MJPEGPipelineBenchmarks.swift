import Dispatch
import Foundation
import Synchronization
import Viewfinder

/// Paced Motion-JPEG pipelines (`pipeline/paced/mjpeg-…`), for the allocation gate: a camera
/// paced by the host clock handing out the bench's webcam-like 1080p JPEG frames
/// (``MJPEGBenchmarks/frames(_:)``) from a ring of its own, like a V4L2 driver's mmap'd buffers →
/// session → video data outputs decoding through the device's one shared decode
/// (``DeviceFrameDecoder``) → delegates that only count. Heap allocations per delivered frame
/// (the checked figure, counted process-wide between two deliveries to the first output), with the
/// decode count beside the frame count.
///
/// - `mjpeg-nv12`: one output of full-range NV12 at the camera's size (a whole decode straight
///   into the output's format).
/// - `mjpeg-nv12-half`: one output at 960x540, served by TurboJPEG's 1/2-scale decode.
/// - `mjpeg-nv12-half+whole`: the 960x540 output and a second one at 1920x1080: the one decode
///   is whole, the small output scales from it and the large one takes the same image.
enum MJPEGPipelineBenchmarks {
    struct Setup {
        var label: String
        /// Each output's format and size (nil: the camera's).
        var outputs: [(format: PixelFormat, size: CaptureDevice.Dimensions?)]
    }

    static let camera = CaptureDevice.Dimensions(width: 1920, height: 1080)
    static let rate = 30
    static let half = CaptureDevice.Dimensions(width: 960, height: 540)

    static let setups: [Setup] = [
        Setup(label: "mjpeg-nv12", outputs: [(.nv12FullRange, nil)]),
        Setup(label: "mjpeg-nv12-half", outputs: [(.nv12FullRange, half)]),
        Setup(label: "mjpeg-nv12-half+whole", outputs: [(.nv12FullRange, half), (.nv12FullRange, nil)]),
    ]

    static func cases(settings: MeasureSettings) -> [BenchmarkCase] {
        setups.map { setup in
            BenchmarkCase(name: "pipeline/paced/\(setup.label)/\(camera)/\(rate)fps", group: "pipeline-paced") {
                settings in
                [try paced(setup, settings)]
            }
        }
    }

    /// A paced run: the wake-up floor at the camera's rate, then the pipeline, for
    /// `settings.latencySeconds` (at least `settings.latencyMinimumFrames` frames).
    static func paced(_ setup: Setup, _ settings: MeasureSettings) throws -> BenchmarkResult {
        let frames = max(settings.latencyMinimumFrames, Int(settings.latencySeconds * Double(rate)))
        let floor = WakeUpFloor.measure(rate: rate, count: frames)

        let backend = try PacedJPEGCamera(jpegs: try MJPEGBenchmarks.frames(camera), size: camera, rate: rate)
        let device = CaptureDevice(backend: backend)
        let session = CaptureSession(notificationCenter: NotificationCenter())
        session.sessionPreset = .inputPriority
        var outputs: [CaptureVideoDataOutput] = []
        var delegates: [PipelineBenchmarks.CountingDelegate] = []
        session.beginConfiguration()
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        for (index, wanted) in setup.outputs.enumerated() {
            let output = CaptureVideoDataOutput()
            let size = wanted.size ?? camera
            output.typedVideoSettings = try VideoSettings(
                pixelFormat: wanted.format, width: size.pixelWidth, height: size.pixelHeight)
            output.alwaysDiscardsLateVideoFrames = false
            let delegate = PipelineBenchmarks.CountingDelegate(capacity: index == 0 ? 1 << 16 : 1)
            output.setSampleBufferDelegate(delegate, queue: DispatchQueue(label: "bench.mjpeg.delegate.\(index)"))
            try session.tryAddOutput(output)
            outputs.append(output)
            delegates.append(delegate)
        }
        session.commitConfiguration()
        session.startRunning()
        defer { session.stopRunning() }
        let output = outputs[0]
        let delegate = delegates[0]
        guard delegate.wait(frames: 5, timeout: 30) != nil else {
            throw CaptureError(.ioError, "pipeline \(setup.label) delivered no frames: \(output.statistics)")
        }
        let droppedBefore = outputs.map(\.statistics.dropped)
        let reportsBefore = delegate.dropReports.load(ordering: .relaxed)
        let decodesBefore = device.sharedDecodeStatistics?.decodes ?? 0
        let deliveredBefore = delegates.map { $0.delivered.load(ordering: .relaxed) }
        let first = delegate.delivered.load(ordering: .relaxed)
        guard let run = delegate.wait(frames: frames, timeout: Double(frames) / Double(rate) * 3 + 30) else {
            throw CaptureError(.ioError, "pipeline \(setup.label) stalled: \(output.statistics)")
        }
        let latency = output.deliveryLatency
        let allocations = delegate.allocations(over: first..<(first + run.frames))
        let decodes = (device.sharedDecodeStatistics?.decodes ?? 0) - decodesBefore
        let delivered = zip(delegates, deliveredBefore).map { $0.delivered.load(ordering: .relaxed) - $1 }
        let plan = device.sharedDecodePlan.map { "\($0)" } ?? "no shared decode"
        let destination = setup.outputs[0].size ?? camera

        var result = BenchmarkResult(
            name: "pipeline/paced/\(setup.label)/\(camera)/\(rate)fps", group: "pipeline-paced",
            width: camera.pixelWidth, height: camera.pixelHeight, destinationWidth: destination.pixelWidth,
            destinationHeight: destination.pixelHeight, threads: PixelConverter.Options.defaultThreadCount,
            engine: output.conversionEngine?.rawValue ?? "decode only", fpsMin: Double(run.frames) / run.seconds,
            fpsMedian: Double(run.frames) / run.seconds, gbPerS: 0, floor: 0, ratioToFloor: 0)
        result.pacedFps = Double(rate)
        result.latencyP50Us = latency.p50
        result.latencyP99Us = latency.p99
        result.wakeUpP50Us = floor.p50
        result.wakeUpP99Us = floor.p99
        result.allocationsPerFrame = allocations.mode
        result.frames = allocations.clean
        result.cpuPerWall = run.cpu / run.seconds
        result.cpuUsPerFrame = run.cpu * 1e6 / Double(max(1, run.frames))
        result.dropped = zip(outputs, droppedBefore).map { $0.statistics.dropped - $1 }.reduce(0, +)
        result.dropReports = delegate.dropReports.load(ordering: .relaxed) - reportsBefore
        result.note =
            "allocations mean \(format(allocations.mean, 3)) over \(allocations.clean) intervals, \(allocations.withReports) with drop reports; \(plan); \(decodes) decodes for \(delivered.map(String.init).joined(separator: " + ")) frames delivered; camera lost \(backend.lost.load(ordering: .relaxed)); \(outputs.map { "\($0.statistics)" }.joined(separator: "; "))"
        return result
    }
}

/// A Motion-JPEG camera paced by the host clock: each frame is the next of `jpegs`, copied into a
/// free slot of its own ring (as a UVC driver fills an mmap'd buffer) and handed out as a
/// ``PixelFormat/mjpeg`` buffer; a frame due while every slot is held downstream is lost, as a
/// driver with no queued buffer loses it. Nothing is allocated per frame.
final class PacedJPEGCamera: DeviceBackend, PixelMemoryOwner, @unchecked Sendable {
    // unchecked: the slots' memory is written only while the slot is free (the capture thread
    // owns it then); the free list and the thread are behind locks.
    private static let counter = Atomic<Int>(0)
    let uniqueID: String
    let localizedName = "Bench JPEG Camera"
    let modelID = "bench-jpeg-camera"
    let manufacturer = "Viewfinder Bench"
    let deviceType = CaptureDevice.DeviceType.external
    let formats: [CaptureDevice.Format]
    var isConnected: Bool { true }
    /// Frames lost because every slot was held.
    let lost = Atomic<Int>(0)

    private let jpegs: [[UInt8]]
    private let size: CaptureDevice.Dimensions
    private let slots: [UnsafeMutableRawPointer]
    private let free: Mutex<[Int]>
    private let spares = SpareObjects<PixelBuffer>(limit: 8)
    private let thread = Mutex<CaptureThread?>(nil)

    init(jpegs: [[UInt8]], size: CaptureDevice.Dimensions, rate: Int, slotCount: Int = 4) throws {
        guard !jpegs.isEmpty else { throw BenchError("a JPEG camera needs frames") }
        self.jpegs = jpegs
        self.size = size
        uniqueID = "bench.jpeg-camera.\(Self.counter.add(1, ordering: .relaxed).newValue)"
        formats = [
            CaptureDevice.Format(
                pixelFormat: .mjpeg, width: size.pixelWidth, height: size.pixelHeight,
                frameRateRanges: [FrameRateRange(framesPerSecond: Int32(rate))])
        ]
        let layout = PlaneLayout(pixelFormat: .mjpeg, width: size.pixelWidth, height: size.pixelHeight)
        let bytes = max(layout.totalBytes, jpegs.map(\.count).max() ?? 0)
        slots = (0..<slotCount).map { _ in UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64) }
        var list = Array(0..<slotCount)
        list.reserveCapacity(slotCount)
        free = Mutex(list)
    }

    deinit {
        for slot in slots { slot.deallocate() }
    }

    func reclaim(slot: Int) { free.withLock { $0.append(slot) } }

    func startStreaming(format: CaptureDevice.Format, frameDuration: MediaTime, sink: DeviceStreamSink)
        throws(CaptureError) -> MediaTime
    {
        try checkCanStream(format)
        let duration = format.minFrameDuration
        let clock = HostClock()
        let start = clock.now()
        let capture = CaptureThread(name: "bench.jpeg-camera") { [self] thread in
            run(start: start, frameDuration: duration, clock: clock, sink: sink, isCancelled: { thread.isCancelled })
        }
        thread.withLock { $0 = capture }
        return duration
    }

    func stopStreaming() {
        let capture = thread.withLock { thread in
            defer { thread = nil }
            return thread
        }
        capture?.stop()
    }

    private func run(
        start: MediaTime, frameDuration: MediaTime, clock: HostClock, sink: DeviceStreamSink, isCancelled: () -> Bool
    ) {
        let layout = PlaneLayout(pixelFormat: .mjpeg, width: size.pixelWidth, height: size.pixelHeight)
        var sequence: UInt64 = 0
        while !isCancelled() {
            let deadline = start + frameDuration * Int64(sequence)
            guard clock.wait(until: deadline, isCancelled: isCancelled) else { return }
            let current = sequence
            sequence += 1
            guard let slot = free.withLock({ $0.popLast() }) else {
                lost.add(1, ordering: .relaxed)
                continue
            }
            let jpeg = jpegs[Int(current % UInt64(jpegs.count))]
            jpeg.withUnsafeBytes { slots[slot].copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            var buffer: PixelBuffer? = PixelBuffer.make(
                memory: slots[slot], layout: layout, dataSize: jpeg.count, owner: self, slot: slot, spares: spares)
            sink.deviceDidCapture(
                CapturedFrame(
                    buffer: buffer!, presentationTime: deadline, duration: frameDuration, sequenceNumber: current,
                    hostArrivalTime: clock.now()))
            PixelBuffer.recycle(&buffer)
        }
    }
}
