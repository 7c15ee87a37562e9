import CSwresample
import CSwscale
import CYUV
import Dispatch
import Foundation

/// Converts and scales frames between pixel formats, picking per pair the fastest correct
/// engine: libyuv's hand-vectorised kernels where it has the pair (they run near the memory
/// bandwidth floor), libswscale for everything else.
///
/// All Y'CbCr conversions use ITU-R BT.601 (video range 16–235 unless the format is full range).
///
/// Large frames are split into horizontal bands (on even rows, so 4:2:0 chroma rows are never
/// shared) that are converted concurrently, on the calling thread and the converter's own worker threads; see
/// ``Options/threadCount``. Each band gives byte-for-byte the output a single pass would.
/// An exact 2x downscale (half the width and half the height) is fused with the conversion and
/// runs strip by strip through cache-sized scratch memory, so frames are read and written once.
/// Other scale factors scale and convert whole frames in one band. Scratch memory is allocated
/// when the converter is made, never per frame.
///
/// Thread safety: a converter keeps scratch memory and a libswscale context; use one from one
/// thread at a time (the pipeline runs each output's converter on that output's serial queue).
/// The converter itself fans a frame's bands out to other threads and waits for them.
public final class PixelConverter: @unchecked Sendable {  // unchecked: scratch state, used serially.
    /// Which library does the work.
    public enum Engine: String, Sendable {
        case libyuv, libswscale
    }

    /// How a converter spreads its work.
    public struct Options: Sendable, Hashable {
        /// The most horizontal bands a frame is split into and converted concurrently; 1 converts
        /// on the calling thread only. Default: ``defaultThreadCount``.
        public var threadCount: Int
        /// Frames with fewer pixels than this per band (counting the larger of source and
        /// destination) use fewer bands, down to one: for small frames, waking the band threads
        /// costs more than it saves. The default (460,800, half a 1280x720 frame) was measured
        /// with `viewfinder-bench` on 2 cores: 2 bands convert 1920x1080 1.5–2x faster than one,
        /// but 640x480 about 30 % slower.
        public var minimumPixelsPerBand: Int

        /// The active processor count, at most 4.
        public static var defaultThreadCount: Int {
            min(4, max(1, ProcessInfo.processInfo.activeProcessorCount))
        }

        /// Options with the given band limits.
        public init(threadCount: Int = Options.defaultThreadCount, minimumPixelsPerBand: Int = 460_800) {
            self.threadCount = threadCount
            self.minimumPixelsPerBand = minimumPixelsPerBand
        }
    }

    /// The source format.
    public let sourceFormat: PixelFormat
    /// The source size.
    public let sourceSize: CaptureDevice.Dimensions
    /// The destination format.
    public let destinationFormat: PixelFormat
    /// The destination size.
    public let destinationSize: CaptureDevice.Dimensions
    /// The engine chosen for this pair.
    public let engine: Engine
    /// The options the converter was made with.
    public let options: Options
    /// How many bands each frame is converted in (1 for small frames, for libswscale and for
    /// scale factors other than exactly 2x).
    public var bandCount: Int { bands.count }

    private let plan: Plan
    /// Destination rows of each band.
    private let bands: [Range<Int>]
    /// One scratch per band, for routes that halve, take more than one step, or whose kernel
    /// needs scratch.
    private let bandScratch: [BandScratch]
    /// The two steps of a composite plan, and the whole frame between them.
    private let composite: (first: PixelConverter, scratch: PixelBuffer, second: PixelConverter)?
    private let swscale: OpaquePointer?
    /// The threads converting bands 1..<n, when there is more than one band.
    private let workers: BandWorkers?

    private enum Plan {
        /// A route of libyuv kernels (and range tables), band by band and, for routes of more
        /// than one step, strip by strip.
        case route(ConversionRoute, stripRows: Int)
        /// Scale factors other than 1 and 2: libswscale scales within one format (it scales
        /// exactly; libyuv's bilinear upscaler shifts flat areas by ~2 levels) and a route converts
        /// at the smaller of the two sizes: scale then convert when shrinking, convert then scale
        /// when growing.
        case composite
        /// libswscale alone: scaling within one format.
        case swscale
    }

    /// Scratch memory of one band: the halving step's regions and the route's intermediates.
    private final class BandScratch {
        let halving: ConversionScratch
        let halvingRegions: [UnsafeMutablePointer<UInt8>]
        /// Chroma rows for kernels that need them.
        let kernel: ConversionScratch
        let kernelRegion: UnsafeMutablePointer<UInt8>?
        let intermediates: ConversionScratch
        /// One view per intermediate format, `stripRows` rows tall.
        let views: [ImageView]

        init(route: ConversionRoute, width: Int, stripRows: Int) {
            halving = ConversionScratch(regionSizes: route.halving?.regionSizes ?? [])
            halvingRegions = halving.regions
            kernel = ConversionScratch(
                regionSizes: route.needsKernelScratch ? [YUVKernel.scratchBytes(width: width)] : [])
            kernelRegion = kernel.regions.first
            let geometries = route.intermediates.map { format in
                (0..<format.planeCount).map {
                    format.planeGeometry($0, width: width, height: stripRows)
                }
            }
            intermediates = ConversionScratch(regionSizes: geometries.flatMap { $0.map { $0.bytesPerRow * $0.height } })
            var views: [ImageView] = []
            var region = 0
            for planes in geometries {
                let pointers = Array(intermediates.regions[region..<(region + planes.count)])
                region += planes.count
                views.append(
                    ImageView(
                        width: width, height: stripRows, planes: pointers, strides: planes.map(\.bytesPerRow),
                        chromaRowShift: planes.count > 1 ? 1 : 0))
            }
            self.views = views
        }
    }

    /// A converter from `source` format and size to `destination` format and size.
    ///
    /// Throws ``CaptureError/Code/unsupportedPixelFormat`` for compressed or unknown formats and
    /// ``CaptureError/Code/invalidArgument`` for sizes that are not positive or options below 1.
    public convenience init(
        from sourceFormat: PixelFormat, size sourceSize: CaptureDevice.Dimensions,
        to destinationFormat: PixelFormat, size destinationSize: CaptureDevice.Dimensions,
        options: Options = Options()
    ) throws(CaptureError) {
        try self.init(
            from: sourceFormat, size: sourceSize, to: destinationFormat, size: destinationSize, options: options,
            scalingOnly: false)
    }

    /// `scalingOnly`: the formats are the same and libswscale scales (a composite's scaling step).
    private init(
        from sourceFormat: PixelFormat, size sourceSize: CaptureDevice.Dimensions,
        to destinationFormat: PixelFormat, size destinationSize: CaptureDevice.Dimensions,
        options: Options, scalingOnly: Bool
    ) throws(CaptureError) {
        for format in [sourceFormat, destinationFormat] where !Self.convertible.contains(format) {
            throw CaptureError(
                .unsupportedPixelFormat,
                "cannot convert \(format.name): supported formats are \(Self.convertible.map(\.name).joined(separator: ", "))"
            )
        }
        for size in [sourceSize, destinationSize] where size.width <= 0 || size.height <= 0 {
            throw CaptureError(
                .invalidArgument, "cannot convert frames of size \(size): width and height must be positive")
        }
        guard options.threadCount >= 1, options.minimumPixelsPerBand >= 1 else {
            throw CaptureError(
                .invalidArgument,
                "converter options need threadCount and minimumPixelsPerBand of at least 1, got \(options.threadCount) and \(options.minimumPixelsPerBand)"
            )
        }
        self.sourceFormat = sourceFormat
        self.sourceSize = sourceSize
        self.destinationFormat = destinationFormat
        self.destinationSize = destinationSize
        self.options = options

        let plan =
            scalingOnly
            ? Plan.swscale
            : Self.makePlan(from: sourceFormat, size: sourceSize, to: destinationFormat, size: destinationSize)
        self.plan = plan
        if case .composite = plan {
            let shrinks = destinationSize.area <= sourceSize.area
            let middle = shrinks ? (sourceFormat, destinationSize) : (destinationFormat, sourceSize)
            let pool = try PixelBufferPool(
                pixelFormat: middle.0, width: middle.1.pixelWidth, height: middle.1.pixelHeight, capacity: 1)
            guard let scratch = pool.makePixelBuffer() else {
                throw CaptureError(.outOfBuffers, "could not make the converter's scratch frame")
            }
            let first = try PixelConverter(
                from: sourceFormat, size: sourceSize, to: middle.0, size: middle.1, options: options,
                scalingOnly: shrinks)
            let second = try PixelConverter(
                from: middle.0, size: middle.1, to: destinationFormat, size: destinationSize, options: options,
                scalingOnly: !shrinks)
            composite = (first, scratch, second)
        } else {
            composite = nil
        }

        // Bands: only for routes, never thinner than a row pair or the pixel floor.
        var bandCount = 1
        if case .route = plan {
            let pixels = max(sourceSize.area, destinationSize.area)
            bandCount = max(
                1, min(options.threadCount, pixels / options.minimumPixelsPerBand, destinationSize.pixelHeight / 2))
        }
        bands = (0..<bandCount).map { index in
            let lower = (index * destinationSize.pixelHeight / bandCount) & ~1
            let upper =
                index == bandCount - 1
                ? destinationSize.pixelHeight : ((index + 1) * destinationSize.pixelHeight / bandCount) & ~1
            return lower..<upper
        }
        if case .route(let route, let stripRows) = plan, route.runsInStrips || route.needsKernelScratch {
            bandScratch = (0..<bandCount).map { _ in
                BandScratch(route: route, width: destinationSize.pixelWidth, stripRows: stripRows)
            }
        } else {
            bandScratch = []
        }
        workers = bandCount > 1 ? BandWorkers(bands: bandCount) : nil

        if case .swscale = plan {
            engine = .libswscale
            swscale = try Self.makeSwscaleContext(
                from: sourceFormat, sourceSize, to: destinationFormat, destinationSize)
        } else {
            engine = .libyuv
            swscale = nil
        }
        workers?.work = { [unowned self] band, source, destination in runBand(band, source, destination) }
    }

    deinit {
        if let swscale { sws_freeContext(swscale) }
        workers?.stop()
    }

    /// The formats a converter accepts on either side.
    public static let convertible: [PixelFormat] = [.bgra, .nv12VideoRange, .nv12FullRange, .yuyv, .i420]

    /// Which engine would convert this pair (without building a converter).
    public static func engine(
        from sourceFormat: PixelFormat, size sourceSize: CaptureDevice.Dimensions,
        to destinationFormat: PixelFormat, size destinationSize: CaptureDevice.Dimensions
    ) -> Engine {
        if case .swscale = makePlan(from: sourceFormat, size: sourceSize, to: destinationFormat, size: destinationSize)
        {
            return .libswscale
        }
        return .libyuv
    }

    /// What a change of pixel format costs beyond its passes, on ``estimatedCost(from:size:to:size:)``'s
    /// scale: conversions round (±2 levels) and rounding stacks, so a route that only scales is
    /// preferred to one that converts, even when it reads more.
    package static let colourChangeCost = 20.0

    /// What a driver's plain-C software conversion (an emulated format) costs per megabyte it
    /// makes: several times a libyuv pass.
    package static let softwarePassCostPerMegabyte = 5.0

    /// What delivering a frame through this pair costs: ``estimatedCost(from:size:to:size:)`` plus
    /// ``colourChangeCost`` when the pixel format changes. `nil` when no converter exists.
    package static func estimatedDeliveryCost(
        from sourceFormat: PixelFormat, size sourceSize: CaptureDevice.Dimensions,
        to destinationFormat: PixelFormat, size destinationSize: CaptureDevice.Dimensions
    ) -> CostEstimate? {
        estimatedCost(from: sourceFormat, size: sourceSize, to: destinationFormat, size: destinationSize)
            .map { CostEstimate(work: $0, preference: sourceFormat != destinationFormat ? colourChangeCost : 0) }
    }

    /// What a format a driver emulates in software costs per frame of `megabytes`: its slow pass
    /// and a colour change.
    package static func estimatedEmulationCost(megabytes: Double) -> CostEstimate {
        CostEstimate(work: softwarePassCostPerMegabyte * megabytes, preference: colourChangeCost)
    }

    /// What converting one frame of this pair costs, for negotiation: each pass of the plan the
    /// converter would make, weighted by its kernel's cost (1 for a plain libyuv pass, 1.5
    /// through RGB; a libswscale scaling pass 3) times the megabytes it reads. Zero when nothing
    /// changes; `nil` when no converter exists for the pair (compressed formats).
    package static func estimatedCost(
        from sourceFormat: PixelFormat, size sourceSize: CaptureDevice.Dimensions,
        to destinationFormat: PixelFormat, size destinationSize: CaptureDevice.Dimensions
    ) -> Double? {
        if sourceFormat == destinationFormat && sourceSize == destinationSize { return 0 }
        guard convertible.contains(sourceFormat), convertible.contains(destinationFormat) else { return nil }
        func megabytes(_ format: PixelFormat, _ size: CaptureDevice.Dimensions) -> Double {
            Double(format.frameSize(width: size.pixelWidth, height: size.pixelHeight)) / 1e6
        }
        let scalingPass = 3.0
        switch makePlan(from: sourceFormat, size: sourceSize, to: destinationFormat, size: destinationSize) {
        case .route(let route, _):
            var cost = 0.0
            var input = sourceFormat
            var inputSize = sourceSize
            if let halving = route.halving {
                cost += halving.cost * megabytes(sourceFormat, sourceSize)
                input = route.intermediates.first ?? destinationFormat
                inputSize = destinationSize
            }
            let inputs = route.halving == nil ? [sourceFormat] + route.intermediates : Array(route.intermediates)
            for (kernel, format) in zip(route.kernels, inputs.isEmpty ? [input] : inputs) {
                cost += kernel.cost * megabytes(format, inputSize)
            }
            return cost
        case .swscale:
            return scalingPass * megabytes(sourceFormat, sourceSize)
        case .composite:
            // Scale at the larger size within one format, convert at the smaller.
            let shrinks = destinationSize.width * destinationSize.height < sourceSize.width * sourceSize.height
            let scaled = scalingPass * megabytes(sourceFormat, sourceSize)
            let convertedSize = shrinks ? destinationSize : sourceSize
            let conversion =
                estimatedCost(from: sourceFormat, size: convertedSize, to: destinationFormat, size: convertedSize)
                ?? scalingPass * megabytes(sourceFormat, convertedSize)
            return scaled + conversion
        }
    }

    private static func makePlan(
        from sourceFormat: PixelFormat, size sourceSize: CaptureDevice.Dimensions,
        to destinationFormat: PixelFormat, size destinationSize: CaptureDevice.Dimensions
    ) -> Plan {
        let halves = destinationSize.width * 2 == sourceSize.width && destinationSize.height * 2 == sourceSize.height
        if sourceSize == destinationSize || halves {
            let rowBytes = sourceFormat.planeGeometry(0, width: sourceSize.pixelWidth, height: 2).bytesPerRow
            let stripRows = max(8, min(64, (131_072 / max(1, halves ? 2 * rowBytes : rowBytes)) & ~1))
            if let route = ConversionRoute.find(
                from: sourceFormat, to: destinationFormat, halving: halves, sourceWidth: sourceSize.pixelWidth,
                stripRows: stripRows)
            {
                return .route(route, stripRows: stripRows)
            }
        }
        if sourceFormat == destinationFormat { return .swscale }
        return .composite
    }

    /// Converts `source` into `destination`. Both must have the formats and sizes this
    /// converter was made for; ``CaptureError/Code/invalidArgument`` otherwise.
    public func convert(_ source: PixelBuffer, into destination: PixelBuffer) throws(CaptureError) {
        guard source.pixelFormat == sourceFormat, source.width == sourceSize.width, source.height == sourceSize.height
        else {
            throw CaptureError(
                .invalidArgument,
                "converter expects \(sourceFormat.name) \(sourceSize), got \(source.pixelFormat.name) \(source.width)x\(source.height): make a converter for this source"
            )
        }
        guard destination.pixelFormat == destinationFormat, destination.width == destinationSize.width,
            destination.height == destinationSize.height
        else {
            throw CaptureError(
                .invalidArgument,
                "converter writes \(destinationFormat.name) \(destinationSize), got a \(destination.pixelFormat.name) \(destination.width)x\(destination.height) buffer: pass a buffer from a pool of the destination format and size"
            )
        }
        let status: Int32
        switch plan {
        case .route:
            status = runBands(ImageView(source), ImageView(destination))
        case .composite:
            guard let (first, scratch, second) = composite else { return }
            try first.convert(source, into: scratch)
            try second.convert(scratch, into: destination)
            return
        case .swscale:
            status = runSwscale(source, destination)
        }
        if status != 0 {
            throw CaptureError(
                .conversionFailed,
                "\(engine.rawValue) failed (status \(status)) converting \(sourceFormat.name) \(sourceSize) to \(destinationFormat.name) \(destinationSize)"
            )
        }
    }

    /// The CPU each band started on in the last conversion, band 0 (the caller's) first; empty
    /// with one band.
    package var lastBandCPUs: [Int32] { workers?.lastBandCPUs ?? [] }

    /// Whether the band threads are kept off the caller's CPU (``BandWorkers``).
    package var placesBandThreads: Bool { workers?.placesWorkers ?? false }

    /// Runs every band, concurrently when there is more than one; the first failing status or 0.
    private func runBands(_ source: ImageView, _ destination: ImageView) -> Int32 {
        guard let workers else { return runBand(0, source, destination) }
        return workers.run(source, destination)
    }

    private func runBand(_ index: Int, _ source: ImageView, _ destination: ImageView) -> Int32 {
        guard case .route(let route, let stripRows) = plan else { return -1 }
        let rows = bands[index]
        if !route.runsInStrips, let kernel = route.kernels.first {
            let scratch = bandScratch.isEmpty ? nil : bandScratch[index].kernelRegion
            return kernel.run(source.rows(rows), destination.rows(rows), scratch)
        }
        let scratch = bandScratch[index]
        let sourceRowFactor = route.halving == nil ? 1 : 2
        var row = rows.lowerBound
        while row < rows.upperBound {
            let end = min(row + stripRows, rows.upperBound)
            var input = source.rows((sourceRowFactor * row)..<(sourceRowFactor * end))
            let last = route.stepCount - 1
            for step in 0...last {
                let output = step == last ? destination.rows(row..<end) : scratch.views[step].rows(0..<(end - row))
                let status: Int32
                if let halving = route.halving {
                    status =
                        step == 0
                        ? halving.run(input, output, scratch.halvingRegions)
                        : route.kernels[step - 1].run(input, output, scratch.kernelRegion)
                } else {
                    status = route.kernels[step].run(input, output, scratch.kernelRegion)
                }
                if status != 0 { return status }
                input = output
            }
            row = end
        }
        return 0
    }

    // MARK: libswscale

    package static func avPixelFormat(_ format: PixelFormat) -> AVPixelFormat {
        switch format {
        case .bgra: return AV_PIX_FMT_BGRA
        case .nv12VideoRange, .nv12FullRange: return AV_PIX_FMT_NV12
        case .yuyv: return AV_PIX_FMT_YUYV422
        case .i420: return AV_PIX_FMT_YUV420P
        default: return AV_PIX_FMT_NONE
        }
    }

    private static func makeSwscaleContext(
        from source: PixelFormat, _ sourceSize: CaptureDevice.Dimensions,
        to destination: PixelFormat, _ destinationSize: CaptureDevice.Dimensions
    ) throws(CaptureError) -> OpaquePointer {
        guard
            let context = sws_getContext(
                Int32(sourceSize.width), Int32(sourceSize.height), avPixelFormat(source),
                Int32(destinationSize.width), Int32(destinationSize.height), avPixelFormat(destination),
                SWS_BILINEAR | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nil, nil, nil)
        else {
            throw CaptureError(
                .conversionFailed,
                "libswscale cannot convert \(source.name) \(sourceSize) to \(destination.name) \(destinationSize)")
        }
        // BT.601 on both sides; the range follows each format.
        let table = vf_sws_bt601_coefficients()
        sws_setColorspaceDetails(
            context, table, source.isFullRange || source == .bgra ? 1 : 0, table,
            destination.isFullRange || destination == .bgra ? 1 : 0, 0, 1 << 16, 1 << 16)
        return context
    }

    private func runSwscale(_ source: PixelBuffer, _ destination: PixelBuffer) -> Int32 {
        guard let swscale else { return -1 }
        var sourcePlanes: [UnsafePointer<UInt8>?] = [nil, nil, nil, nil]
        var sourceStrides: [Int32] = [0, 0, 0, 0]
        var destinationPlanes: [UnsafeMutablePointer<UInt8>?] = [nil, nil, nil, nil]
        var destinationStrides: [Int32] = [0, 0, 0, 0]
        for plane in 0..<source.planeCount {
            sourcePlanes[plane] = UnsafePointer(source.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self))
            sourceStrides[plane] = Int32(source.bytesPerRow(ofPlane: plane))
        }
        for plane in 0..<destination.planeCount {
            destinationPlanes[plane] = destination.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self)
            destinationStrides[plane] = Int32(destination.bytesPerRow(ofPlane: plane))
        }
        let rows = sws_scale(
            swscale, sourcePlanes, sourceStrides, 0, Int32(source.height), destinationPlanes, destinationStrides)
        return rows == Int32(destination.height) ? 0 : -1
    }
}
