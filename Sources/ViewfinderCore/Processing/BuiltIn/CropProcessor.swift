import CYUV

/// Cuts a rectangle out of each frame (libyuv `CopyPlane` per plane, into a pooled buffer).
///
/// The rectangle is checked against the frame size when the chain is negotiated: it must lie
/// inside the frame, and for 4:2:0 formats (NV12, I420) every edge must be on an even coordinate,
/// as for YUYV horizontally, so chroma samples are not split.
///
/// ```swift
/// // The centre 320x240 of a 640x480 camera.
/// try output.addProcessor(CropProcessor(x: 160, y: 120, width: 320, height: 240), named: "crop")
/// ```
///
/// Thread safety: immutable; any number of outputs may share one.
public final class CropProcessor: FrameProcessor {
    /// The left edge of the rectangle, in pixels.
    public let x: Int
    /// The top edge of the rectangle, in pixels.
    public let y: Int
    /// The width of the rectangle (and of the frames produced).
    public let width: Int
    /// The height of the rectangle (and of the frames produced).
    public let height: Int

    /// A processor keeping the `width` × `height` rectangle whose top-left corner is (`x`, `y`).
    /// Throws ``CaptureError/Code/invalidArgument`` for a negative origin, an empty size, or a
    /// rectangle reaching past ``PixelBuffer/maximumDimension`` (no frame is that large).
    public init(x: Int, y: Int, width: Int, height: Int) throws(CaptureError) {
        guard x >= 0, y >= 0, width > 0, height > 0 else {
            throw CaptureError(
                .invalidArgument,
                "CropProcessor needs a non-negative origin and a positive size, got (\(x), \(y)) \(width)x\(height)")
        }
        let limit = PixelBuffer.maximumDimension
        guard width <= limit, height <= limit, x <= limit - width, y <= limit - height else {
            throw CaptureError(
                .invalidArgument,
                "CropProcessor rectangle (\(x), \(y)) \(width)x\(height) reaches past \(limit) pixels, larger than any frame: keep it inside the frame"
            )
        }
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// The formats whose planes can be cut: BGRA, NV12, I420 and YUYV.
    public var acceptedPixelFormats: [PixelFormat] { [.bgra, .nv12VideoRange, .nv12FullRange, .i420, .yuyv] }

    public func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat {
        guard acceptedPixelFormats.contains(input.pixelFormat) else {
            throw BuiltIn.unsupported("CropProcessor", input, accepted: acceptedPixelFormats)
        }
        guard width <= input.width, height <= input.height, x <= input.width - width, y <= input.height - height
        else {
            throw CaptureError(
                .invalidArgument,
                "crop rectangle (\(x), \(y)) \(width)x\(height) does not fit in \(input.width)x\(input.height) "
                    + "frames: make it smaller or move it inside the frame"
            )
        }
        let evenX = BuiltIn.isSubsampled420(input.pixelFormat) || input.pixelFormat == .yuyv
        let evenY = BuiltIn.isSubsampled420(input.pixelFormat)
        if (evenX && (x % 2 != 0 || width % 2 != 0)) || (evenY && (y % 2 != 0 || height % 2 != 0)) {
            throw CaptureError(
                .invalidArgument,
                "crop rectangle (\(x), \(y)) \(width)x\(height) splits chroma samples of "
                    + "\(input.pixelFormat.name) frames: use even coordinates and sizes"
            )
        }
        return FrameFormat(pixelFormat: input.pixelFormat, width: width, height: height)
    }

    public func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        let source = frame.image
        if x == 0, y == 0, source.width == width, source.height == height { return .keep }
        let destination = try BuiltIn.outputBuffer(for: frame, processor: "CropProcessor")
        for plane in 0..<source.planeCount {
            let (bytesPerPixel, xShift, yShift) = Self.sampling(source.pixelFormat, plane: plane)
            let start =
                BuiltIn.pixels(source, plane) + (y >> yShift) * source.bytesPerRow(ofPlane: plane)
                + (x >> xShift) * bytesPerPixel
            CopyPlane(
                start, BuiltIn.stride(source, plane), BuiltIn.pixels(destination, plane),
                BuiltIn.stride(destination, plane), Int32(destination.bytesPerRow(ofPlane: plane)),
                Int32(destination.height(ofPlane: plane)))
        }
        frame.image = destination
        return .keep
    }

    /// How pixel coordinates map onto plane `plane`: bytes per (subsampled) sample, and the
    /// horizontal and vertical subsampling as shifts.
    private static func sampling(_ format: PixelFormat, plane: Int) -> (bytes: Int, xShift: Int, yShift: Int) {
        switch (format, plane) {
        case (.bgra, _): return (4, 0, 0)
        case (.yuyv, _): return (2, 0, 0)
        case (.i420, 1), (.i420, 2): return (1, 1, 1)
        case (_, 1): return (2, 1, 1)  // NV12's interleaved CbCr pairs
        default: return (1, 0, 0)
        }
    }
}
