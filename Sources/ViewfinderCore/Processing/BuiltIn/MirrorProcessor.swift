import CYUV

/// Mirrors frames left to right — what `CaptureConnection.isVideoMirrored` asks for, the
/// front-camera "selfie" view — with libyuv (`ARGBMirror`, `NV12Mirror`, `I420Mirror`) into a
/// pooled buffer.
///
/// ```swift
/// try output.addProcessor(MirrorProcessor(), named: "mirror")
/// ```
///
/// Frames of a million pixels or more are mirrored in two bands of rows on two cores.
///
/// Thread safety: any number of outputs may share one (its band thread serialises runs).
public final class MirrorProcessor: FrameProcessor {
    /// Mirrors source rows `rows` into the same rows of the destination.
    private let bands = RowBands { rows, source, destination, variant in
        let (s, d) = (source.rows(rows), destination.rows(rows))
        switch variant {
        case MirrorProcessor.packed:
            return ARGBMirror(s.c0, s.s0, d.m0, d.s0, s.w, s.h)
        case MirrorProcessor.threePlanes:
            return I420Mirror(s.c0, s.s0, s.c1, s.s1, s.c2, s.s2, d.m0, d.s0, d.m1, d.s1, d.m2, d.s2, s.w, s.h)
        default:
            return NV12Mirror(s.c0, s.s0, s.c1, s.s1, d.m0, d.s0, d.m1, d.s1, s.w, s.h)
        }
    }
    private static let packed = 0
    private static let threePlanes = 1
    private static let twoPlanes = 2

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
        let variant =
            switch s.pixelFormat {
            case .bgra: Self.packed
            case .i420: Self.threePlanes
            default: Self.twoPlanes
            }
        let status = bands.run(s, d, variant: variant)
        guard status == 0 else { throw BuiltIn.libyuvFailed("MirrorProcessor", "mirror", status, s) }
        frame.image = d
        return .keep
    }
}
