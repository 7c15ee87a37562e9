import CYUV

/// Mirrors frames left to right — what `CaptureConnection.isVideoMirrored` asks for, the
/// front-camera "selfie" view — with libyuv (`ARGBMirror`, `NV12Mirror`, `I420Mirror`) into a
/// pooled buffer.
///
/// ```swift
/// try output.addProcessor(MirrorProcessor(), named: "mirror")
/// ```
///
/// Thread safety: stateless; any number of outputs may share one.
public final class MirrorProcessor: FrameProcessor {
    /// A left-right mirror.
    public init() {}

    /// BGRA, NV12 (either range) and I420.
    public var acceptedPixelFormats: [PixelFormat] { [.bgra, .nv12VideoRange, .nv12FullRange, .i420] }

    public func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat {
        guard acceptedPixelFormats.contains(input.pixelFormat) else {
            throw BuiltIn.unsupported("MirrorProcessor", input, accepted: acceptedPixelFormats)
        }
        return input
    }

    public func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        let s = frame.image
        let d = try BuiltIn.outputBuffer(for: frame, processor: "MirrorProcessor")
        let (width, height) = (Int32(s.width), Int32(s.height))
        let status: Int32
        switch s.pixelFormat {
        case .bgra:
            status = ARGBMirror(
                BuiltIn.pixels(s, 0), BuiltIn.stride(s, 0), BuiltIn.pixels(d, 0), BuiltIn.stride(d, 0), width, height)
        case .i420:
            status = I420Mirror(
                BuiltIn.pixels(s, 0), BuiltIn.stride(s, 0), BuiltIn.pixels(s, 1), BuiltIn.stride(s, 1),
                BuiltIn.pixels(s, 2), BuiltIn.stride(s, 2), BuiltIn.pixels(d, 0), BuiltIn.stride(d, 0),
                BuiltIn.pixels(d, 1), BuiltIn.stride(d, 1), BuiltIn.pixels(d, 2), BuiltIn.stride(d, 2), width, height)
        default:
            status = NV12Mirror(
                BuiltIn.pixels(s, 0), BuiltIn.stride(s, 0), BuiltIn.pixels(s, 1), BuiltIn.stride(s, 1),
                BuiltIn.pixels(d, 0), BuiltIn.stride(d, 0), BuiltIn.pixels(d, 1), BuiltIn.stride(d, 1), width, height)
        }
        guard status == 0 else { throw BuiltIn.libyuvFailed("MirrorProcessor", "mirror", status, s) }
        frame.image = d
        return .keep
    }
}
