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
/// emulates in software cost a slow software pass and a colour conversion; formats that cannot
/// reach the asked frame rate, or that no converter can turn into what is asked (compressed ones),
/// cost far more. Ties go to fewer bytes per frame.
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
            let raw = preset.candidates(in: device.formats) ?? []
            // A compressed format an output asks for natively (Motion-JPEG passthrough) joins the
            // preset's candidates at the preset's size (any size when no raw format fits).
            let compressed = Set(requests.compactMap(\.pixelFormat).filter(\.isCompressed))
            let native = device.formats.filter { format in
                compressed.contains(format.pixelFormat) && (raw.isEmpty || format.dimensions == raw[0].dimensions)
            }
            candidates = raw + native
            if candidates.isEmpty {
                let sizes = Set(device.formats.map(\.dimensions.description)).sorted().joined(separator: ", ")
                throw CaptureError(
                    .unsupportedFormat,
                    "'\(device.localizedName)' has no raw format for preset \(preset) (it offers \(sizes)): check canSetSessionPreset(_:) or choose another preset"
                )
            }
        }
        let limits = requests.map(\.minFrameDuration)
        let wanted = limits.allSatisfy(\.isNumeric) && !limits.isEmpty ? limits.min() : nil

        var best: (cost: Double, bytes: Int, choice: Choice)?
        for format in candidates {
            let megabytes =
                Double(format.pixelFormat.frameSize(width: format.dimensions.width, height: format.dimensions.height))
                / 1e6
            var cost = format.isEmulated ? emulationPass * megabytes + colourConversion : 0
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

    /// What delivering `format` to `request` costs: the conversions its chain would make.
    static func conversionCost(from format: CaptureDevice.Format, to request: OutputRequest) -> Double {
        let size = request.size ?? format.dimensions
        let target = request.pixelFormat ?? format.pixelFormat
        let accepted = request.processorFormats
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
