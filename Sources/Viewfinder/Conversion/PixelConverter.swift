import CSwscale
import CYUV

/// Converts and scales frames between pixel formats, picking per pair the fastest correct
/// engine: libyuv's hand-vectorised kernels where it has the pair (they run near the memory
/// bandwidth floor), libswscale for everything else.
///
/// All Y'CbCr conversions use ITU-R BT.601 (video range 16–235 unless the format is full range).
///
/// Thread safety: a converter keeps scratch memory and a libswscale context; use one from one
/// thread at a time (the pipeline runs each output's converter on that output's serial queue).
public final class PixelConverter: @unchecked Sendable {  // unchecked: scratch state, used serially.
    /// Which library does the work.
    public enum Engine: String, Sendable {
        case libyuv, libswscale
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

    private let plan: Plan
    private let scratch: PixelBuffer?
    private let swscale: OpaquePointer?

    private enum Plan {
        /// One libyuv call at the source size.
        case direct(YUVKernel)
        /// Scale the source (in its own format) into scratch, then convert.
        case scaleThenConvert(YUVKernel?)
        /// Convert into scratch at the source size, then scale into the destination.
        case convertThenScale(YUVKernel)
        case swscale
    }

    /// A converter from `source` format and size to `destination` format and size.
    /// Throws ``CaptureError/Code/unsupportedPixelFormat`` for compressed or unknown formats and
    /// ``CaptureError/Code/invalidArgument`` for sizes that are not positive.
    public init(
        from sourceFormat: PixelFormat, size sourceSize: CaptureDevice.Dimensions,
        to destinationFormat: PixelFormat, size destinationSize: CaptureDevice.Dimensions
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
        self.sourceFormat = sourceFormat
        self.sourceSize = sourceSize
        self.destinationFormat = destinationFormat
        self.destinationSize = destinationSize

        let kernel = YUVKernel.find(from: sourceFormat, to: destinationFormat)
        let scales = sourceSize != destinationSize
        var plan = Plan.swscale
        // libyuv's bilinear upscaler shifts flat areas by about 2 levels (seen on 640x480 →
        // 1280x720 BGRA: 191 becomes 189); libswscale upscales exactly.
        let upscales = destinationSize.width > sourceSize.width || destinationSize.height > sourceSize.height
        var scratchFormat: PixelFormat?
        var scratchSize = sourceSize
        if !scales, let kernel {
            plan = .direct(kernel)
        } else if upscales {
            plan = .swscale
        } else if scales, YUVKernel.canScale(sourceFormat), kernel != nil || sourceFormat == destinationFormat {
            plan = .scaleThenConvert(sourceFormat == destinationFormat ? nil : kernel)
            if sourceFormat != destinationFormat {
                scratchFormat = sourceFormat
                scratchSize = destinationSize
            }
        } else if scales, let kernel, YUVKernel.canScale(destinationFormat) {
            plan = .convertThenScale(kernel)
            scratchFormat = destinationFormat
            scratchSize = sourceSize
        }
        self.plan = plan
        if case .swscale = plan {
            engine = .libswscale
            swscale = try Self.makeSwscaleContext(
                from: sourceFormat, sourceSize, to: destinationFormat, destinationSize)
        } else {
            engine = .libyuv
            swscale = nil
        }
        if let scratchFormat {
            let pool = try PixelBufferPool(
                pixelFormat: scratchFormat, width: scratchSize.width, height: scratchSize.height, capacity: 1)
            scratch = pool.makePixelBuffer()
        } else {
            scratch = nil
        }
    }

    deinit {
        if let swscale { sws_freeContext(swscale) }
    }

    /// The formats a converter accepts on either side.
    public static let convertible: [PixelFormat] = [.bgra, .nv12VideoRange, .nv12FullRange, .yuyv, .i420]

    /// Which engine would convert this pair (without building a converter).
    public static func engine(
        from sourceFormat: PixelFormat, size sourceSize: CaptureDevice.Dimensions,
        to destinationFormat: PixelFormat, size destinationSize: CaptureDevice.Dimensions
    ) -> Engine {
        let kernel = YUVKernel.find(from: sourceFormat, to: destinationFormat)
        if sourceSize == destinationSize { return kernel != nil ? .libyuv : .libswscale }
        if destinationSize.width > sourceSize.width || destinationSize.height > sourceSize.height { return .libswscale }
        if YUVKernel.canScale(sourceFormat) && (kernel != nil || sourceFormat == destinationFormat) { return .libyuv }
        if kernel != nil && YUVKernel.canScale(destinationFormat) { return .libyuv }
        return .libswscale
    }

    /// Converts `source` into `destination`. Both must have the formats and sizes this
    /// converter was made for.
    public func convert(_ source: PixelBuffer, into destination: PixelBuffer) throws(CaptureError) {
        guard source.pixelFormat == sourceFormat, source.width == sourceSize.width, source.height == sourceSize.height
        else {
            throw CaptureError(
                .invalidArgument,
                "converter expects \(sourceFormat.name) \(sourceSize), got \(source.pixelFormat.name) \(source.width)x\(source.height)"
            )
        }
        guard destination.pixelFormat == destinationFormat, destination.width == destinationSize.width,
            destination.height == destinationSize.height
        else {
            throw CaptureError(
                .invalidArgument,
                "converter writes \(destinationFormat.name) \(destinationSize), got a \(destination.pixelFormat.name) \(destination.width)x\(destination.height) buffer"
            )
        }
        let status: Int32
        switch plan {
        case .direct(let kernel):
            status = kernel.run(source, destination)
        case .scaleThenConvert(let kernel):
            if let kernel, let scratch {
                let scaled = YUVKernel.scale(source, into: scratch)
                status = scaled != 0 ? scaled : kernel.run(scratch, destination)
            } else {
                status = YUVKernel.scale(source, into: destination)
            }
        case .convertThenScale(let kernel):
            guard let scratch else { return }
            let converted = kernel.run(source, scratch)
            status = converted != 0 ? converted : YUVKernel.scale(scratch, into: destination)
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

    // MARK: libswscale

    static func avPixelFormat(_ format: PixelFormat) -> AVPixelFormat {
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
