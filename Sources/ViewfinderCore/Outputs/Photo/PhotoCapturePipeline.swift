import Dispatch
import Foundation
import Synchronization

/// Who hears how one photo request goes: the five callbacks, in order, on the pipeline's queue.
package protocol PhotoRequestClient: Sendable {
    func willBeginCapture(_ resolved: CaptureResolvedPhotoSettings)
    func willCapturePhoto(_ resolved: CaptureResolvedPhotoSettings)
    func didCapturePhoto(_ resolved: CaptureResolvedPhotoSettings)
    func didFinishProcessing(_ photo: CapturePhoto, error: CaptureError?)
    func didFinishCapture(_ resolved: CaptureResolvedPhotoSettings, error: CaptureError?)
}

extension PhotoRequestClient {
    /// Nothing to hear by default (a still-image handler hears only the finished photo).
    package func willBeginCapture(_ resolved: CaptureResolvedPhotoSettings) {}
    package func willCapturePhoto(_ resolved: CaptureResolvedPhotoSettings) {}
    package func didCapturePhoto(_ resolved: CaptureResolvedPhotoSettings) {}
    package func didFinishCapture(_ resolved: CaptureResolvedPhotoSettings, error: CaptureError?) {}
}

/// One accepted request.
package struct PhotoRequest: Sendable {
    package let resolved: CaptureResolvedPhotoSettings
    package let format: CapturePhotoSettings.Format
    package let userMetadata: [String: CapturePhotoSettings.MetadataValue]
    package let client: any PhotoRequestClient
    /// When it was accepted, on the host's monotonic clock (the clock of samples'
    /// `hostArrivalTime`): only frames that arrive later may become its photo.
    package let acceptedAt: MediaTime
}

/// What a photo stream negotiated: the device's own format, whatever the other outputs asked.
package struct PhotoStreamContext: Sendable {
    package let format: CaptureDevice.Format
    package let frameDuration: MediaTime
}

/// Which output a pipeline serves, for the words of its errors.
package enum PhotoOutputKind: Sendable {
    /// ``CapturePhotoOutput``.
    case photo
    /// ``CaptureStillImageOutput``.
    case stillImage

    /// Why a request cannot be taken on `output` now (not running, no or a disabled video
    /// connection), or `nil`.
    package func sessionRefusal(for output: CaptureOutput) -> CaptureError? {
        if output.session?.isRunning != true {
            let taking = self == .photo ? "taking a photo" : "capturing a still"
            return CaptureError(.sessionNotRunning, "the session is not running: call startRunning() before \(taking)")
        }
        guard let connection = output.connection(with: .video) else {
            let name = self == .photo ? "photo output" : "still image output"
            return CaptureError(.noInputs, "the \(name) has no video connection: add a camera input to the session")
        }
        guard connection.isEnabled else {
            return self == .photo
                ? CaptureError(
                    .invalidArgument, "the photo output's video connection is disabled: enable it to take photos")
                : CaptureError(.invalidArgument, "the still image output's video connection is disabled")
        }
        return nil
    }

    /// Why requests still waiting when `output`'s stream stopped failed.
    package func stopError(for output: CaptureOutput) -> CaptureError {
        let device = output.connection(with: .video)?.device
        if let device, !device.isConnected {
            return self == .photo
                ? CaptureError(
                    .deviceDisconnected,
                    "'\(device.localizedName)' was disconnected before the photo was taken: reconnect it and take it again"
                )
                : CaptureError(
                    .deviceDisconnected,
                    "'\(device.localizedName)' was disconnected before the still was taken: reconnect it and try again")
        }
        return self == .photo
            ? CaptureError(
                .sessionNotRunning, "the camera stream stopped before the photo was taken: take it again once it runs")
            : CaptureError(
                .sessionNotRunning, "the camera stream stopped before the still was taken: try again once it runs")
    }
}

/// The machinery behind ``CapturePhotoOutput`` and ``CaptureStillImageOutput``: the requests
/// waiting for a frame, and the body (``Body``) that puts them on the shared output core, whose
/// engine sees a frame only when requests wait for one.
///
/// On the capture thread a frame that arrives after waiting requests claims them (a batch keyed
/// by its sequence number) and goes to the engine; every other frame is skipped, uncounted
/// (``OutputBody/admits(_:from:)``), so the engine's statistics count photo frames only and the
/// stream is never touched. On the engine's delivery path (the pipeline's own serial queue) the
/// frame is encoded for each request of the batches up to its sequence number (a batch whose frame
/// the engine dropped goes with the next one, still in order), and the callbacks run. A stream
/// that stops fails what is left.
///
/// Thread safety: every member may be used from any thread; state is in a Mutex, callbacks run
/// on ``queue`` only, one at a time, never under the lock.
package final class PhotoCapturePipeline: @unchecked Sendable {
    // unchecked: state is in a Mutex; `worker` is used on `queue` only.
    /// A frame handed from the engine, with the batches it serves.
    package struct Frame {
        package let sample: CapturedSample
        package let context: PhotoStreamContext
        package let requests: [PhotoRequest]
    }

    private struct Batch {
        let sequenceNumber: UInt64
        let requests: [PhotoRequest]
    }

    private struct State {
        var streaming = false
        var pending: [PhotoRequest] = []
        var claimed: [Batch] = []
        /// A claimed frame was dropped by the engine: pass the next frame on to serve its batch.
        var needsFrame = false
        var usedIDs: Set<Int64> = []
        /// Requests accepted and not yet finished.
        var inFlight = 0
    }

    /// The serial queue every callback runs on (and photos are encoded on).
    package let queue: DispatchQueue
    package let kind: PhotoOutputKind
    private let state = Mutex(State())
    private let worker = PhotoWorker()
    private let host = HostClock()

    /// Frames the engine may hold at once (a slow encode while more requests come).
    package static let budgetLimit = 3

    package init(label: String, kind: PhotoOutputKind) {
        queue = DispatchQueue(label: "viewfinder.\(label).callbacks")
        self.kind = kind
    }

    /// The output's job on the shared core: ask the device for nothing, take only the frames
    /// requests wait for, make their photos. Its "delegate" is the pipeline itself (callbacks go
    /// to each request's client), called on the pipeline's queue.
    package struct Body: OutputBody {
        package let pipeline: PhotoCapturePipeline

        package var label: String { pipeline.kind == .photo ? "photo-output" : "still-image-output" }
        package var acceptedMediaTypes: [MediaType] { [.video] }
        package var discardsLateSamplesByDefault: Bool { false }

        /// A photo output asks nothing of the device; its stream context is the format it streams.

        package func makeContext(
            format: CaptureDevice.Format, frameDuration: MediaTime, settings: Void
        ) throws(CaptureError) -> PhotoStreamContext {
            PhotoStreamContext(format: format, frameDuration: frameDuration)
        }

        package func admits(_ sample: CapturedSample, from connection: CaptureConnection) -> Bool {
            pipeline.claims(sample, from: connection)
        }

        package func streamDidBegin(_ context: PhotoStreamContext) { pipeline.streamDidBegin() }

        package func streamDidEnd(mediaType: MediaType, output: CaptureOutput) {
            pipeline.streamDidStop(error: pipeline.kind.stopError(for: output))
        }

        package func prepare(
            _ sample: CapturedSample, context: PhotoStreamContext, budget: FrameBudget, connection: CaptureConnection
        ) -> DeliveryEngine<PhotoStreamContext, Frame>.Preparation {
            .ready(
                Frame(sample: sample, context: context, requests: pipeline.takeBatches(upTo: sample)), holdsSlot: false)
        }

        package func consume(
            _ frame: Frame, from connection: CaptureConnection, output: CaptureOutput, delegate: PhotoCapturePipeline
        ) {
            delegate.process(frame, from: connection)
        }

        package func reportDrop(
            _ drop: DeliveryEngine<PhotoStreamContext, Frame>.DropReport, output: CaptureOutput,
            delegate: PhotoCapturePipeline
        ) {
            delegate.dropped(drop)
        }
    }

    /// A core running this pipeline, its callbacks on ``queue``.
    package func makeCore() -> EngineOutputCore<Body> {
        let core = EngineOutputCore(Body(pipeline: self), budgetLimit: Self.budgetLimit)
        core.setDelegate({ [self] in self }, queue: queue)
        return core
    }

    // MARK: Requests

    /// The request for `settings` on `output`, whose stream negotiated `context`, and why it cannot
    /// be taken (settings that cannot be used, a flash, bad metadata, `output` not running or
    /// without an enabled video connection), or `nil`.
    package func makeRequest(
        _ settings: CapturePhotoSettings, client: any PhotoRequestClient, output: CaptureOutput,
        context: PhotoStreamContext?
    ) -> (PhotoRequest, CaptureError?) {
        let snapshot = settings.snapshot
        let resolved = CaptureResolvedPhotoSettings(
            uniqueID: settings.uniqueID,
            photoDimensions: context?.format.dimensions ?? .init(width: 0, height: 0),
            photoCodecType: settings.photoCodecType, photoPixelFormatType: settings.photoPixelFormatType,
            isFlashEnabled: false, expectedPhotoCount: 1)
        var refusal = settings.formatError
        if refusal == nil, snapshot.flashMode != .off {
            refusal = CaptureError(
                .invalidArgument, "this camera has no flash: use flashMode .off (see supportedFlashModes)")
        }
        if refusal == nil {
            var probe = EXIFMetadata()
            do throws(CaptureError) { try probe.apply(snapshot.metadata) } catch { refusal = error }
        }
        if refusal == nil { refusal = kind.sessionRefusal(for: output) }
        let request = PhotoRequest(
            resolved: resolved, format: settings.resolvedFormat ?? .jpeg(quality: CapturePhotoSettings.defaultQuality),
            userMetadata: snapshot.metadata, client: client, acceptedAt: .invalid)
        return (request, refusal)
    }

    /// Accepts `request` for the next frame, or — with `refusal`, a reused ID or no stream —
    /// fails it; either way its callbacks are queued (``PhotoRequestClient/willBeginCapture(_:)``
    /// first, at once).
    package func submit(_ request: PhotoRequest, refusal: CaptureError?) {
        let client = request.client
        let resolved = request.resolved
        state.withLock { state in
            var error = refusal
            if !state.usedIDs.insert(resolved.uniqueID).inserted {
                error = CaptureError(
                    .invalidArgument,
                    "photo settings \(resolved.uniqueID) were already used: make new CapturePhotoSettings (or CapturePhotoSettings(from:)) for each photo"
                )
            } else if error == nil, !state.streaming {
                error = CaptureError(
                    .sessionNotRunning, "the session is not running: call startRunning() before taking a photo")
            }
            // Queued under the lock, so it runs before anything a frame could queue for this request.
            queue.async { client.willBeginCapture(resolved) }
            if let error {
                queue.async { Self.fail(client, resolved, error) }
                return
            }
            state.inFlight += 1
            state.pending.append(
                PhotoRequest(
                    resolved: resolved, format: request.format, userMetadata: request.userMetadata, client: client,
                    acceptedAt: host.now()))
        }
    }

    /// Whether accepted requests have not finished yet.
    package var isCapturing: Bool { state.withLock { $0.inFlight > 0 } }

    private static func fail(
        _ client: any PhotoRequestClient, _ resolved: CaptureResolvedPhotoSettings, _ error: CaptureError
    ) {
        client.willCapturePhoto(resolved)
        client.didCapturePhoto(resolved)
        client.didFinishProcessing(CapturePhoto(failed: resolved), error: error)
        client.didFinishCapture(resolved, error: error)
    }

    // MARK: Stream

    private func streamDidBegin() { state.withLock { $0.streaming = true } }

    /// A frame on the capture thread: claims the requests accepted before it arrived; whether the
    /// engine should take it.
    private func claims(_ sample: CapturedSample, from connection: CaptureConnection) -> Bool {
        state.withLock { state -> Bool in
            guard state.streaming, connection.passesSamples else { return false }
            var count = 0
            while count < state.pending.count, state.pending[count].acceptedAt < sample.hostArrivalTime { count += 1 }
            guard count > 0 || state.needsFrame else { return false }
            state.needsFrame = false
            if count > 0 {
                state.claimed.append(
                    Batch(sequenceNumber: sample.sequenceNumber, requests: Array(state.pending[..<count])))
                state.pending.removeFirst(count)
            }
            return true
        }
    }

    /// The stream stopped (the engine has handed over what it held): fails what no frame served,
    /// with `error`.
    private func streamDidStop(error: @autoclosure () -> CaptureError) {
        let left = state.withLock { state -> [PhotoRequest] in
            state.streaming = false
            state.needsFrame = false
            defer {
                state.claimed = []
                state.pending = []
            }
            return state.claimed.flatMap(\.requests) + state.pending
        }
        guard !left.isEmpty else { return }
        let error = error()
        queue.async { [weak self] in
            for request in left {
                Self.fail(request.client, request.resolved, error)
                self?.finished()
            }
        }
    }

    /// Waits until the callbacks queued so far by `core`'s engine and the pipeline have run.
    @discardableResult
    package func waitUntilIdle(_ core: EngineOutputCore<Body>, timeout: Double) -> Bool {
        guard core.waitUntilDelivered(timeout: timeout) else { return false }
        let done = DispatchSemaphore(value: 0)
        queue.async { done.signal() }
        return done.wait(timeout: .now() + timeout) == .success
    }

    // MARK: Delivery path

    private func takeBatches(upTo sample: CapturedSample) -> [PhotoRequest] {
        state.withLock { state in
            let count = state.claimed.prefix { $0.sequenceNumber <= sample.sequenceNumber }.count
            defer { state.claimed.removeFirst(count) }
            return state.claimed[..<count].flatMap(\.requests)
        }
    }

    private func dropped(_ drop: DeliveryEngine<PhotoStreamContext, Frame>.DropReport) {
        state.withLock { state in
            let range = drop.sequenceNumber..<(drop.sequenceNumber &+ UInt64(max(1, drop.count)))
            if state.claimed.contains(where: { range.contains($0.sequenceNumber) }) { state.needsFrame = true }
        }
    }

    private func finished() {
        state.withLock { $0.inFlight -= 1 }
    }

    /// Makes and hands over each request's photo (on ``queue``).
    private func process(_ frame: Frame, from connection: CaptureConnection) {
        guard !frame.requests.isEmpty else { return }
        let device = connection.device
        let orientation = EXIFWriter.orientation(
            rotationAngle: connection.videoRotationAngle, isMirrored: connection.isVideoMirrored)
        let age = (host.now() - frame.sample.hostArrivalTime).seconds
        let captureDate = Date(timeIntervalSinceNow: age.isFinite ? -max(0, age) : 0)
        var base = EXIFMetadata()
        base.setCaptureDate(captureDate)
        if let manufacturer = device?.manufacturer, !manufacturer.isEmpty { base.make = manufacturer }
        if let name = device?.localizedName, !name.isEmpty { base.model = name }
        base.pixelWidth = frame.context.format.dimensions.pixelWidth
        base.pixelHeight = frame.context.format.dimensions.pixelHeight
        base.orientation = orientation
        base.software = "Viewfinder"
        worker.beginFrame()
        for request in frame.requests {
            let resolved = request.resolved
            request.client.willCapturePhoto(resolved)
            request.client.didCapturePhoto(resolved)
            let result = worker.photo(for: request, frame: frame, metadata: base)
            switch result {
            case .success(let photo):
                request.client.didFinishProcessing(photo, error: nil)
                request.client.didFinishCapture(resolved, error: nil)
            case .failure(let error):
                request.client.didFinishProcessing(CapturePhoto(failed: resolved), error: error)
                request.client.didFinishCapture(resolved, error: error)
            }
            finished()
        }
        worker.endFrame()
    }
}

/// Turns frames into photos: the JPEG encoder, converters and decoders, kept between photos.
///
/// Thread safety: not thread-safe; the pipeline uses it on its queue only.
package final class PhotoWorker: @unchecked Sendable {
    // unchecked: used on one serial queue only (documented above).
    private var encoder: JPEGEncoder?
    private var conversions = FrameConversions()
    private var decoders: [PixelFormat: JPEGDecoder] = [:]
    /// The JPEG of the current frame at each quality (several requests share one encode).
    private var encoded: [Double: [UInt8]] = [:]
    /// The frame converted for the encoder (kept for several requests of one frame).
    private var encodable: PixelBuffer?

    package func beginFrame() {
        encoded = [:]
        encodable = nil
    }

    package func endFrame() {
        encoded = [:]
        encodable = nil
    }

    package func photo(
        for request: PhotoRequest, frame: PhotoCapturePipeline.Frame, metadata base: EXIFMetadata
    ) -> Result<CapturePhoto, CaptureError> {
        do throws(CaptureError) {
            guard let image = frame.sample.image else {
                throw CaptureError(.conversionFailed, "the frame for the photo carried no image")
            }
            var metadata = base
            try metadata.apply(request.userMetadata)
            let resolved = request.resolved
            switch request.format {
            case .jpeg(let quality):
                let jpeg = try self.jpeg(image, quality: quality)
                let file = try EXIFWriter.insert(metadata, into: jpeg)
                return .success(
                    CapturePhoto(
                        timestamp: frame.sample.presentationTime, resolvedSettings: resolved, pixelBuffer: nil,
                        sequenceNumber: frame.sample.sequenceNumber, exif: metadata, jpeg: Data(file)))
            case .uncompressed(let pixelFormat):
                let buffer = try uncompressed(image, as: pixelFormat, shared: frame.sample.decodedFrame)
                return .success(
                    CapturePhoto(
                        timestamp: frame.sample.presentationTime, resolvedSettings: resolved, pixelBuffer: buffer,
                        sequenceNumber: frame.sample.sequenceNumber, exif: metadata, jpeg: nil))
            }
        } catch {
            return .failure(error)
        }
    }

    /// The JPEG of `image`: an MJPEG camera's own frame (with the standard Huffman tables where it
    /// has none), or the frame encoded at `quality`.
    private func jpeg(_ image: PixelBuffer, quality: Double) throws(CaptureError) -> [UInt8] {
        if image.pixelFormat == .mjpeg {
            let count = min(image.dataSize, image.bytes(ofPlane: 0).count)
            let bytes = [UInt8](UnsafeRawBufferPointer(start: image.baseAddress, count: count))
            return JPEGFrame.withStandardHuffmanTables(bytes)
        }
        if let done = encoded[quality] { return done }
        let source: PixelBuffer
        if JPEGEncoder.supportedPixelFormats.contains(image.pixelFormat) {
            source = image
        } else if let encodable {
            source = encodable
        } else {
            // YUYV and other formats the encoder does not take: to I420 first.
            let converted = try newBuffer(.i420, image.width, image.height)
            try conversions.conversion(of: image, to: .i420).convert(image, into: converted)
            encodable = converted
            source = converted
        }
        let encoder: JPEGEncoder
        if let existing = self.encoder {
            encoder = existing
        } else {
            encoder = try JPEGEncoder(quality: quality)
            self.encoder = encoder
        }
        encoder.quality = quality
        let jpeg = try encoder.encode(source)
        encoded[quality] = jpeg
        return jpeg
    }

    /// The frame's pixels in `pixelFormat`, in a buffer of the photo's own.
    private func uncompressed(
        _ image: PixelBuffer, as pixelFormat: PixelFormat, shared: DecodedFrame?
    ) throws(CaptureError) -> PixelBuffer {
        var image = image
        if image.pixelFormat == .mjpeg, let shared {
            // The device's one decode of this frame (the other outputs' image when they made it).
            let fallback = JPEGDecoder.supportedPixelFormats.contains(pixelFormat) ? pixelFormat : .nv12FullRange
            switch shared.wholeImage(image, fallback: fallback) {
            case .success(let decoded): image = decoded
            case .failure(let drop):
                throw CaptureError(.conversionFailed, "the frame for the photo did not decode (\(drop.reason))")
            }
        }
        let buffer = try newBuffer(pixelFormat, image.width, image.height)
        if image.pixelFormat == pixelFormat {
            PixelCopy.copy(image, into: buffer)
        } else if image.pixelFormat == .mjpeg {
            let decoder: JPEGDecoder
            if let existing = decoders[pixelFormat], existing.width == image.width, existing.height == image.height {
                decoder = existing
            } else {
                decoder = try JPEGDecoder(width: image.width, height: image.height, pixelFormat: pixelFormat)
                decoders[pixelFormat] = decoder
            }
            try decoder.decode(image, into: buffer)
        } else {
            try conversions.conversion(of: image, to: pixelFormat).convert(image, into: buffer)
        }
        return buffer
    }

    private func newBuffer(_ format: PixelFormat, _ width: Int, _ height: Int) throws(CaptureError) -> PixelBuffer {
        let pool = try PixelBufferPool(pixelFormat: format, width: width, height: height, capacity: 1)
        guard let buffer = pool.makePixelBuffer() else {
            throw CaptureError(.outOfBuffers, "could not allocate a \(width)x\(height) \(format) buffer for a photo")
        }
        return buffer
    }
}
