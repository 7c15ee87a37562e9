import CYUV

/// Exact 2x downscales (half the width and half the height, each destination pixel the average
/// of a 2x2 source block) fused with a format conversion.
///
/// The converter runs a halving kernel strip by strip: a few destination rows at a time, from
/// twice as many source rows, through scratch memory small enough to stay in cache. So a frame
/// is read once and written once, however many libyuv steps the conversion takes.
///
/// The fused paths take chroma at the resolution the halved image needs: a 4:2:2 or 4:2:0
/// source's chroma already has one sample per destination pixel (per row pair for 4:2:0), so
/// YUYV, NV12 and I420 to BGRA convert from 4:4:4 without scaling chroma at all.
package struct HalvingKernel: Sendable {
    /// Relative cost, on the scale of ``YUVKernel/cost``.
    package let cost: Double
    /// Bytes of each scratch region a strip needs.
    package let regionSizes: [Int]
    /// Halves the source strip `source` (twice the rows of `destination`) into `destination`.
    package let run:
        @Sendable (_ source: ImageView, _ destination: ImageView, _ scratch: [UnsafeMutablePointer<UInt8>]) -> Int32

    /// The kernel halving `source`-format frames `sourceWidth` wide into `destination` format,
    /// with scratch for strips of `stripRows` destination rows; `nil` when libyuv cannot do it.
    package static func find(
        from source: PixelFormat, to destination: PixelFormat, sourceWidth: Int, stripRows: Int
    ) -> HalvingKernel? {
        let width = sourceWidth
        let half = (sourceWidth + 1) / 2
        let rows = stripRows
        let filter = kFilterBilinear
        switch (source, destination) {
        case _ where source == destination && YUVKernel.canScale(source):
            return HalvingKernel(cost: 1, regionSizes: []) { s, d, _ in YUVKernel.scale(source, s, into: d) }

        case (.yuyv, .bgra):
            // YUYV -> I420 (its chroma is 4:4:4 at half size) -> halve luma -> I444 -> BGRA.
            return HalvingKernel(cost: 1.5, regionSizes: [width * 2 * rows, half * rows, half * rows, half * rows]) {
                s, d, r in
                let (fullY, u, v, smallY) = (r[0], r[1], r[2], r[3])
                let status = YUY2ToI420(s.c0, s.s0, fullY, Int32(width), u, Int32(half), v, Int32(half), s.w, s.h)
                if status != 0 { return status }
                ScalePlane(fullY, Int32(width), s.w, s.h, smallY, Int32(half), d.w, d.h, filter)
                return I444ToARGBMatrix(
                    smallY, Int32(half), u, Int32(half), v, Int32(half), d.m0, d.s0,
                    YUVKernel.constants(fullRange: false), d.w, d.h)
            }

        case (.yuyv, .nv12VideoRange):
            // YUYV -> NV12 at full size -> halve luma and the interleaved chroma.
            return HalvingKernel(cost: 1, regionSizes: [width * 2 * rows, half * 2 * rows]) { s, d, r in
                let (fullY, uv) = (r[0], r[1])
                let status = YUY2ToNV12(s.c0, s.s0, fullY, Int32(width), uv, Int32(half * 2), s.w, s.h)
                if status != 0 { return status }
                ScalePlane(fullY, Int32(width), s.w, s.h, d.m0, d.s0, d.w, d.h, filter)
                return UVScale(uv, Int32(half * 2), Int32(half), d.h, d.m1, d.s1, d.halfW, d.halfH, filter)
            }

        case (.yuyv, .i420):
            return HalvingKernel(cost: 1, regionSizes: [width * 2 * rows, half * rows, half * rows]) { s, d, r in
                let (fullY, u, v) = (r[0], r[1], r[2])
                let status = YUY2ToI420(s.c0, s.s0, fullY, Int32(width), u, Int32(half), v, Int32(half), s.w, s.h)
                if status != 0 { return status }
                ScalePlane(fullY, Int32(width), s.w, s.h, d.m0, d.s0, d.w, d.h, filter)
                ScalePlane(u, Int32(half), Int32(half), d.h, d.m1, d.s1, d.halfW, d.halfH, filter)
                ScalePlane(v, Int32(half), Int32(half), d.h, d.m2, d.s2, d.halfW, d.halfH, filter)
                return 0
            }

        case (.nv12VideoRange, .bgra), (.nv12FullRange, .bgra):
            // Halve luma; the source chroma plane is already one sample per destination pixel.
            let fullRange = source.isFullRange
            return HalvingKernel(cost: 1.5, regionSizes: [half * rows, half * rows, half * rows]) { s, d, r in
                let (smallY, u, v) = (r[0], r[1], r[2])
                ScalePlane(s.c0, s.s0, s.w, s.h, smallY, Int32(half), d.w, d.h, filter)
                SplitUVPlane(s.c1, s.s1, u, Int32(half), v, Int32(half), d.w, d.h)
                return I444ToARGBMatrix(
                    smallY, Int32(half), u, Int32(half), v, Int32(half), d.m0, d.s0,
                    YUVKernel.constants(fullRange: fullRange), d.w, d.h)
            }

        case (.i420, .bgra):
            return HalvingKernel(cost: 1.5, regionSizes: [half * rows]) { s, d, r in
                let smallY = r[0]
                ScalePlane(s.c0, s.s0, s.w, s.h, smallY, Int32(half), d.w, d.h, filter)
                return I444ToARGBMatrix(
                    smallY, Int32(half), s.c1, s.s1, s.c2, s.s2, d.m0, d.s0, YUVKernel.constants(fullRange: false),
                    d.w, d.h)
            }

        default:
            // Other pairs halve in the source format and convert afterwards (see ConversionRoute).
            return nil
        }
    }
}
