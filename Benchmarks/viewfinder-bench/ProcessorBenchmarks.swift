import Foundation
import Viewfinder

/// Every built-in frame processor on BGRA and NV12 test-pattern frames at each size, driven
/// directly through `process(_:)` as a negotiated chain would drive it (``FrameProcessor/
/// outputFormat(for:)`` first, output buffers from a pool of that format), against a memcpy
/// floor and, where ffmpeg has an equivalent filter, ffmpeg on the same frames; plus a
/// three-processor chain inside the whole pipeline.
enum ProcessorBenchmarks {
    /// An ffmpeg filter doing the same job, and how it differs from ours.
    struct Peer {
        var filter: String
        var note: String?
    }

    struct Spec {
        var label: String
        var formats: [PixelFormat] = [.bgra, .nv12VideoRange]
        /// The processor for frames of the given format.
        var make: (FrameFormat) throws -> any FrameProcessor
        /// The ffmpeg equivalent for frames of the given format, if there is one.
        var peer: (FrameFormat) -> Peer?
        /// Bytes read and written per frame (input format, output format), for the memcpy floor.
        var bytes: (FrameFormat, FrameFormat) -> Int
        /// The test-pattern frames of the ring (sequence numbers).
        var sequenceNumbers: [UInt64] = [0, 1, 2, 3]
    }

    static func frameBytes(_ format: FrameFormat) -> Int {
        format.pixelFormat.frameSize(width: format.width, height: format.height)
    }

    /// Bytes an analysis processor reads to get luma: the Y plane, or every BGRA byte.
    static func lumaBytes(_ format: FrameFormat) -> Int {
        format.pixelFormat == .bgra ? frameBytes(format) : format.width * format.height
    }

    static func inPlusOut(_ input: FrameFormat, _ output: FrameFormat) -> Int { frameBytes(input) + frameBytes(output) }

    static func ffmpegName(_ format: PixelFormat) -> String { format == .bgra ? "bgra" : "nv12" }

    /// The other of BGRA and NV12.
    static func other(_ format: PixelFormat) -> PixelFormat { format == .bgra ? .nv12VideoRange : .bgra }

    static var specs: [Spec] {
        var specs: [Spec] = [
            Spec(
                label: "convert-half",
                make: { input in
                    try ConvertProcessor(
                        pixelFormat: other(input.pixelFormat),
                        size: .init(width: input.width / 2, height: input.height / 2))
                },
                peer: { input in
                    Peer(
                        filter: "scale=\(input.width / 2):\(input.height / 2):flags=bilinear,"
                            + "format=\(ffmpegName(other(input.pixelFormat)))")
                }, bytes: inPlusOut),
            Spec(
                label: "crop-half",
                make: { input in
                    try CropProcessor(
                        x: input.width / 4 & ~1, y: input.height / 4 & ~1, width: input.width / 2 & ~1,
                        height: input.height / 2 & ~1)
                },
                peer: { input in
                    Peer(
                        filter: "crop=\(input.width / 2 & ~1):\(input.height / 2 & ~1):"
                            + "\(input.width / 4 & ~1):\(input.height / 4 & ~1)",
                        note: "ffmpeg's crop moves plane pointers and copies nothing: its figure is demuxing alone")
                }, bytes: { _, output in 2 * frameBytes(output) }),
        ]
        for (angle, filter) in [(90, "transpose=1"), (180, "hflip,vflip"), (270, "transpose=2")] {
            specs.append(
                Spec(
                    label: "rotate-\(angle)", make: { _ in try RotateProcessor(angle: Double(angle)) },
                    peer: { _ in Peer(filter: filter) }, bytes: inPlusOut))
        }
        specs.append(
            Spec(
                label: "mirror", make: { _ in MirrorProcessor() }, peer: { _ in Peer(filter: "hflip") },
                bytes: inPlusOut)
        )
        specs.append(
            Spec(
                label: "grayscale", make: { _ in GrayscaleProcessor() },
                peer: { input in
                    input.pixelFormat == .bgra
                        ? Peer(
                            filter: "format=gray",
                            note: "ffmpeg converts BGRA to 8-bit gray (libswscale, BT.601 luma) and passes gray on; "
                                + "ours writes R = G = B = luma back into BGRA, in place")
                        : Peer(
                            filter: "hue=s=0",
                            note: "ffmpeg's hue has no NV12 path: it runs on yuv420p after an auto-inserted "
                                + "conversion; ours sets NV12 chroma to 128 in place")
                },
                bytes: { input, _ in
                    // In place: BGRA is read and written; NV12 has only its chroma written.
                    input.pixelFormat == .bgra ? 2 * frameBytes(input) : frameBytes(input) - input.width * input.height
                }))
        for radius in [2, 5] {
            specs.append(
                Spec(
                    label: "boxblur-r\(radius)", make: { _ in try BoxBlurProcessor(radius: radius) },
                    peer: { input in
                        input.pixelFormat == .bgra
                            ? Peer(
                                filter: "boxblur=luma_radius=\(radius):luma_power=1:chroma_radius=\(radius):"
                                    + "chroma_power=1:alpha_radius=\(radius):alpha_power=1",
                                note: "ffmpeg's boxblur is planar: BGRA goes through gbrap and back "
                                    + "(auto-inserted libswscale conversions)")
                            : Peer(
                                filter: "boxblur=luma_radius=\(radius):luma_power=1:"
                                    + "chroma_radius=\((radius + 1) / 2):chroma_power=1",
                                note: "ffmpeg's boxblur reads NV12's interleaved CbCr plane as one planar "
                                    + "half-width plane: it blurs half the chroma bytes, mixing Cb and Cr "
                                    + "(less work, wrong colour)"
                            )
                    }, bytes: inPlusOut))
        }
        specs.append(
            Spec(
                label: "luma-statistics", make: { _ in try LumaStatisticsProcessor() },
                peer: { input in
                    let route = input.pixelFormat == .bgra ? "BGRA goes through yuv444p" : "NV12 through yuv420p"
                    return Peer(
                        filter: "signalstats",
                        note: "signalstats computes more than luma mean + histogram: min, max, mean, 10/90 % "
                            + "levels of Y, U and V, saturation and hue figures and differences to the previous "
                            + "frame; it takes planar YUV only, so \(route) (auto-inserted conversion)"
                    )
                }, bytes: { input, _ in lumaBytes(input) }))
        specs.append(
            Spec(
                label: "motion-detection", make: { _ in try MotionDetectionProcessor() },
                peer: { input in
                    let route = input.pixelFormat == .bgra ? "BGRA natively" : "NV12 via yuv420p"
                    return Peer(
                        filter: "scdet",
                        note: "scdet: sum of absolute differences to the previous frame over every plane and a "
                            + "scene-change score (\(route)); "
                            + "ours: luma differences, a count above threshold, the mean")
                },
                // Luma read, previous luma read and rewritten.
                bytes: { input, _ in lumaBytes(input) + 2 * input.width * input.height },
                sequenceNumbers: [0, 5, 0, 5]))
        return specs
    }

    static func cases(settings: MeasureSettings) -> [BenchmarkCase] {
        let direct = settings.processorSizes.flatMap { size in
            specs.flatMap { spec in
                spec.formats.map { format in
                    let dimensions = CaptureDevice.Dimensions(width: size.0, height: size.1)
                    return BenchmarkCase(
                        name: "processor/\(spec.label)/\(ffmpegName(format))/\(dimensions)", group: "processor"
                    ) { settings in
                        [try run(spec, format, dimensions, settings)]
                    }
                }
            }
        }
        let chains = settings.processorSizes.flatMap { size in
            chainSetups.map { setup in
                let dimensions = CaptureDevice.Dimensions(width: size.0, height: size.1)
                // Throughput unpaced; allocations from a paced run (60 fps, or 1000 fps for the
                // allocation check at 640x480).
                return BenchmarkCase(name: "processor/\(setup.label)/\(dimensions)", group: "pipeline") { settings in
                    let paced = try PipelineBenchmarks.paced(
                        setup, dimensions, rate: settings.allocationsOnly ? 1000 : 60, settings, prefix: "processor")
                    if settings.allocationsOnly { return [paced] }
                    return [try PipelineBenchmarks.measure(setup, dimensions, settings, prefix: "processor"), paced]
                }
            }
        }
        return direct + chains
    }

    static let ring = 4

    /// A ring of pooled test-pattern frames.
    static func sources(_ format: PixelFormat, _ size: CaptureDevice.Dimensions, _ sequenceNumbers: [UInt64]) throws
        -> [PixelBuffer]
    {
        let pool = try PixelBufferPool(
            pixelFormat: format, width: size.pixelWidth, height: size.pixelHeight, capacity: sequenceNumbers.count)
        return try sequenceNumbers.map { sequenceNumber in
            guard let buffer = pool.makePixelBuffer() else {
                throw CaptureError(.outOfBuffers, "benchmark source pool exhausted")
            }
            TestPattern.render(sequenceNumber: sequenceNumber, into: buffer)
            return buffer
        }
    }

    static func run(
        _ spec: Spec, _ format: PixelFormat, _ size: CaptureDevice.Dimensions, _ settings: MeasureSettings
    ) throws -> BenchmarkResult {
        let input = FrameFormat(pixelFormat: format, width: size.pixelWidth, height: size.pixelHeight)
        let processor = try spec.make(input)
        let output = try processor.outputFormat(for: input)
        let pool = try PixelBufferPool(
            pixelFormat: output.pixelFormat, width: output.width, height: output.height, capacity: ring)
        let frames = try sources(format, size, spec.sequenceNumbers)
        let bytes = spec.bytes(input, output)

        // ffmpeg first: processors working in place (grayscale) change the ring's frames.
        var peer: (Peer, Double, Double?, Int)?
        if let ffmpeg = settings.ffmpeg, let filter = spec.peer(input),
            let file = FFmpegInput(ffmpeg: ffmpeg, ffmpegFormat: ffmpegName(format), sources: frames),
            let figure = file.measure(filter: filter.filter, seconds: settings.peerSeconds)
        {
            var filterOnly: Double?
            if let null = file.nullFPS(seconds: settings.peerSeconds) {
                let seconds = 1 / figure.fps - 1 / null
                // Below 10 % of the run the difference is noise.
                if seconds > 0.1 / figure.fps { filterOnly = 1 / seconds }
            }
            peer = (filter, figure.fps, filterOnly, figure.frames)
        }

        let copier = Measure.Copier(bytes: bytes)
        let body: (Int) throws -> Void = { index in
            var frame = ProcessorFrame(image: frames[index % frames.count], outputFormat: output, outputPool: pool)
            guard try processor.process(&frame) == .keep else {
                throw CaptureError(.ioError, "\(spec.label) dropped a frame")
            }
        }
        let figures = try Measure.interleaved(settings, [copier.copy, body])
        let (floor, ours) = (figures[0].median, figures[1])

        var result = BenchmarkResult(
            name: "processor/\(spec.label)/\(ffmpegName(format))/\(size)", group: "processor", width: size.pixelWidth,
            height: size.pixelHeight, destinationWidth: output.width, destinationHeight: output.height, threads: 1,
            fpsMin: ours.min, fpsMedian: ours.median, gbPerS: Double(bytes) * ours.median / 1e9, floor: floor,
            ratioToFloor: ours.median / floor)
        if processor is ConvertProcessor { result.threads = PixelConverter.Options.defaultThreadCount }
        result.pixelFormat = format.name
        result.allocationsPerFrame = ours.allocationsPerFrame
        if let (filter, fps, filterOnly, count) = peer {
            result.peer = "ffmpeg -vf \(filter.filter) (\(count) frames, rawvideo demux included)"
            result.peerFps = fps
            result.ratioToPeer = ours.median / fps
            result.peerFilterOnlyFps = filterOnly
            result.ratioToPeerFilterOnly = filterOnly.map { ours.median / $0 }
            result.note = filter.note
        }
        return result
    }

    // MARK: A chain in the pipeline

    /// Crop → grayscale → luma statistics, on a native NV12 camera (no conversion) and on a YUYV
    /// camera delivering BGRA (one conversion before the chain).
    static var chainSetups: [PipelineBenchmarks.Setup] {
        [
            PipelineBenchmarks.Setup(
                label: "chain-crop-gray-stats/nv12", cameraFormat: .nv12VideoRange, outputFormat: nil,
                processors: chain),
            PipelineBenchmarks.Setup(
                label: "chain-crop-gray-stats/yuyv-bgra", cameraFormat: .yuyv, outputFormat: .bgra, processors: chain),
        ]
    }

    /// The centre half of the frame, grey, measured.
    static func chain(_ size: CaptureDevice.Dimensions) throws -> [(String, any FrameProcessor)] {
        [
            (
                "crop",
                try CropProcessor(
                    x: size.pixelWidth / 4 & ~1, y: size.pixelHeight / 4 & ~1, width: size.pixelWidth / 2 & ~1,
                    height: size.pixelHeight / 2 & ~1)
            ),
            ("gray", GrayscaleProcessor()),
            ("stats", try LumaStatisticsProcessor()),
        ]
    }
}
