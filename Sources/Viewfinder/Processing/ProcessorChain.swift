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

/// The negotiated steps from a device frame to a delivered image: conversions where formats must
/// change, and processors, each with its pools. Built once per configuration, never per frame.
///
/// Thread safety: immutable once built; `run` is called from one delivery queue at a time.
final class ProcessorChain: Sendable {
    enum Step: Sendable {
        case convert(PixelConverter, PixelBufferPool)
        case process(
            name: String, processor: any FrameProcessor, output: FrameFormat, outputPool: PixelBufferPool,
            copyPool: PixelBufferPool)
    }

    let steps: [Step]
    /// The format delivered at the end.
    let outputFormat: FrameFormat

    /// Plans the chain: convert as early as possible to the requested format and size (scaling
    /// down first saves every later step work); convert again only where a processor does not take
    /// the current format, and at the end if a processor left another format than requested.
    init(
        deviceFormat: FrameFormat, requestedFormat: PixelFormat?, requestedSize: CaptureDevice.Dimensions?,
        processors: [NamedProcessor], budget: Int
    ) throws(CaptureError) {
        var steps: [Step] = []
        var current = deviceFormat
        let target = FrameFormat(
            pixelFormat: requestedFormat ?? deviceFormat.pixelFormat, width: requestedSize?.width ?? deviceFormat.width,
            height: requestedSize?.height ?? deviceFormat.height)

        func convert(to format: FrameFormat) throws(CaptureError) {
            guard format != current else { return }
            guard !current.pixelFormat.isCompressed else {
                throw CaptureError(
                    .unsupportedPixelFormat,
                    "the device captures \(current.pixelFormat.name), which Viewfinder cannot decode: choose a raw format for the device (or a preset other than .inputPriority)"
                )
            }
            let converter = try PixelConverter(
                from: current.pixelFormat, size: current.size, to: format.pixelFormat, size: format.size)
            let pool = try PixelBufferPool(
                pixelFormat: format.pixelFormat, width: format.width, height: format.height, capacity: budget)
            steps.append(.convert(converter, pool))
            current = format
        }

        // First stop: the requested format and size, if the first processor takes that format.
        let firstAccepts = processors.first?.processor.acceptedPixelFormats ?? []
        if firstAccepts.isEmpty || firstAccepts.contains(target.pixelFormat) {
            try convert(to: target)
        } else if current.size != target.size || !firstAccepts.contains(current.pixelFormat) {
            let format = firstAccepts.contains(current.pixelFormat) ? current.pixelFormat : firstAccepts[0]
            try convert(to: FrameFormat(pixelFormat: format, width: target.width, height: target.height))
        }
        for entry in processors {
            let accepted = entry.processor.acceptedPixelFormats
            if !accepted.isEmpty && !accepted.contains(current.pixelFormat) {
                try convert(to: FrameFormat(pixelFormat: accepted[0], width: current.width, height: current.height))
            }
            let output = try entry.processor.outputFormat(for: current)
            guard output.width > 0, output.height > 0, output.pixelFormat.planeCount > 0 else {
                throw CaptureError(
                    .unsupportedFormat,
                    "processor '\(entry.name)' declared an output of \(output), which is not a frame format")
            }
            let outputPool = try PixelBufferPool(
                pixelFormat: output.pixelFormat, width: output.width, height: output.height, capacity: budget)
            let copyPool = try PixelBufferPool(
                pixelFormat: current.pixelFormat, width: current.width, height: current.height, capacity: budget)
            steps.append(
                .process(
                    name: entry.name, processor: entry.processor, output: output, outputPool: outputPool,
                    copyPool: copyPool))
            current = output
        }
        if current.pixelFormat != target.pixelFormat {
            try convert(to: FrameFormat(pixelFormat: target.pixelFormat, width: current.width, height: current.height))
        }
        self.steps = steps
        self.outputFormat = current
    }

    /// Whether frames pass through untouched (zero-copy delivery).
    var isEmpty: Bool { steps.isEmpty }

    /// The first conversion's engine, if any.
    var conversionEngine: PixelConverter.Engine? {
        for case .convert(let converter, _) in steps { return converter.engine }
        return nil
    }

    /// The conversion pools (for tests of boundedness).
    var pools: [PixelBufferPool] {
        steps.map {
            switch $0 {
            case .convert(_, let pool): return pool
            case .process(_, _, _, let pool, _): return pool
            }
        }
    }

    enum Outcome {
        case image(PixelBuffer, attachments: [SampleBuffer.AttachmentKey: any Sendable])
        case drop(DroppedFrameReason)
    }

    /// Runs every step on `source`, the pixels of `frame`.
    func run(_ source: PixelBuffer, of frame: CapturedSample) -> Outcome {
        var image = source
        var writable = false
        var attachments: [SampleBuffer.AttachmentKey: any Sendable] = [:]
        for step in steps {
            switch step {
            case .convert(let converter, let pool):
                guard let destination = pool.makePixelBuffer() else { return .drop(.outOfBuffers) }
                do {
                    try converter.convert(image, into: destination)
                } catch {
                    return .drop(.droppedByProcessor("conversion"))
                }
                image = destination
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
                image = result
                writable = processorFrame.isImageWritable
                attachments = processorFrame.attachments
            }
        }
        return .image(image, attachments: attachments)
    }
}
