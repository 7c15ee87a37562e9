import CTurboJPEG
import CYUV

/// Encodes pixel buffers as baseline JPEG images with libjpeg-turbo's TurboJPEG API, for photos.
///
/// BGRA is compressed as BGRX by `tjCompress2` at any ``chromaSubsampling``. Y'CbCr buffers go in
/// as planes through `tjCompressFromYUVPlanes`: full-range NV12's luma is read in place and its
/// interleaved chroma split into I420 planes by libyuv; video-range NV12 and I420 are mapped to
/// the full range a JPEG (JFIF) image holds first, through range tables. 4:2:0 sources encode
/// as 4:2:0, or with chroma resampled by libyuv for 4:2:2 and 4:4:4 (or dropped for greyscale).
///
/// The compressed-data buffer (`tjAlloc`'d, worst-case sized) and the plane scratch are allocated
/// the first time a size is encoded and reused from then on.
///
/// Thread safety: an instance is **not** thread-safe: use it from one thread (or serial queue) at
/// a time. Separate instances may encode on separate threads at once.
public final class JPEGEncoder: @unchecked Sendable {
    // unchecked: the handle and buffers are used by one thread at a time (documented above).
    /// The formats an encoder accepts.
    public static let supportedPixelFormats: [PixelFormat] = [.bgra, .nv12FullRange, .nv12VideoRange, .i420]

    /// The quality, 0 (smallest) to 1 (best), on AVFoundation's `AVVideoQualityKey` scale; values
    /// outside are clamped. It maps to TurboJPEG's 1…100 (see ``turboJPEGQuality``).
    public var quality: Double
    /// The chroma subsampling of the images written: `.yuv420` (the default, as cameras' photos),
    /// `.yuv422`, `.yuv444` or `.gray`.
    public var chromaSubsampling: JPEGChromaSubsampling

    private let handle: tjhandle
    private var output: UnsafeMutablePointer<UInt8>?
    private var outputCapacity = 0
    private var scratch: UnsafeMutablePointer<UInt8>?
    private var scratchBytes = 0

    /// An encoder at `quality` (0…1) writing `chromaSubsampling` (4:4:4, 4:2:2, 4:2:0 or greyscale).
    public init(quality: Double = 0.9, chromaSubsampling: JPEGChromaSubsampling = .yuv420) throws(CaptureError) {
        guard [.yuv444, .yuv422, .yuv420, .gray].contains(chromaSubsampling) else {
            throw CaptureError(
                .invalidArgument, "JPEGEncoder writes 4:4:4, 4:2:2, 4:2:0 or greyscale, not \(chromaSubsampling)")
        }
        guard let handle = tjInitCompress() else {
            throw CaptureError(.systemError, "could not create a TurboJPEG compressor")
        }
        self.quality = quality
        self.chromaSubsampling = chromaSubsampling
        self.handle = handle
    }

    deinit {
        tjDestroy(handle)
        if let output { tjFree(output) }
        scratch?.deallocate()
    }

    /// TurboJPEG's 1…100 quality for `quality` on the 0…1 scale.
    public var turboJPEGQuality: Int { Self.turboJPEGQuality(quality) }

    package static func turboJPEGQuality(_ quality: Double) -> Int {
        guard quality.isFinite else { return quality > 0 ? 100 : 1 }
        return min(100, max(1, Int((quality * 100).rounded())))
    }

    /// The JPEG file's bytes for `buffer` (a copy: the encoder's buffer is reused).
    public func encode(_ buffer: PixelBuffer) throws(CaptureError) -> [UInt8] {
        let count = try compress(buffer)
        return Array(UnsafeBufferPointer(start: output!, count: count))
    }

    /// Compresses `buffer` into the encoder's output buffer; returns the byte count.
    private func compress(_ buffer: PixelBuffer) throws(CaptureError) -> Int {
        guard Self.supportedPixelFormats.contains(buffer.pixelFormat) else {
            throw CaptureError(
                .unsupportedPixelFormat,
                "JPEGEncoder encodes \(Self.supportedPixelFormats.map(\.name).joined(separator: ", ")), not \(buffer.pixelFormat)"
            )
        }
        let (width, height) = (buffer.width, buffer.height)
        guard width <= 65500, height <= 65500 else {
            throw CaptureError(
                .invalidArgument, "a JPEG image can be at most 65500 pixels a side, not \(width)x\(height)")
        }
        let sampling = chromaSubsampling.turboJPEG
        let needed = Int(tjBufSize(Int32(width), Int32(height), sampling))
        guard needed > 0 else {
            throw CaptureError(
                .invalidArgument, "TurboJPEG cannot encode a \(width)x\(height) \(chromaSubsampling) image")
        }
        if needed > outputCapacity {
            if let output { tjFree(output) }
            output = tjAlloc(Int32(clamping: needed))
            outputCapacity = output == nil ? 0 : needed
            guard output != nil else {
                throw CaptureError(.systemError, "out of memory for a \(needed)-byte JPEG buffer")
            }
        }
        var jpeg: UnsafeMutablePointer<UInt8>? = output
        var size = UInt(outputCapacity)
        let q = Int32(turboJPEGQuality)
        let flags = TJFLAG_NOREALLOC
        let status: Int32
        if buffer.pixelFormat == .bgra {
            status = tjCompress2(
                handle, buffer.baseAddress.assumingMemoryBound(to: UInt8.self), Int32(width),
                Int32(buffer.bytesPerRow), Int32(height), Int32(TJPF_BGRX.rawValue), &jpeg, &size, sampling, q, flags)
        } else {
            let planes = try preparePlanes(buffer, sampling: sampling)
            var pointers: [UnsafePointer<UInt8>?] = planes.map { UnsafePointer($0.base) }
            var strides: [Int32] = planes.map { Int32($0.stride) }
            while pointers.count < 3 {
                pointers.append(pointers[0])
                strides.append(strides[0])
            }
            status = pointers.withUnsafeMutableBufferPointer { pointers in
                strides.withUnsafeBufferPointer { strides in
                    tjCompressFromYUVPlanes(
                        handle, pointers.baseAddress, Int32(width), strides.baseAddress, Int32(height), sampling, &jpeg,
                        &size, q, flags)
                }
            }
        }
        guard status == 0, jpeg == output else {
            let message = tjGetErrorStr2(handle).map { String(cString: $0) } ?? "unknown TurboJPEG error"
            throw CaptureError(
                .conversionFailed,
                "could not encode a \(width)x\(height) \(buffer.pixelFormat) frame as JPEG: \(message)")
        }
        return Int(size)
    }

    private struct Plane {
        var base: UnsafeMutablePointer<UInt8>
        var stride: Int
    }

    /// Full-range planes of the geometry TurboJPEG reads for `sampling`: the buffer's own where
    /// they fit, otherwise mapped, split, resampled or padded into scratch.
    private func preparePlanes(_ buffer: PixelBuffer, sampling: Int32) throws(CaptureError) -> [Plane] {
        let (width, height) = (buffer.width, buffer.height)
        let components = chromaSubsampling == .gray ? 1 : 3
        var sizes: [(width: Int, height: Int)] = []
        for component in 0..<components {
            var pw: Int32 = 0
            var ph: Int32 = 0
            guard vf_tj_plane_size(Int32(component), Int32(width), Int32(height), sampling, &pw, &ph) == 0 else {
                throw CaptureError(.invalidArgument, "TurboJPEG has no plane geometry for \(width)x\(height)")
            }
            sizes.append((Int(pw), Int(ph)))
        }
        let format = buffer.pixelFormat
        let fullRange = format == .nv12FullRange
        let (halfWidth, halfHeight) = ((width + 1) / 2, (height + 1) / 2)
        let lumaInPlace = fullRange && sizes[0].width == width && sizes[0].height == height
        let chromaResampled = components == 3 && (sizes[1].width != halfWidth || sizes[1].height != halfHeight)
        // Regions: padded luma, 4:2:0 Cb and Cr, resampled Cb and Cr.
        var regions = [lumaInPlace ? 0 : sizes[0].width * sizes[0].height]
        if components == 3 {
            regions += [halfWidth * halfHeight, halfWidth * halfHeight]
            if chromaResampled { regions += [sizes[1].width * sizes[1].height, sizes[2].width * sizes[2].height] }
        }
        let scratch = reserveScratch(regions)
        func source(_ plane: Int) -> (UnsafeMutablePointer<UInt8>, Int) {
            (buffer.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self), buffer.bytesPerRow(ofPlane: plane))
        }

        var result: [Plane] = []
        // Luma, full range, padded to TurboJPEG's plane by repeating the last column and row.
        let (y, yStride) = source(0)
        if lumaInPlace {
            result.append(Plane(base: y, stride: yStride))
        } else {
            let padded = Plane(base: scratch[0], stride: sizes[0].width)
            if fullRange {
                CopyPlane(y, Int32(yStride), padded.base, Int32(padded.stride), Int32(width), Int32(height))
            } else {
                RangeTable.apply(.expandLuma, y, yStride, padded.base, padded.stride, width, height)
            }
            Self.padEdges(padded, width: width, height: height, toWidth: sizes[0].width, toHeight: sizes[0].height)
            result.append(padded)
        }
        guard components == 3 else { return result }

        // Chroma as full-range 4:2:0 planes.
        let u = Plane(base: scratch[1], stride: halfWidth)
        let v = Plane(base: scratch[2], stride: halfWidth)
        if format == .i420 {
            let (su, suStride) = source(1)
            let (sv, svStride) = source(2)
            RangeTable.apply(.expandChroma, su, suStride, u.base, u.stride, halfWidth, halfHeight)
            RangeTable.apply(.expandChroma, sv, svStride, v.base, v.stride, halfWidth, halfHeight)
        } else {
            let (uv, uvStride) = source(1)
            SplitUVPlane(
                uv, Int32(uvStride), u.base, Int32(u.stride), v.base, Int32(v.stride), Int32(halfWidth),
                Int32(halfHeight))
            if !fullRange {
                RangeTable.apply(.expandChroma, u.base, u.stride, u.base, u.stride, halfWidth, halfHeight)
                RangeTable.apply(.expandChroma, v.base, v.stride, v.base, v.stride, halfWidth, halfHeight)
            }
        }
        guard chromaResampled else { return result + [u, v] }
        for (index, plane) in [(1, u), (2, v)] {
            let to = Plane(base: scratch[index + 2], stride: sizes[index].width)
            ScalePlane(
                plane.base, Int32(plane.stride), Int32(halfWidth), Int32(halfHeight), to.base, Int32(to.stride),
                Int32(sizes[index].width), Int32(sizes[index].height), kFilterBilinear)
            result.append(to)
        }
        return result
    }

    /// Repeats the last column and row of a `width` × `height` image out to `toWidth` × `toHeight`.
    private static func padEdges(_ plane: Plane, width: Int, height: Int, toWidth: Int, toHeight: Int) {
        if toWidth > width {
            for row in 0..<height {
                let p = plane.base + row * plane.stride
                for column in width..<toWidth { p[column] = p[width - 1] }
            }
        }
        for row in height..<max(height, toHeight) {
            (plane.base + row * plane.stride).update(from: plane.base + (height - 1) * plane.stride, count: toWidth)
        }
    }

    private func reserveScratch(_ sizes: [Int]) -> [UnsafeMutablePointer<UInt8>] {
        let rounded = sizes.map { ($0 + 63) & ~63 }
        let total = max(64, rounded.reduce(0, +))
        if total > scratchBytes {
            scratch?.deallocate()
            scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: total)
            scratchBytes = total
        }
        var offset = 0
        return rounded.map { size in
            defer { offset += size }
            return scratch! + offset
        }
    }
}
