/// Picks, once per configuration commit, the device format and frame duration that satisfy a
/// device's outputs at the least cost (GStreamer-style: outputs state what they want, the device
/// side decides, and the choice is fixed until the next commit).
///
/// Cost of a candidate format, summed over outputs: 0 when the output takes the format as is
/// (zero-copy); otherwise what the converter reports for the conversions the output's chain
/// would make (``PixelConverter/estimatedCost(from:size:to:size:)``: its libyuv route, fused
/// halving, or libswscale scaling, weighted by the bytes each pass reads) — including a
/// conversion the first processor forces when it does not take the format. A change of pixel
/// format also costs the converter's rounding charge (``PixelConverter/estimatedDeliveryCost(from:size:to:size:)``):
/// conversions round (±2 levels) and stack, so a format that needs only scaling is preferred even
/// when scaling it reads more. Formats a driver only emulates in software cost a slow software pass
/// and a colour conversion. Motion-JPEG costs Viewfinder's own decode, as the decode step
/// estimates it (``MJPEGDecodeStep/estimatedCost(decoding:to:)``, on the same scale), so native decoding beats
/// a driver's software emulation of the same frames (which decodes them too, more slowly, before its own
/// pass) and a raw mode that cannot keep the rate; a raw format that keeps the rate and needs one
/// conversion is preferred to decoding; a format the
/// output asks for as it is stays zero-copy. Formats that cannot reach the frame rate — the one
/// asked, or when none is asked the best the preset's candidates reach up to
/// ``defaultFrameRate`` — or that nothing can turn into what is asked cost far more. Ties go to
/// fewer bytes per frame.
package enum FormatNegotiator {
    package struct Choice: Equatable {
        package var format: CaptureDevice.Format
        package var frameDuration: MediaTime
    }

    package static func negotiate(
        device: CaptureDevice, preset: CaptureSession.Preset, requests: [OutputRequest],
        admitting admits: ((CaptureDevice.Format) -> Bool)? = nil
    ) throws(CaptureError) -> Choice {
        if !device.hasMediaType(.video) { return try negotiateAudio(device: device, requests: requests) }
        let candidates: [CaptureDevice.Format]
        if device.userChoseFormat || preset == .inputPriority {
            candidates = [device.activeFormat]
        } else {
            candidates = (preset.candidates(in: device.formats, decoding: true) ?? []).filter { admits?($0) ?? true }
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

        var best: (cost: Cost, bytes: Int, choice: Choice)?
        for format in candidates {
            var cost: Cost =
                format.isEmulated ? emulationCost(of: format, on: device) : 0
            cost += conversionCost(from: format, to: requests)
            let duration: MediaTime
            if device.userChoseFrameDuration && format == device.activeFormat {
                duration = device.activeVideoMinFrameDuration
            } else if let wanted {
                duration = format.nearestSupportedDuration(atMost: wanted)
                if duration > wanted { cost.missesRate = true }
            } else {
                duration = format.minFrameDuration
                if format.maxFrameRate < defaultRate * 0.99 { cost.missesRate = true }
            }
            let bytes = format.pixelFormat.frameSize(
                width: format.dimensions.pixelWidth, height: format.dimensions.pixelHeight)
            if best == nil || cost < best!.cost || (cost == best!.cost && bytes < best!.bytes) {
                best = (cost, bytes, Choice(format: format, frameDuration: duration))
            }
        }
        guard let best else {
            throw CaptureError(.unsupportedFormat, "'\(device.localizedName)' offers no formats")
        }
        return best.choice
    }

    /// What negotiation weighs a candidate by, compared in order: how many outputs nothing can
    /// serve from it, then whether it misses the frame rate, then the work its conversions and
    /// decodes cost as the converter and decoder report it (1 ≈ a libyuv pass over a megabyte).
    /// A penalty is an order, not a number that might be outweighed by enough work.
    package struct Cost: Comparable, ExpressibleByIntegerLiteral, CustomStringConvertible {
        /// Outputs this format cannot be turned into what they ask.
        package var unservable = 0
        /// Whether the format cannot reach the frame rate wanted.
        package var missesRate = false
        /// The conversions' and decodes' work: CPU time, on the converter's scale.
        package var work = 0.0
        /// What the plan's changes of pixel format are charged beyond their work (rounding that
        /// stacks, JPEG's quantisation): it ranks plans and takes no time, so
        /// ``CaptureMultiCamSession/systemPressureCost`` leaves it out.
        package var preference = 0.0

        package init(unservable: Int = 0, missesRate: Bool = false, work: Double = 0, preference: Double = 0) {
            self.unservable = unservable
            self.missesRate = missesRate
            self.work = work
            self.preference = preference
        }

        package init(_ estimate: CostEstimate) { self.init(work: estimate.work, preference: estimate.preference) }

        package init(integerLiteral work: Int) { self.init(work: Double(work)) }

        /// What plans are ranked by after the penalties.
        package var total: Double { work + preference }

        package static func + (lhs: Cost, rhs: Cost) -> Cost {
            Cost(
                unservable: lhs.unservable + rhs.unservable, missesRate: lhs.missesRate || rhs.missesRate,
                work: lhs.work + rhs.work, preference: lhs.preference + rhs.preference)
        }

        package static func += (lhs: inout Cost, rhs: Cost) { lhs = lhs + rhs }

        package static func < (lhs: Cost, rhs: Cost) -> Bool {
            if lhs.unservable != rhs.unservable { return lhs.unservable < rhs.unservable }
            if lhs.missesRate != rhs.missesRate { return !lhs.missesRate }
            return lhs.total < rhs.total
        }

        package static func == (lhs: Cost, rhs: Cost) -> Bool {
            lhs.unservable == rhs.unservable && lhs.missesRate == rhs.missesRate && lhs.total == rhs.total
        }

        package var description: String {
            "\(work) + \(preference)\(missesRate ? " (misses the rate)" : "")\(unservable > 0 ? " (\(unservable) unservable)" : "")"
        }
    }

    /// What a driver's software emulation of `format` costs: its slow pass, and when libv4lconvert
    /// makes it from `device`'s own JPEG of that size, a decode (slower than ours) first.
    package static func emulationCost(of format: CaptureDevice.Format, on device: CaptureDevice) -> Cost {
        let megabytes =
            Double(
                format.pixelFormat.frameSize(width: format.dimensions.pixelWidth, height: format.dimensions.pixelHeight)
            ) / 1e6
        var cost = Cost(PixelConverter.estimatedEmulationCost(megabytes: megabytes))
        if device.formats.contains(where: {
            $0.pixelFormat == .mjpeg && !$0.isEmulated && $0.dimensions == format.dimensions
        }) {
            cost += Cost(MJPEGDecodeStep.estimatedCost(decoding: format.dimensions, to: .i420))
        }
        return cost
    }

    /// The cost of a conversion no converter can make.
    package static let impossible = Cost(unservable: 1)
    /// The frame rate negotiation keeps when no output asks for one (AVFoundation's presets run
    /// at 30 fps).
    package static let defaultFrameRate = 30.0

    /// What delivering `format` to every one of `requests` costs: a Motion-JPEG format's one
    /// shared decode (``SharedDecodePlan``, at the scale the largest request needs) once, then
    /// each request's conversions from it (a request the shared image is too small for decodes
    /// its own, priced in its plan).
    ///
    /// The decode's work is paid once, however many outputs take its image; its quality charge
    /// (JPEG's quantisation, ``CostEstimate/preference``) once per output that takes it, as a raw
    /// format's change of pixel format is charged once per output that converts: every one of
    /// them delivers the quantised image. So several outputs sharing one decode make Motion-JPEG
    /// cheaper than a raw format of the same size only when the work saved (one decode instead of
    /// a conversion per output) really is less work, not because the charge was counted once.
    package static func conversionCost(from format: CaptureDevice.Format, to requests: [OutputRequest]) -> Cost {
        let shared = SharedDecodePlan(format: format, requests: requests)
        var cost: Cost = 0
        var sharing = 0
        for request in requests {
            let (requestCost, usesShared) = conversionCost(from: format, to: request, sharedDecode: shared)
            cost += requestCost
            if usesShared { sharing += 1 }
        }
        if sharing > 0, let shared {
            let decode = shared.cost
            cost += Cost(work: decode.work, preference: decode.preference * Double(sharing))
        }
        return cost
    }

    /// What delivering `format` to `request` costs: the decode and conversions its chain would
    /// make (``ChainPlan``, the plan ``ProcessorChain`` builds from, with the first processor's
    /// formats standing for the chain), as the decoder and converter estimate them.
    package static func conversionCost(from format: CaptureDevice.Format, to request: OutputRequest) -> Cost {
        conversionCost(from: format, to: request, sharedDecode: nil).cost
    }

    /// What delivering `format` to `request` costs when the device decodes once by
    /// `sharedDecode`: the plan's conversions, and its own decode only when it does not start
    /// from the shared image (`usesShared`).
    package static func conversionCost(
        from format: CaptureDevice.Format, to request: OutputRequest, sharedDecode: SharedDecodePlan?
    ) -> (cost: Cost, usesShared: Bool) {
        let accepted = request.processorFormats
        guard
            let plan = try? ChainPlan(
                device: FrameFormat(
                    pixelFormat: format.pixelFormat, width: format.dimensions.pixelWidth,
                    height: format.dimensions.pixelHeight),
                requestedFormat: request.pixelFormat, requestedSize: request.size,
                stages: accepted.isEmpty ? [] : [ChainPlan.Stage(passingThrough: accepted)], sharedDecode: sharedDecode),
            let cost = plan.cost
        else { return (impossible, false) }
        return (Cost(cost), plan.sharedDecode != nil)
    }
}
