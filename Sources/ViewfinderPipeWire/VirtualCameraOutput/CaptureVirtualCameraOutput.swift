import Dispatch
import Foundation
import Synchronization
import ViewfinderCore
import ViewfinderV4L2

/// Publishes the session's processed frames as a PipeWire camera other programs can open (a
/// Viewfinder addition: AVFoundation has no such output).
///
/// The output is a PipeWire node of `media.class` `Video/Source` and `media.role` `Camera`, with
/// the `node.name` and `node.description` you choose, so programs that open PipeWire cameras
/// (`gst-launch-1.0 pipewiresrc target-object=NAME`, OBS's PipeWire camera source, browsers'
/// PipeWire camera capture) open it like a webcam — showing what this output's processor chain
/// made of the camera's frames (the background-blur webcam that otherwise takes v4l2loopback and
/// a kernel module).
///
/// ```swift
/// let camera = try CaptureVirtualCameraOutput(name: "viewfinder-gray", description: "Gray webcam")
/// try camera.addProcessor(GrayscaleProcessor(), named: "gray")
/// session.addOutput(camera)
/// session.startRunning()   // `pipewiresrc target-object=viewfinder-gray` now shows gray frames
/// ```
///
/// How it behaves:
/// - The node exists from `init` until the output goes away. It offers the processed frames'
///   format (when PipeWire can carry it) and, converted on the way, BGRx, NV12, YUY2 and I420, at
///   the processed size and the stream's rate; the consumer that links picks one. Set
///   ``CaptureVideoProcessingOutput/videoSettings`` to choose the processed format and size.
/// - Newest wins; capture is never held up: a frame is written straight into a free PipeWire
///   buffer and queued. With no consumer streaming, frames drop as ``noConsumerDropReason`` before
///   any processing; while the consumer is still taking the previous frame (or holds every
///   buffer), as ``consumerBusyDropReason``, never queued behind it; while the previous frame is
///   still being written, a newer one replaces the waiting one (``DroppedFrameReason/frameWasLate``).
///   Other outputs of the session are unaffected.
/// - Counted like every output (``CaptureOutput/statistics``): a published frame is delivered; the drops above
///   count as `droppedByProcessor`, late ones as `droppedLate`.
/// - Each buffer carries a `spa_meta_header` with the frame's sequence number (the camera's: a
///   consumer sees the frames this output dropped as gaps) and the `CLOCK_MONOTONIC` time it was
///   queued.
///
/// Thread safety: every member may be used from any thread; changes apply between frames.
// unchecked: state is in the core.
public final class CaptureVirtualCameraOutput: CaptureVideoProcessingOutput, @unchecked Sendable {
    /// Frames dropped because no consumer was streaming (none linked, or its link paused).
    public static let noConsumerDropReason = DroppedFrameReason.droppedByProcessor("virtualCamera.noConsumer")
    /// Frames dropped because the consumer was still taking the previous frame or held every
    /// buffer (it is slower than the camera).
    public static let consumerBusyDropReason = DroppedFrameReason.droppedByProcessor("virtualCamera.consumerBusy")
    /// Frames that could not be written in the consumer's format.
    package static let writeFailedDropReason = DroppedFrameReason.droppedByProcessor("virtualCamera.writeFailed")

    /// The formats offered before the first stream (the node is there before the session runs).
    package static let initialOffer = offer(
        for: .bgra, size: .init(width: 640, height: 480), frameDuration: MediaTime(value: 1, timescale: 30))

    /// The output's job on the shared core: negotiate a processor chain, run it, write the result
    /// into the node's free buffer.
    package struct Body: OutputBody {
        /// What the output is set to; read once per negotiation.
        package typealias Settings = ProcessingSettings

        package let node: PipeWireVirtualCameraNode
        package let counters: Counters
        package let link: OutputLink<CaptureVirtualCameraOutput>

        package var label: String { "virtual-camera-output" }
        package var acceptedMediaTypes: [MediaType] { [.video] }

        package func makeContext(
            format: CaptureDevice.Format, frameDuration: MediaTime, settings: Settings
        ) throws(CaptureError) -> Stream {
            var video = settings.video
            // Frames PipeWire cannot carry raw (Motion-JPEG, say) are decoded or converted.
            if video.pixelFormat == nil, !PixelConverter.convertible.contains(format.pixelFormat) {
                video = try VideoSettings(
                    pixelFormat: format.pixelFormat == .mjpeg ? .nv12VideoRange : .bgra, width: video.width,
                    height: video.height)
            }
            let pipeline = try DeliveryPipeline(
                deviceFormat: format, settings: video, processors: settings.chain,
                budget: 2)
            guard PixelConverter.convertible.contains(pipeline.outputFormat) else {
                throw CaptureError(
                    .unsupportedPixelFormat,
                    "the virtual camera cannot publish \(pipeline.outputFormat.name) frames: set videoSettings to one of \(PixelConverter.convertible.map(\.name).joined(separator: ", ")), or end the processor chain in one"
                )
            }
            return Stream(
                pipeline: pipeline,
                offered: CaptureVirtualCameraOutput.offer(
                    for: pipeline.outputFormat, size: pipeline.outputSize, frameDuration: frameDuration))
        }

        package func prepare(
            _ sample: CapturedSample, context stream: Stream, budget: FrameBudget, connection: CaptureConnection
        ) -> DeliveryEngine<Stream, Void>.Preparation {
            guard let image = sample.image else { return .dropped(.droppedByProcessor("not video")) }
            // Nobody to show it to: drop before any work.
            guard node.canPublish else { return counters.drop(CaptureVirtualCameraOutput.noConsumerDropReason) }
            switch stream.pipeline.chain.run(image, of: sample) {
            case .drop(let reason):
                return .dropped(reason)
            case .image(let processed, _):
                var held: PixelBuffer? = processed
                defer { PixelBuffer.recycle(&held) }
                switch node.publish(sequenceNumber: sample.sequenceNumber, fill: { stream.write(processed, into: $0) })
                {
                case .published:
                    counters.published.add(1, ordering: .relaxed)
                    return .ready((), holdsSlot: false)
                case .noConsumer: return counters.drop(CaptureVirtualCameraOutput.noConsumerDropReason)
                case .consumerBusy: return counters.drop(CaptureVirtualCameraOutput.consumerBusyDropReason)
                case .notWritten: return counters.drop(CaptureVirtualCameraOutput.writeFailedDropReason)
                }
            }
        }

        /// Offers the new stream's formats (a consumer linked now renegotiates); a failure is a
        /// runtime error (frames then drop for want of a consumer).
        package func streamDidBegin(_ stream: Stream) {
            guard counters.offer(stream.offered) else { return }
            do throws(CaptureError) {
                try node.offer(stream.offered)
            } catch {
                if let owner = link.owner {
                    CaptureSession.postSettingFailure(error, from: owner.session, object: owner)
                }
            }
        }
    }

    /// One negotiated stream: the processor chain, the formats offered for its frames, and the
    /// converters into the formats consumers chose.
    package final class Stream: @unchecked Sendable {  // unchecked: `converters` is used on the delivery queue only.
        package let pipeline: DeliveryPipeline
        package let offered: [CaptureDevice.Format]
        private var conversions = FrameConversions()

        package init(pipeline: DeliveryPipeline, offered: [CaptureDevice.Format]) {
            self.pipeline = pipeline
            self.offered = offered
        }

        /// Writes `image` into `target` (PipeWire's memory in the consumer's format): a copy when
        /// the formats agree, a conversion otherwise. On the delivery queue.
        package func write(_ image: PixelBuffer, into target: PixelBuffer) -> Bool {
            if image.pixelFormat == target.pixelFormat, image.width == target.width, image.height == target.height {
                PixelCopy.copy(image, into: target)
                return true
            }
            let size = CaptureDevice.Dimensions(width: target.width, height: target.height)
            return
                (try? conversions.conversion(of: image, to: target.pixelFormat, size: size).convert(image, into: target))
                != nil
        }
    }

    /// What the node did with the frames it was given, since the output was made.
    package final class Counters: Sendable {
        package let published = Atomic<Int>(0)
        package let noConsumer = Atomic<Int>(0)
        package let consumerBusy = Atomic<Int>(0)
        private let offered = Mutex<[CaptureDevice.Format]>(CaptureVirtualCameraOutput.initialOffer)

        package func drop(_ reason: DroppedFrameReason) -> DeliveryEngine<Stream, Void>.Preparation {
            if reason == CaptureVirtualCameraOutput.noConsumerDropReason {
                noConsumer.add(1, ordering: .relaxed)
            } else if reason == CaptureVirtualCameraOutput.consumerBusyDropReason {
                consumerBusy.add(1, ordering: .relaxed)
            }
            return .dropped(reason)
        }

        /// Records `formats` as offered; `false` when they already were.
        package func offer(_ formats: [CaptureDevice.Format]) -> Bool {
            offered.withLock { offered in
                guard offered != formats else { return false }
                offered = formats
                return true
            }
        }

        package var current: [CaptureDevice.Format] { offered.withLock { $0 } }
    }

    /// The formats offered for frames of `pixelFormat` and `size`, `frameDuration` apart: that
    /// format first (no conversion), then BGRx, NV12, YUY2 and I420.
    package static func offer(
        for pixelFormat: PixelFormat, size: CaptureDevice.Dimensions, frameDuration: MediaTime
    ) -> [CaptureDevice.Format] {
        let carried: [PixelFormat] = [.bgra, .nv12VideoRange, .yuyv, .i420]
        let first = carried.contains(pixelFormat) ? [pixelFormat] : []
        let duration =
            frameDuration.isNumeric && frameDuration > .zero ? frameDuration : MediaTime(value: 1, timescale: 30)
        return (first + carried.filter { $0 != pixelFormat }).map {
            PipeWireFormat.published($0, width: size.pixelWidth, height: size.pixelHeight, frameDuration: duration)
        }
    }

    package let core: EngineOutputCore<Body>
    private let link = OutputLink<CaptureVirtualCameraOutput>()
    private let node: PipeWireVirtualCameraNode

    /// The node's `node.name` (what `pipewiresrc target-object=` and `pw-cli` name it by).
    public let nodeName: String
    /// The node's `node.description` (the name programs show in their camera menus).
    public let nodeDescription: String

    /// Publishes a camera node named `name`, shown as `description` (default: `name`), on the
    /// PipeWire daemon at the socket `remoteName` in `$XDG_RUNTIME_DIR` (default:
    /// `$PIPEWIRE_REMOTE`, else `pipewire-0`: the user's desktop daemon).
    ///
    /// Throws ``CaptureError/Code/invalidArgument`` for an empty name, and
    /// ``CaptureError/Code/deviceNotFound`` when no PipeWire daemon is reachable (the error says
    /// where it looked and how to start one).
    public init(name: String, description: String? = nil, remoteName: String? = nil) throws(CaptureError) {
        guard !name.isEmpty, !name.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw CaptureError(
                .invalidArgument,
                "a virtual camera needs a node name without spaces (got '\(name)'): pass one such as 'viewfinder-camera', and the words to show as description"
            )
        }
        let socket = remoteName ?? ProcessInfo.processInfo.environment["PIPEWIRE_REMOTE"] ?? "pipewire-0"
        let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? "(XDG_RUNTIME_DIR is not set)"
        let advice =
            "start the user's PipeWire daemon (systemctl --user start pipewire wireplumber, or run pipewire and wireplumber), or pass the socket of a running one as remoteName"
        guard PipeWireConnection.socketExists(remoteName: remoteName) else {
            throw CaptureError(
                .deviceNotFound,
                "cannot publish virtual camera '\(name)': no PipeWire daemon socket '\(socket)' in \(runtime): \(advice)"
            )
        }
        let connection: PipeWireConnection
        do {
            connection = try PipeWireConnection(remoteName: remoteName)
        } catch {
            throw CaptureError(
                .deviceNotFound,
                "cannot publish virtual camera '\(name)': the PipeWire daemon at '\(socket)' in \(runtime) does not answer (\(error.message)): \(advice)"
            )
        }
        nodeName = name
        nodeDescription = description ?? name
        node = try PipeWireVirtualCameraNode(
            connection: connection, name: name, description: nodeDescription, formats: Self.initialOffer)
        // There is no delegate: frames are published in `prepare`, on this queue.
        core = EngineOutputCore(
            Body(node: node, counters: Counters(), link: link), budgetLimit: 2,
            deliveringOn: DispatchQueue(label: "viewfinder.virtual-camera.published"))
        super.init(processing: core)
        link.owner = self
        adopt(core)
    }

    // MARK: The node

    /// Whether a consumer is streaming from the node now.
    public var isConsumerConnected: Bool { node.status.isStreaming }

    /// The format the consumer agreed on (one of ``offeredFormats``), or `nil` while none has.
    public var consumerFormat: CaptureDevice.Format? { node.status.format }

    /// The formats the node offers now (the running stream's, or the initial 640x480 offer).
    public var offeredFormats: [CaptureDevice.Format] { core.body.counters.current }

    /// What the node did with the frames that reached it since the output was made.
    public struct PublishingStatistics: Sendable, Hashable {
        /// Frames written into the consumer's buffers.
        public var published: Int
        /// Frames dropped because no consumer was streaming.
        public var droppedNoConsumer: Int
        /// Frames dropped because the consumer was still taking the previous one.
        public var droppedConsumerBusy: Int
    }

    /// The node's counters since the output was made (``CaptureOutput/statistics`` counts from the session's
    /// start, with these drops among `droppedByProcessor`).
    public var publishingStatistics: PublishingStatistics {
        let counters = core.body.counters
        return PublishingStatistics(
            published: counters.published.load(ordering: .relaxed),
            droppedNoConsumer: counters.noConsumer.load(ordering: .relaxed),
            droppedConsumerBusy: counters.consumerBusy.load(ordering: .relaxed))
    }
}
