/// What a processor chain does to one device format for one request, decided once: the
/// Motion-JPEG decode, the conversions and the processors, in order, with the format between
/// each. ``ProcessorChain`` builds its steps from a plan, and ``FormatNegotiator`` prices each
/// candidate device format by its plan's ``cost``: one planner, so what is priced is what runs.
///
/// The plan converts as early as possible to the requested format and size (scaling down first
/// saves every later step work); again only where a processor does not take the current format;
/// and at the end if a processor left another format than requested. A Motion-JPEG source is
/// decoded straight to the first format wanted when the decoder makes it, else to the nearest it
/// makes (``MJPEGDecodeStep/decodedFormat(for:)``), then converted. The decode is at the smallest
/// TurboJPEG scale (1/2, 1/4, 1/8) still at least as large as the next step wants, so a 960x540
/// chain on a 1080p camera decodes a quarter of the pixels. When the device's outputs share one
/// decode (``SharedDecodePlan``, a session's) and its image is large enough, the chain starts from
/// that image instead, and its ``cost`` leaves the decode out: the negotiator prices it once.
///
/// Thread safety: a value type.
package struct ChainPlan: Sendable {
    /// One step of the plan.
    package enum Step: Sendable, Equatable {
        /// Decode Motion-JPEG of `from`'s size into `to`.
        case decode(from: FrameFormat, to: FrameFormat)
        /// Convert (and scale) `from` into `to`.
        case convert(from: FrameFormat, to: FrameFormat)
        /// Run the stage at `stage` (an index into the plan's stages) on `input`, making `output`.
        case process(stage: Int, input: FrameFormat, output: FrameFormat)
    }

    /// What a processor tells the planner: the formats it takes (empty: any) and what it makes
    /// from an input.
    package struct Stage {
        /// The processor's name, for errors.
        package var name: String
        /// The formats it takes, preferred first; empty when it takes any.
        package var accepted: [PixelFormat]
        /// The format it makes from `input`.
        package var output: (_ input: FrameFormat) throws(CaptureError) -> FrameFormat

        /// A stage for `processor`.
        package init(_ processor: NamedProcessor) {
            name = processor.name
            accepted = processor.processor.acceptedPixelFormats
            output = { (input: FrameFormat) throws(CaptureError) -> FrameFormat in
                try processor.processor.outputFormat(for: input)
            }
        }

        /// A stage that takes `accepted` and makes what it is given (how negotiation sees an
        /// output's chain before any frame: by what its first processor takes).
        package init(passingThrough accepted: [PixelFormat]) {
            name = "first processor"
            self.accepted = accepted
            output = { (input: FrameFormat) throws(CaptureError) -> FrameFormat in input }
        }
    }

    /// The steps, in order.
    package let steps: [Step]
    /// The device's shared decode the plan starts from, when its decode step is that one (priced
    /// once by the negotiator, not in ``cost``).
    package let sharedDecode: SharedDecodePlan?
    /// The format delivered at the end.
    package let output: FrameFormat

    /// Plans `device` into `requestedFormat` (nil: ``ProcessorChain/nativeDelivery(of:)``) at
    /// `requestedSize` (nil: the device's) through `stages`.
    ///
    /// Throws ``CaptureError/Code/unsupportedPixelFormat`` or ``CaptureError/Code/unsupportedFormat``
    /// for what no chain can do (Motion-JPEG asked from a raw camera, scaled, or through
    /// processors; a compressed format other than Motion-JPEG to decode; a processor declaring no
    /// frame format).
    package init(
        device: FrameFormat, requestedFormat: PixelFormat?, requestedSize: CaptureDevice.Dimensions?,
        stages: [Stage], sharedDecode: SharedDecodePlan? = nil
    ) throws(CaptureError) {
        var steps: [Step] = []
        var usesShared: SharedDecodePlan?
        var current = device
        let target = FrameFormat(
            pixelFormat: requestedFormat ?? ProcessorChain.nativeDelivery(of: device.pixelFormat),
            width: requestedSize?.pixelWidth ?? device.width,
            height: requestedSize?.pixelHeight ?? device.height)
        if target.pixelFormat == .mjpeg {
            guard device.pixelFormat == .mjpeg else {
                throw CaptureError(
                    .unsupportedPixelFormat,
                    "the device captures \(device.pixelFormat.name), and a video data output does not encode frames to Motion-JPEG: ask for a raw format, or use a CapturePhotoOutput or a movie output to make JPEG"
                )
            }
            guard target.size == device.size else {
                throw CaptureError(
                    .unsupportedFormat,
                    "Motion-JPEG frames are delivered as the camera sends them (\(device.size)) and cannot be scaled to \(target.size): ask for a raw format to scale, or leave the size unset"
                )
            }
            guard stages.isEmpty else {
                throw CaptureError(
                    .unsupportedFormat,
                    "processors work on raw frames, not Motion-JPEG: remove the processors (\(stages.map(\.name).joined(separator: ", "))) or ask for a raw format"
                )
            }
        }

        func convert(to format: FrameFormat) throws(CaptureError) {
            guard format != current else { return }
            if current.pixelFormat.isCompressed {
                guard current.pixelFormat == .mjpeg else {
                    throw CaptureError(
                        .unsupportedPixelFormat,
                        "the device captures \(current.pixelFormat.name), which Viewfinder cannot decode: choose a raw format for the device (or a preset other than .inputPriority)"
                    )
                }
                let decoded: FrameFormat
                if let sharedDecode, sharedDecode.camera == current, sharedDecode.serves(format) {
                    decoded = sharedDecode.decoded
                    usesShared = sharedDecode
                } else {
                    let denominator = SharedDecodePlan.scaleDenominator(
                        for: current, fitting: format.width, format.height)
                    decoded = FrameFormat(
                        pixelFormat: MJPEGDecodeStep.decodedFormat(for: format.pixelFormat),
                        width: JPEGDecoder.scaled(current.width, by: denominator),
                        height: JPEGDecoder.scaled(current.height, by: denominator))
                }
                steps.append(.decode(from: current, to: decoded))
                current = decoded
                guard format != current else { return }
            }
            steps.append(.convert(from: current, to: format))
            current = format
        }

        // First stop: the requested format and size, if the first stage takes that format.
        let firstAccepts = stages.first?.accepted ?? []
        if firstAccepts.isEmpty || firstAccepts.contains(target.pixelFormat) {
            try convert(to: target)
        } else if current.size != target.size || !firstAccepts.contains(current.pixelFormat) {
            let format = firstAccepts.contains(current.pixelFormat) ? current.pixelFormat : firstAccepts[0]
            try convert(to: FrameFormat(pixelFormat: format, width: target.width, height: target.height))
        }
        for (index, stage) in stages.enumerated() {
            if !stage.accepted.isEmpty && !stage.accepted.contains(current.pixelFormat) {
                try convert(
                    to: FrameFormat(pixelFormat: stage.accepted[0], width: current.width, height: current.height))
            }
            let output = try stage.output(current)
            guard output.width > 0, output.height > 0, output.pixelFormat.planeCount > 0 else {
                throw CaptureError(
                    .unsupportedFormat,
                    "processor '\(stage.name)' declared an output of \(output), which is not a frame format")
            }
            steps.append(.process(stage: index, input: current, output: output))
            current = output
        }
        if current.pixelFormat != target.pixelFormat {
            try convert(to: FrameFormat(pixelFormat: target.pixelFormat, width: current.width, height: current.height))
        }
        self.steps = steps
        self.output = current
        self.sharedDecode = usesShared
    }

    /// What the plan costs per frame, as the decoder and the converter estimate their own steps
    /// (processors are the user's and cost the same on every plan); `nil` when a conversion has
    /// no converter.
    package var cost: CostEstimate? {
        var total = CostEstimate()
        for step in steps {
            switch step {
            case .decode(let from, let to):
                guard sharedDecode == nil else { continue }
                let denominator = SharedDecodePlan.scaleDenominator(for: from, fitting: to.width, to.height)
                total =
                    total
                    + MJPEGDecodeStep.estimatedCost(
                        decoding: from.size, scaleDenominator: denominator, to: to.pixelFormat)
            case .convert(let from, let to):
                guard
                    let cost = PixelConverter.estimatedDeliveryCost(
                        from: from.pixelFormat, size: from.size, to: to.pixelFormat, size: to.size)
                else { return nil }
                total = total + cost
            case .process:
                break
            }
        }
        return total
    }
}
