import CFFmpeg
import CSwresample
import CSwscale
import CYUV
import Foundation
import Viewfinder

/// Every conversion the format negotiation can pick, at each size, with and without a 2x
/// downscale: Viewfinder's converter with 1 and N threads, against memcpy floors (1 and N threads), libyuv on
/// one core, plain single-threaded libswscale and, when installed, ffmpeg's own filters. Same-size
/// rows also run libyuv's call a second time as a contender of its own (the A/A control): how far
/// two runs of one function land apart is what the method can resolve.
enum ConversionBenchmarks {
    struct Pair {
        var source: PixelFormat
        var destination: PixelFormat
        /// ffmpeg's names for the two formats.
        var ffmpegSource: String
        var ffmpegDestination: String
        var label: String
    }

    static let pairs: [Pair] = [
        Pair(source: .yuyv, destination: .bgra, ffmpegSource: "yuyv422", ffmpegDestination: "bgra", label: "yuyv-bgra"),
        Pair(
            source: .yuyv, destination: .nv12VideoRange, ffmpegSource: "yuyv422", ffmpegDestination: "nv12",
            label: "yuyv-nv12"),
        Pair(
            source: .nv12VideoRange, destination: .bgra, ffmpegSource: "nv12", ffmpegDestination: "bgra",
            label: "nv12-bgra"),
        Pair(
            source: .bgra, destination: .nv12VideoRange, ffmpegSource: "bgra", ffmpegDestination: "nv12",
            label: "bgra-nv12"),
    ]

    static func cases(settings: MeasureSettings) -> [BenchmarkCase] {
        settings.sizes.flatMap { size in
            pairs.flatMap { pair in
                [false, true].flatMap { halves in
                    settings.regimes.map { regime in
                        let source = CaptureDevice.Dimensions(width: size.0, height: size.1)
                        let destination =
                            halves ? CaptureDevice.Dimensions(width: size.0 / 2, height: size.1 / 2) : source
                        return BenchmarkCase(
                            name: "convert/\(pair.label)/\(source)-\(destination)/\(regime.label)", group: "conversion"
                        ) { settings in
                            try run(pair, source, destination, regime, settings)
                        }
                    }
                }
            }
        }
    }

    /// `count` pooled frames; sources show the test pattern, destinations are written once so
    /// their pages exist before the timed runs.
    static func buffers(_ format: PixelFormat, _ size: CaptureDevice.Dimensions, count: Int, pattern: Bool) throws
        -> [PixelBuffer]
    {
        let pool = try PixelBufferPool(
            pixelFormat: format, width: size.pixelWidth, height: size.pixelHeight, capacity: count)
        return try (0..<count).map { index in
            guard let buffer = pool.makePixelBuffer() else {
                throw CaptureError(.outOfBuffers, "benchmark ring pool exhausted")
            }
            if pattern {
                TestPattern.render(sequenceNumber: UInt64(index % 4), into: buffer)
            } else {
                for plane in 0..<buffer.planeCount {
                    memset(
                        buffer.baseAddress(ofPlane: plane), 0x80,
                        buffer.bytesPerRow(ofPlane: plane) * buffer.height(ofPlane: plane))
                }
            }
            return buffer
        }
    }

    static func run(
        _ pair: Pair, _ sourceSize: CaptureDevice.Dimensions, _ destinationSize: CaptureDevice.Dimensions,
        _ regime: CacheRegime, _ settings: MeasureSettings
    ) throws -> [BenchmarkResult] {
        let bytes =
            pair.source.frameSize(width: sourceSize.pixelWidth, height: sourceSize.pixelHeight)
            + pair.destination.frameSize(width: destinationSize.pixelWidth, height: destinationSize.pixelHeight)
        let ring = settings.allocationsOnly ? 2 : regime.frames(bytesPerFrame: bytes)
        let sources = try buffers(pair.source, sourceSize, count: ring, pattern: true)
        let destinations = try buffers(pair.destination, destinationSize, count: ring, pattern: false)

        let counts = Array(Set([1, PixelConverter.Options.defaultThreadCount])).sorted()
        // The floor moves the same bytes through a ring of the same span, on as many threads as
        // the converter runs bands (a conversion that is memory-bound on one band gains from a
        // second only as much as a second thread's memcpy does).
        let copiers = counts.map { Measure.Copier(bytes: bytes, ring: ring, threads: $0) }
        defer { for copier in copiers { copier.stop() } }
        let variants = LibyuvBaseline.variants(pair, sourceSize, destinationSize)
        let swscale = try SwscaleBaseline(pair, sourceSize, destinationSize)
        let converters = try counts.map {
            try PixelConverter(
                from: pair.source, size: sourceSize, to: pair.destination, size: destinationSize,
                options: .init(threadCount: $0))
        }

        var bodies: [(Int) throws -> Void] = [{ swscale.run(sources[$0 % ring], destinations[$0 % ring]) }]
        bodies += copiers.map { copier in { copier.copy($0) } }
        for variant in variants {
            bodies.append { variant.run(sources[$0 % ring], destinations[$0 % ring]) }
        }
        // The A/A control (same-size rows): libyuv's call again, as a contender of its own.
        let control = sourceSize == destinationSize ? variants.first : nil
        if let control {
            bodies.append { control.run(sources[$0 % ring], destinations[$0 % ring]) }
        }
        for converter in converters {
            bodies.append { try converter.convert(sources[$0 % ring], into: destinations[$0 % ring]) }
        }
        if settings.allocationsOnly {
            // Allocations only: the converters, a few frames each after a warm-up.
            bodies = Array(bodies.suffix(converters.count))
        }
        let figures = try Measure.interleaved(settings, bodies, preRollFrames: settings.allocationsOnly ? 4 : 20)
        let converterFigures = figures.suffix(converters.count)
        let description = regime.describe(frames: ring, bytesPerFrame: bytes)

        var results: [BenchmarkResult] = []
        if settings.allocationsOnly {
            for (converter, figures) in zip(converters, converterFigures) {
                var result = BenchmarkResult(
                    name:
                        "convert/\(pair.label)/\(sourceSize)-\(destinationSize)/\(regime.label)/threads=\(converter.options.threadCount)",
                    group: "conversion", width: sourceSize.pixelWidth, height: sourceSize.pixelHeight,
                    destinationWidth: destinationSize.pixelWidth, destinationHeight: destinationSize.pixelHeight,
                    threads: converter.bandCount, engine: converter.engine.rawValue, fpsMin: figures.min,
                    fpsMedian: figures.median, gbPerS: 0, floor: 0, ratioToFloor: 0)
                result.allocationsPerFrame = figures.allocationsPerFrame
                results.append(result)
            }
            return results
        }
        let swscaleFigures = figures[0]
        let floors = Dictionary(uniqueKeysWithValues: zip(counts, figures[1...].prefix(counts.count)))
        let libyuvStart = 1 + counts.count
        let libyuv = zip(variants.map(\.label), figures[libyuvStart..<(libyuvStart + variants.count)]).max {
            $0.1.median < $1.1.median
        }
        var controlRatios: [Double] = []
        if control != nil, let libyuv {
            controlRatios = Measure.pairedRatios(figures[libyuvStart + variants.count].fps, libyuv.1.fps)
        }

        var peer: (String, Double)?
        if let ffmpeg = settings.ffmpeg, regime.label == "cold" {
            let peerRing = Array(sources.prefix(4))
            let frames = max(
                peerRing.count * 4,
                min(800, Int(swscaleFigures.median * settings.runSeconds * Double(settings.repeats))))
            peer = FFmpegPeer.run(
                ffmpeg: ffmpeg, pair: pair, sources: peerRing, sourceSize: sourceSize,
                destinationSize: destinationSize, frames: frames / peerRing.count * peerRing.count)
        }

        for (converter, figures) in zip(converters, converterFigures) {
            // The floor on as many threads as the converter used bands.
            let floorFigures = floors[converter.bandCount] ?? floors[converter.options.threadCount]
            let floor = floorFigures?.median ?? 0
            var result = BenchmarkResult(
                name:
                    "convert/\(pair.label)/\(sourceSize)-\(destinationSize)/\(regime.label)/threads=\(converter.options.threadCount)",
                group: "conversion", width: sourceSize.pixelWidth, height: sourceSize.pixelHeight,
                destinationWidth: destinationSize.pixelWidth, destinationHeight: destinationSize.pixelHeight,
                threads: converter.bandCount, engine: converter.engine.rawValue, fpsMin: figures.min,
                fpsMedian: figures.median, gbPerS: Double(bytes) * figures.median / 1e9, floor: floor,
                ratioToFloor: floorFigures.map { Measure.pairedRatio(figures.fps, $0.fps) } ?? 0)
            result.allocationsPerFrame = figures.allocationsPerFrame
            result.regime = description
            result.cpuPerWall = figures.cpuPerWall
            if let libyuv {
                result.libyuvFps = libyuv.1.median
                result.libyuvPath = libyuv.0
                result.ratioToLibyuv = Measure.pairedRatio(figures.fps, libyuv.1.fps)
                let ratios = Measure.pairedRatios(figures.fps, libyuv.1.fps)
                result.ratioToLibyuvMin = ratios.min()
                result.ratioToLibyuvMax = ratios.max()
                if !controlRatios.isEmpty {
                    result.libyuvAA = Measure.median(controlRatios)
                    result.libyuvAAMin = controlRatios.min()
                    result.libyuvAAMax = controlRatios.max()
                }
                let theirs = Measure.median(libyuv.1.fpsPerCPUSecond)
                result.libyuvFpsPerCPUSecond = theirs
                if theirs > 0 {
                    result.ratioToLibyuvCPU = Measure.pairedRatio(figures.fpsPerCPUSecond, libyuv.1.fpsPerCPUSecond)
                }
            }
            result.fpsPerCPUSecond = Measure.median(figures.fpsPerCPUSecond)
            result.swscaleFps = swscaleFigures.median
            result.ratioToSwscale = Measure.pairedRatio(figures.fps, swscaleFigures.fps)
            if let peer {
                result.peer = peer.0
                result.peerFps = peer.1
                result.ratioToPeer = figures.median / peer.1
            }
            results.append(result)
        }
        return results
    }
}

// MARK: libyuv, one core

/// libyuv on one core, whole frames: the pair's function, and for a 2x downscale each plain
/// composition of libyuv's converters and scalers (the runner reports the fastest).
enum LibyuvBaseline {
    struct Variant {
        var label: String
        var run: (PixelBuffer, PixelBuffer) -> Void
    }

    static func p(_ b: PixelBuffer, _ i: Int) -> UnsafeMutablePointer<UInt8> {
        b.baseAddress(ofPlane: i).assumingMemoryBound(to: UInt8.self)
    }
    static func s(_ b: PixelBuffer, _ i: Int) -> Int32 { Int32(b.bytesPerRow(ofPlane: i)) }
    static func w(_ b: PixelBuffer) -> Int32 { Int32(b.width) }
    static func h(_ b: PixelBuffer) -> Int32 { Int32(b.height) }

    static func scratch(_ format: PixelFormat, _ size: CaptureDevice.Dimensions) -> PixelBuffer {
        try! PixelBufferPool(pixelFormat: format, width: size.pixelWidth, height: size.pixelHeight, capacity: 1)
            .makePixelBuffer()!
    }

    static func convert(_ x: PixelBuffer, _ y: PixelBuffer) {
        switch (x.pixelFormat, y.pixelFormat) {
        case (.yuyv, .bgra): _ = YUY2ToARGB(p(x, 0), s(x, 0), p(y, 0), s(y, 0), w(x), h(x))
        case (.yuyv, .nv12VideoRange): _ = YUY2ToNV12(p(x, 0), s(x, 0), p(y, 0), s(y, 0), p(y, 1), s(y, 1), w(x), h(x))
        case (.yuyv, .i420):
            _ = YUY2ToI420(p(x, 0), s(x, 0), p(y, 0), s(y, 0), p(y, 1), s(y, 1), p(y, 2), s(y, 2), w(x), h(x))
        case (.nv12VideoRange, .bgra): _ = NV12ToARGB(p(x, 0), s(x, 0), p(x, 1), s(x, 1), p(y, 0), s(y, 0), w(x), h(x))
        case (.bgra, .nv12VideoRange): _ = ARGBToNV12(p(x, 0), s(x, 0), p(y, 0), s(y, 0), p(y, 1), s(y, 1), w(x), h(x))
        case (.i420, .bgra):
            _ = I420ToARGB(p(x, 0), s(x, 0), p(x, 1), s(x, 1), p(x, 2), s(x, 2), p(y, 0), s(y, 0), w(x), h(x))
        default: fatalError("no libyuv baseline for \(x.pixelFormat) -> \(y.pixelFormat)")
        }
    }

    static func scale(_ x: PixelBuffer, _ y: PixelBuffer) {
        let f = kFilterBilinear
        switch x.pixelFormat {
        case .bgra: _ = ARGBScale(p(x, 0), s(x, 0), w(x), h(x), p(y, 0), s(y, 0), w(y), h(y), f)
        case .nv12VideoRange:
            _ = NV12Scale(
                p(x, 0), s(x, 0), p(x, 1), s(x, 1), w(x), h(x), p(y, 0), s(y, 0), p(y, 1), s(y, 1), w(y), h(y), f)
        case .i420:
            _ = I420Scale(
                p(x, 0), s(x, 0), p(x, 1), s(x, 1), p(x, 2), s(x, 2), w(x), h(x), p(y, 0), s(y, 0), p(y, 1), s(y, 1),
                p(y, 2), s(y, 2), w(y), h(y), f)
        default: fatalError("libyuv cannot scale \(x.pixelFormat)")
        }
    }

    static func variants(
        _ pair: ConversionBenchmarks.Pair, _ sourceSize: CaptureDevice.Dimensions,
        _ destinationSize: CaptureDevice.Dimensions
    ) -> [Variant] {
        let (a, b) = (pair.source, pair.destination)
        if sourceSize == destinationSize { return [Variant(label: "direct", run: convert)] }
        var variants: [Variant] = []
        // Convert at full size, then scale the result.
        if b != .yuyv {
            let full = scratch(b, sourceSize)
            variants.append(
                Variant(label: "convert+scale") { x, y in
                    convert(x, full)
                    scale(full, y)
                })
        }
        // Scale in the source format, then convert the small frame.
        if a != .yuyv {
            let small = scratch(a, destinationSize)
            variants.append(
                Variant(label: "scale+convert") { x, y in
                    scale(x, small)
                    convert(small, y)
                })
        } else if b == .bgra {
            // YUYV cannot be scaled by libyuv: go through I420.
            let full = scratch(.i420, sourceSize)
            let small = scratch(.i420, destinationSize)
            variants.append(
                Variant(label: "to-i420+scale+convert") { x, y in
                    convert(x, full)
                    scale(full, small)
                    convert(small, y)
                })
        }
        return variants
    }
}

// MARK: libswscale, one thread

/// Plain libswscale: SWS_BILINEAR, default colour details, one thread, whole frames.
final class SwscaleBaseline {
    let context: OpaquePointer

    init(
        _ pair: ConversionBenchmarks.Pair, _ sourceSize: CaptureDevice.Dimensions,
        _ destinationSize: CaptureDevice.Dimensions
    ) throws {
        func format(_ f: PixelFormat) -> AVPixelFormat {
            switch f {
            case .bgra: return AV_PIX_FMT_BGRA
            case .yuyv: return AV_PIX_FMT_YUYV422
            case .i420: return AV_PIX_FMT_YUV420P
            default: return AV_PIX_FMT_NV12
            }
        }
        guard
            let context = sws_getContext(
                Int32(sourceSize.width), Int32(sourceSize.height), format(pair.source), Int32(destinationSize.width),
                Int32(destinationSize.height), format(pair.destination), SWS_BILINEAR, nil, nil, nil)
        else { throw CaptureError(.conversionFailed, "libswscale refused \(pair.label)") }
        self.context = context
    }

    deinit { sws_freeContext(context) }

    func run(_ x: PixelBuffer, _ y: PixelBuffer) {
        var sourcePlanes: [UnsafePointer<UInt8>?] = [nil, nil, nil, nil]
        var sourceStrides: [Int32] = [0, 0, 0, 0]
        var destinationPlanes: [UnsafeMutablePointer<UInt8>?] = [nil, nil, nil, nil]
        var destinationStrides: [Int32] = [0, 0, 0, 0]
        for i in 0..<x.planeCount {
            sourcePlanes[i] = UnsafePointer(LibyuvBaseline.p(x, i))
            sourceStrides[i] = LibyuvBaseline.s(x, i)
        }
        for i in 0..<y.planeCount {
            destinationPlanes[i] = LibyuvBaseline.p(y, i)
            destinationStrides[i] = LibyuvBaseline.s(y, i)
        }
        _ = sws_scale(context, sourcePlanes, sourceStrides, 0, Int32(x.height), destinationPlanes, destinationStrides)
    }
}

// MARK: ffmpeg

/// The same conversion through the ffmpeg command line's own filters, on the same frames.
enum FFmpegPeer {
    /// The ffmpeg executable, if one is installed.
    static func locate() -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(directory)/ffmpeg"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Runs ffmpeg's `scale` and `format` filters on `frames` frames (the ring of sources looped,
    /// through ``FFmpegInput``) and returns what ran and its frames per second (over ffmpeg's own
    /// `-benchmark` real time, demuxing included), or `nil` on failure.
    static func run(
        ffmpeg: String, pair: ConversionBenchmarks.Pair, sources: [PixelBuffer],
        sourceSize: CaptureDevice.Dimensions, destinationSize: CaptureDevice.Dimensions, frames: Int
    ) -> (String, Double)? {
        guard let input = FFmpegInput(ffmpeg: ffmpeg, ffmpegFormat: pair.ffmpegSource, sources: sources) else {
            return nil
        }
        let filter =
            "scale=\(destinationSize.width):\(destinationSize.height):flags=bilinear,format=\(pair.ffmpegDestination)"
        guard let (total, fps) = input.run(filter: filter, frames: frames) else { return nil }
        return ("ffmpeg -vf \(filter) (\(total) frames, rawvideo demux included)", fps)
    }
}
