import Synchronization

/// Converts frames to another pixel format and/or scales them to another size, with the same
/// engines as an output's own conversion (``PixelConverter``: libyuv where it has the pair,
/// libswscale otherwise; BT.601).
///
/// Use it to hand later processors a smaller or differently laid out image than the delegate
/// gets, e.g. to analyse a 320×240 copy cheaply:
///
/// ```swift
/// try output.addProcessor(
///     ConvertProcessor(pixelFormat: .nv12VideoRange, size: .init(width: 320, height: 240)), named: "downscale")
/// try output.addProcessor(LumaStatisticsProcessor(), named: "stats")
/// ```
///
/// A processor whose input already has the target format and size passes frames through
/// untouched.
///
/// Thread safety: converters (which hold scratch memory and a libswscale context) are cached
/// behind a `Mutex` and used under it, so one instance may serve several outputs.
public final class ConvertProcessor: FrameProcessor {
    /// The pixel format produced, or `nil` to keep the input's.
    public let pixelFormat: PixelFormat?
    /// The size produced, or `nil` to keep the input's.
    public let size: CaptureDevice.Dimensions?

    private struct Conversion: Hashable {
        var input: FrameFormat
        var output: FrameFormat
    }
    /// Converters by the formats they join (at most a few: one per negotiated input).
    private let converters = Mutex<[Conversion: PixelConverter]>([:])
    private static let cacheLimit = 4

    /// A processor producing `pixelFormat` (one of ``PixelConverter/convertible``) at `size`;
    /// `nil` keeps the input's. Throws ``CaptureError/Code/unsupportedPixelFormat`` for a format
    /// that cannot be produced and ``CaptureError/Code/invalidArgument`` for a size that is not
    /// positive.
    public init(pixelFormat: PixelFormat? = nil, size: CaptureDevice.Dimensions? = nil) throws(CaptureError) {
        if let pixelFormat, !PixelConverter.convertible.contains(pixelFormat) {
            throw CaptureError(
                .unsupportedPixelFormat,
                "ConvertProcessor cannot produce \(pixelFormat.name): choose one of "
                    + PixelConverter.convertible.map(\.name).joined(separator: ", ")
            )
        }
        if let size, size.width <= 0 || size.height <= 0 {
            throw CaptureError(
                .invalidArgument, "ConvertProcessor needs a positive size, got \(size): pass e.g. 640x480 or nil")
        }
        if let size {
            try PixelBuffer.checkDimensions(
                width: size.pixelWidth, height: size.pixelHeight, what: "ConvertProcessor size")
        }
        self.pixelFormat = pixelFormat
        self.size = size
    }

    public var acceptedPixelFormats: [PixelFormat] { PixelConverter.convertible }

    /// The configured format and size; builds (and caches) the converter, so a pair that cannot
    /// be converted is refused at negotiation rather than on the first frame.
    public func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat {
        guard PixelConverter.convertible.contains(input.pixelFormat) else {
            throw BuiltIn.unsupported("ConvertProcessor", input, accepted: PixelConverter.convertible)
        }
        let output = FrameFormat(
            pixelFormat: pixelFormat ?? input.pixelFormat, width: size?.pixelWidth ?? input.width,
            height: size?.pixelHeight ?? input.height)
        if output != input {
            _ = try converter(for: Conversion(input: input, output: output))
        }
        return output
    }

    public func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        let image = frame.image
        let input = FrameFormat(pixelFormat: image.pixelFormat, width: image.width, height: image.height)
        guard input != frame.outputFormat else { return .keep }
        let destination = try BuiltIn.outputBuffer(for: frame, processor: "ConvertProcessor")
        let conversion = Conversion(input: input, output: frame.outputFormat)
        try converters.withLock { (cache) throws(CaptureError) in
            let converter = try Self.converter(for: conversion, in: &cache)
            try converter.convert(image, into: destination)
        }
        frame.image = destination
        return .keep
    }

    private func converter(for conversion: Conversion) throws(CaptureError) -> PixelConverter {
        try converters.withLock { (cache) throws(CaptureError) in try Self.converter(for: conversion, in: &cache) }
    }

    private static func converter(
        for conversion: Conversion, in cache: inout [Conversion: PixelConverter]
    ) throws(CaptureError) -> PixelConverter {
        if let converter = cache[conversion] { return converter }
        let converter = try PixelConverter(
            from: conversion.input.pixelFormat, size: conversion.input.size, to: conversion.output.pixelFormat,
            size: conversion.output.size)
        if cache.count >= cacheLimit { cache.removeAll() }
        cache[conversion] = converter
        return converter
    }
}
