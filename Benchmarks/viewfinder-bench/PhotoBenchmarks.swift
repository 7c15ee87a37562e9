import Dispatch
import Foundation
import Synchronization
import Viewfinder

/// Photos: the latency from `capturePhoto` to `didFinishProcessingPhoto` with a paced camera
/// (a video data output running beside it), and JPEG encode throughput at 1080p against
/// `ffmpeg -c:v mjpeg` on the same frames in the same run.
enum PhotoBenchmarks {
    static func cases(settings: MeasureSettings) -> [BenchmarkCase] {
        [
            BenchmarkCase(name: "photo/latency/nv12/1920x1080", group: "photo") { settings in
                [try latency(settings)]
            },
            BenchmarkCase(name: "photo/encode/nv12/1920x1080", group: "photo") { settings in
                [try encode(.nv12VideoRange, settings)]
            },
            BenchmarkCase(name: "photo/encode/bgra/1920x1080", group: "photo") { settings in
                [try encode(.bgra, settings)]
            },
        ]
    }

    static let size = CaptureDevice.Dimensions(width: 1920, height: 1080)
    static let quality = 0.9

    /// A webcam-like scene (gradients and seeded noise, about what a camera's photo costs to
    /// encode; colour bars would flatter every encoder) in `format`.
    static func scenes(_ format: PixelFormat, count: Int) throws -> [PixelBuffer] {
        let bgra = try PixelBufferPool(
            pixelFormat: .bgra, width: size.pixelWidth, height: size.pixelHeight, capacity: count)
        let out = try PixelBufferPool(
            pixelFormat: format, width: size.pixelWidth, height: size.pixelHeight, capacity: count)
        let converter =
            format == .bgra ? nil : try PixelConverter(from: .bgra, size: size, to: format, size: size)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        return try (0..<count).map { index in
            guard let frame = bgra.makePixelBuffer() else { throw BenchError("scene pool exhausted") }
            let p = frame.baseAddress.assumingMemoryBound(to: UInt8.self)
            for y in 0..<size.pixelHeight {
                for x in 0..<size.pixelWidth {
                    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    let noise = Int(state >> 60) - 8
                    let o = y * frame.bytesPerRow + x * 4
                    p[o] = UInt8(clamping: (x + index * 16) * 255 / size.pixelWidth + noise)
                    p[o + 1] = UInt8(clamping: y * 255 / size.pixelHeight + noise)
                    p[o + 2] = UInt8(clamping: 128 + Int(60 * sin(Double(x + y) / 40)) + noise)
                    p[o + 3] = 255
                }
            }
            guard let converter else { return frame }
            guard let converted = out.makePixelBuffer() else { throw BenchError("scene pool exhausted") }
            try converter.convert(frame, into: converted)
            return converted
        }
    }

    // MARK: Encode throughput

    static func encode(_ format: PixelFormat, _ settings: MeasureSettings) throws -> BenchmarkResult {
        let frames = try scenes(format, count: 4)
        let encoder = try JPEGEncoder(quality: quality)
        var bytes = 0
        let figures = try Measure.frames(settings) { index in
            bytes = try encoder.encode(frames[index % frames.count]).count
        }
        let ffmpegName = format == .bgra ? "bgra" : "nv12"
        var result = BenchmarkResult(
            name: "photo/encode/\(ffmpegName)/\(size)", group: "photo", width: size.pixelWidth,
            height: size.pixelHeight,
            threads: 1, engine: "TurboJPEG", pixelFormat: format.name, fpsMin: figures.min,
            fpsMedian: figures.median,
            gbPerS: Double(format.frameSize(width: size.pixelWidth, height: size.pixelHeight)) * figures.median / 1e9,
            floor: Measure.memcpyFloor(
                bytes: format.frameSize(width: size.pixelWidth, height: size.pixelHeight), settings: settings),
            ratioToFloor: 0)
        result.ratioToFloor = figures.median / result.floor
        result.usPerFrame = 1e6 / figures.median
        result.allocationsPerFrame = figures.allocationsPerFrame
        result.note = "quality \(quality) 4:2:0, \(bytes / 1024) KiB per frame"
        if let ffmpeg = settings.ffmpeg,
            let input = FFmpegInput(ffmpeg: ffmpeg, ffmpegFormat: ffmpegName, sources: frames)
        {
            // -q:v 2 is ffmpeg's near-best fixed quantiser (about TurboJPEG's 90); one thread like ours.
            let arguments = ["-threads", "1", "-c:v", "mjpeg", "-q:v", "2", "-pix_fmt", "yuvj420p"]
            if let peer = ffmpegEncode(input, arguments: arguments, seconds: settings.peerSeconds) {
                result.peer =
                    "ffmpeg \(arguments.joined(separator: " ")) (\(peer.frames) frames, rawvideo demux and the conversion to yuvj420p included)"
                result.peerFps = peer.fps
                result.ratioToPeer = figures.median / peer.fps
                if let null = input.nullFPS(seconds: settings.peerSeconds) {
                    let seconds = 1 / peer.fps - 1 / null
                    if seconds > 0.1 / peer.fps {
                        result.peerFilterOnlyFps = 1 / seconds
                        result.ratioToPeerFilterOnly = figures.median * seconds
                    }
                }
            }
        }
        return result
    }

    /// `ffmpeg` encoding the input's frames with `arguments` into the null muxer, for about
    /// `seconds` (a pilot run sizes the timed one); frames per second over its `-benchmark` time.
    static func ffmpegEncode(_ input: FFmpegInput, arguments: [String], seconds: Double) -> (frames: Int, fps: Double)?
    {
        func run(frames: Int) -> (frames: Int, fps: Double)? { input.run(arguments: arguments, frames: frames) }
        guard let pilot = run(frames: input.ring) else { return nil }
        return run(frames: min(400, max(2 * input.ring, Int(pilot.fps * seconds))))
    }

    // MARK: Latency

    /// Times each request from `capturePhoto` to `didFinishProcessingPhoto`.
    final class LatencyDelegate: CapturePhotoCaptureDelegate {
        let started = Mutex<Double>(0)
        let latencies = Mutex<[Double]>([])
        let done = DispatchSemaphore(value: 0)

        func photoOutput(
            _ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?
        ) {
            let now = Measure.now()
            let start = started.withLock { $0 }
            if error == nil { latencies.withLock { $0.append(now - start) } }
        }

        func photoOutput(
            _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings,
            error: (any Error)?
        ) {
            done.signal()
        }
    }

    /// Counts frames the video data output delivers beside the photos.
    final class FrameCounter: CaptureVideoDataOutputSampleBufferDelegate {
        let count = Atomic<Int>(0)
        func captureOutput(
            _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
        ) {
            count.add(1, ordering: .relaxed)
        }
    }

    static func latency(_ settings: MeasureSettings) throws -> BenchmarkResult {
        let rate: Int32 = 30
        let format = CaptureDevice.Format(
            pixelFormat: .nv12VideoRange, width: size.pixelWidth, height: size.pixelHeight,
            frameRateRanges: [FrameRateRange(framesPerSecond: rate)])
        let camera = VirtualCamera(configuration: .init(isPaced: true, rendersEveryFrame: false, formats: [format]))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let video = CaptureVideoDataOutput()
        let counter = FrameCounter()
        video.setSampleBufferDelegate(counter, queue: DispatchQueue(label: "bench.photo.video"))
        try session.tryAddOutput(video)
        let photos = CapturePhotoOutput()
        try session.tryAddOutput(photos)
        session.startRunning()
        defer { session.stopRunning() }
        guard session.isRunning else { throw BenchError("the virtual camera's session did not start") }

        let delegate = LatencyDelegate()
        let count = settings.repeats * (settings.runSeconds < 0.1 ? 3 : 6)
        for index in 0..<count {
            // Requests land at varied points of the frame interval.
            usleep(UInt32(1_000 * (index * 7 % 33)))
            delegate.started.withLock { $0 = Measure.now() }
            photos.capturePhoto(with: CapturePhotoSettings(), delegate: delegate)
            guard delegate.done.wait(timeout: .now() + 5) == .success else { throw BenchError("a photo took over 5 s") }
        }
        let latencies = delegate.latencies.withLock { $0 }.sorted()
        guard !latencies.isEmpty else { throw BenchError("no photo succeeded") }
        let median = latencies[latencies.count / 2]
        let p99 = latencies[min(latencies.count - 1, Int(Double(latencies.count) * 0.99))]

        // The bound: one frame interval plus the encode of that frame, measured here.
        let frames = try scenes(.nv12VideoRange, count: 2)
        let encoder = try JPEGEncoder(quality: CapturePhotoSettings.defaultQuality)
        let encode = try Measure.frames(settings) { _ = try encoder.encode(frames[$0 % 2]) }
        let bound = 1 / Double(rate) + 1 / encode.median
        let stats = video.statistics
        var result = BenchmarkResult(
            name: "photo/latency/nv12/\(size)", group: "photo", width: size.pixelWidth, height: size.pixelHeight,
            threads: 1,
            engine: "TurboJPEG", pixelFormat: PixelFormat.nv12VideoRange.name, fpsMin: 1 / latencies.last!,
            fpsMedian: 1 / median, gbPerS: 0, floor: 1 / bound, ratioToFloor: bound / latencies.last!)
        result.usPerFrame = median * 1e6
        result.latencyP50Us = median * 1e6
        result.latencyP99Us = p99 * 1e6
        result.note =
            "\(latencies.count) photos at \(rate) fps; bound = frame interval \(format3(1e3 / Double(rate))) ms + encode \(format3(1e3 / encode.median)) ms = \(format3(bound * 1e3)) ms; worst \(format3(latencies.last! * 1e3)) ms (×bound \(format3(latencies.last! / bound))); video output beside it: \(counter.count.load(ordering: .relaxed)) frames, \(stats.dropped) dropped"
        return result
    }

    static func format3(_ value: Double) -> String { String(format: "%.2f", value) }
}
