import Dispatch
import Foundation
import Synchronization

// AVFoundation's photo responsiveness family (iOS 17): zero shutter lag, responsive capture, fast
// capture prioritization, deferred photo delivery, and the readiness a shutter button follows.

extension CapturePhotoOutput {
    /// Whether a photo can be taken now (`AVCapturePhotoOutput.CaptureReadiness`).
    public enum CaptureReadiness: Int, Sendable, Hashable {
        /// The session is not running.
        case sessionNotRunning = 0
        /// A photo asked for now is taken at once.
        case ready = 1
        /// Busy for a moment: with responsive capture, as many photos are being made as the
        /// zero-shutter-lag ring can lend frames to (2).
        case notReadyMomentarily = 2
        /// A request is waiting for its frame.
        case notReadyWaitingForCapture = 3
        /// A photo is being made, and without responsive capture the next waits for it.
        case notReadyWaitingForProcessing = 4
    }

    /// Whether a photo asked for now would be taken at once, for a shutter button's state:
    /// ``CaptureReadiness/sessionNotRunning`` until the output's stream runs;
    /// ``CaptureReadiness/notReadyWaitingForCapture`` while a request waits for its frame;
    /// without responsive capture, ``CaptureReadiness/notReadyWaitingForProcessing`` while a
    /// photo is being made; with it, ``CaptureReadiness/notReadyMomentarily`` while the photos
    /// being made hold every frame the ring can lend; otherwise ``CaptureReadiness/ready``.
    /// Key-value observable: changes are reported on the output's callback queue, in order.
    public var captureReadiness: CaptureReadiness {
        connection(with: .video)?.isActive == true ? pipeline.readiness : .sessionNotRunning
    }

    // MARK: Zero shutter lag

    /// Whether zero shutter lag can be turned on: `true` once the output is connected to a camera
    /// (`false` before, as AVFoundation answers before the output is in a session).
    public var isZeroShutterLagSupported: Bool { connection(with: .video) != nil }

    /// Whether photos come from the frame that arrived nearest the moment
    /// ``capturePhoto(with:delegate:)`` was called, instead of the first frame after it.
    ///
    /// The output then keeps copies of the last 4 frames in a ring, plus up to 2 frames lent to
    /// photos being made: at most 6 frames of the stream's size (1080p NV12: 18.7 MB; 1080p YUYV: 24.9 MB;
    /// Motion-JPEG: slots of raw 4:2:2 size holding the compressed frames). That is the output's
    /// memory budget beside its engine's 3 frames in flight; it costs one copy of every frame on
    /// the output's delivery queue, and the output's ``CaptureOutput/statistics`` then count
    /// every frame (each delivered into the ring). A request made more than half a frame
    /// interval after the newest kept frame waits for the next frame and takes the nearer of
    /// the two; one made when the ring is empty takes the first frame that comes.
    ///
    /// Default `false` (AVFoundation turns it on where supported; here it costs the copies
    /// above, so it is asked for). Setting `true` while ``isZeroShutterLagSupported`` is `false`
    /// traps, as AVFoundation raises. Turning it off turns off responsive capture and fast
    /// capture prioritization, which depend on it, and lets the ring's frames go. Applies from
    /// the next request.
    public var isZeroShutterLagEnabled: Bool {
        get { pipeline.modes.zeroShutterLag }
        set {
            if newValue {
                Self.requireSupport(isZeroShutterLagSupported, "zero shutter lag", "isZeroShutterLagSupported")
            }
            pipeline.setModes { modes in
                modes.zeroShutterLag = newValue
                if !newValue {
                    modes.responsiveCapture = false
                    modes.fastCapturePrioritization = false
                }
            }
        }
    }

    // MARK: Responsive capture

    /// Whether responsive capture can be turned on: when ``isZeroShutterLagEnabled`` is.
    public var isResponsiveCaptureSupported: Bool { isZeroShutterLagEnabled }

    /// Whether captures overlap: a request's frame is taken (its `willCapturePhotoFor` and
    /// `didCapturePhotoFor` called) while earlier photos are still being encoded, instead of
    /// after them. Photos are made one at a time on the output's processing queue and every
    /// request's callbacks still come in order, each request's photo after the photos of the
    /// requests before it. Default `false`; setting `true` while ``isResponsiveCaptureSupported``
    /// is `false` traps, as AVFoundation raises. Turning it off turns off fast capture
    /// prioritization.
    public var isResponsiveCaptureEnabled: Bool {
        get { pipeline.modes.responsiveCapture }
        set {
            if newValue {
                Self.requireSupport(isResponsiveCaptureSupported, "responsive capture", "isResponsiveCaptureSupported")
            }
            pipeline.setModes { modes in
                modes.responsiveCapture = newValue
                if !newValue { modes.fastCapturePrioritization = false }
            }
        }
    }

    /// Whether fast capture prioritization can be turned on: when ``isResponsiveCaptureEnabled`` is.
    public var isFastCapturePrioritizationSupported: Bool { isResponsiveCaptureEnabled }

    /// Whether a photo asked for while another is being made favours speed: it is made without
    /// its preview image (``CapturePhotoSettings/previewPhotoFormat``), and its resolved
    /// settings' ``CaptureResolvedPhotoSettings/isFastCapturePrioritizationEnabled`` says so.
    /// (AVFoundation skips multi-frame fusion then; a Linux photo is one frame already.) Default
    /// `false`; setting `true` while ``isFastCapturePrioritizationSupported`` is `false` traps.
    public var isFastCapturePrioritizationEnabled: Bool {
        get { pipeline.modes.fastCapturePrioritization }
        set {
            if newValue {
                Self.requireSupport(
                    isFastCapturePrioritizationSupported, "fast capture prioritization",
                    "isFastCapturePrioritizationSupported")
            }
            pipeline.setModes { $0.fastCapturePrioritization = newValue }
        }
    }

    // MARK: Deferred photo delivery

    /// Whether deferred photo delivery can be turned on: `true` once the output is connected to
    /// a camera.
    public var isAutoDeferredPhotoDeliverySupported: Bool { connection(with: .video) != nil }

    /// Whether JPEG photos that need encoding come as a ``CaptureDeferredPhotoProxy`` through
    /// ``CapturePhotoCaptureDelegate/photoOutput(_:didFinishCapturingDeferredPhotoProxy:error:)``
    /// (instead of `didFinishProcessingPhoto`) as soon as their frame is copied, and are encoded
    /// when the app asks the proxy for them. The photos of a Motion-JPEG camera (its own JPEG
    /// frames, nothing to process) and uncompressed photos still come processed. Default
    /// `false`; setting `true` while ``isAutoDeferredPhotoDeliverySupported`` is `false` traps.
    public var isAutoDeferredPhotoDeliveryEnabled: Bool {
        get { pipeline.modes.autoDeferredPhotoDelivery }
        set {
            if newValue {
                Self.requireSupport(
                    isAutoDeferredPhotoDeliverySupported, "deferred photo delivery",
                    "isAutoDeferredPhotoDeliverySupported")
            }
            pipeline.setModes { $0.autoDeferredPhotoDelivery = newValue }
        }
    }

    /// Traps when a feature is turned on without support, as AVFoundation raises.
    private static func requireSupport(_ supported: Bool, _ feature: String, _ check: String) {
        if !supported {
            preconditionFailure(
                "\(feature) is not supported by this photo output now: check \(check) first (it is false)")
        }
    }

    /// Reports a readiness change to observers and coordinators (on the output's callback queue).
    package func readinessDidChange(_ readiness: CaptureReadiness) {
        didChangeValue(for: \.captureReadiness, to: readiness)
        let coordinators = readinessCoordinators.withLock { list in
            list.removeAll { $0.value == nil }
            return list.compactMap(\.value)
        }
        for coordinator in coordinators { coordinator.report() }
    }

    /// Tells the coordinators tracking `uniqueID` that the output has the request now.
    package func coordinatorsSubmitted(_ uniqueID: Int64) {
        let coordinators = readinessCoordinators.withLock { $0.compactMap(\.value) }
        for coordinator in coordinators { coordinator.requestWasSubmitted(uniqueID) }
    }
}

/// Tracks whether a photo output can take a photo now, counting the requests the app is about to
/// make (`AVCapturePhotoOutputReadinessCoordinator`), for a shutter button's state.
///
/// Call ``startTrackingCaptureRequest(using:)`` when the shutter is pressed, before
/// ``CapturePhotoOutput/capturePhoto(with:delegate:)``: until the output has the request, the
/// coordinator reports ``CapturePhotoOutput/CaptureReadiness/notReadyMomentarily`` where the
/// output would report ``CapturePhotoOutput/CaptureReadiness/ready``; once it has it, the output's
/// own readiness (``CapturePhotoOutput/captureReadiness``) takes over.
/// ``stopTrackingCaptureRequest(using:)`` forgets a request that will not be made.
///
/// Thread safety: may be used from any thread; the delegate is called on the main queue, once
/// per change, in order.
public final class CapturePhotoOutputReadinessCoordinator: @unchecked Sendable {  // unchecked: state under `lock`.
    private let output: CapturePhotoOutput
    private let lock = NSLock()
    private weak var storedDelegate: (any CapturePhotoOutputReadinessCoordinatorDelegate)?
    private var tracked: Set<Int64> = []
    private var reported: CapturePhotoOutput.CaptureReadiness?

    /// A coordinator for `photoOutput`.
    public init(photoOutput: CapturePhotoOutput) {
        self.output = photoOutput
        photoOutput.readinessCoordinators.withLock { $0.append(WeakReference(self)) }
    }

    /// Told of readiness changes (held weakly), on the main queue.
    public var delegate: (any CapturePhotoOutputReadinessCoordinatorDelegate)? {
        get { lock.withLock { storedDelegate } }
        set { lock.withLock { storedDelegate = newValue } }
    }

    /// The output's readiness, counting the requests being tracked that the output does not
    /// have yet.
    public var captureReadiness: CapturePhotoOutput.CaptureReadiness {
        let base = output.captureReadiness
        return base == .ready && lock.withLock({ !tracked.isEmpty }) ? .notReadyMomentarily : base
    }

    /// Starts tracking a request made with `settings` (call it before
    /// ``CapturePhotoOutput/capturePhoto(with:delegate:)``).
    public func startTrackingCaptureRequest(using settings: CapturePhotoSettings) {
        _ = lock.withLock { tracked.insert(settings.uniqueID) }
        report()
    }

    /// Stops tracking the request whose settings have `settingsUniqueID` (one that will not be
    /// made); a request the output has is no longer tracked anyway.
    public func stopTrackingCaptureRequest(using settingsUniqueID: Int64) {
        _ = lock.withLock { tracked.remove(settingsUniqueID) }
        report()
    }

    /// The output has the request `uniqueID`: its readiness counts it from now on.
    package func requestWasSubmitted(_ uniqueID: Int64) {
        guard lock.withLock({ tracked.remove(uniqueID) }) != nil else { return }
        report()
    }

    /// Tells the delegate of the readiness if it changed since the last report.
    package func report() {
        let readiness = captureReadiness
        lock.withLock {
            guard readiness != reported else { return }
            reported = readiness
            guard let delegate = storedDelegate else { return }
            let box = UncheckedBox((self, delegate))
            DispatchQueue.main.async {
                box.value.1.readinessCoordinator(box.value.0, captureReadinessDidChange: readiness)
            }
        }
    }
}

/// Told when a photo output's readiness changes (`AVCapturePhotoOutputReadinessCoordinatorDelegate`).
public protocol CapturePhotoOutputReadinessCoordinatorDelegate: AnyObject {
    /// The readiness changed to `captureReadiness`.
    func readinessCoordinator(
        _ coordinator: CapturePhotoOutputReadinessCoordinator,
        captureReadinessDidChange captureReadiness: CapturePhotoOutput.CaptureReadiness)
}

extension CapturePhotoOutputReadinessCoordinatorDelegate {
    /// Does nothing by default.
    public func readinessCoordinator(
        _ coordinator: CapturePhotoOutputReadinessCoordinator,
        captureReadinessDidChange captureReadiness: CapturePhotoOutput.CaptureReadiness
    ) {}
}

/// A photo delivered before it was processed (`AVCaptureDeferredPhotoProxy`), with
/// ``CapturePhotoOutput/isAutoDeferredPhotoDeliveryEnabled``: it holds a copy of the photo's frame
/// (its own memory, one frame of the stream's size, until the proxy goes) and makes the JPEG when
/// asked, so the delegate gets it as soon as the frame is taken and the encoding waits until the
/// app wants the photo.
///
/// On iOS the Photos library processes a proxy once it is saved; on Linux the app asks the proxy
/// itself: ``fileDataRepresentation()`` encodes the frame on the calling thread the first time
/// (with the settings' JPEG quality and the EXIF a processed photo has) and keeps the file;
/// ``processedPhoto()`` gives the processed photo as a ``CapturePhoto`` and says why it failed.
/// Call them off the output's callback queue if the encoding must not hold up other photos'
/// callbacks.
///
/// Thread safety: every member may be used from any thread; processing happens once.
public final class CaptureDeferredPhotoProxy: CapturePhoto, @unchecked Sendable {
    // unchecked: the frame is read-only; the processed result is under `processed`.
    private let frame: PixelBuffer
    private let quality: Double
    private let processed = Mutex<Result<CapturePhoto, CaptureError>?>(nil)
    /// Serialises processing, so the frame is encoded once.
    private let processing = NSLock()

    package init(
        timestamp: MediaTime, resolvedSettings: CaptureResolvedPhotoSettings, sequenceNumber: UInt64,
        exif: EXIFMetadata, frame: PixelBuffer, quality: Double, preview: PixelBuffer?
    ) {
        self.frame = frame
        self.quality = quality
        super.init(
            timestamp: timestamp, resolvedSettings: resolvedSettings, pixelBuffer: nil, sequenceNumber: sequenceNumber,
            exif: exif, jpeg: nil, preview: preview)
    }

    /// Whether the photo has been processed (by ``fileDataRepresentation()`` or
    /// ``processedPhoto()``).
    public var isProcessed: Bool { processed.withLock { $0 != nil } }

    /// The processed photo: the frame encoded as JPEG with its EXIF, on the calling thread the
    /// first time (later calls return the same photo). Throws the encoding's error.
    public func processedPhoto() throws(CaptureError) -> CapturePhoto {
        processing.lock()
        defer { processing.unlock() }
        if let done = processed.withLock({ $0 }) { return try done.get() }
        let result: Result<CapturePhoto, CaptureError>
        do throws(CaptureError) {
            let worker = PhotoWorker()
            worker.beginFrame()
            defer { worker.endFrame() }
            let size = resolvedSettings.embeddedThumbnailDimensions
            let file = try worker.file(
                frame, quality: quality, metadata: exif, thumbnail: size.width > 0 && size.height > 0 ? size : nil,
                shared: nil)
            result = .success(
                CapturePhoto(
                    timestamp: timestamp, resolvedSettings: resolvedSettings, pixelBuffer: nil,
                    sequenceNumber: sequenceNumber, exif: exif, jpeg: Data(file), preview: preview))
        } catch {
            result = .failure(error)
        }
        processed.withLock { $0 = result }
        return try result.get()
    }

    /// The processed photo's JPEG file (see ``processedPhoto()``), made the first time it is
    /// asked for; `nil` when processing failed.
    public override func fileDataRepresentation() -> Data? {
        try? processedPhoto().fileDataRepresentation()
    }
}
