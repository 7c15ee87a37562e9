/// A named processor in an output's chain.
public struct NamedProcessor: Sendable {
    /// The name it was added under (unique within the chain).
    public let name: String
    /// The processor.
    public let processor: any FrameProcessor
}

/// Where to add a processor in a chain.
public enum ProcessorPosition: Sendable, Hashable {
    /// Before every other processor.
    case first
    /// After every other processor.
    case last
    /// Just before the processor named so.
    case before(String)
    /// Just after the processor named so.
    case after(String)
}

/// The negotiated steps from a device frame to a delivered image: a decode of Motion-JPEG frames
/// when the device captures them and a raw format is wanted, conversions where formats must
/// change, and processors, each with its pools. Built once per configuration, never per frame.
///
/// Motion-JPEG asked for as ``PixelFormat/mjpeg`` (or by an output that asks nothing of a device
/// whose format is compressed and nothing it could decode to) passes through untouched.
///
/// Thread safety: immutable once built; `run` is called from one delivery queue at a time. The
/// decode step (``decodeStep``) has one decoder per lane: lane *i* may run on its own thread at
/// the same time as other lanes, each lane used by one thread at a time.
package final class ProcessorChain: Sendable {
    package enum Step: Sendable {
        case decode(MJPEGDecodeStep)
        case convert(FrameConversion)
        case process(
            name: String, processor: any FrameProcessor, output: FrameFormat, outputPool: PixelBufferPool,
            copyPool: PixelBufferPool)
    }

    package let steps: [Step]
    /// The format delivered at the end.
    package let outputFormat: FrameFormat

    /// Builds the chain ``ChainPlan`` plans: convert as early as possible to the requested format
    /// and size (scaling down first saves every later step work); convert again only where a
    /// processor does not take the current format, and at the end if a processor left another
    /// format than requested.
    package init(
        deviceFormat: FrameFormat, requestedFormat: PixelFormat?, requestedSize: CaptureDevice.Dimensions?,
        processors: [NamedProcessor], budget: Int, decoderLanes: Int = MJPEGDecodeStep.defaultLanes,
        sharedDecode: SharedDecodePlan? = SharedDecodePlan.current
    ) throws(CaptureError) {
        let plan = try ChainPlan(
            device: deviceFormat, requestedFormat: requestedFormat, requestedSize: requestedSize,
            stages: processors.map(ChainPlan.Stage.init), sharedDecode: sharedDecode)
        var steps: [Step] = []
        for step in plan.steps {
            switch step {
            case .decode(let camera, let decoded):
                steps.append(
                    .decode(
                        try MJPEGDecodeStep(
                            camera: camera.size, format: decoded, lanes: decoderLanes, capacity: budget)))
            case .convert(let from, let to):
                steps.append(
                    .convert(
                        try FrameConversion(
                            from: from.pixelFormat, size: from.size, to: to.pixelFormat, size: to.size,
                            capacity: budget)))
            case .process(let index, let input, let output):
                let entry = processors[index]
                let outputPool = try PixelBufferPool(
                    pixelFormat: output.pixelFormat, width: output.width, height: output.height, capacity: budget)
                let copyPool = try PixelBufferPool(
                    pixelFormat: input.pixelFormat, width: input.width, height: input.height, capacity: budget)
                steps.append(
                    .process(
                        name: entry.name, processor: entry.processor, output: output, outputPool: outputPool,
                        copyPool: copyPool))
            }
        }
        self.steps = steps
        self.outputFormat = plan.output
    }

    /// What an output that asks for no pixel format gets from a device capturing `format`: the
    /// format itself, except Motion-JPEG, which is decoded to full-range NV12 (what JFIF means).
    package static func nativeDelivery(of format: PixelFormat) -> PixelFormat {
        format == .mjpeg ? .nv12FullRange : format
    }

    /// Whether frames pass through untouched (zero-copy delivery).
    package var isEmpty: Bool { steps.isEmpty }

    /// The Motion-JPEG decode the chain starts with, if any.
    package var decodeStep: MJPEGDecodeStep? {
        if case .decode(let step) = steps.first { return step }
        return nil
    }

    /// The first conversion's engine, if any.
    package var conversionEngine: PixelConverter.Engine? {
        for case .convert(let conversion) in steps { return conversion.engine }
        return nil
    }

    /// The conversion pools (for tests of boundedness).
    package var pools: [PixelBufferPool] {
        steps.compactMap {
            switch $0 {
            case .decode(let step): return step.pool
            case .convert(let conversion): return conversion.pool
            case .process(_, _, _, let pool, _): return pool
            }
        }
    }

    package enum Outcome {
        case image(PixelBuffer, attachments: [SampleBuffer.AttachmentKey: any Sendable])
        case drop(DroppedFrameReason)
    }

    /// Runs every step on `source`, the pixels of `frame`. A Motion-JPEG source is decoded with
    /// lane 0's decoder; a source the decode step already made (``MJPEGDecodeStep/decode(_:lane:)``
    /// on another lane) skips it.
    package func run(_ source: PixelBuffer, of frame: CapturedSample) -> Outcome {
        var image = source
        var writable = false
        var attachments: [SampleBuffer.AttachmentKey: any Sendable] = [:]
        /// Moves on to `next`, recycling the intermediate buffer it replaces (never the source,
        /// which the caller holds) when nothing else holds it.
        func advance(to next: PixelBuffer) {
            var previous: PixelBuffer? = image
            image = next
            if previous !== source { PixelBuffer.recycle(&previous) }
        }
        for step in steps {
            switch step {
            case .decode(let decode):
                guard image.pixelFormat == .mjpeg else { continue }
                switch decode.decode(image, lane: 0, shared: frame.decodedFrame) {
                case .success(let decoded): advance(to: decoded)
                case .failure(let reason): return .drop(reason.reason)
                }
                // The device's shared image is every output's: processors copy before writing.
                writable = frame.decodedFrame == nil
            case .convert(let conversion):
                do {
                    guard let converted = try conversion.convert(image) else { return .drop(.outOfBuffers) }
                    advance(to: converted)
                } catch {
                    return .drop(.droppedByProcessor("conversion"))
                }
                writable = true
            case .process(let name, let processor, let output, let outputPool, let copyPool):
                var processorFrame = ProcessorFrame(
                    image: image, imageIsWritable: writable, presentationTimeStamp: frame.presentationTime,
                    duration: frame.duration, sequenceNumber: frame.sequenceNumber, attachments: attachments,
                    outputFormat: output, outputPool: outputPool, copyPool: copyPool)
                do {
                    guard try processor.process(&processorFrame) == .keep else {
                        return .drop(.droppedByProcessor(name))
                    }
                } catch {
                    return .drop(error.code == .outOfBuffers ? .outOfBuffers : .droppedByProcessor(name))
                }
                let result = processorFrame.image
                guard result.pixelFormat == output.pixelFormat, result.width == output.width,
                    result.height == output.height
                else { return .drop(.droppedByProcessor(name)) }
                if result !== image { advance(to: result) }
                writable = processorFrame.isImageWritable
                attachments = processorFrame.attachments
            }
        }
        return .image(image, attachments: attachments)
    }
}
