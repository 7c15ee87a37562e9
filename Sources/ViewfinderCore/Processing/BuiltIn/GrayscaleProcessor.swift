import CYUV

/// Removes colour: BGRA pixels become R = G = B = BT.601 luma (libyuv `ARGBGray`, alpha kept);
/// NV12 and I420 keep their luma and get neutral chroma (128).
///
/// Works in place when the frame is already a private copy (after a conversion or another
/// processor), otherwise writes into a pooled buffer in the same single pass (`ARGBGrayTo`, or
/// copying luma and filling chroma), so it never copies a frame just to modify it.
///
/// ```swift
/// try output.addProcessor(GrayscaleProcessor(), named: "gray")
/// ```
///
/// Thread safety: stateless; any number of outputs may share one.
public final class GrayscaleProcessor: FrameProcessor {
    /// A grayscale filter.
    public init() {}

    /// BGRA, NV12 (either range) and I420.
    public var acceptedPixelFormats: [PixelFormat] { [.bgra, .nv12VideoRange, .nv12FullRange, .i420] }

    public func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat {
        guard acceptedPixelFormats.contains(input.pixelFormat) else {
            throw BuiltIn.unsupported("GrayscaleProcessor", input, accepted: acceptedPixelFormats)
        }
        return input
    }

    public func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        let source = frame.image
        let destination =
            frame.isImageWritable ? source : try BuiltIn.outputBuffer(for: frame, processor: "GrayscaleProcessor")
        let (width, height) = (Int32(source.width), Int32(source.height))
        if source.pixelFormat == .bgra {
            let status =
                destination === source
                ? ARGBGray(BuiltIn.pixels(source, 0), BuiltIn.stride(source, 0), 0, 0, width, height)
                : ARGBGrayTo(
                    BuiltIn.pixels(source, 0), BuiltIn.stride(source, 0), BuiltIn.pixels(destination, 0),
                    BuiltIn.stride(destination, 0), width, height)
            guard status == 0 else { throw BuiltIn.libyuvFailed("GrayscaleProcessor", "ARGBGray", status, source) }
        } else {
            if destination !== source {
                CopyPlane(
                    BuiltIn.pixels(source, 0), BuiltIn.stride(source, 0), BuiltIn.pixels(destination, 0),
                    BuiltIn.stride(destination, 0), width, height)
            }
            for plane in 1..<destination.planeCount {
                SetPlane(
                    BuiltIn.pixels(destination, plane), BuiltIn.stride(destination, plane),
                    Int32(destination.bytesPerRow(ofPlane: plane)), Int32(destination.height(ofPlane: plane)), 128)
            }
        }
        if destination !== source { frame.image = destination }
        return .keep
    }
}
