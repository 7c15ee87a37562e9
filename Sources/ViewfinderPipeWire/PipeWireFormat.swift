import CPipeWire
import ViewfinderCore
import ViewfinderV4L2

/// Maps PipeWire's formats (as the CPipeWire shim parses a node's EnumFormat params) to
/// ``CaptureDevice/Format``s and back.
///
/// The backend code of a format is `codec << 8 | layout` (the shim's `VF_PW_CODEC_*` and
/// `VF_PW_FORMAT_*`): BGRx and BGRA both arrive as ``PixelFormat/bgra`` (the padding byte reads
/// as opaque alpha), NV12 as video-range ``PixelFormat/nv12VideoRange`` (what cameras send),
/// MJPEG as ``PixelFormat/mjpeg``. RGBx, which no Viewfinder pixel format holds, is left out.
///
/// Thread safety: a stateless namespace.
package enum PipeWireFormat {
    /// The pixel format `format` arrives in, or `nil` for layouts Viewfinder has no format for.
    package static func pixelFormat(of format: vf_pw_format) -> PixelFormat? {
        if format.codec == UInt32(VF_PW_CODEC_MJPEG) { return .mjpeg }
        switch Int(format.video_format) {
        case Int(VF_PW_FORMAT_YUY2): return .yuyv
        case Int(VF_PW_FORMAT_NV12): return .nv12VideoRange
        case Int(VF_PW_FORMAT_I420): return .i420
        case Int(VF_PW_FORMAT_BGRX), Int(VF_PW_FORMAT_BGRA): return .bgra
        default: return nil
        }
    }

    /// A frame duration for a rate of `rate.num / rate.denom` frames a second.
    package static func duration(ofRate rate: vf_pw_fraction) -> MediaTime {
        V4L2FourCC.time(numerator: rate.denom, denominator: rate.num)
    }

    /// The rate (frames a second as a fraction) of frames `duration` apart.
    package static func rate(ofDuration duration: MediaTime) -> vf_pw_fraction {
        let fraction = V4L2FourCC.fraction(duration)
        return vf_pw_fraction(num: fraction.denominator, denom: fraction.numerator)
    }

    /// The capture format for a node's `format`, or `nil` when Viewfinder cannot take it (an
    /// unknown layout, no usable rate, a size out of bounds).
    package static func captureFormat(_ format: vf_pw_format) -> CaptureDevice.Format? {
        guard let pixelFormat = pixelFormat(of: format), format.width > 0, format.height > 0,
            Int(format.width) <= PixelBuffer.maximumDimension, Int(format.height) <= PixelBuffer.maximumDimension
        else { return nil }
        var ranges: [FrameRateRange] = []
        if format.rate_is_range != 0, format.rate_min.num > 0, format.rate_max.num > 0 {
            ranges.append(
                FrameRateRange(
                    minFrameDuration: duration(ofRate: format.rate_max),
                    maxFrameDuration: duration(ofRate: format.rate_min)))
        } else {
            let rates = withUnsafeBytes(of: format.rates) { Array($0.bindMemory(to: vf_pw_fraction.self)) }
            for rate in rates.prefix(Int(format.rate_count)) where rate.num > 0 && rate.denom > 0 {
                ranges.append(FrameRateRange(frameDuration: duration(ofRate: rate)))
            }
        }
        let valid = ranges.filter { range in (try? range.validate()) != nil }
        guard !valid.isEmpty else { return nil }
        var result = CaptureDevice.Format(
            pixelFormat: pixelFormat, width: Int(format.width), height: Int(format.height), frameRateRanges: valid)
        result.backendCode = format.codec << 8 | format.video_format
        return result
    }

    /// A format to publish (a producer's node) or to ask a node for: `pixelFormat` (BGRA is
    /// published as BGRx) at one size and frames `frameDuration` apart.
    package static func published(
        _ pixelFormat: PixelFormat, width: Int, height: Int, frameDuration: MediaTime
    ) -> CaptureDevice.Format {
        var format = CaptureDevice.Format(
            pixelFormat: pixelFormat, width: width, height: height,
            frameRateRanges: [FrameRateRange(frameDuration: frameDuration)])
        let layout: Int =
            switch pixelFormat {
            case .yuyv: VF_PW_FORMAT_YUY2
            case .nv12VideoRange, .nv12FullRange: VF_PW_FORMAT_NV12
            case .i420: VF_PW_FORMAT_I420
            case .bgra: VF_PW_FORMAT_BGRX
            default: VF_PW_FORMAT_UNKNOWN
            }
        let codec = pixelFormat == .mjpeg ? UInt32(VF_PW_CODEC_MJPEG) : UInt32(VF_PW_CODEC_RAW)
        format.backendCode = codec << 8 | UInt32(layout)
        return format
    }

    /// The shim's request for streaming `format` at frames `frameDuration` apart.
    package static func request(for format: CaptureDevice.Format, frameDuration: MediaTime) -> vf_pw_format {
        var request = vf_pw_format()
        request.codec = format.backendCode >> 8
        request.video_format = format.backendCode & 0xFF
        request.width = UInt32(format.dimensions.width)
        request.height = UInt32(format.dimensions.height)
        request.rate_count = 1
        request.rates.0 = rate(ofDuration: frameDuration)
        return request
    }
}
