/// Picks, once per configuration commit, the device format and frame duration that satisfy a
/// device's outputs at the least cost (GStreamer-style: outputs state what they want, the device
/// side decides, and the choice is fixed until the next commit).
///
/// Cost of a candidate format, summed over outputs: 0 when the output takes the format as is
/// (zero-copy); otherwise a libyuv conversion pass when formats differ, plus scaling when sizes
/// differ (cheap when it halves and fuses into the conversion, a libswscale pass otherwise).
/// Formats a driver only emulates in software, and formats that cannot reach the asked frame
/// rate, cost extra. Ties go to fewer bytes per frame.
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
            candidates = preset.candidates(in: device.formats) ?? []
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

        var best: (cost: Int, bytes: Int, choice: Choice)?
        for format in candidates {
            var cost = format.isEmulated ? 20 : 0
            for request in requests {
                cost += conversionCost(from: format, to: request)
            }
            let duration: MediaTime
            if device.userChoseFrameDuration && format == device.activeFormat {
                duration = device.activeVideoMinFrameDuration
            } else if let wanted {
                duration = format.nearestSupportedDuration(atMost: wanted)
                if duration > wanted { cost += 50 }
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

    static func conversionCost(from format: CaptureDevice.Format, to request: OutputRequest) -> Int {
        let target = request.pixelFormat ?? format.pixelFormat
        let size = request.size ?? format.dimensions
        if target == format.pixelFormat && size == format.dimensions { return 0 }
        if format.pixelFormat.isCompressed { return 1000 }
        // A format change is one libyuv pass (every convertible pair has a route); a size change
        // is nearly free fused into it when it halves, and a libswscale pass otherwise.
        let converts = target != format.pixelFormat ? 10 : 0
        let halves = size.width * 2 == format.dimensions.width && size.height * 2 == format.dimensions.height
        let scales = size == format.dimensions ? 0 : (halves ? 5 : 25)
        return converts + scales
    }
}
