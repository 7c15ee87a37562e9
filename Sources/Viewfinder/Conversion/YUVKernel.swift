import CYUV

/// The libyuv conversions Viewfinder uses, one per (source, destination) pair, and libyuv's
/// scalers. Every call converts a whole frame; `run` returns libyuv's status (0 = success).
struct YUVKernel: Sendable {
    let run: @Sendable (PixelBuffer, PixelBuffer) -> Int32

    static func find(from source: PixelFormat, to destination: PixelFormat) -> YUVKernel? {
        switch (source, destination) {
        case (.yuyv, .bgra):
            return YUVKernel { s, d in YUY2ToARGB(p(s, 0), r(s, 0), m(d, 0), r(d, 0), w(s), h(s)) }
        case (.yuyv, .nv12VideoRange):
            return YUVKernel { s, d in YUY2ToNV12(p(s, 0), r(s, 0), m(d, 0), r(d, 0), m(d, 1), r(d, 1), w(s), h(s)) }
        case (.yuyv, .i420):
            return YUVKernel { s, d in
                YUY2ToI420(p(s, 0), r(s, 0), m(d, 0), r(d, 0), m(d, 1), r(d, 1), m(d, 2), r(d, 2), w(s), h(s))
            }
        case (.nv12VideoRange, .bgra), (.nv12FullRange, .bgra):
            let fullRange = source == .nv12FullRange
            return YUVKernel { s, d in
                let constants = fullRange ? vf_yuv_bt601_full() : vf_yuv_bt601_video()
                return NV12ToARGBMatrix(p(s, 0), r(s, 0), p(s, 1), r(s, 1), m(d, 0), r(d, 0), constants, w(s), h(s))
            }
        case (.nv12VideoRange, .i420):
            return YUVKernel { s, d in
                NV12ToI420(
                    p(s, 0), r(s, 0), p(s, 1), r(s, 1), m(d, 0), r(d, 0), m(d, 1), r(d, 1), m(d, 2), r(d, 2), w(s), h(s)
                )
            }
        case (.bgra, .nv12VideoRange):
            return YUVKernel { s, d in ARGBToNV12(p(s, 0), r(s, 0), m(d, 0), r(d, 0), m(d, 1), r(d, 1), w(s), h(s)) }
        case (.bgra, .i420):
            return YUVKernel { s, d in
                ARGBToI420(p(s, 0), r(s, 0), m(d, 0), r(d, 0), m(d, 1), r(d, 1), m(d, 2), r(d, 2), w(s), h(s))
            }
        case (.bgra, .yuyv):
            return YUVKernel { s, d in ARGBToYUY2(p(s, 0), r(s, 0), m(d, 0), r(d, 0), w(s), h(s)) }
        case (.i420, .bgra):
            return YUVKernel { s, d in
                I420ToARGB(p(s, 0), r(s, 0), p(s, 1), r(s, 1), p(s, 2), r(s, 2), m(d, 0), r(d, 0), w(s), h(s))
            }
        case (.i420, .nv12VideoRange):
            return YUVKernel { s, d in
                I420ToNV12(
                    p(s, 0), r(s, 0), p(s, 1), r(s, 1), p(s, 2), r(s, 2), m(d, 0), r(d, 0), m(d, 1), r(d, 1), w(s), h(s)
                )
            }
        case (.i420, .yuyv):
            return YUVKernel { s, d in
                I420ToYUY2(p(s, 0), r(s, 0), p(s, 1), r(s, 1), p(s, 2), r(s, 2), m(d, 0), r(d, 0), w(s), h(s))
            }
        case (.bgra, .bgra):
            return YUVKernel { s, d in ARGBCopy(p(s, 0), r(s, 0), m(d, 0), r(d, 0), w(s), h(s)) }
        case (.nv12VideoRange, .nv12VideoRange), (.nv12FullRange, .nv12FullRange):
            return YUVKernel { s, d in
                NV12Copy(p(s, 0), r(s, 0), p(s, 1), r(s, 1), m(d, 0), r(d, 0), m(d, 1), r(d, 1), w(s), h(s))
            }
        case (.i420, .i420):
            return YUVKernel { s, d in
                I420Copy(
                    p(s, 0), r(s, 0), p(s, 1), r(s, 1), p(s, 2), r(s, 2), m(d, 0), r(d, 0), m(d, 1), r(d, 1), m(d, 2),
                    r(d, 2), w(s), h(s))
            }
        default:
            return nil
        }
    }

    /// Whether libyuv can scale frames of `format`.
    static func canScale(_ format: PixelFormat) -> Bool {
        [.bgra, .nv12VideoRange, .nv12FullRange, .i420].contains(format)
    }

    /// Scales `source` into `destination` (same format, any sizes) with bilinear filtering.
    static func scale(_ s: PixelBuffer, into d: PixelBuffer) -> Int32 {
        let filter = kFilterBilinear
        switch s.pixelFormat {
        case .bgra:
            return ARGBScale(p(s, 0), r(s, 0), w(s), h(s), m(d, 0), r(d, 0), w(d), h(d), filter)
        case .nv12VideoRange, .nv12FullRange:
            return NV12Scale(
                p(s, 0), r(s, 0), p(s, 1), r(s, 1), w(s), h(s), m(d, 0), r(d, 0), m(d, 1), r(d, 1), w(d), h(d), filter)
        case .i420:
            return I420Scale(
                p(s, 0), r(s, 0), p(s, 1), r(s, 1), p(s, 2), r(s, 2), w(s), h(s),
                m(d, 0), r(d, 0), m(d, 1), r(d, 1), m(d, 2), r(d, 2), w(d), h(d), filter)
        default:
            return -1
        }
    }
}

@inline(__always) private func p(_ b: PixelBuffer, _ plane: Int) -> UnsafePointer<UInt8> {
    UnsafePointer(b.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self))
}
@inline(__always) private func m(_ b: PixelBuffer, _ plane: Int) -> UnsafeMutablePointer<UInt8> {
    b.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self)
}
@inline(__always) private func r(_ b: PixelBuffer, _ plane: Int) -> Int32 { Int32(b.bytesPerRow(ofPlane: plane)) }
@inline(__always) private func w(_ b: PixelBuffer) -> Int32 { Int32(b.width) }
@inline(__always) private func h(_ b: PixelBuffer) -> Int32 { Int32(b.height) }
