/// Picks, once per configuration commit, the device format and frame duration that satisfy a
/// device's outputs at the least cost (GStreamer-style: outputs state what they want, the device
/// side decides, and the choice is fixed until the next commit).
///
/// Cost of a candidate format, summed over outputs: 0 when the output takes the format as is
/// (zero-copy); otherwise what the converter reports for the conversions the output's chain
/// would make (``PixelConverter/estimatedCost(from:size:to:size:)``: its libyuv route, fused
/// halving, or libswscale scaling, weighted by the bytes each pass reads) — including a
/// conversion the first processor forces when it does not take the format. A change of pixel
/// format also costs ``colourConversion``: conversions round (±2 levels) and stack, so a format
/// that needs only scaling is preferred even when scaling it reads more. Formats a driver only
/// emulates in software cost a slow software pass and a colour conversion. Motion-JPEG costs
/// Viewfinder's own decode (``decodePerMegapixel``, on the same scale), so native decoding beats
/// a driver's software emulation of the same frames (which decodes them too, more slowly, before its own
/// pass) and a raw mode that cannot keep the rate; a raw format that keeps the rate and needs one
/// conversion is preferred to decoding; a format the
/// output asks for as it is stays zero-copy. Formats that cannot reach the frame rate — the one
/// asked, or when none is asked the best the preset's candidates reach up to
/// ``defaultFrameRate`` — or that nothing can turn into what is asked cost far more. Ties go to
/// fewer bytes per frame.
enum FormatNegotiator {
    struct Choice: Equatable {
        var format: CaptureDevice.Format
        var frameDuration: MediaTime
    }

    static func negotiate(
        device: CaptureDevice, preset: CaptureSession.Preset, requests: [OutputRequest]
    ) throws(CaptureError) -> Choice {
        if !device.hasMediaType(.video) { return try negotiateAudio(device: device, requests: requests) }
        let candidates: [CaptureDevice.Format]
        if device.userChoseFormat || preset == .inputPriority {
            candidates = [device.activeFormat]
        } else {
            candidates = preset.candidates(in: device.formats, decoding: true) ?? []
            if candidates.isEmpty {
                let sizes = Set(device.formats.map(\.dimensions.description)).sorted().joined(separator: ", ")
                throw CaptureError(
                    .unsupportedFormat,
                    "'\(device.localizedName)' has no raw or Motion-JPEG format for preset \(preset) (it offers \(sizes)): check canSetSessionPreset(_:) or choose another preset"
                )
            }
        }
        let limits = requests.map(\.minFrameDuration)
        let wanted = limits.allSatisfy(\.isNumeric) && !limits.isEmpty ? limits.min() : nil
        // No rate asked: the rate the candidates can reach, up to the default (30 fps), is the
        // one to keep; a format slower than that (raw YUYV at 5 fps) is too slow.
        let defaultRate = min(defaultFrameRate, candidates.map(\.maxFrameRate).max() ?? 0)

        let sizesWithJPEG = Set(
            device.formats.filter { $0.pixelFormat == .mjpeg && !$0.isEmulated }.map(\.dimensions))
        var best: (cost: Double, bytes: Int, choice: Choice)?
        for format in candidates {
            let megabytes =
                Double(format.pixelFormat.frameSize(width: format.dimensions.width, height: format.dimensions.height))
                / 1e6
            var cost = format.isEmulated ? emulationPass * megabytes + colourConversion : 0
            if format.isEmulated && sizesWithJPEG.contains(format.dimensions) {
                // libv4lconvert makes it from the camera's JPEG: a decode (slower than ours) first.
                cost += decodeCost(format.dimensions)
            }
            for request in requests {
                cost += conversionCost(from: format, to: request)
            }
            let duration: MediaTime
            if device.userChoseFrameDuration && format == device.activeFormat {
                duration = device.activeVideoMinFrameDuration
            } else if let wanted {
                duration = format.nearestSupportedDuration(atMost: wanted)
                if duration > wanted { cost += tooSlow }
            } else {
                duration = format.minFrameDuration
                if format.maxFrameRate < defaultRate * 0.99 { cost += tooSlow }
            }
            let bytes = format.pixelFormat.frameSize(width: format.dimensions.width, height: format.dimensions.height)
            if best == nil || cost < best!.cost || (cost == best!.cost && bytes < best!.bytes) {
                best = (cost, bytes, Choice(format: format, frameDuration: duration))
            }
        }
        guard let best else {
            throw CaptureError(.unsupportedFormat, "'\(device.localizedName)' offers no formats")
        }
        return best.choice
    }

    /// What a driver's software conversion of an emulated format costs per megabyte it makes
    /// (plain C, several times a libyuv pass).
    static let emulationPass = 5.0
    /// What a change of pixel format costs beyond its passes: it rounds, and rounding stacks.
    static let colourConversion = 20.0
    /// The cost of missing the asked frame rate: more than any conversion.
    static let tooSlow = 1_000.0
    /// The cost of a conversion no converter can make: more than missing the rate.
    static let impossible = 10_000.0
    /// What decoding one megapixel of Motion-JPEG costs, on the converter's scale (1 ≈ a libyuv
    /// pass over a megabyte, measured ~0.15 CPU-ms here; a 4:2:2 q85 webcam frame decodes at ~2
    /// CPU-ms per megapixel, TurboJPEG included).
    static let decodePerMegapixel = 13.0
    /// The frame rate negotiation keeps when no output asks for one (AVFoundation's presets run
    /// at 30 fps).
    static let defaultFrameRate = 30.0

    /// What decoding one Motion-JPEG frame of `size` costs: the decoder's work and, as for any
    /// change of format, ``colourConversion`` (JPEG's quantisation is lossier than rounding), so a
    /// raw format that keeps the rate and converts in one pass is preferred.
    static func decodeCost(_ size: CaptureDevice.Dimensions) -> Double {
        decodePerMegapixel * Double(size.width * size.height) / 1e6 + colourConversion
    }

    /// What delivering `format` to `request` costs: the decode and conversions its chain would
    /// make.
    static func conversionCost(from format: CaptureDevice.Format, to request: OutputRequest) -> Double {
        let size = request.size ?? format.dimensions
        let target = request.pixelFormat ?? ProcessorChain.nativeDelivery(of: format.pixelFormat)
        let accepted = request.processorFormats
        if target == .mjpeg {
            // The camera's JPEG bytes, untouched: only from a Motion-JPEG format of that size.
            let passes = format.pixelFormat == .mjpeg && size == format.dimensions && accepted.isEmpty
            return passes ? 0 : impossible
        }
        if format.pixelFormat == .mjpeg {
            // Decode (straight to what the chain wants first), then convert from there.
            let first = accepted.isEmpty || accepted.contains(target) ? target : accepted[0]
            let decoded = MJPEGDecodeStep.decodedFormat(for: first)
            var decode = decodeCost(format.dimensions)
            if decoded != .nv12FullRange && decoded != .i420 {
                // Beyond planar Y'CbCr: a colour conversion (BGRA) or a range mapping of NV12.
                decode += colourConversion * (decoded == .bgra ? 1 : 0.25)
            }
            let rest = conversionCost(
                from: CaptureDevice.Format(
                    pixelFormat: decoded, width: format.dimensions.width, height: format.dimensions.height,
                    frameRateRanges: format.videoSupportedFrameRateRanges),
                to: OutputRequest(
                    pixelFormat: target, size: request.size, minFrameDuration: request.minFrameDuration,
                    processorFormats: accepted))
            return decode + rest
        }
        // Mirrors ProcessorChain's plan: convert first to the requested format and size if the
        // first processor takes it; otherwise to a format it takes at the requested size, and to
        // the requested format after the processors.
        var steps: [(PixelFormat, PixelFormat)] = []
        if accepted.isEmpty || accepted.contains(target) {
            steps = [(format.pixelFormat, target)]
        } else {
            let first = accepted.contains(format.pixelFormat) ? format.pixelFormat : accepted[0]
            steps = [(format.pixelFormat, first), (first, target)]
        }
        var total = 0.0
        var current = (format: format.pixelFormat, size: format.dimensions)
        for (from, to) in steps where from != to || current.size != size {
            guard
                let cost = PixelConverter.estimatedCost(from: from, size: current.size, to: to, size: size)
            else { return impossible }
            total += cost + (from != to ? colourConversion : 0)
            current = (to, size)
        }
        return total
    }
}
