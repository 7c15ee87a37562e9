import CYUV
import Synchronization

/// Blurs frames with a box filter: each output sample is the mean of the (2 × radius + 1)²
/// samples around it (like ffmpeg's `boxblur` with one pass).
///
/// - BGRA: libyuv `ARGBBlur`, which runs on a table of cumulative sums (allocated once per frame
///   width and radius, reused after). At the borders it averages the part of the box inside the
///   frame.
/// - NV12 and I420: libyuv has no planar box blur, so this is a separable running-sum blur, O(1)
///   per sample whatever the radius: a running sum down each column (one row of 32-bit sums,
///   updated by adding the row entering the box and subtracting the row leaving it), then a
///   running sum along that row. Samples beyond the border repeat the edge sample. Luma uses
///   `radius`; chroma, at half resolution, uses `(radius + 1) / 2`, covering about the same area.
///
/// A flat image stays exactly flat; a step edge becomes a ramp (2 × radius + 1) samples wide.
///
/// ```swift
/// try output.addProcessor(BoxBlurProcessor(radius: 4), named: "blur")
/// ```
///
/// Thread safety: the scratch memory sits behind a `Mutex`; one instance may serve several
/// outputs.
public final class BoxBlurProcessor: FrameProcessor {
    /// Samples on each side of the centre that the box reaches (1 is a 3×3 box).
    public let radius: Int
    private let scratch = Mutex<ScratchMemory?>(nil)

    /// The largest radius accepted.
    public static let maximumRadius = 64

    /// A blur reaching `radius` samples each way (1…``maximumRadius``); other values throw
    /// ``CaptureError/Code/invalidArgument``.
    public init(radius: Int) throws(CaptureError) {
        guard (1...Self.maximumRadius).contains(radius) else {
            throw CaptureError(
                .invalidArgument, "a box blur radius must be 1...\(Self.maximumRadius), got \(radius)")
        }
        self.radius = radius
    }

    /// BGRA, NV12 (either range) and I420.
    public var acceptedPixelFormats: [PixelFormat] { [.bgra, .nv12VideoRange, .nv12FullRange, .i420] }

    /// The input; throws ``CaptureError/Code/invalidArgument`` when the box would be wider than
    /// half the frame (libyuv's limit: radius ≤ min(width / 2 − 1, height)).
    public func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat {
        guard acceptedPixelFormats.contains(input.pixelFormat) else {
            throw BuiltIn.unsupported("BoxBlurProcessor", input, accepted: acceptedPixelFormats)
        }
        let limit = min(input.width / 2 - 1, input.height / 2 - 1)
        guard radius <= limit else {
            throw CaptureError(
                .invalidArgument,
                "a box blur radius of \(radius) is too large for \(input.width)x\(input.height) frames: use at most \(max(0, limit)) or blur larger frames"
            )
        }
        return input
    }

    public func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        let source = frame.image
        let destination = try BuiltIn.outputBuffer(for: frame, processor: "BoxBlurProcessor")
        let radius = self.radius
        let status: Int32 = scratch.withLock { scratch in
            if source.pixelFormat == .bgra {
                // A circular table of 2r + 2 rows of cumulative sums, 4 Int32 per pixel.
                let stride = source.width * 4
                let memory = ScratchMemory.reuse(
                    scratch, byteCount: (2 * radius + 2) * stride * 4, key: source.width << 8 | radius)
                scratch = memory
                return ARGBBlur(
                    BuiltIn.pixels(source, 0), BuiltIn.stride(source, 0), BuiltIn.pixels(destination, 0),
                    BuiltIn.stride(destination, 0), memory.typed(Int32.self), Int32(stride), Int32(source.width),
                    Int32(source.height), Int32(radius))
            }
            // One row of column sums, as wide as the widest plane row in samples.
            let memory = ScratchMemory.reuse(scratch, byteCount: source.width * 4, key: -source.width)
            scratch = memory
            for plane in 0..<source.planeCount {
                let interleaved = plane == 1 && source.pixelFormat != .i420
                Self.blurPlane(
                    source, into: destination, plane: plane, channels: interleaved ? 2 : 1,
                    radius: plane == 0 ? radius : (radius + 1) / 2, columnSums: memory.typed(UInt32.self))
            }
            return 0
        }
        guard status == 0 else { throw BuiltIn.libyuvFailed("BoxBlurProcessor", "ARGBBlur", status, source) }
        frame.image = destination
        return .keep
    }

    /// Box-blurs one plane of 8-bit samples (`channels` interleaved per position) with edge
    /// samples repeated, in O(1) per sample. `columnSums` holds a row of samples.
    static func blurPlane(
        _ source: PixelBuffer, into destination: PixelBuffer, plane: Int, channels: Int, radius: Int,
        columnSums: UnsafeMutablePointer<UInt32>
    ) {
        let positions = source.width(ofPlane: plane)
        let rows = source.height(ofPlane: plane)
        let samples = positions * channels
        let input = UnsafePointer(BuiltIn.pixels(source, plane))
        let inputStride = source.bytesPerRow(ofPlane: plane)
        let output = BuiltIn.pixels(destination, plane)
        let outputStride = destination.bytesPerRow(ofPlane: plane)
        let reciprocal = 1 / Double((2 * radius + 1) * (2 * radius + 1))
        func rowStart(_ row: Int) -> UnsafePointer<UInt8> { input + min(max(row, 0), rows - 1) * inputStride }

        // Column sums for output row 0: rows -r…r, edge rows repeated.
        for index in 0..<samples { columnSums[index] = 0 }
        for row in -radius...radius {
            let line = rowStart(row)
            for index in 0..<samples { columnSums[index] &+= UInt32(line[index]) }
        }
        for row in 0..<rows {
            let target = output + row * outputStride
            for channel in 0..<channels {
                func column(_ position: Int) -> UInt32 {
                    columnSums[min(max(position, 0), positions - 1) * channels + channel]
                }
                var sum: UInt32 = 0
                for position in -radius...radius { sum &+= column(position) }
                for position in 0..<positions {
                    target[position * channels + channel] = UInt8(Double(sum) * reciprocal + 0.5)
                    sum = sum &+ column(position + radius + 1) &- column(position - radius)
                }
            }
            // Slide the box down: add the row entering it, subtract the row leaving it.
            let entering = rowStart(row + radius + 1)
            let leaving = rowStart(row - radius)
            for index in 0..<samples {
                columnSums[index] = columnSums[index] &+ UInt32(entering[index]) &- UInt32(leaving[index])
            }
        }
    }
}
