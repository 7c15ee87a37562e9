import Dispatch
import Foundation
import Synchronization

/// Who hears how one photo request goes: the five callbacks, in order, on the pipeline's queue.
package protocol PhotoRequestClient: Sendable {
    func willBeginCapture(_ resolved: CaptureResolvedPhotoSettings)
    func willCapturePhoto(_ resolved: CaptureResolvedPhotoSettings)
    func didCapturePhoto(_ resolved: CaptureResolvedPhotoSettings)
    func didFinishProcessing(_ photo: CapturePhoto, error: CaptureError?)
    func didFinishCapturingDeferredPhotoProxy(_ proxy: CaptureDeferredPhotoProxy, error: CaptureError?)
    func didFinishCapture(_ resolved: CaptureResolvedPhotoSettings, error: CaptureError?)
}

extension PhotoRequestClient {
    /// Nothing to hear by default (a still-image handler hears only the finished photo).
    package func willBeginCapture(_ resolved: CaptureResolvedPhotoSettings) {}
    package func willCapturePhoto(_ resolved: CaptureResolvedPhotoSettings) {}
    package func didCapturePhoto(_ resolved: CaptureResolvedPhotoSettings) {}
    package func didFinishCapturingDeferredPhotoProxy(_ proxy: CaptureDeferredPhotoProxy, error: CaptureError?) {}
    package func didFinishCapture(_ resolved: CaptureResolvedPhotoSettings, error: CaptureError?) {}
}

/// One accepted request.
package struct PhotoRequest: Sendable {
    package var resolved: CaptureResolvedPhotoSettings
    package let format: CapturePhotoSettings.Format
    package let userMetadata: [String: CapturePhotoSettings.MetadataValue]
    package let client: any PhotoRequestClient
    /// When it was accepted, on the pipeline's clock (the host's monotonic clock, the clock of
    /// samples' `hostArrivalTime`): without zero shutter lag only frames that arrive later may
    /// become its photo; with it, the kept frame that arrived nearest this time does.
    package var acceptedAt: MediaTime
    /// The preview image asked for: its size (the photo's size when `nil` in the settings).
    package var preview: CaptureDevice.Dimensions? = nil
    /// Whether it is delivered as a ``CaptureDeferredPhotoProxy``.
    package var deferred = false
    /// The EXIF thumbnail asked for: its size (`nil`: none).
    package var thumbnail: CaptureDevice.Dimensions? = nil
}

/// The photo modes of AVFoundation's responsive capture family, as an output has them set.
package struct PhotoModes: Sendable, Equatable {
    /// Photos from the frame nearest the request, kept in ``PhotoFrameRing``.
    package var zeroShutterLag = false
    /// Captures overlap: a frame is taken while earlier photos are still being made.
    package var responsiveCapture = false
    /// A photo asked for while another is being made is made the fast way (no preview image).
    package var fastCapturePrioritization = false
    /// JPEG photos that need encoding come as deferred proxies, encoded when asked for.
    package var autoDeferredPhotoDelivery = false
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
        var modes = PhotoModes()
        /// Zero-shutter-lag requests waiting for a frame that may be nearer than the ring's newest.
        var nearestPending: [PhotoRequest] = []
        /// Photos whose frame was taken and that are not finished yet.
        var processing = 0
        /// The stream's frame interval (half of it decides whether a later frame may be nearer).
        var frameDuration = MediaTime.invalid
        /// The readiness last reported to ``readinessHandler``.
        var reported = CapturePhotoOutput.CaptureReadiness.sessionNotRunning
    }

    /// The serial queue every callback runs on (and photos are encoded on).
    package let queue: DispatchQueue
    package let kind: PhotoOutputKind
    private let state = Mutex(State())
    private let worker = PhotoWorker()
    /// Makes zero-shutter-lag photos, on ``processingQueue`` only.
    private let ringWorker = PhotoWorker()
    /// The clock requests are stamped with: the host's (that of `hostArrivalTime`); tests set
    /// the clock their camera stamps frames with.
    package var clock: any CaptureClock {
        get { clockSlot.withLock { $0 } }
        set { clockSlot.withLock { $0 = newValue } }
    }
    private let clockSlot = Mutex<any CaptureClock>(HostClock())
    private var host: any CaptureClock { clock }
    /// The zero-shutter-lag ring (empty unless zero shutter lag is on).
    package let ring = PhotoFrameRing()
    /// Where zero-shutter-lag photos are made (encoded), so frames keep coming into the ring
    /// while a photo is made; the callbacks still run on ``queue``.
    package let processingQueue: DispatchQueue
    /// Told of readiness changes, on ``queue``.
    private let readinessHandler = Mutex<(@Sendable (CapturePhotoOutput.CaptureReadiness) -> Void)?>(nil)

    /// Frames the engine may hold at once (a slow encode while more requests come).
    package static let budgetLimit = 3

    package init(label: String, kind: PhotoOutputKind) {
        queue = DispatchQueue(label: "viewfinder.\(label).callbacks")
        processingQueue = DispatchQueue(label: "viewfinder.\(label).processing")
        self.kind = kind
    }

    // MARK: Modes and readiness

    /// The modes set now.
    package var modes: PhotoModes { state.withLock { $0.modes } }

    /// Sets the modes (zero shutter lag turned off lets the ring's frames go; requests waiting
    /// for a nearer frame are served by the next one).
    package func setModes(_ change: (inout PhotoModes) -> Void) {
        let ringOff = state.withLock { state -> Bool in
            change(&state.modes)
            noteReadiness(&state)
            return !state.modes.zeroShutterLag
        }
        if ringOff { ring.removeAll() }
    }

    /// Calls `handler` with every change of ``readiness``, on ``queue``.
    package func onReadinessChange(_ handler: @escaping @Sendable (CapturePhotoOutput.CaptureReadiness) -> Void) {
        readinessHandler.withLock { $0 = handler }
    }

    /// Whether a photo asked for now would be taken at once (see
    /// ``CapturePhotoOutput/captureReadiness``).
    package var readiness: CapturePhotoOutput.CaptureReadiness { state.withLock { Self.readiness(of: $0) } }

    private static func readiness(of state: State) -> CapturePhotoOutput.CaptureReadiness {
        guard state.streaming else { return .sessionNotRunning }
        if !state.pending.isEmpty || !state.claimed.isEmpty || !state.nearestPending.isEmpty {
            return .notReadyWaitingForCapture
        }
        if state.modes.responsiveCapture && state.modes.zeroShutterLag {
            return state.processing >= PhotoFrameRing.processingCapacity ? .notReadyMomentarily : .ready
        }
        return state.inFlight > 0 ? .notReadyWaitingForProcessing : .ready
    }

    /// Queues a report of the readiness if it changed (under the lock, so reports keep order).
    private func noteReadiness(_ state: inout State) {
        let now = Self.readiness(of: state)
        guard now != state.reported else { return }
        state.reported = now
        guard let handler = readinessHandler.withLock({ $0 }) else { return }
        queue.async { handler(now) }
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

        package func streamDidBegin(_ context: PhotoStreamContext) { pipeline.streamDidBegin(context) }

        package func streamDidEnd(mediaType: MediaType, output: CaptureOutput) {
            pipeline.streamDidStop(error: pipeline.kind.stopError(for: output))
        }

        package func prepare(
            _ sample: CapturedSample, context: PhotoStreamContext, budget: FrameBudget, connection: CaptureConnection
        ) -> DeliveryEngine<PhotoStreamContext, Frame>.Preparation {
            pipeline.keepForZeroShutterLag(sample, context: context, connection: connection)
            return .ready(
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
        let format = settings.resolvedFormat ?? .jpeg(quality: CapturePhotoSettings.defaultQuality)
        var request = PhotoRequest(
            resolved: resolved, format: format, userMetadata: snapshot.metadata, client: client, acceptedAt: .invalid)
        let photoSize = resolved.photoDimensions
        if let previewFormat = settings.previewPhotoFormat {
            switch Self.previewSize(previewFormat, photo: photoSize) {
            case .success(let size):
                request.preview = size
                request.resolved.previewDimensions = size
            case .failure(let error):
                if refusal == nil { refusal = error }
            }
        }
        if let thumbnailFormat = settings.embeddedThumbnailPhotoFormat {
            switch Self.thumbnailSize(thumbnailFormat, photo: photoSize, photoFormat: format) {
            case .success(let size):
                request.thumbnail = size
                request.resolved.embeddedThumbnailDimensions = size
            case .failure(let error):
                if refusal == nil { refusal = error }
            }
        }
        if case .jpeg = format, modes.autoDeferredPhotoDelivery, context?.format.pixelFormat != .mjpeg {
            request.deferred = true
            request.resolved.deferredPhotoProxyDimensions = photoSize
        }
        return (request, refusal)
    }

    /// Accepts `request` for the next frame, or — with `refusal`, a reused ID or no stream —
    /// fails it; either way its callbacks are queued (``PhotoRequestClient/willBeginCapture(_:)``
    /// first, at once).
    package func submit(_ request: PhotoRequest, refusal: CaptureError?) {
        let client = request.client
        state.withLock { state in
            var accepted = request
            if state.modes.zeroShutterLag && state.modes.fastCapturePrioritization && state.processing > 0 {
                // Another photo is being made: this one favours speed (no preview image).
                accepted.resolved.isFastCapturePrioritizationEnabled = true
                accepted.resolved.previewDimensions = CaptureDevice.Dimensions(width: 0, height: 0)
                accepted.preview = nil
            }
            let resolved = accepted.resolved
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
            accepted.acceptedAt = host.now()
            if state.modes.zeroShutterLag {
                state.nearestPending.append(accepted)
                serveNearest(&state)
            } else {
                state.pending.append(accepted)
            }
            noteReadiness(&state)
        }
    }

    /// The preview size `format` asks for, fitted to a photo of `photo` (aspect kept), or why
    /// the format cannot be used.
    package static func previewSize(_ format: [String: Any], photo: CaptureDevice.Dimensions) -> Result<
        CaptureDevice.Dimensions, CaptureError
    > {
        let known: Set<String> = [kCVPixelBufferPixelFormatTypeKey, kCVPixelBufferWidthKey, kCVPixelBufferHeightKey]
        if let unknown = format.keys.first(where: { !known.contains($0) }) {
            return .failure(
                CaptureError(
                    .invalidArgument,
                    "preview photo format key '\(unknown)' is not supported: use kCVPixelBufferPixelFormatTypeKey, kCVPixelBufferWidthKey and kCVPixelBufferHeightKey"
                ))
        }
        let raw = format[kCVPixelBufferPixelFormatTypeKey]
        let pixelFormat: OSType? =
            switch raw {
            case let p as PixelFormat: p.rawValue
            case let v as OSType: v
            case let v as Int where v >= 0 && v <= Int(UInt32.max): OSType(v)
            default: nil
            }
        guard pixelFormat == kCVPixelFormatType_32BGRA else {
            return .failure(
                CaptureError(
                    .invalidArgument,
                    "a preview photo is BGRA: set kCVPixelBufferPixelFormatTypeKey to kCVPixelFormatType_32BGRA (see availablePreviewPhotoPixelFormatTypes), not \(raw.map { "\($0)" } ?? "nothing")"
                ))
        }
        func side(_ key: String) -> Result<Int?, CaptureError> {
            guard let value = format[key] else { return .success(nil) }
            let number: Int? =
                switch value {
                case let i as Int: i
                case let i as Int32: Int(i)
                case let d as Double where d.rounded() == d && abs(d) < 1e9: Int(d)
                default: nil
                }
            guard let number, number > 0, number <= PixelBuffer.maximumDimension else {
                return .failure(
                    CaptureError(
                        .invalidArgument,
                        "the preview photo's \(key) takes a whole number of pixels from 1 to \(PixelBuffer.maximumDimension), got \(value)"
                    ))
            }
            return .success(number)
        }
        let width: Int?
        let height: Int?
        switch (side(kCVPixelBufferWidthKey), side(kCVPixelBufferHeightKey)) {
        case (.failure(let error), _), (_, .failure(let error)): return .failure(error)
        case (.success(let w), .success(let h)): (width, height) = (w, h)
        }
        let photoWidth = Int(photo.width)
        let photoHeight = Int(photo.height)
        guard photoWidth > 0, photoHeight > 0 else { return .success(photo) }
        let boxWidth = width ?? (height.map { $0 * photoWidth / photoHeight } ?? photoWidth)
        let boxHeight = height ?? (width.map { $0 * photoHeight / photoWidth } ?? photoHeight)
        // Fit inside the box, aspect kept, even sides (chroma), at least 2, never larger than the photo.
        let scale = min(1, min(Double(boxWidth) / Double(photoWidth), Double(boxHeight) / Double(photoHeight)))
        let fitted = { (side: Int) in max(2, Int((Double(side) * scale).rounded(.down)) & ~1) }
        return .success(CaptureDevice.Dimensions(width: Int32(fitted(photoWidth)), height: Int32(fitted(photoHeight))))
    }

    /// The default box of an embedded thumbnail (the EXIF/DCF thumbnail size) and the largest
    /// side one may have (so that it fits in the 64 KiB EXIF segment).
    package static let defaultThumbnailBox = (width: 160, height: 120)
    package static let maximumThumbnailSide = 640

    /// The embedded thumbnail's size `format` asks for, fitted to a photo of `photo` (aspect
    /// kept), or why it cannot be made (see ``CapturePhotoSettings/embeddedThumbnailPhotoFormat``).
    package static func thumbnailSize(
        _ format: [String: Any], photo: CaptureDevice.Dimensions, photoFormat: CapturePhotoSettings.Format
    ) -> Result<CaptureDevice.Dimensions, CaptureError> {
        func refuse(_ message: String) -> Result<CaptureDevice.Dimensions, CaptureError> {
            .failure(CaptureError(.invalidArgument, message))
        }
        let known: Set<String> = [VideoCodecKey, VideoWidthKey, VideoHeightKey]
        if let unknown = format.keys.sorted().first(where: { !known.contains($0) }) {
            return refuse(
                "embedded thumbnail format key '\(unknown)' is not supported: use VideoCodecKey, VideoWidthKey and VideoHeightKey"
            )
        }
        let codec: VideoCodecType? =
            switch format[VideoCodecKey] {
            case let type as VideoCodecType: type
            case let name as String: VideoCodecType(rawValue: name)
            default: nil
            }
        guard codec == .jpeg else {
            return refuse(
                "an embedded thumbnail is JPEG: set VideoCodecKey to VideoCodecType.jpeg (see availableEmbeddedThumbnailPhotoCodecTypes), not \(format[VideoCodecKey].map { "\($0)" } ?? "nothing")"
            )
        }
        guard case .jpeg = photoFormat else {
            return refuse(
                "an uncompressed photo has no file to embed a thumbnail in: ask for a JPEG photo, or set no embeddedThumbnailPhotoFormat"
            )
        }
        func side(_ key: String) -> Result<Int?, CaptureError> {
            guard let value = format[key] else { return .success(nil) }
            let number: Int? =
                switch value {
                case let i as Int: i
                case let i as Int32: Int(i)
                case let d as Double where d.rounded() == d && abs(d) < 1e9: Int(d)
                default: nil
                }
            guard let number, number > 0 else {
                return .failure(
                    CaptureError(
                        .invalidArgument,
                        "the embedded thumbnail's \(key) takes a whole number of pixels of at least 1, got \(value)"))
            }
            return .success(min(number, maximumThumbnailSide))
        }
        let width: Int?
        let height: Int?
        switch (side(VideoWidthKey), side(VideoHeightKey)) {
        case (.failure(let error), _), (_, .failure(let error)): return .failure(error)
        case (.success(let w), .success(let h)): (width, height) = (w, h)
        }
        let photoWidth = Int(photo.width)
        let photoHeight = Int(photo.height)
        guard photoWidth > 0, photoHeight > 0 else { return .success(photo) }
        let boxWidth: Int
        let boxHeight: Int
        switch (width, height) {
        case (nil, nil): (boxWidth, boxHeight) = defaultThumbnailBox
        case (let w?, nil): (boxWidth, boxHeight) = (w, maximumThumbnailSide)
        case (nil, let h?): (boxWidth, boxHeight) = (maximumThumbnailSide, h)
        case (let w?, let h?): (boxWidth, boxHeight) = (w, h)
        }
        // Fit inside the box, aspect kept, even sides (chroma), at least 2, never larger than the photo.
        let scale = min(1, min(Double(boxWidth) / Double(photoWidth), Double(boxHeight) / Double(photoHeight)))
        let fitted = { (side: Int) in max(2, Int((Double(side) * scale).rounded(.down)) & ~1) }
        return .success(CaptureDevice.Dimensions(width: Int32(fitted(photoWidth)), height: Int32(fitted(photoHeight))))
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

    private func streamDidBegin(_ context: PhotoStreamContext) {
        state.withLock { state in
            state.streaming = true
            state.frameDuration = context.frameDuration
            noteReadiness(&state)
        }
    }

    /// A frame on the capture thread: claims the requests accepted before it arrived; whether the
    /// engine should take it.
    private func claims(_ sample: CapturedSample, from connection: CaptureConnection) -> Bool {
        state.withLock { state -> Bool in
            guard state.streaming, connection.passesSamples else { return false }
            let claimed = claimBatch(sample, &state)
            // With zero shutter lag every frame goes to the ring.
            return claimed || state.modes.zeroShutterLag
        }
    }

    /// Claims the requests accepted before `sample` arrived for it; whether the engine must take it.
    private func claimBatch(_ sample: CapturedSample, _ state: inout State) -> Bool {
        var count = 0
        while count < state.pending.count, state.pending[count].acceptedAt < sample.hostArrivalTime { count += 1 }
        guard count > 0 || state.needsFrame else { return false }
        state.needsFrame = false
        if count > 0 {
            state.claimed.append(
                Batch(sequenceNumber: sample.sequenceNumber, requests: Array(state.pending[..<count])))
            state.pending.removeFirst(count)
            noteReadiness(&state)
        }
        return true
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
                state.nearestPending = []
                noteReadiness(&state)
            }
            return state.claimed.flatMap(\.requests) + state.pending + state.nearestPending
        }
        ring.removeAll()
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
        let processed = DispatchSemaphore(value: 0)
        processingQueue.async { processed.signal() }
        guard processed.wait(timeout: .now() + timeout) == .success else { return false }
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

    private func finished(processing: Bool = false) {
        state.withLock { state in
            state.inFlight -= 1
            if processing { state.processing -= 1 }
            noteReadiness(&state)
        }
    }

    // MARK: Zero shutter lag

    /// On the delivery path: keeps `sample` in the ring (with zero shutter lag on) and serves the
    /// requests waiting for a nearer frame.
    private func keepForZeroShutterLag(
        _ sample: CapturedSample, context: PhotoStreamContext, connection: CaptureConnection
    ) {
        guard state.withLock({ $0.modes.zeroShutterLag }) else { return }
        ring.insert(sample, from: connection)
        state.withLock { state in
            guard !state.nearestPending.isEmpty else { return }
            serveNearest(&state)
            noteReadiness(&state)
        }
    }

    /// Serves the waiting zero-shutter-lag requests, in order, whose nearest frame is known: the
    /// ring's frame nearest each request's time, once no later frame can be nearer.
    private func serveNearest(_ state: inout State) {
        while let request = state.nearestPending.first,
            let (entry, laterMayBeNearer) = ring.nearest(to: request.acceptedAt, frameDuration: state.frameDuration),
            !laterMayBeNearer
        {
            state.nearestPending.removeFirst()
            state.processing += 1
            let responsive = state.modes.responsiveCapture
            let resolved = request.resolved
            let client = request.client
            if responsive {
                // The frame is taken now, whatever earlier photos are still being made.
                queue.async {
                    client.willCapturePhoto(resolved)
                    client.didCapturePhoto(resolved)
                }
            }
            processingQueue.async { [self] in
                if !responsive {
                    queue.sync {
                        client.willCapturePhoto(resolved)
                        client.didCapturePhoto(resolved)
                    }
                }
                let sample = CapturedSample(
                    buffer: entry.buffer, presentationTime: entry.presentationTime, duration: entry.duration,
                    sequenceNumber: entry.sequenceNumber, hostArrivalTime: entry.hostArrivalTime)
                let metadata = Self.baseMetadata(
                    sample: sample,
                    dimensions: CaptureDevice.Dimensions(
                        width: Int32(entry.buffer.width), height: Int32(entry.buffer.height)),
                    connection: entry.connection, now: host.now())
                ringWorker.beginFrame()
                let outcome = ringWorker.outcome(for: request, sample: sample, metadata: metadata)
                ringWorker.endFrame()
                queue.async { [self] in
                    Self.deliver(outcome, to: client, resolved)
                    finished(processing: true)
                }
            }
        }
    }

    /// Makes and hands over each request's photo (on ``queue``).
    private func process(_ frame: Frame, from connection: CaptureConnection) {
        guard !frame.requests.isEmpty else { return }
        let base = Self.baseMetadata(
            sample: frame.sample, dimensions: frame.context.format.dimensions, connection: connection, now: host.now())
        worker.beginFrame()
        for request in frame.requests {
            let resolved = request.resolved
            request.client.willCapturePhoto(resolved)
            request.client.didCapturePhoto(resolved)
            Self.deliver(
                worker.outcome(for: request, sample: frame.sample, metadata: base), to: request.client, resolved)
            finished()
        }
        worker.endFrame()
    }

    /// The EXIF fields every photo of a frame has: capture date, device, size, orientation.
    private static func baseMetadata(
        sample: CapturedSample, dimensions: CaptureDevice.Dimensions, connection: CaptureConnection, now: MediaTime
    ) -> EXIFMetadata {
        let device = connection.device
        let orientation = EXIFWriter.orientation(
            rotationAngle: connection.videoRotationAngle, isMirrored: connection.isVideoMirrored)
        let age = (now - sample.hostArrivalTime).seconds
        let captureDate = Date(timeIntervalSinceNow: age.isFinite ? -max(0, age) : 0)
        var base = EXIFMetadata()
        base.setCaptureDate(captureDate)
        if let manufacturer = device?.manufacturer, !manufacturer.isEmpty { base.make = manufacturer }
        if let name = device?.localizedName, !name.isEmpty { base.model = name }
        base.pixelWidth = Int(dimensions.width)
        base.pixelHeight = Int(dimensions.height)
        base.orientation = orientation
        base.software = "Viewfinder"
        return base
    }

    /// Hands a request's outcome to its client: the photo (or proxy), then the end of the request.
    private static func deliver(
        _ outcome: Result<PhotoWorker.Outcome, CaptureError>, to client: any PhotoRequestClient,
        _ resolved: CaptureResolvedPhotoSettings
    ) {
        switch outcome {
        case .success(.photo(let photo)):
            client.didFinishProcessing(photo, error: nil)
            client.didFinishCapture(resolved, error: nil)
        case .success(.proxy(let proxy)):
            client.didFinishCapturingDeferredPhotoProxy(proxy, error: nil)
            client.didFinishCapture(resolved, error: nil)
        case .failure(let error):
            client.didFinishProcessing(CapturePhoto(failed: resolved), error: error)
            client.didFinishCapture(resolved, error: error)
        }
    }
}

/// Turns frames into photos: the JPEG encoder, converters and decoders, kept between photos.
///
/// Thread safety: not thread-safe; the pipeline uses it on its queue only.
package final class PhotoWorker: @unchecked Sendable {
    // unchecked: used on one serial queue only (documented above).
    private var encoder: JPEGEncoder?
    /// The embedded thumbnails' encoder (its own, so the frame's encodes stay cached by quality).
    private var thumbnailEncoder: JPEGEncoder?
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

    /// What a request becomes: a photo, or a deferred proxy to be processed later.
    package enum Outcome {
        case photo(CapturePhoto)
        case proxy(CaptureDeferredPhotoProxy)
    }

    /// `request`'s photo from `sample`'s frame, with the frame's EXIF `base` and the request's
    /// own fields; a deferred request's proxy (holding a copy of the frame) instead.
    package func outcome(
        for request: PhotoRequest, sample: CapturedSample, metadata base: EXIFMetadata
    ) -> Result<Outcome, CaptureError> {
        do throws(CaptureError) {
            guard let image = sample.image else {
                throw CaptureError(.conversionFailed, "the frame for the photo carried no image")
            }
            var metadata = base
            try metadata.apply(request.userMetadata)
            let resolved = request.resolved
            let preview = try request.preview.map { size throws(CaptureError) in
                try previewImage(image, size: size, shared: sample.decodedFrame)
            }
            switch request.format {
            case .jpeg(let quality) where request.deferred && image.pixelFormat != .mjpeg:
                let frame = try newBuffer(image.pixelFormat, image.width, image.height)
                PixelCopy.copy(image, into: frame)
                return .success(
                    .proxy(
                        CaptureDeferredPhotoProxy(
                            timestamp: sample.presentationTime, resolvedSettings: resolved,
                            sequenceNumber: sample.sequenceNumber, exif: metadata, frame: frame, quality: quality,
                            preview: preview)))
            case .jpeg(let quality):
                let file = try self.file(
                    image, quality: quality, metadata: metadata, thumbnail: request.thumbnail,
                    shared: sample.decodedFrame)
                return .success(
                    .photo(
                        CapturePhoto(
                            timestamp: sample.presentationTime, resolvedSettings: resolved, pixelBuffer: nil,
                            sequenceNumber: sample.sequenceNumber, exif: metadata, jpeg: Data(file), preview: preview)))
            case .uncompressed(let pixelFormat):
                let buffer = try uncompressed(image, as: pixelFormat, shared: sample.decodedFrame)
                return .success(
                    .photo(
                        CapturePhoto(
                            timestamp: sample.presentationTime, resolvedSettings: resolved, pixelBuffer: buffer,
                            sequenceNumber: sample.sequenceNumber, exif: metadata, jpeg: nil, preview: preview)))
            }
        } catch {
            return .failure(error)
        }
    }

    /// A BGRA preview of `image` at `size` (the frame converted, decoded for Motion-JPEG, then scaled).
    private func previewImage(
        _ image: PixelBuffer, size: CaptureDevice.Dimensions, shared: DecodedFrame?
    ) throws(CaptureError) -> PixelBuffer {
        let width = Int(size.width)
        let height = Int(size.height)
        var source = image
        if image.pixelFormat == .mjpeg { source = try uncompressed(image, as: .bgra, shared: shared) }
        let preview = try newBuffer(.bgra, width, height)
        try conversions.conversion(of: source, to: .bgra, size: size).convert(source, into: preview)
        return preview
    }

    /// The photo's JPEG file: ``jpeg(_:quality:)`` with `metadata` as its EXIF segment and, when
    /// asked, a JPEG thumbnail of `image` at `thumbnail`'s size in IFD1 — at the photo's quality,
    /// lowered step by step until the segment fits in its 64 KiB.
    package func file(
        _ image: PixelBuffer, quality: Double, metadata: EXIFMetadata, thumbnail: CaptureDevice.Dimensions?,
        shared: DecodedFrame?
    ) throws(CaptureError) -> [UInt8] {
        let jpeg = try self.jpeg(image, quality: quality)
        guard let thumbnail else { return try EXIFWriter.insert(metadata, into: jpeg) }
        let small = try previewImage(image, size: thumbnail, shared: shared)
        let encoder: JPEGEncoder
        if let existing = thumbnailEncoder {
            encoder = existing
        } else {
            encoder = try JPEGEncoder(quality: quality)
            thumbnailEncoder = encoder
        }
        var failure: CaptureError?
        for step in [quality, 0.7, 0.5, 0.3, 0.1] where step <= quality {
            encoder.quality = step
            let bytes = try encoder.encode(small)
            do throws(CaptureError) {
                return try EXIFWriter.insert(metadata, thumbnail: bytes, into: jpeg)
            } catch {
                failure = error
            }
        }
        throw failure
            ?? CaptureError(
                .invalidArgument, "the \(thumbnail.width)x\(thumbnail.height) thumbnail could not be embedded")
    }

    /// The JPEG of `image`: an MJPEG camera's own frame (with the standard Huffman tables where it
    /// has none), or the frame encoded at `quality`.
    package func jpeg(_ image: PixelBuffer, quality: Double) throws(CaptureError) -> [UInt8] {
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
