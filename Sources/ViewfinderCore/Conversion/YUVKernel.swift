import CYUV

/// The libyuv conversions Viewfinder uses, one per (source, destination) pair at the same size,
/// and libyuv's scalers. A kernel converts whatever rows its views cover, so the converter can
/// run it on a whole frame or on horizontal bands; `run` returns libyuv's status (0 = success).
///
/// Every kernel processes rows in pairs, so bands must start on even rows.
///
/// Kernels are the edges of a small graph over the convertible formats; ``ConversionRoute``
/// chains them for pairs no single kernel covers. Besides libyuv's functions there are range
/// tables (NV12 video range to full range and back, one table look-up per byte).
package struct YUVKernel: Sendable {
    /// Relative cost, for choosing routes: 1 for a plain pass, more for passes through RGB
    /// (which round and clip) and for range tables (which round once more).
    package let cost: Double
    /// Whether `run` needs `scratch`: one row pair's chroma, ``scratchBytes(width:)`` long, for
    /// any number of rows. libyuv's own function for such a pair allocates it on every call; the
    /// converter's scratch is allocated once per band.
    package let needsScratch: Bool
    package let run:
        @Sendable (_ source: ImageView, _ destination: ImageView, _ scratch: UnsafeMutablePointer<UInt8>?) -> Int32

    package init(
        cost: Double = 1, needsScratch: Bool = false,
        run: @escaping @Sendable (ImageView, ImageView, UnsafeMutablePointer<UInt8>?) -> Int32
    ) {
        self.cost = cost
        self.needsScratch = needsScratch
        self.run = run
    }

    /// The scratch bytes a kernel that ``needsScratch`` uses for rows `width` wide.
    package static func scratchBytes(width: Int) -> Int { vf_argb_to_nv12_scratch_bytes(Int32(width)) }

    /// Every format a kernel starts or ends at.
    package static let formats: [PixelFormat] = [.yuyv, .nv12VideoRange, .nv12FullRange, .bgra, .i420]

    package static func find(from source: PixelFormat, to destination: PixelFormat) -> YUVKernel? {
        let rgb = 1.5
        switch (source, destination) {
        case (.yuyv, .bgra):
            return YUVKernel(cost: rgb) { s, d, _ in YUY2ToARGB(s.c0, s.s0, d.m0, d.s0, s.w, s.h) }
        case (.yuyv, .nv12VideoRange):
            return YUVKernel { s, d, _ in YUY2ToNV12(s.c0, s.s0, d.m0, d.s0, d.m1, d.s1, s.w, s.h) }
        case (.yuyv, .i420):
            return YUVKernel { s, d, _ in YUY2ToI420(s.c0, s.s0, d.m0, d.s0, d.m1, d.s1, d.m2, d.s2, s.w, s.h) }
        case (.nv12VideoRange, .bgra), (.nv12FullRange, .bgra):
            let fullRange = source == .nv12FullRange
            return YUVKernel(cost: rgb) { s, d, _ in
                NV12ToARGBMatrix(s.c0, s.s0, s.c1, s.s1, d.m0, d.s0, constants(fullRange: fullRange), s.w, s.h)
            }
        case (.nv12VideoRange, .i420):
            return YUVKernel { s, d, _ in
                NV12ToI420(s.c0, s.s0, s.c1, s.s1, d.m0, d.s0, d.m1, d.s1, d.m2, d.s2, s.w, s.h)
            }
        case (.bgra, .nv12VideoRange), (.bgra, .nv12FullRange):
            // A row pair at a time with libyuv's row functions (`vf_argb_to_nv12`): what
            // libyuv's ARGBToNV12 does, the chroma interleaved while in cache, but with the row
            // pair's chroma in the converter's scratch (ARGBToNV12 mallocs it on every call) and
            // with libyuv's full-range ("J", BT.601 full range) rows too, which ARGBToNV12 lacks.
            // Through planar chroma in scratch and MergeUVPlane instead, strip by strip, it cost
            // 3–9 % more at 1080p.
            let fullRange: Int32 = destination == .nv12FullRange ? 1 : 0
            return YUVKernel(cost: rgb, needsScratch: true) { s, d, scratch in
                guard let scratch else { return -1 }
                return vf_argb_to_nv12(s.c0, s.s0, d.m0, d.s0, d.m1, d.s1, s.w, s.h, fullRange, scratch)
            }
        case (.bgra, .i420):
            return YUVKernel(cost: rgb) { s, d, _ in
                ARGBToI420(s.c0, s.s0, d.m0, d.s0, d.m1, d.s1, d.m2, d.s2, s.w, s.h)
            }
        case (.bgra, .yuyv):
            return YUVKernel(cost: rgb) { s, d, _ in ARGBToYUY2(s.c0, s.s0, d.m0, d.s0, s.w, s.h) }
        case (.i420, .bgra):
            return YUVKernel(cost: rgb) { s, d, _ in
                I420ToARGB(s.c0, s.s0, s.c1, s.s1, s.c2, s.s2, d.m0, d.s0, s.w, s.h)
            }
        case (.i420, .nv12VideoRange):
            return YUVKernel { s, d, _ in
                I420ToNV12(s.c0, s.s0, s.c1, s.s1, s.c2, s.s2, d.m0, d.s0, d.m1, d.s1, s.w, s.h)
            }
        case (.i420, .yuyv):
            return YUVKernel { s, d, _ in I420ToYUY2(s.c0, s.s0, s.c1, s.s1, s.c2, s.s2, d.m0, d.s0, s.w, s.h) }
        case (.nv12VideoRange, .nv12FullRange), (.nv12FullRange, .nv12VideoRange):
            let expand = destination == .nv12FullRange
            return YUVKernel(cost: 1.1) { s, d, _ in
                RangeTable.apply(
                    expand ? .expandLuma : .compressLuma, s.c0, s.strides.0, d.m0, d.strides.0, s.width, s.height)
                RangeTable.apply(
                    expand ? .expandChroma : .compressChroma, s.c1, s.strides.1, d.m1, d.strides.1,
                    2 * ((s.width + 1) / 2),
                    (s.height + 1) / 2)
                return 0
            }
        case (.bgra, .bgra):
            return YUVKernel(cost: 0.5) { s, d, _ in ARGBCopy(s.c0, s.s0, d.m0, d.s0, s.w, s.h) }
        case (.yuyv, .yuyv):
            return YUVKernel(cost: 0.5) { s, d, _ in
                CopyPlane(s.c0, s.s0, d.m0, d.s0, s.halfW * 4, s.h)
                return 0
            }
        case (.nv12VideoRange, .nv12VideoRange), (.nv12FullRange, .nv12FullRange):
            return YUVKernel(cost: 0.5) { s, d, _ in NV12Copy(s.c0, s.s0, s.c1, s.s1, d.m0, d.s0, d.m1, d.s1, s.w, s.h)
            }
        case (.i420, .i420):
            return YUVKernel(cost: 0.5) { s, d, _ in
                I420Copy(s.c0, s.s0, s.c1, s.s1, s.c2, s.s2, d.m0, d.s0, d.m1, d.s1, d.m2, d.s2, s.w, s.h)
            }
        default:
            return nil
        }
    }

    /// BT.601 constants for libyuv's `…Matrix` functions.
    package static func constants(fullRange: Bool) -> OpaquePointer {
        fullRange ? vf_yuv_bt601_full() : vf_yuv_bt601_video()
    }

    /// Whether libyuv can scale frames of `format`.
    package static func canScale(_ format: PixelFormat) -> Bool {
        [.bgra, .nv12VideoRange, .nv12FullRange, .i420].contains(format)
    }

    /// Scales `s` into `d` (same format `format`, any sizes) with bilinear filtering; at exactly
    /// half the size in both directions this is a 2x2 box average.
    package static func scale(_ format: PixelFormat, _ s: ImageView, into d: ImageView) -> Int32 {
        let filter = kFilterBilinear
        switch format {
        case .bgra:
            return ARGBScale(s.c0, s.s0, s.w, s.h, d.m0, d.s0, d.w, d.h, filter)
        case .nv12VideoRange, .nv12FullRange:
            return NV12Scale(s.c0, s.s0, s.c1, s.s1, s.w, s.h, d.m0, d.s0, d.m1, d.s1, d.w, d.h, filter)
        case .i420:
            return I420Scale(
                s.c0, s.s0, s.c1, s.s1, s.c2, s.s2, s.w, s.h, d.m0, d.s0, d.m1, d.s1, d.m2, d.s2, d.w, d.h, filter)
        default:
            return -1
        }
    }
}

/// Video-range to full-range Y'CbCr and back, one 256-entry table per direction and component.
package enum RangeTable {
    case expandLuma, expandChroma, compressLuma, compressChroma

    private static let tables: [[UInt8]] = [
        (0..<256).map { clamp((Double($0) - 16) * 255 / 219) },
        (0..<256).map { clamp((Double($0) - 128) * 255 / 224 + 128) },
        (0..<256).map { clamp(Double($0) * 219 / 255 + 16) },
        (0..<256).map { clamp((Double($0) - 128) * 224 / 255 + 128) },
    ]

    private static func clamp(_ value: Double) -> UInt8 { UInt8(min(255, max(0, value.rounded()))) }

    private var index: Int {
        switch self {
        case .expandLuma: return 0
        case .expandChroma: return 1
        case .compressLuma: return 2
        case .compressChroma: return 3
        }
    }

    /// Maps `rows` rows of `width` bytes from `source` through the table into `destination`.
    package static func apply(
        _ table: RangeTable, _ source: UnsafePointer<UInt8>, _ sourceStride: Int,
        _ destination: UnsafeMutablePointer<UInt8>, _ destinationStride: Int, _ width: Int, _ rows: Int
    ) {
        tables[table.index].withUnsafeBufferPointer { lut in
            let lut = lut.baseAddress!
            for row in 0..<rows {
                let from = source + row * sourceStride
                let to = destination + row * destinationStride
                for column in 0..<width { to[column] = lut[Int(from[column])] }
            }
        }
    }
}
