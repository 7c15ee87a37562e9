/// One conversion of frames from a pixel format and size to another, with the buffers it
/// converts into: the single component every part that changes a frame's format uses — the
/// processor chain's conversion steps, the movie writer's encoder input, the photo worker and the
/// virtual camera's consumers. A ``PixelConverter`` does the work; this owns what goes with it
/// (the pool it converts into, and telling running out of buffers from failing).
///
/// Thread safety: as ``PixelConverter``: one frame at a time.
package final class FrameConversion: Sendable {
    /// The converter.
    package let converter: PixelConverter
    /// The buffers ``convert(_:)`` converts into; `nil` when the caller always gives its own.
    package let pool: PixelBufferPool?

    /// A conversion from `source` at `sourceSize` to `destination` at `destinationSize`, with
    /// `capacity` buffers of its own to convert into (`nil`: none; ``convert(_:into:)`` only).
    /// Throws what ``PixelConverter`` throws for a pair it cannot convert, so a conversion that
    /// cannot run is refused when it is planned, not at the first frame.
    package init(
        from source: PixelFormat, size sourceSize: CaptureDevice.Dimensions, to destination: PixelFormat,
        size destinationSize: CaptureDevice.Dimensions, capacity: Int?,
        options: PixelConverter.Options = PixelConverter.Options()
    ) throws(CaptureError) {
        converter = try PixelConverter(
            from: source, size: sourceSize, to: destination, size: destinationSize, options: options)
        pool = try capacity.map { (capacity) throws(CaptureError) in
            try PixelBufferPool(
                pixelFormat: destination, width: destinationSize.pixelWidth, height: destinationSize.pixelHeight,
                capacity: capacity)
        }
    }

    /// The library that converts.
    package var engine: PixelConverter.Engine { converter.engine }

    /// Whether this converts `image` into `format` at `size`.
    package func converts(_ image: PixelBuffer, to format: PixelFormat, size: CaptureDevice.Dimensions) -> Bool {
        converter.sourceFormat == image.pixelFormat && converter.sourceSize.width == image.width
            && converter.sourceSize.height == image.height && converter.destinationFormat == format
            && converter.destinationSize == size
    }

    /// `image` converted into a buffer of the pool; `nil` when every buffer is held (by the
    /// delegate, the encoder), which costs nothing (no conversion, no error made: it is the
    /// per-frame path). Throws the converter's error.
    package func convert(_ image: PixelBuffer) throws(CaptureError) -> PixelBuffer? {
        guard let destination = pool?.makePixelBuffer() else { return nil }
        try converter.convert(image, into: destination)
        return destination
    }

    /// Converts `image` into `target` (a buffer of the caller's: a photo's own, a consumer's).
    package func convert(_ image: PixelBuffer, into target: PixelBuffer) throws(CaptureError) {
        try converter.convert(image, into: target)
    }
}

/// The conversions kept by a worker whose frames and targets vary (a photo's format, a virtual
/// camera consumer's): made on first use, reused while they fit, the oldest let go past `limit`.
///
/// Thread safety: a value, used by one worker at a time.
package struct FrameConversions {
    private var kept: [FrameConversion] = []
    private let limit: Int
    private let options: PixelConverter.Options

    /// Keeps up to `limit` conversions, made with `options`.
    package init(limit: Int = 4, options: PixelConverter.Options = PixelConverter.Options()) {
        self.limit = max(1, limit)
        self.options = options
    }

    /// The conversion of `image` into `format` at `size` (the image's own size by default).
    package mutating func conversion(
        of image: PixelBuffer, to format: PixelFormat, size: CaptureDevice.Dimensions? = nil
    ) throws(CaptureError) -> FrameConversion {
        let size = size ?? CaptureDevice.Dimensions(width: image.width, height: image.height)
        if let found = kept.first(where: { $0.converts(image, to: format, size: size) }) { return found }
        let made = try FrameConversion(
            from: image.pixelFormat, size: CaptureDevice.Dimensions(width: image.width, height: image.height),
            to: format, size: size, capacity: nil, options: options)
        if kept.count >= limit { kept.removeFirst() }
        kept.append(made)
        return made
    }
}
