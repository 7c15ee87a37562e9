/// What a ``CaptureVideoDataOutput`` delivers: a pixel format and optionally a size (the
/// counterpart of `videoSettings`' `kCVPixelBufferPixelFormatTypeKey`, `kCVPixelBufferWidthKey`
/// and `kCVPixelBufferHeightKey`). Empty settings deliver the device's native format and size.
///
/// Settings are checked when made, so an output never holds settings it cannot honour.
///
/// On a Motion-JPEG camera, empty settings deliver the decoded frames as full-range NV12 (what
/// JFIF means), and ``PixelFormat/mjpeg`` delivers the camera's JPEG bytes untouched (zero-copy;
/// no size, no processors). A video data output does not encode: on a raw camera `.mjpeg` is
/// refused when the session negotiates (``CaptureError/Code/unsupportedPixelFormat``).
public struct VideoSettings: Sendable, Hashable, CustomStringConvertible {
    /// The pixel format to deliver, or `nil` for the device's native format.
    public let pixelFormat: PixelFormat?
    /// The width to deliver, or `nil` for the device's width.
    public let width: Int?
    /// The height to deliver, or `nil` for the device's height.
    public let height: Int?

    /// Native format and size: frames are delivered as the device captures them (zero-copy).
    public init() {
        pixelFormat = nil
        width = nil
        height = nil
    }

    /// Frames in `pixelFormat`, scaled to `width` × `height` when both are given.
    ///
    /// Throws ``CaptureError/Code/unsupportedPixelFormat`` for a format outputs cannot deliver
    /// (see ``CaptureVideoDataOutput/availableVideoPixelFormatTypes``, and ``PixelFormat/mjpeg``
    /// for a camera's own JPEG frames), and
    /// ``CaptureError/Code/invalidArgument`` for a size that is not positive, larger than
    /// ``PixelBuffer/maximumDimension`` a side, only half given, or odd for a Y'CbCr format.
    public init(pixelFormat: PixelFormat, width: Int? = nil, height: Int? = nil) throws(CaptureError) {
        let deliverable = CaptureVideoDataOutput.deliverablePixelFormats + [.mjpeg]
        guard deliverable.contains(pixelFormat) else {
            let names = deliverable.map(\.name).joined(separator: ", ")
            throw CaptureError(
                .unsupportedPixelFormat,
                "a video data output cannot deliver \(pixelFormat.name) ('\(pixelFormat.fourCC)'): choose one of \(names)"
            )
        }
        switch (width, height) {
        case (nil, nil):
            break
        case (let w?, let h?):
            guard w > 0, h > 0 else {
                throw CaptureError(
                    .invalidArgument, "output size \(w)x\(h) is invalid: width and height must be positive")
            }
            try PixelBuffer.checkDimensions(width: w, height: h, what: "output size")
            guard !pixelFormat.isYUV || (w % 2 == 0 && h % 2 == 0) else {
                throw CaptureError(
                    .invalidArgument,
                    "output size \(w)x\(h) is invalid for \(pixelFormat.name): chroma subsampling needs even width and height"
                )
            }
        default:
            throw CaptureError(
                .invalidArgument, "give both width and height to scale frames, or neither to keep the device's size")
        }
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
    }

    /// The requested size, if both dimensions are set.
    public var size: CaptureDevice.Dimensions? {
        guard let width, let height else { return nil }
        return CaptureDevice.Dimensions(width: width, height: height)
    }

    /// Whether the settings ask for nothing (native delivery).
    public var isEmpty: Bool { pixelFormat == nil && width == nil && height == nil }

    public var description: String {
        guard let pixelFormat else { return "native" }
        return size.map { "\(pixelFormat.name) \($0)" } ?? pixelFormat.name
    }
}
