import Dispatch
import Foundation
import Synchronization

/// Delivers captured frames to a delegate on a queue you choose (the counterpart of
/// `AVCaptureVideoDataOutput`).
///
/// ```swift
/// let output = CaptureVideoDataOutput()
/// output.typedVideoSettings = try VideoSettings(pixelFormat: .bgra)
/// output.alwaysDiscardsLateVideoFrames = true
/// output.setSampleBufferDelegate(myDelegate, queue: DispatchQueue(label: "frames"))
/// session.addOutput(output)
/// ```
///
/// The delivery contract:
/// - Frames reach the delegate on the given queue one at a time, presentation timestamps strictly
///   increasing. A concurrent queue is fine: the output's own serial queue calls into yours
///   (`sync`), one frame at a time.
/// - With ``alwaysDiscardsLateVideoFrames`` (the default), while the delegate is busy at most one
///   newer frame waits; a waiting frame replaced by a newer one is reported through
///   `captureOutput(_:didDrop:from:)` as ``DroppedFrameReason/frameWasLate``. Without it frames
///   queue up to ``bufferBudget``, then the newest drop as ``DroppedFrameReason/outOfBuffers``.
/// - Frames the device lost are reported as ``DroppedFrameReason/discontinuity``.
/// - Frames closer than ``CaptureVideoProcessingOutput/minFrameDuration`` to the last accepted one are not delivered
///   (counted as rate-gated).
/// - Every frame is accounted for: see ``CaptureOutput/Statistics``.
/// - Drop decisions come before conversion: a frame that will be dropped is never converted.
/// - Motion-JPEG frames decode on two lanes (two cores): while a frame decodes, the next accepted
///   one may start decoding on the other lane and is then no longer replaced as late.
///
/// Thread safety: every member may be used from any thread; changes apply between frames.
// unchecked: state is in the core.
public final class CaptureVideoDataOutput: CaptureVideoProcessingOutput, @unchecked Sendable {
    /// Frames in flight (waiting for, or held by, the delegate) before new ones drop as
    /// ``DroppedFrameReason/outOfBuffers``; also the size of the conversion pool.
    public let bufferBudget: Int
    /// AVFoundation's flags that change nothing on Linux (`Porting/WriterSettings.swift`).
    package let porting = Mutex(VideoDataOutputExtras())

    /// The formats ``VideoSettings`` may ask for: every format the converter produces.
    package static let deliverablePixelFormats: [PixelFormat] = PixelConverter.convertible

    /// The output's job on the shared core: negotiate a processor chain, run it, hand sample
    /// buffers to the delegate.
    package struct Body: SampleBufferBody {
        /// What the output is set to; read once per negotiation.
        package typealias Settings = ProcessingSettings

        package let budget: Int
        /// Sample buffer objects the delegate did not keep, reused for later frames and drop
        /// reports (so delivery allocates no object per frame).
        package let spares: SpareObjects<SampleBuffer>

        package var label: String { "video-data-output" }
        package var acceptedMediaTypes: [MediaType] { [.video] }
        /// Decodes a Motion-JPEG frame on the lane's decoder (two lanes when the chain has two
        /// decoders), so consecutive frames decode on two cores while delivery keeps their order.
        package var staging: DeliveryEngine<DeliveryPipeline, SampleBuffer>.Staging? {
            .init(
                lanes: { $0.chain.decodeStep?.laneCount ?? 0 },
                run: { sample, pipeline, lane in
                    guard let step = pipeline.chain.decodeStep, let image = sample.image, image.pixelFormat == .mjpeg
                    else { return .staged(sample) }
                    switch step.decode(image, lane: lane, shared: sample.decodedFrame) {
                    case .success(let decoded):
                        var staged = sample
                        staged.payload = .image(decoded)
                        return .staged(staged)
                    case .failure(let drop):
                        return .dropped(drop.reason)
                    }
                })
        }

        package func makeContext(
            format: CaptureDevice.Format, frameDuration: MediaTime, settings: Settings
        ) throws(CaptureError) -> DeliveryPipeline {
            try DeliveryPipeline(
                deviceFormat: format, settings: settings.video,
                processors: settings.chain, budget: budget)
        }

        package func prepare(
            _ sample: CapturedSample, context pipeline: DeliveryPipeline, budget: FrameBudget,
            connection: CaptureConnection
        ) -> DeliveryEngine<DeliveryPipeline, SampleBuffer>.Preparation {
            guard let image = sample.image else { return .dropped(.droppedByProcessor("not video")) }
            switch pipeline.chain.run(image, of: sample) {
            case .image(let image, let attachments):
                let buffer = SampleBuffer.make(
                    imageBuffer: image, presentationTimeStamp: sample.presentationTime, duration: sample.duration,
                    sequenceNumber: sample.sequenceNumber, attachments: attachments, budget: budget, spares: spares)
                return .ready(buffer, holdsSlot: true)
            case .drop(let reason):
                return .dropped(reason)
            }
        }

        package typealias Delegate = any CaptureVideoDataOutputSampleBufferDelegate

        package func receiver(_ delegate: Delegate) -> any CaptureDataOutputSampleBufferDelegate { delegate }
        package var reportMediaType: MediaType { .video }
        package var reportSpares: SpareObjects<SampleBuffer>? { spares }

        package func recycle(_ buffer: inout SampleBuffer?) { SampleBuffer.recycle(&buffer, into: spares) }
    }

    package let core: EngineOutputCore<Body>

    /// An output that lets at most `bufferBudget` frames be in flight (at least 1; default 6).
    public init(bufferBudget: Int = 6) {
        self.bufferBudget = max(1, bufferBudget)
        let spares = SpareObjects<SampleBuffer>(limit: min(self.bufferBudget, 62) + 2)
        core = EngineOutputCore(Body(budget: self.bufferBudget, spares: spares), budgetLimit: self.bufferBudget)
        super.init(processing: core)
        adopt(core)
    }

    // MARK: Delegate

    /// Sets the delegate and the queue its methods run on. Pass `nil` for both to stop delivery.
    /// A `nil` queue with a delegate uses a private serial queue. The delegate is held weakly.
    ///
    /// Changing the delegate while frames flow is safe: frames already queued go to the new
    /// delegate on the new queue, still one at a time and in order.
    public func setSampleBufferDelegate(
        _ delegate: (any CaptureVideoDataOutputSampleBufferDelegate)?, queue: DispatchQueue?
    ) {
        core.setDelegate(delegate.map { delegate in { [weak delegate] in delegate } }, queue: queue)
    }

    /// The delegate, if one is set and still alive.
    public var sampleBufferDelegate: (any CaptureVideoDataOutputSampleBufferDelegate)? { core.delegate }

    /// The queue the delegate is called on.
    public var sampleBufferCallbackQueue: DispatchQueue? { core.callbackQueue }

    // MARK: Settings

    /// The pixel formats this output can deliver, from any camera format it can convert (all but
    /// compressed ones). Unlike AVFoundation's list it is not ordered by cost: the session picks
    /// the camera format that is cheapest to deliver whichever you ask for.
    public var availableVideoPixelFormatTypes: [PixelFormat] { Self.deliverablePixelFormats }

    /// Whether to drop frames that arrive while the delegate is still busy (keeping only the
    /// newest waiting). Default `true`. Applies from the next frame (nothing to renegotiate).
    public var alwaysDiscardsLateVideoFrames: Bool {
        get { core.engine.discardsLateSamples }
        set { core.engine.discardsLateSamples = newValue }
    }

    /// The format and size frames are delivered in, once the session has negotiated.
    public var deliveredFormat: (pixelFormat: PixelFormat, size: CaptureDevice.Dimensions)? {
        core.context.map { ($0.outputFormat, $0.outputSize) }
    }

    /// Whether frames are delivered without conversion (the device's own buffers).
    public var isZeroCopy: Bool { core.context?.chain.isEmpty ?? true }

    /// The engine of the first conversion, when frames are converted.
    public var conversionEngine: PixelConverter.Engine? { core.context?.chain.conversionEngine }
}

/// The negotiated path from device frames to delivered frames for one configuration: the
/// processor chain (with its conversions), or nothing for zero-copy delivery.
package final class DeliveryPipeline: Sendable {
    package let deviceFormat: CaptureDevice.Format
    package let chain: ProcessorChain

    package init(
        deviceFormat: CaptureDevice.Format, settings: VideoSettings, processors: [NamedProcessor], budget: Int
    ) throws(CaptureError) {
        self.deviceFormat = deviceFormat
        chain = try ProcessorChain(
            deviceFormat: FrameFormat(
                pixelFormat: deviceFormat.pixelFormat, width: deviceFormat.dimensions.pixelWidth,
                height: deviceFormat.dimensions.pixelHeight),
            requestedFormat: settings.pixelFormat, requestedSize: settings.size, processors: processors,
            budget: budget)
    }

    package var outputFormat: PixelFormat { chain.outputFormat.pixelFormat }
    package var outputSize: CaptureDevice.Dimensions { chain.outputFormat.size }
}
