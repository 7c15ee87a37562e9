/// Work attached to frames on their way to a delegate: analysis, filters, detection.
///
/// A processor states which pixel formats it accepts and, once per configuration commit, what it
/// produces from a given input (``outputFormat(for:)``), like GStreamer caps. Per frame,
/// ``process(_:)`` may read the image, write it in place (after
/// ``ProcessorFrame/makeImageWritable()``), replace it with a pooled buffer of the negotiated
/// output format (``ProcessorFrame/makeOutputBuffer()``), attach metadata to the sample buffer, or
/// drop the frame.
///
/// ```swift
/// final class Brightness: FrameProcessor {
///     static let key: SampleBuffer.AttachmentKey = "brightness"
///     var acceptedPixelFormats: [PixelFormat] { [.nv12VideoRange, .nv12FullRange] }
///     func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
///         let luma = frame.image.bytes(ofPlane: 0)
///         frame.setAttachment(Int(luma[luma.count / 2]), forKey: Self.key)
///         return .keep
///     }
/// }
/// try output.addProcessor(Brightness(), named: "brightness")
/// ```
///
/// Processors run on the output's delivery queue, one frame at a time, before the delegate; their
/// time counts toward lateness. Thread safety: a processor is called from one queue at a time,
/// but that queue may change between configurations; keep mutable state in a `Mutex` or make it
/// confined to ``process(_:)``.
public protocol FrameProcessor: AnyObject, Sendable {
    /// The pixel formats the processor accepts; negotiation converts to the first of them when the
    /// frame arrives in another. Empty means every uncompressed format.
    var acceptedPixelFormats: [PixelFormat] { get }

    /// What the processor produces from frames of `input`, called when configuration is
    /// committed (never per frame). The default produces what it is given. Throw
    /// ``CaptureError/Code/unsupportedFormat`` for inputs it cannot take.
    func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat

    /// Processes one frame. Throwing drops the frame (reported as
    /// ``DroppedFrameReason/droppedByProcessor(_:)``).
    func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision
}

extension FrameProcessor {
    /// Every uncompressed format.
    public var acceptedPixelFormats: [PixelFormat] { [] }

    /// What it is given.
    public func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat { input }
}

/// A pixel format and a size: what flows between processors.
public struct FrameFormat: Sendable, Hashable, CustomStringConvertible {
    /// The pixel format.
    public var pixelFormat: PixelFormat
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// A format of `pixelFormat` at `width` × `height`.
    public init(pixelFormat: PixelFormat, width: Int, height: Int) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
    }

    /// The size as dimensions.
    public var size: CaptureDevice.Dimensions { .init(width: width, height: height) }

    public var description: String { "\(pixelFormat.name) \(width)x\(height)" }
}

/// What a processor decided about a frame.
public enum ProcessorDecision: Sendable, Hashable {
    /// Pass the frame on (with whatever image ``ProcessorFrame/image`` now holds).
    case keep
    /// Drop it; the delegate hears of it through `captureOutput(_:didDrop:from:)`.
    case drop
}

/// One frame as a processor sees it: the image, the frame's timing, and the attachments that
/// will travel with it to the delegate.
public struct ProcessorFrame {
    /// The image. Replace it with a buffer from ``makeOutputBuffer()`` to pass a new image on.
    public var image: PixelBuffer {
        didSet { imageIsWritable = true }
    }
    /// When the camera captured the frame.
    public let presentationTimeStamp: MediaTime
    /// The camera's frame interval.
    public let duration: MediaTime
    /// The camera's frame counter.
    public let sequenceNumber: UInt64
    /// Metadata for the delegate (``SampleBuffer/attachment(forKey:)``); add yours here.
    public var attachments: [SampleBuffer.AttachmentKey: any Sendable]
    /// The negotiated format of this processor's output.
    public let outputFormat: FrameFormat
    package private(set) var imageIsWritable: Bool
    private let outputPool: PixelBufferPool?
    private let copyPool: PixelBufferPool?

    package init(
        image: PixelBuffer, imageIsWritable: Bool, presentationTimeStamp: MediaTime, duration: MediaTime,
        sequenceNumber: UInt64, attachments: [SampleBuffer.AttachmentKey: any Sendable], outputFormat: FrameFormat,
        outputPool: PixelBufferPool?, copyPool: PixelBufferPool?
    ) {
        self.image = image
        self.imageIsWritable = imageIsWritable
        self.presentationTimeStamp = presentationTimeStamp
        self.duration = duration
        self.sequenceNumber = sequenceNumber
        self.attachments = attachments
        self.outputFormat = outputFormat
        self.outputPool = outputPool
        self.copyPool = copyPool
    }

    /// A frame for driving a processor directly (tests, benchmarks): `image` is treated as
    /// writable and output buffers come from `outputPool`.
    public init(image: PixelBuffer, outputFormat: FrameFormat? = nil, outputPool: PixelBufferPool? = nil) {
        self.init(
            image: image, imageIsWritable: true, presentationTimeStamp: .zero, duration: .invalid, sequenceNumber: 0,
            attachments: [:],
            outputFormat: outputFormat
                ?? FrameFormat(pixelFormat: image.pixelFormat, width: image.width, height: image.height),
            outputPool: outputPool, copyPool: nil)
    }

    /// Whether the image may be written in place: false while it is the camera's own buffer,
    /// which other outputs may be reading.
    public var isImageWritable: Bool { imageIsWritable }

    /// A buffer in ``outputFormat`` from this processor's pool, or `nil` when every buffer is in
    /// use (the frame should then be dropped).
    public func makeOutputBuffer() -> PixelBuffer? { outputPool?.makePixelBuffer() }

    /// Makes ``image`` safe to write in place, copying it into a pooled buffer when it is shared.
    /// Throws ``CaptureError/Code/outOfBuffers`` when no buffer is free.
    public mutating func makeImageWritable() throws(CaptureError) {
        guard !imageIsWritable else { return }
        guard let copy = copyPool?.makePixelBuffer() else {
            throw CaptureError(
                .outOfBuffers, "no free buffer to copy the frame into: the output's buffers are all in use")
        }
        PixelCopy.copy(image, into: copy)
        image = copy
    }

    /// Attaches `value` under `key` for the delegate.
    public mutating func setAttachment(_ value: any Sendable, forKey key: SampleBuffer.AttachmentKey) {
        attachments[key] = value
    }
}
