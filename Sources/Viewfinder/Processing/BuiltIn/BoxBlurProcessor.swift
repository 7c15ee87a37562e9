import Synchronization

/// Blurs frames with a box filter: each output sample is the mean, rounded to nearest, of the
/// (2 × radius + 1)² samples around it (like ffmpeg's `boxblur` with one pass). Samples beyond
/// the border repeat the edge sample.
///
/// It is a separable running-sum blur, O(1) per sample whatever the radius: a running sum down
/// each column (one row of 32-bit sums, updated by adding the row entering the box and
/// subtracting the row leaving it), then a running sum along that row. BGRA is blurred as four
/// interleaved channels (alpha included); NV12 and I420 blur luma with `radius` and chroma, at half
/// resolution, with `(radius + 1) / 2`, covering about the same area.
///
/// A flat image stays exactly flat; a step edge becomes a monotone ramp 2 × radius + 1 samples
/// wide. (libyuv's `ARGBBlur` was the first choice for BGRA, but it truncates its averages — a
/// flat level of 90 comes out as 89 with 3×3 and 5×5 boxes, which also breaks monotonicity at
/// edges — and no installed library has a planar box blur.)
///
/// ```swift
/// try output.addProcessor(BoxBlurProcessor(radius: 4), named: "blur")
/// ```
///
/// Thread safety: the row of column sums sits behind a `Mutex` (allocated on the first frame of
/// a width, reused after); one instance may serve several outputs.
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
    /// the frame (radius ≥ half the width or height), where a blur stops meaning much.
    public func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat {
        guard acceptedPixelFormats.contains(input.pixelFormat) else {
            throw BuiltIn.unsupported("BoxBlurProcessor", input, accepted: acceptedPixelFormats)
        }
        let limit = min(input.width / 2 - 1, input.height / 2 - 1)
        guard radius <= limit else {
            throw CaptureError(
                .invalidArgument,
                "a box blur radius of \(radius) is too large for \(input.width)x\(input.height) frames: "
                    + "use at most \(max(0, limit)) or blur larger frames"
            )
        }
        return input
    }

    public func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        let source = frame.image
        let destination = try BuiltIn.outputBuffer(for: frame, processor: "BoxBlurProcessor")
        let radius = self.radius
        scratch.withLock { scratch in
            // One row of column sums, as wide as the widest plane row in samples (bytes).
            var samples = 0
            for plane in 0..<source.planeCount {
                samples = max(
                    samples, source.pixelFormat.planeGeometry(plane, width: source.width, height: 1).bytesPerRow)
            }
            let memory = ScratchMemory.reuse(scratch, byteCount: samples * 4, key: samples)
            scratch = memory
            for plane in 0..<source.planeCount {
                let channels: Int
                switch (source.pixelFormat, plane) {
                case (.bgra, _): channels = 4
                case (.i420, _), (_, 0): channels = 1
                default: channels = 2  // NV12's interleaved CbCr
                }
                Self.blurPlane(
                    source, into: destination, plane: plane, channels: channels,
                    radius: plane == 0 ? radius : (radius + 1) / 2, columnSums: memory.typed(UInt32.self))
            }
        }
        frame.image = destination
        return .keep
    }

    /// Box-blurs one plane of 8-bit samples (`channels` interleaved per position) with edge
    /// samples repeated, in O(1) per sample. `columnSums` holds a row of samples.
    private static func blurPlane(
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
