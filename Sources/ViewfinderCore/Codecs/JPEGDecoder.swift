import CJPEG
import CTurboJPEG
import CYUV

/// How a JPEG image's chroma is subsampled, as its header says.
public enum JPEGChromaSubsampling: Sendable, Hashable, CustomStringConvertible {
    /// No chroma subsampling.
    case yuv444
    /// Chroma at half the width (what most USB webcams send).
    case yuv422
    /// Chroma at half the width and half the height.
    case yuv420
    /// Luma only.
    case gray
    /// Chroma at half the height.
    case yuv440
    /// Chroma at a quarter of the width.
    case yuv411

    package init?(turboJPEG value: Int32) {
        switch value {
        case Int32(TJSAMP_444.rawValue): self = .yuv444
        case Int32(TJSAMP_422.rawValue): self = .yuv422
        case Int32(TJSAMP_420.rawValue): self = .yuv420
        case Int32(TJSAMP_GRAY.rawValue): self = .gray
        case Int32(TJSAMP_440.rawValue): self = .yuv440
        case Int32(TJSAMP_411.rawValue): self = .yuv411
        default: return nil
        }
    }

    /// TurboJPEG's `TJSAMP` value.
    package var turboJPEG: Int32 {
        switch self {
        case .yuv444: return Int32(TJSAMP_444.rawValue)
        case .yuv422: return Int32(TJSAMP_422.rawValue)
        case .yuv420: return Int32(TJSAMP_420.rawValue)
        case .gray: return Int32(TJSAMP_GRAY.rawValue)
        case .yuv440: return Int32(TJSAMP_440.rawValue)
        case .yuv411: return Int32(TJSAMP_411.rawValue)
        }
    }

    public var description: String {
        switch self {
        case .yuv444: return "4:4:4"
        case .yuv422: return "4:2:2"
        case .yuv420: return "4:2:0"
        case .gray: return "greyscale"
        case .yuv440: return "4:4:0"
        case .yuv411: return "4:1:1"
        }
    }
}

/// What a JPEG frame's header says about the image.
public struct JPEGHeader: Sendable, Hashable {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// The chroma subsampling.
    public var subsampling: JPEGChromaSubsampling
    /// Whether the frame carries its own Huffman tables (UVC cameras often omit them).
    public var hasHuffmanTables: Bool
}

/// Decodes Motion-JPEG frames from a camera into pixel buffers with libjpeg-turbo's TurboJPEG API,
/// for one frame size and one output format.
///
/// Outputs: ``PixelFormat/nv12FullRange`` (the natural one: JPEG/JFIF samples are full range),
/// ``PixelFormat/nv12VideoRange`` and ``PixelFormat/i420`` (video range, mapped through range
/// tables), and ``PixelFormat/bgra``.
///
/// 4:2:2, 4:2:0 and greyscale frames (what webcams send) decode in one pass, one iMCU row (8 or
/// 16 lines) at a time, with libjpeg's raw-data API (`jpeg_read_raw_data`, the same IDCT and
/// Huffman decoder TurboJPEG uses): luma straight into the destination, chroma into a few
/// kilobytes of scratch, and each group of rows is finished — chroma averaged to 4:2:0 and
/// interleaved for NV12, or converted to BGRA by libyuv's JPEG-matrix kernels (`J422ToARGB`, …)
/// — while it is still in the L1/L2 cache. No full-frame intermediate planes are written or read
/// back. Other layouts (4:4:4, 4:4:0, 4:1:1) decode with `tjDecompressToYUVPlanes` into scratch
/// planes, and libyuv then merges, subsamples or converts the chroma into the destination.
/// Frames without Huffman tables get the standard ones inserted first
/// (see ``JPEGFrame/withStandardHuffmanTables(_:)-([UInt8])``).
///
/// A frame that is empty, cut short, corrupt (any TurboJPEG error or warning: a damaged frame is
/// never delivered as garbage), or of another size than the decoder's throws
/// ``CaptureError/Code/conversionFailed``; nothing crashes on bad input. Corruption
/// that still decodes as valid entropy-coded data (a flipped magnitude bit) cannot be detected by
/// any decoder.
///
/// Scratch memory is allocated the first time a subsampling is seen and reused from then on;
/// libjpeg's working memory for a frame comes from an arena the decompressor keeps (the CJPEG
/// shim), so a frame the row path takes (4:2:2 at 1/1, 1/2, 1/4; 4:2:0 whole; greyscale at any
/// scale) decodes without allocating. TurboJPEG (other layouts and scales) still allocates its
/// working memory on every call.
///
/// Thread safety: an instance is **not** thread-safe: it owns a TurboJPEG handle, a libjpeg
/// decompressor and scratch planes, so use it from one thread at a time. Separate instances may decode on separate threads
/// at once (two decoders keep two cores busy).
public final class JPEGDecoder: @unchecked Sendable {
    // unchecked: the handle and scratch are used by one thread at a time (documented above).
    /// The formats a decoder can produce.
    public static let supportedPixelFormats: [PixelFormat] = [.nv12FullRange, .nv12VideoRange, .i420, .bgra]

    /// The width every frame must have.
    public let width: Int
    /// The height every frame must have.
    public let height: Int
    /// The format frames are decoded into.
    public let pixelFormat: PixelFormat
    /// The decoder's scale: 1 decodes whole frames; 2, 4 or 8 decode at 1/2, 1/4 or 1/8 of the
    /// size in the DCT domain (libjpeg-turbo's scaling factors: less inverse-transform and colour
    /// work, the same entropy decoding), into buffers of ``outputWidth`` × ``outputHeight``.
    package let scaleDenominator: Int
    /// The width of decoded images: ``width`` divided by ``scaleDenominator``, rounded up.
    package var outputWidth: Int { Self.scaled(width, by: scaleDenominator) }
    /// The height of decoded images: ``height`` divided by ``scaleDenominator``, rounded up.
    package var outputHeight: Int { Self.scaled(height, by: scaleDenominator) }

    /// The scale denominators a decoder takes (TurboJPEG's factors 1/1, 1/2, 1/4, 1/8).
    package static let scaleDenominators = [1, 2, 4, 8]

    /// `dimension` decoded at 1/`denominator` (TurboJPEG's `TJSCALED`: rounded up).
    package static func scaled(_ dimension: Int, by denominator: Int) -> Int {
        (dimension + denominator - 1) / denominator
    }

    /// BGRA through planes and libyuv (`J422ToARGB` …), the default; `false` uses `tjDecompress2`
    /// straight to BGRA (smoother chroma upsampling, about 8 % more CPU at 1080p 4:2:2).
    package var decodesBGRAThroughPlanes = true

    /// Whether 4:2:2, 4:2:0 and greyscale frames decode row group by row group through libjpeg's
    /// raw-data API (the default); `false` sends every frame through TurboJPEG's whole-frame
    /// planes (tests compare the two).
    package var decodesByRows = true

    /// Frames decoded through the row-group path so far (for tests).
    package private(set) var framesDecodedByRows = 0

    private var handle: tjhandle
    /// A DHT-less frame with the standard tables inserted (capacity kept between frames).
    private var repaired: [UInt8] = []
    private var scratch: UnsafeMutablePointer<UInt8>?
    private var scratchBytes = 0
    /// libjpeg's decompressor for the row-group path (`vf_jpeg_decoder *`).
    private let rows: OpaquePointer
    private var rowScratch: UnsafeMutablePointer<UInt8>?
    private var rowScratchBytes = 0

    /// A decoder of `width` × `height` frames into `pixelFormat` (one of
    /// ``supportedPixelFormats``).
    public init(width: Int, height: Int, pixelFormat: PixelFormat) throws(CaptureError) {
        (handle, rows) = try Self.makeDecompressors(width: width, height: height, pixelFormat: pixelFormat)
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        scaleDenominator = 1
    }

    /// A decoder of `width` × `height` frames into `pixelFormat` at 1/`scaleDenominator` of their
    /// size (1, 2, 4 or 8; see ``scaleDenominator``).
    package init(width: Int, height: Int, pixelFormat: PixelFormat, scaleDenominator: Int) throws(CaptureError) {
        guard Self.scaleDenominators.contains(scaleDenominator) else {
            throw CaptureError(
                .invalidArgument,
                "a JPEG decoder scales by 1/1, 1/2, 1/4 or 1/8, not 1/\(scaleDenominator): choose one of those")
        }
        (handle, rows) = try Self.makeDecompressors(width: width, height: height, pixelFormat: pixelFormat)
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.scaleDenominator = scaleDenominator
    }

    /// Checks a decoder's size and format and makes its TurboJPEG and libjpeg decompressors.
    private static func makeDecompressors(
        width: Int, height: Int, pixelFormat: PixelFormat
    ) throws(CaptureError) -> (tjhandle, OpaquePointer) {
        guard width > 0, height > 0, width <= 32767, height <= 32767 else {
            throw CaptureError(
                .invalidArgument, "a JPEG decoder needs a size of 1 to 32767 pixels, got \(width)x\(height)")
        }
        guard supportedPixelFormats.contains(pixelFormat) else {
            throw CaptureError(
                .unsupportedPixelFormat,
                "JPEG frames decode to \(supportedPixelFormats.map(\.name).joined(separator: ", ")), not \(pixelFormat)"
            )
        }
        guard let handle = tjInitDecompress() else {
            throw CaptureError(.systemError, "could not create a TurboJPEG decompressor: \(lastError(nil))")
        }
        guard let rows = vf_jpeg_create() else {
            tjDestroy(handle)
            throw CaptureError(.systemError, "could not create a libjpeg decompressor (out of memory)")
        }
        return (handle, rows)
    }

    deinit {
        tjDestroy(handle)
        vf_jpeg_destroy(rows)
        scratch?.deallocate()
        rowScratch?.deallocate()
    }

    // MARK: - Header

    /// Parses a frame's header, checking that it is a complete JPEG image of the decoder's size.
    public func readHeader(_ frame: UnsafeRawBufferPointer) throws(CaptureError) -> JPEGHeader {
        let (base, scan) = try Self.checkStructure(frame)
        var w: Int32 = 0
        var h: Int32 = 0
        var sampling: Int32 = 0
        var colorspace: Int32 = 0
        let status = tjDecompressHeader3(
            handle, base.assumingMemoryBound(to: UInt8.self), UInt(frame.count), &w, &h, &sampling, &colorspace)
        guard status == 0 else {
            let message = Self.lastError(handle)
            resetHandle()
            throw CaptureError(.conversionFailed, "a JPEG frame's header is invalid: \(message)")
        }
        guard let subsampling = JPEGChromaSubsampling(turboJPEG: sampling) else {
            throw CaptureError(.conversionFailed, "a JPEG frame has an unsupported chroma subsampling (\(sampling))")
        }
        guard colorspace == Int32(TJCS_YCbCr.rawValue) || colorspace == Int32(TJCS_GRAY.rawValue) else {
            throw CaptureError(
                .conversionFailed, "a JPEG frame is not Y'CbCr or greyscale (TurboJPEG colorspace \(colorspace))")
        }
        guard Int(w) == width, Int(h) == height else {
            throw CaptureError(
                .conversionFailed,
                "a JPEG frame is \(w)x\(h) but the camera's format is \(width)x\(height); the frame was dropped")
        }
        return JPEGHeader(
            width: Int(w), height: Int(h), subsampling: subsampling, hasHuffmanTables: scan.hasHuffmanTables)
    }

    /// The checks every frame passes before a decoder reads it: not empty, markers well formed up
    /// to the first scan, an end-of-image marker (a frame without one was cut short). Returns the
    /// frame's first byte and what precedes its scan.
    private static func checkStructure(_ frame: UnsafeRawBufferPointer) throws(CaptureError) -> (
        base: UnsafeRawPointer, scan: (offset: Int, hasHuffmanTables: Bool)
    ) {
        guard let base = frame.baseAddress, !frame.isEmpty else {
            throw CaptureError(.conversionFailed, "a JPEG frame was empty: the camera delivered no data")
        }
        guard let scan = JPEGFrame.scanStart(frame) else {
            throw CaptureError(
                .conversionFailed, "a JPEG frame of \(frame.count) bytes has no valid marker structure before its scan")
        }
        guard JPEGFrame.endsWithEndOfImage(frame) else {
            throw CaptureError(
                .conversionFailed, "a JPEG frame of \(frame.count) bytes was cut short (no end-of-image marker)")
        }
        return (base, scan)
    }

    // MARK: - Decoding

    /// Decodes `frame` into a buffer from `pool` (which must match the decoder's size and
    /// format). Throws ``CaptureError/Code/outOfBuffers`` when the pool is exhausted.
    public func decode(_ frame: UnsafeRawBufferPointer, from pool: PixelBufferPool) throws(CaptureError) -> PixelBuffer
    {
        guard let buffer = pool.makePixelBuffer() else {
            throw CaptureError(
                .outOfBuffers,
                "every buffer of the JPEG decoder's pool (\(pool.capacity)) is in use: release frames sooner")
        }
        try decode(frame, into: buffer)
        return buffer
    }

    /// Decodes a Motion-JPEG pixel buffer (its first ``PixelBuffer/dataSize`` bytes) into
    /// `destination`.
    public func decode(_ frame: PixelBuffer, into destination: PixelBuffer) throws(CaptureError) {
        guard frame.pixelFormat == .mjpeg else {
            throw CaptureError(.invalidArgument, "JPEGDecoder decodes Motion-JPEG buffers, not \(frame.pixelFormat)")
        }
        try decode(UnsafeRawBufferPointer(start: frame.baseAddress, count: frame.dataSize), into: destination)
    }

    /// Decodes the JPEG bytes `frame` into `destination`.
    public func decode(_ frame: [UInt8], into destination: PixelBuffer) throws(CaptureError) {
        let result: CaptureError? = frame.withUnsafeBytes { bytes in
            do throws(CaptureError) {
                try decode(bytes, into: destination)
                return nil
            } catch {
                return error
            }
        }
        if let result { throw result }
    }

    /// Decodes the JPEG bytes `frame` into `destination`, a buffer of the decoder's size and
    /// format. On error the destination's contents are unspecified; do not deliver it.
    ///
    /// A frame without Huffman tables is decoded with the standard ones inserted (into a buffer
    /// the decoder keeps), never with tables an earlier frame left in the TurboJPEG handle.
    public func decode(_ frame: UnsafeRawBufferPointer, into destination: PixelBuffer) throws(CaptureError) {
        do throws(CaptureError) {
            if let scan = JPEGFrame.scanStart(frame), !scan.hasHuffmanTables {
                repaired.removeAll(keepingCapacity: true)
                repaired.append(contentsOf: frame[0..<scan.offset])
                repaired.append(contentsOf: JPEGFrame.standardHuffmanTableSegment)
                repaired.append(contentsOf: frame[scan.offset...])
                let result: CaptureError? = repaired.withUnsafeBytes { bytes in
                    do throws(CaptureError) {
                        try decodeComplete(bytes, into: destination)
                        return nil
                    } catch {
                        return error
                    }
                }
                if let result { throw result }
            } else {
                try decodeComplete(frame, into: destination)
            }
        } catch {
            if error.code == .conversionFailed { resetHandle() }
            throw error
        }
    }

    /// A damaged frame can leave state (tables, a half-read header) in the TurboJPEG handle, and
    /// a later, valid frame then fails: start over with a fresh handle.
    private func resetHandle() {
        guard let fresh = tjInitDecompress() else { return }
        tjDestroy(handle)
        handle = fresh
    }

    private func decodeComplete(_ frame: UnsafeRawBufferPointer, into destination: PixelBuffer) throws(CaptureError) {
        guard destination.pixelFormat == pixelFormat, destination.width == outputWidth,
            destination.height == outputHeight
        else {
            throw CaptureError(
                .invalidArgument,
                "a \(outputWidth)x\(outputHeight) \(pixelFormat) JPEG decoder cannot fill a \(destination.width)x\(destination.height) \(destination.pixelFormat) buffer"
            )
        }
        // The row-group path decodes whole and scaled frames (libjpeg's scaled IDCT); what it does not
        // take (other layouts, a 4:2:0 scaled frame, 4:2:2 at 1/8) goes through TurboJPEG's planes.
        if decodesByRows && (pixelFormat != .bgra || decodesBGRAThroughPlanes) {
            if try decodeByRows(frame, into: destination) { return }
        }
        let header = try readHeader(frame)
        let source = frame.baseAddress!.assumingMemoryBound(to: UInt8.self)
        if pixelFormat == .bgra && !decodesBGRAThroughPlanes {
            let status = tjDecompress2(
                handle, source, UInt(frame.count), destination.baseAddress.assumingMemoryBound(to: UInt8.self),
                Int32(outputWidth), Int32(destination.bytesPerRow), Int32(outputHeight), Int32(TJPF_BGRA.rawValue),
                Self.flags)
            try check(status, frameBytes: frame.count)
            return
        }
        try decodeThroughPlanes(source, count: frame.count, header: header, into: destination)
    }

    /// Strict decoding: stop at the first warning (a damaged frame), accurate IDCT.
    private static let flags = TJFLAG_STOPONWARNING | TJFLAG_ACCURATEDCT

    private func check(_ status: Int32, frameBytes: Int) throws(CaptureError) {
        guard status != 0 else { return }
        let kind = vf_tj_last_error_is_warning(handle) != 0 ? "damaged" : "invalid"
        throw CaptureError(
            .conversionFailed,
            "a JPEG frame of \(frameBytes) bytes is \(kind) and was dropped: \(Self.lastError(handle))")
    }

    private static func lastError(_ handle: tjhandle?) -> String {
        guard let message = tjGetErrorStr2(handle) else { return "unknown TurboJPEG error" }
        return String(cString: message)
    }

    /// A plane: its first byte and row stride.
    private struct Plane {
        var base: UnsafeMutablePointer<UInt8>
        var stride: Int
        var width: Int
        var height: Int
    }

    /// Decodes through TurboJPEG's whole-frame planes (the layouts the row path does not take, and
    /// every scaled decode), then merges, subsamples or converts the chroma into `destination`.
    /// Allocates nothing once the scratch block has grown to the layout (no arrays: the plane
    /// pointers live on the stack, 4:2:2 chroma halves by row-pair averaging, not libyuv's scaler,
    /// which mallocs a row per call).
    private func decodeThroughPlanes(
        _ source: UnsafePointer<UInt8>, count: Int, header: JPEGHeader, into destination: PixelBuffer
    ) throws(CaptureError) {
        // The decoded image's geometry (TurboJPEG scales when it is smaller than the frame).
        let (width, height) = (outputWidth, outputHeight)
        let sampling = header.subsampling.turboJPEG
        let componentCount = header.subsampling == .gray ? 1 : 3
        func planeSize(_ component: Int) throws(CaptureError) -> (width: Int, height: Int) {
            guard component < componentCount else { return (0, 0) }
            var pw: Int32 = 0
            var ph: Int32 = 0
            guard vf_tj_plane_size(Int32(component), Int32(width), Int32(height), sampling, &pw, &ph) == 0 else {
                throw CaptureError(
                    .conversionFailed, "TurboJPEG has no plane geometry for a \(header.subsampling) frame")
            }
            return (Int(pw), Int(ph))
        }
        let luma = try planeSize(0)
        let chroma = try planeSize(1)
        let isYUV = pixelFormat != .bgra
        let halfWidth = (width + 1) / 2
        let halfHeight = (height + 1) / 2
        // Luma goes straight into the destination when TurboJPEG's plane is exactly the image.
        let lumaDirect = isYUV && luma.width == width && luma.height == height
        // I420 takes the chroma planes straight too when they already have its geometry.
        let chromaDirect =
            pixelFormat == .i420 && componentCount == 3 && chroma.width == halfWidth && chroma.height == halfHeight
        let needsResample =
            componentCount == 3 && isYUV && (chroma.width != halfWidth || chroma.height != halfHeight)
        // 4:2:2 (chroma at half width, whole height) halves its rows by averaging pairs.
        let pairsRows = needsResample && chroma.width == halfWidth && chroma.height == height
        // BGRA from 4:4:0 or 4:1:1 goes through chroma resampled to 4:4:4.
        let bgraResample = !isYUV && (header.subsampling == .yuv440 || header.subsampling == .yuv411)
        // Scratch regions, 64-byte aligned; chroma planes get a spare row (an odd height's last
        // row pairs with a copy of itself).
        let lumaBytes = lumaDirect ? 0 : luma.width * luma.height
        let chromaBytes = chromaDirect || componentCount == 1 ? 0 : chroma.width * (chroma.height + 1)
        let halfBytes = needsResample ? halfWidth * halfHeight : 0
        let fullBytes = bgraResample ? width * height : 0
        func rounded(_ bytes: Int) -> Int { (bytes + 63) & ~63 }
        ensureScratch(
            max(64, rounded(lumaBytes) + 2 * rounded(chromaBytes) + 2 * rounded(halfBytes) + 2 * rounded(fullBytes)))
        var next = scratch!
        func carve(_ bytes: Int) -> UnsafeMutablePointer<UInt8> {
            defer { next += rounded(bytes) }
            return next
        }
        let scratchY = carve(lumaBytes)
        let scratchU = carve(chromaBytes)
        let scratchV = carve(chromaBytes)
        let halfU = carve(halfBytes)
        let halfV = carve(halfBytes)
        let fullU = carve(fullBytes)
        let fullV = carve(fullBytes)

        let y =
            lumaDirect
            ? Plane(
                base: destination.baseAddress(ofPlane: 0).assumingMemoryBound(to: UInt8.self),
                stride: destination.bytesPerRow(ofPlane: 0), width: width, height: height)
            : Plane(base: scratchY, stride: luma.width, width: luma.width, height: luma.height)
        var u = y
        var v = y
        if componentCount == 3 {
            if chromaDirect {
                u = Plane(
                    base: destination.baseAddress(ofPlane: 1).assumingMemoryBound(to: UInt8.self),
                    stride: destination.bytesPerRow(ofPlane: 1), width: halfWidth, height: halfHeight)
                v = Plane(
                    base: destination.baseAddress(ofPlane: 2).assumingMemoryBound(to: UInt8.self),
                    stride: destination.bytesPerRow(ofPlane: 2), width: halfWidth, height: halfHeight)
            } else {
                u = Plane(base: scratchU, stride: chroma.width, width: chroma.width, height: chroma.height)
                v = Plane(base: scratchV, stride: chroma.width, width: chroma.width, height: chroma.height)
            }
        }
        let status = withUnsafeTemporaryAllocation(of: UnsafeMutablePointer<UInt8>?.self, capacity: 3) { planes in
            withUnsafeTemporaryAllocation(of: Int32.self, capacity: 3) { strides in
                planes[0] = y.base
                planes[1] = u.base
                planes[2] = v.base
                strides[0] = Int32(y.stride)
                strides[1] = Int32(u.stride)
                strides[2] = Int32(v.stride)
                return tjDecompressToYUVPlanes(
                    handle, source, UInt(count), planes.baseAddress, Int32(width), strides.baseAddress, Int32(height),
                    Self.flags)
            }
        }
        try check(status, frameBytes: count)

        if pixelFormat == .bgra {
            let full = bgraResample ? (fullU, fullV) : nil
            try toBGRA(y: y, u: u, v: v, subsampling: header.subsampling, fullChroma: full, into: destination)
            return
        }
        // Chroma at 4:2:0 geometry.
        if needsResample {
            let su = Plane(base: halfU, stride: halfWidth, width: halfWidth, height: halfHeight)
            let sv = Plane(base: halfV, stride: halfWidth, width: halfWidth, height: halfHeight)
            func resample(_ from: Plane, _ to: Plane) {
                if pairsRows {
                    if from.height % 2 == 1 {
                        (from.base + from.height * from.stride).update(
                            from: from.base + (from.height - 1) * from.stride, count: from.stride)
                    }
                    InterpolatePlane(
                        from.base, Int32(2 * from.stride), from.base + from.stride, Int32(2 * from.stride), to.base,
                        Int32(to.stride), Int32(to.width), Int32(to.height), 128)
                } else {
                    ScalePlane(
                        from.base, Int32(from.stride), Int32(from.width), Int32(from.height), to.base,
                        Int32(to.stride), Int32(to.width), Int32(to.height), kFilterBilinear)
                }
            }
            resample(u, su)
            resample(v, sv)
            u = su
            v = sv
        }
        let dstY = destination.baseAddress(ofPlane: 0).assumingMemoryBound(to: UInt8.self)
        let dstYStride = destination.bytesPerRow(ofPlane: 0)
        let videoRange = pixelFormat != .nv12FullRange
        if videoRange {
            RangeTable.apply(.compressLuma, y.base, y.stride, dstY, dstYStride, width, height)
        } else if !lumaDirect {
            CopyPlane(y.base, Int32(y.stride), dstY, Int32(dstYStride), Int32(width), Int32(height))
        }
        switch pixelFormat {
        case .nv12FullRange, .nv12VideoRange:
            let uv = destination.baseAddress(ofPlane: 1).assumingMemoryBound(to: UInt8.self)
            let uvStride = destination.bytesPerRow(ofPlane: 1)
            if componentCount == 1 {
                SetPlane(uv, Int32(uvStride), Int32(2 * halfWidth), Int32(halfHeight), 128)
            } else {
                MergeUVPlane(
                    u.base, Int32(u.stride), v.base, Int32(v.stride), uv, Int32(uvStride), Int32(halfWidth),
                    Int32(halfHeight))
                if videoRange {
                    RangeTable.apply(.compressChroma, uv, uvStride, uv, uvStride, 2 * halfWidth, halfHeight)
                }
            }
        case .i420:
            func fill(_ index: Int, from plane: Plane) {
                let to = destination.baseAddress(ofPlane: index).assumingMemoryBound(to: UInt8.self)
                let toStride = destination.bytesPerRow(ofPlane: index)
                if componentCount == 1 {
                    SetPlane(to, Int32(toStride), Int32(halfWidth), Int32(halfHeight), 128)
                } else {
                    RangeTable.apply(.compressChroma, plane.base, plane.stride, to, toStride, halfWidth, halfHeight)
                }
            }
            fill(1, from: u)
            fill(2, from: v)
        default:
            break
        }
    }

    /// Full-range planes to BGRA through libyuv's JPEG-matrix ("J") conversions.
    private func toBGRA(
        y: Plane, u: Plane, v: Plane, subsampling: JPEGChromaSubsampling,
        fullChroma: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>)?, into destination: PixelBuffer
    ) throws(CaptureError) {
        let argb = destination.baseAddress.assumingMemoryBound(to: UInt8.self)
        let stride = Int32(destination.bytesPerRow)
        let (w, h) = (Int32(outputWidth), Int32(outputHeight))
        let (sy, su, sv) = (Int32(y.stride), Int32(u.stride), Int32(v.stride))
        let status: Int32
        switch subsampling {
        case .yuv420: status = J420ToARGB(y.base, sy, u.base, su, v.base, sv, argb, stride, w, h)
        case .yuv422: status = J422ToARGB(y.base, sy, u.base, su, v.base, sv, argb, stride, w, h)
        case .yuv444: status = J444ToARGB(y.base, sy, u.base, su, v.base, sv, argb, stride, w, h)
        case .gray: status = J400ToARGB(y.base, sy, argb, stride, w, h)
        case .yuv440, .yuv411:
            // Rare layouts: resample chroma to 4:4:4 in scratch first.
            guard let (fu, fv) = fullChroma else {
                throw CaptureError(.conversionFailed, "no scratch for resampling \(subsampling) chroma")
            }
            ScalePlane(u.base, su, Int32(u.width), Int32(u.height), fu, w, w, h, kFilterBilinear)
            ScalePlane(v.base, sv, Int32(v.width), Int32(v.height), fv, w, w, h, kFilterBilinear)
            status = J444ToARGB(y.base, sy, fu, w, fv, w, argb, stride, w, h)
        }
        guard status == 0 else {
            throw CaptureError(
                .conversionFailed, "libyuv could not convert a decoded \(subsampling) JPEG frame to BGRA")
        }
    }

    // MARK: - Row groups

    /// Decodes a 4:2:2, 4:2:0 or greyscale frame one iMCU row at a time, finishing each group of
    /// rows into `destination` while it is in cache. Returns `false` (nothing decoded, nothing
    /// written) for another layout, which the caller then decodes through TurboJPEG.
    private func decodeByRows(_ frame: UnsafeRawBufferPointer, into destination: PixelBuffer) throws(CaptureError)
        -> Bool
    {
        let base = try Self.checkStructure(frame).base
        var info = vf_jpeg_info()
        guard
            vf_jpeg_start_scaled(
                rows, base.assumingMemoryBound(to: UInt8.self), UInt(frame.count), Int32(scaleDenominator), &info) == 0
        else {
            throw rowError(frameBytes: frame.count)
        }
        guard let subsampling = JPEGChromaSubsampling(turboJPEG: info.subsampling) else { return false }
        guard Int(info.width) == self.width, Int(info.height) == self.height else {
            vf_jpeg_abort(rows)
            throw CaptureError(
                .conversionFailed,
                "a JPEG frame is \(info.width)x\(info.height) but the camera's format is \(self.width)x\(self.height); the frame was dropped"
            )
        }
        // From here on, the decoded image's size (the frame's at 1/scaleDenominator).
        let (width, height) = (Int(info.output_width), Int(info.output_height))
        guard width == outputWidth, height == outputHeight else {
            vf_jpeg_abort(rows)
            throw CaptureError(
                .conversionFailed,
                "libjpeg decodes this frame at 1/\(scaleDenominator) to \(width)x\(height), not \(outputWidth)x\(outputHeight); the frame was dropped"
            )
        }
        let groupRows = Int(info.luma_rows)
        let lumaRowBytes = (Int(info.luma_row_bytes) + 63) & ~63
        let chromaRowBytes = (Int(info.chroma_row_bytes) + 63) & ~63
        let chromaRows = Int(info.chroma_rows)
        let halfWidth = (width + 1) / 2
        let halfHeight = (height + 1) / 2
        let halfRowBytes = (halfWidth + 63) & ~63
        // Scratch: one group of luma rows, Cb and Cr rows, and 4:2:0 chroma averaged from 4:2:2.
        let lumaBytes = lumaRowBytes * groupRows
        let chromaBytes = chromaRowBytes * chromaRows
        let averagedBytes = halfRowBytes * max(1, chromaRows / 2)
        ensureRowScratch(lumaBytes + 2 * chromaBytes + 2 * averagedBytes)
        let scratchY = rowScratch!
        let cb = scratchY + lumaBytes
        let cr = cb + chromaBytes
        let averagedU = cr + chromaBytes
        let averagedV = averagedU + averagedBytes

        let isBGRA = pixelFormat == .bgra
        let videoRange = pixelFormat != .nv12FullRange && !isBGRA
        let dstY = destination.baseAddress(ofPlane: 0).assumingMemoryBound(to: UInt8.self)
        let dstYStride = destination.bytesPerRow(ofPlane: 0)
        var row = 0
        while row < height {
            // Luma straight into the destination when the whole group (block padding included) fits.
            let direct = !isBGRA && row + groupRows <= height && dstYStride >= Int(info.luma_row_bytes)
            let y = direct ? dstY + row * dstYStride : scratchY
            let yStride = direct ? dstYStride : lumaRowBytes
            let read = vf_jpeg_read_rows(
                rows, y, Int32(yStride), cb, Int32(chromaRowBytes), cr, Int32(chromaRowBytes))
            guard read > 0 else { throw rowError(frameBytes: frame.count) }
            let count = min(Int(read), height - row)
            if isBGRA {
                try rowsToBGRA(
                    y: y, yStride: yStride, cb: cb, cr: cr, chromaStride: chromaRowBytes, subsampling: subsampling,
                    row: row, count: count, width: width, into: destination)
                row += groupRows
                continue
            }
            // Luma: range-mapped in place, or copied from scratch.
            if direct {
                if videoRange { RangeTable.apply(.compressLuma, y, yStride, y, yStride, width, count) }
            } else if videoRange {
                RangeTable.apply(.compressLuma, y, yStride, dstY + row * dstYStride, dstYStride, width, count)
            } else {
                CopyPlane(y, Int32(yStride), dstY + row * dstYStride, Int32(dstYStride), Int32(width), Int32(count))
            }
            // Chroma at 4:2:0: rows row/2 ..< row/2 + pairs.
            let chromaRow = row / 2
            let pairs = min((count + 1) / 2, halfHeight - chromaRow)
            var u: UnsafeMutablePointer<UInt8> = cb
            var v: UnsafeMutablePointer<UInt8> = cr
            var uvStride = chromaRowBytes
            if subsampling == .yuv422 {
                if count % 2 == 1 {
                    // An odd last row pairs with itself, not with the block's padding row.
                    (cb + count * chromaRowBytes).update(from: cb + (count - 1) * chromaRowBytes, count: chromaRowBytes)
                    (cr + count * chromaRowBytes).update(from: cr + (count - 1) * chromaRowBytes, count: chromaRowBytes)
                }
                // Each 4:2:0 row is the mean of two 4:2:2 rows (a 2:1 box; ScalePlane's bilinear
                // halving gives the same for even heights).
                InterpolatePlane(
                    cb, Int32(2 * chromaRowBytes), cb + chromaRowBytes, Int32(2 * chromaRowBytes), averagedU,
                    Int32(halfRowBytes), Int32(halfWidth), Int32(pairs), 128)
                InterpolatePlane(
                    cr, Int32(2 * chromaRowBytes), cr + chromaRowBytes, Int32(2 * chromaRowBytes), averagedV,
                    Int32(halfRowBytes), Int32(halfWidth), Int32(pairs), 128)
                u = averagedU
                v = averagedV
                uvStride = halfRowBytes
            }
            let gray = subsampling == .gray
            switch pixelFormat {
            case .nv12FullRange, .nv12VideoRange:
                let uvStrideOut = destination.bytesPerRow(ofPlane: 1)
                let uv =
                    destination.baseAddress(ofPlane: 1).assumingMemoryBound(to: UInt8.self) + chromaRow * uvStrideOut
                if gray {
                    SetPlane(uv, Int32(uvStrideOut), Int32(2 * halfWidth), Int32(pairs), 128)
                } else {
                    MergeUVPlane(
                        u, Int32(uvStride), v, Int32(uvStride), uv, Int32(uvStrideOut), Int32(halfWidth), Int32(pairs))
                    if videoRange {
                        RangeTable.apply(.compressChroma, uv, uvStrideOut, uv, uvStrideOut, 2 * halfWidth, pairs)
                    }
                }
            case .i420:
                // Two planes, without an array per group.
                func fill(_ index: Int, from plane: UnsafeMutablePointer<UInt8>) {
                    let stride = destination.bytesPerRow(ofPlane: index)
                    let to =
                        destination.baseAddress(ofPlane: index).assumingMemoryBound(to: UInt8.self) + chromaRow * stride
                    if gray {
                        SetPlane(to, Int32(stride), Int32(halfWidth), Int32(pairs), 128)
                    } else {
                        RangeTable.apply(.compressChroma, plane, uvStride, to, stride, halfWidth, pairs)
                    }
                }
                fill(1, from: u)
                fill(2, from: v)
            default:
                break
            }
            row += groupRows
        }
        guard vf_jpeg_finish(rows) == 0 else { throw rowError(frameBytes: frame.count) }
        framesDecodedByRows &+= 1
        return true
    }

    /// One group of decoded full-range rows to BGRA through libyuv's JPEG-matrix ("J") kernels.
    private func rowsToBGRA(
        y: UnsafeMutablePointer<UInt8>, yStride: Int, cb: UnsafeMutablePointer<UInt8>, cr: UnsafeMutablePointer<UInt8>,
        chromaStride: Int, subsampling: JPEGChromaSubsampling, row: Int, count: Int, width: Int,
        into destination: PixelBuffer
    ) throws(CaptureError) {
        let stride = destination.bytesPerRow
        let argb = destination.baseAddress.assumingMemoryBound(to: UInt8.self) + row * stride
        let (sy, sc, w, h) = (Int32(yStride), Int32(chromaStride), Int32(width), Int32(count))
        let status: Int32
        switch subsampling {
        case .yuv422: status = J422ToARGB(y, sy, cb, sc, cr, sc, argb, Int32(stride), w, h)
        case .yuv420: status = J420ToARGB(y, sy, cb, sc, cr, sc, argb, Int32(stride), w, h)
        case .gray: status = J400ToARGB(y, sy, argb, Int32(stride), w, h)
        default: status = -1
        }
        guard status == 0 else {
            vf_jpeg_abort(rows)
            throw CaptureError(
                .conversionFailed, "libyuv could not convert a decoded \(subsampling) JPEG frame to BGRA")
        }
    }

    private func rowError(frameBytes: Int) -> CaptureError {
        let kind = vf_jpeg_error_is_warning(rows) != 0 ? "damaged" : "invalid"
        return CaptureError(
            .conversionFailed,
            "a JPEG frame of \(frameBytes) bytes is \(kind) and was dropped: \(String(cString: vf_jpeg_error(rows)))")
    }

    private func ensureRowScratch(_ bytes: Int) {
        guard bytes > rowScratchBytes else { return }
        rowScratch?.deallocate()
        rowScratch = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes)
        rowScratchBytes = bytes
    }

    // MARK: - Scratch

    private func ensureScratch(_ bytes: Int) {
        guard bytes > scratchBytes else { return }
        scratch?.deallocate()
        scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes)
        scratchBytes = bytes
    }
}
