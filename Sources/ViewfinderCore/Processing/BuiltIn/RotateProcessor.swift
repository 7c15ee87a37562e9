import CYUV
import Synchronization

/// Rotates frames clockwise by 90, 180 or 270 degrees — what `CaptureConnection.videoRotationAngle`
/// asks for — with libyuv into a pooled buffer.
///
/// Quarter turns: BGRA uses `ARGBRotate` and I420 `I420Rotate`, tile by tile. NV12 has no
/// one-call rotation in libyuv that stays NV12, so the Y plane goes through `RotatePlane`
/// straight into the output, and the interleaved CbCr plane through `SplitRotateUV` (rotating
/// while de-interleaving into two small scratch planes) and `MergeUVPlane`: luma is written once,
/// unlike going through I420 and back. Half turns are libyuv's mirrors with a negative height
/// (left-right and top-bottom at once), which unlike its 180° rotations allocate nothing. Frames
/// of a million pixels or more are turned in two bands on two cores.
///
/// ```swift
/// let rotate = try RotateProcessor(angle: 90)  // portrait from a landscape camera
/// try output.addProcessor(rotate, named: "rotate")
/// // 640x480 frames now arrive as 480x640.
/// ```
///
/// An angle of 0 passes frames through untouched.
///
/// Thread safety: the NV12 chroma scratch sits behind a `Mutex` (allocated on the first frame of
/// a size, reused after); one instance may serve several outputs.
public final class RotateProcessor: FrameProcessor {
    /// The clockwise rotation in degrees: 0, 90, 180 or 270.
    public let angle: Double
    private let mode: RotationMode
    private let chromaScratch = Mutex<ScratchMemory?>(nil)
    /// Quarter turns of plane 0 (the run's variant is its bytes per pixel), in two bands of
    /// source rows for large frames, as ffmpeg's `transpose` slices over cores.
    private let quarterTurnBands: RowBands
    /// Half turns of large frames, in two bands: source rows `rows` land, turned, in the
    /// destination rows mirrored about the middle.
    private let halfTurnBands = RowBands { rows, source, destination, variant in
        let height = source.height
        let (s, d) = (source.rows(rows), destination.rows((height - rows.upperBound)..<(height - rows.lowerBound)))
        // Mirroring both ways at once (a negative height) is a half turn. libyuv's own 180°
        // rotations allocate a row buffer on every call; its mirrors allocate nothing.
        switch variant {
        case RotateProcessor.packed:
            return ARGBMirror(s.c0, s.s0, d.m0, d.s0, s.w, -s.h)
        case RotateProcessor.threePlanes:
            return I420Mirror(s.c0, s.s0, s.c1, s.s1, s.c2, s.s2, d.m0, d.s0, d.m1, d.s1, d.m2, d.s2, s.w, -s.h)
        default:
            return NV12Mirror(s.c0, s.s0, s.c1, s.s1, d.m0, d.s0, d.m1, d.s1, s.w, -s.h)
        }
    }
    private static let packed = 0
    private static let threePlanes = 1
    private static let twoPlanes = 2

    /// A processor rotating clockwise by `angle` degrees, which must be 0, 90, 180 or 270 (as for
    /// `AVCaptureConnection.videoRotationAngle`); other angles throw
    /// ``CaptureError/Code/invalidArgument``.
    public init(angle: Double) throws(CaptureError) {
        switch angle {
        case 0: mode = kRotate0
        case 90: mode = kRotate90
        case 180: mode = kRotate180
        case 270: mode = kRotate270
        default:
            throw CaptureError(
                .invalidArgument, "cannot rotate by \(angle) degrees: use 0, 90, 180 or 270 (clockwise)")
        }
        self.angle = angle
        let mode = self.mode
        quarterTurnBands = RowBands { rows, source, destination, bytesPerPixel in
            Self.rotateTiles(source, into: destination, rows: rows, bytesPerPixel: bytesPerPixel, mode: mode)
        }
    }

    /// BGRA, NV12 (either range) and I420.
    public var acceptedPixelFormats: [PixelFormat] { [.bgra, .nv12VideoRange, .nv12FullRange, .i420] }

    /// The input with width and height swapped for quarter turns.
    public func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat {
        guard acceptedPixelFormats.contains(input.pixelFormat) else {
            throw BuiltIn.unsupported("RotateProcessor", input, accepted: acceptedPixelFormats)
        }
        guard mode == kRotate90 || mode == kRotate270 else { return input }
        return FrameFormat(pixelFormat: input.pixelFormat, width: input.height, height: input.width)
    }

    public func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        guard mode != kRotate0 else { return .keep }
        let source = frame.image
        let destination = try BuiltIn.outputBuffer(for: frame, processor: "RotateProcessor")
        let (s, d) = (source, destination)
        let (width, height) = (Int32(source.width), Int32(source.height))
        let status: Int32
        let function: String
        switch source.pixelFormat {
        case _ where mode == kRotate180 && (source.pixelFormat == .bgra || source.height % 2 == 0):
            // Bands of 4:2:0 frames must start on even rows at both ends: even heights only.
            function = "half turn"
            let variant =
                switch source.pixelFormat {
                case .bgra: Self.packed
                case .i420: Self.threePlanes
                default: Self.twoPlanes
                }
            status = halfTurnBands.run(source, destination, variant: variant)
        case .bgra:
            function = "ARGBRotate"
            status = rotateTiles(source, into: destination, bytesPerPixel: 4)
        case .i420:
            function = "I420Rotate"
            status = I420Rotate(
                BuiltIn.pixels(s, 0), BuiltIn.stride(s, 0), BuiltIn.pixels(s, 1), BuiltIn.stride(s, 1),
                BuiltIn.pixels(s, 2), BuiltIn.stride(s, 2), BuiltIn.pixels(d, 0), BuiltIn.stride(d, 0),
                BuiltIn.pixels(d, 1), BuiltIn.stride(d, 1), BuiltIn.pixels(d, 2), BuiltIn.stride(d, 2), width, height,
                mode)
        default:
            if mode == kRotate180 {
                function = "NV12Mirror"
                status = NV12Mirror(
                    BuiltIn.pixels(s, 0), BuiltIn.stride(s, 0), BuiltIn.pixels(s, 1), BuiltIn.stride(s, 1),
                    BuiltIn.pixels(d, 0), BuiltIn.stride(d, 0), BuiltIn.pixels(d, 1), BuiltIn.stride(d, 1), width,
                    -height)
            } else {
                function = "RotatePlane/SplitRotateUV"
                status = rotateNV12QuarterTurn(source, into: destination)
            }
        }
        guard status == 0 else { throw BuiltIn.libyuvFailed("RotateProcessor", function, status, source) }
        frame.image = destination
        return .keep
    }

    /// Turns plane 0 of `s` by 90 or 270 degrees into `d`, in two bands on two cores for frames of
    /// a million pixels or more.
    private func rotateTiles(_ s: PixelBuffer, into d: PixelBuffer, bytesPerPixel: Int) -> Int32 {
        quarterTurnBands.run(s, d, variant: bytesPerPixel)
    }

    /// Turns source rows `rows` of plane 0 of `s` (a `bytesPerPixel`-byte-per-pixel plane) into
    /// their place in `d`, tile by tile, with libyuv: the destination rows a tile writes stay in
    /// cache until their lines are full (libyuv transposes 8 source rows at a time across the whole
    /// width, touching every destination row per strip).
    private static func rotateTiles(
        _ s: ImageView, into d: ImageView, rows: Range<Int>, bytesPerPixel: Int, mode: RotationMode
    ) -> Int32 {
        let (width, height) = (s.width, s.height)
        let (source, target) = (s.planes.0, d.planes.0)
        let (sourceStride, targetStride) = (s.strides.0, d.strides.0)
        let tileWidth = Self.tileWidth / bytesPerPixel
        for y in stride(from: rows.lowerBound, to: rows.upperBound, by: Self.tileHeight) {
            let h = min(Self.tileHeight, rows.upperBound - y)
            for x in stride(from: 0, to: width, by: tileWidth) {
                let w = min(tileWidth, width - x)
                let (tx, ty) = Self.rotatedOrigin(x: x, y: y, w: w, h: h, width: width, height: height, mode: mode)
                let from = UnsafePointer(source + y * sourceStride + x * bytesPerPixel)
                let to = target + ty * targetStride + tx * bytesPerPixel
                let status =
                    bytesPerPixel == 4
                    ? ARGBRotate(from, Int32(sourceStride), to, Int32(targetStride), Int32(w), Int32(h), mode)
                    : RotatePlane(from, Int32(sourceStride), to, Int32(targetStride), Int32(w), Int32(h), mode)
                guard status == 0 else { return status }
            }
        }
        return 0
    }

    /// Rotates an NV12 frame by 90 or 270 degrees: luma directly, chroma through two scratch
    /// planes (rotated Cb and Cr) merged back into pairs, both tile by tile.
    private func rotateNV12QuarterTurn(_ s: PixelBuffer, into d: PixelBuffer) -> Int32 {
        let luma = rotateTiles(s, into: d, bytesPerPixel: 1)
        guard luma == 0 else { return luma }
        let mode = self.mode
        // Source chroma: `pairs` CbCr pairs per row, `rows` rows. Rotated: `rows` per row, `pairs` rows.
        let pairs = s.width(ofPlane: 1)
        let rows = s.height(ofPlane: 1)
        return chromaScratch.withLock { scratch in
            let memory = ScratchMemory.reuse(scratch, byteCount: 2 * pairs * rows, key: pairs << 32 | rows)
            scratch = memory
            let cb = memory.typed(UInt8.self)
            let cr = cb + pairs * rows
            let chromaStride = s.bytesPerRow(ofPlane: 1)
            for y in stride(from: 0, to: rows, by: Self.tileHeight) {
                let h = min(Self.tileHeight, rows - y)
                for x in stride(from: 0, to: pairs, by: Self.tileWidth) {
                    let w = min(Self.tileWidth, pairs - x)
                    let (tx, ty) = Self.rotatedOrigin(x: x, y: y, w: w, h: h, width: pairs, height: rows, mode: mode)
                    let status = SplitRotateUV(
                        BuiltIn.pixels(s, 1) + y * chromaStride + 2 * x, Int32(chromaStride), cb + ty * rows + tx,
                        Int32(rows), cr + ty * rows + tx, Int32(rows), Int32(w), Int32(h), mode)
                    guard status == 0 else { return status }
                }
            }
            MergeUVPlane(
                cb, Int32(rows), cr, Int32(rows), BuiltIn.pixels(d, 1), BuiltIn.stride(d, 1), Int32(rows),
                Int32(pairs))
            return 0
        }
    }

    /// Tile size for quarter turns, in source samples.
    package static let tileWidth = 256
    package static let tileHeight = 64

    /// Where the `w` × `h` tile at (`x`, `y`) of a `width` × `height` plane lands once turned by
    /// `mode` (90 or 270 degrees clockwise): its top-left corner in the rotated plane.
    private static func rotatedOrigin(
        x: Int, y: Int, w: Int, h: Int, width: Int, height: Int, mode: RotationMode
    ) -> (x: Int, y: Int) {
        // 90°: (x, y) → (height - 1 - y, x); 270°: (x, y) → (y, width - 1 - x).
        mode == kRotate90 ? (height - y - h, x) : (y, width - x - w)
    }
}
