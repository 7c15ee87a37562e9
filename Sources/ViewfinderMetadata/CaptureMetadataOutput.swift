import Dispatch
import Foundation
import Synchronization
import ViewfinderCore

/// Receives what a ``CaptureMetadataOutput`` finds (the counterpart of
/// `AVCaptureMetadataOutputObjectsDelegate`).
///
/// Called on the queue given to ``CaptureMetadataOutput/setMetadataObjectsDelegate(_:queue:)``,
/// one call at a time, frames in presentation order. Not `Sendable`, like AVFoundation's: the
/// output calls it only on that queue, so its state is confined there.
public protocol CaptureMetadataOutputObjectsDelegate: AnyObject {
    /// Codes were found in a frame (`metadataObjects`, in metadata-output coordinates), or — once,
    /// with an empty array — the codes of the frames before are no longer seen. Frames with nothing
    /// found after a frame with nothing found are not reported. Optional, as in AVFoundation.
    func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [MetadataObject], from connection: CaptureConnection
    )
}

extension CaptureMetadataOutputObjectsDelegate {
    /// Does nothing by default (the method is optional in AVFoundation).
    public func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [MetadataObject], from connection: CaptureConnection
    ) {}
}

/// Finds QR codes and barcodes in a camera's frames and hands them to a delegate on a queue you
/// choose (the counterpart of `AVCaptureMetadataOutput`). The decoding is ZXing-cpp's.
///
/// ```swift
/// let output = CaptureMetadataOutput()
/// session.addOutput(output)  // after the camera's input: types become available once connected
/// output.setMetadataObjectsDelegate(scanner, queue: .main)
/// output.metadataObjectTypes = [.qr, .ean13]
/// ```
///
/// - Types: ``availableMetadataObjectTypes`` lists what this output can find once it is connected
///   to a camera — the machine-readable codes ZXing-cpp 1.4 reads (``decodableObjectTypes``).
///   Faces, bodies and salient objects are never available: Viewfinder depends on no detector for
///   them. ``metadataObjectTypes`` is empty by default (nothing is decoded, frames cost nothing).
/// - Bad settings: AVFoundation raises `NSInvalidArgumentException` for a type that is not
///   available or a rectangle outside 0…1. Here nothing crashes: the property setters refuse the
///   value, keep the old one and post the error as a ``CaptureSession``
///   runtime error (on `NotificationCenter.default`, object the output, when it is in no
///   session); ``setMetadataObjectTypes(_:)`` and ``setRectOfInterest(_:)`` throw it instead.
/// - Where: results are in metadata-output coordinates — (0, 0) top-left to (1, 1) bottom-right
///   of the sensor's unrotated, unmirrored picture. The output's own connection's rotation and
///   mirroring change nothing here (as in AVFoundation); convert with the preview layer's
///   ``CaptureVideoPreviewLayer/transformedMetadataObject(for:)`` or another
///   output's ``CaptureOutput/transformedMetadataObject(for:connection:)``.
/// - Limits of the decoder (ZXing-cpp 1.4): Data Matrix and Aztec codes are found when they
///   cover the centre of the picture (of the ``rectOfInterest``), where its detectors for them
///   start looking; QR codes are read as printed, not mirrored (a mirroring connection does not
///   change the frames this output reads).
/// - Work: decoding runs on two lanes of the output's own (never on the capture thread, never
///   on your queue), reading only the frames' luma. While your queue is busy, at most one newer
///   frame waits; older waiting frames are dropped (counted in
///   ``CaptureOutput/statistics`` as late), never queued. A frame whose decoding
///   was tried is counted as delivered, whether codes were found or not.
///
/// Thread safety: every member may be used from any thread; changes apply between frames.
// unchecked: state is in the core.
public final class CaptureMetadataOutput: CaptureOutput, SynchronizedDataSource, @unchecked Sendable {
    /// What the output is set to: read once per negotiation.
    package struct Settings: Sendable, Equatable {
        package var types: [MetadataObject.ObjectType] = []
        package var rectOfInterest = CGRect(x: 0, y: 0, width: 1, height: 1)
    }

    /// One stream's detection: the request, a detector per lane, and what the lanes found for
    /// the frames on their way to the delegate.
    package final class Context: Sendable {
        package let request: CodeDetector.Request
        package let detectors = [CodeDetector(), CodeDetector()]
        /// Results by (engine) sequence number, from a lane to `prepare`: at most the two
        /// staged frames are waiting.
        private let results = Mutex<[UInt64: Result<[MetadataObject], CaptureError>]>([:])

        init(request: CodeDetector.Request) { self.request = request }

        func store(_ result: Result<[MetadataObject], CaptureError>, for sequence: UInt64) {
            results.withLock { results in
                // Bounded: a result nobody took (never expected) goes when more arrive.
                if results.count >= 4 { results.removeAll() }
                results[sequence] = result
            }
        }

        func take(_ sequence: UInt64) -> Result<[MetadataObject], CaptureError>? {
            results.withLock { $0.removeValue(forKey: sequence) }
        }

        func detect(_ sample: CapturedSample, lane: Int) -> Result<[MetadataObject], CaptureError> {
            guard let image = sample.image else { return .success([]) }
            do {
                return .success(
                    try detectors[lane].detect(
                        in: image, request: request, time: sample.presentationTime, duration: sample.duration))
            } catch {
                return .failure(error)
            }
        }
    }

    /// Whether the last report had objects, so that their disappearance is reported once.
    package final class ReportState: Sendable {
        let reportedObjects = Mutex(false)
    }

    /// What one frame's reading found: the objects (empty when none) and the frame's time.
    package struct Found: Sendable {
        package var objects: [MetadataObject]
        package var time: MediaTime
    }

    /// Where frames go while a ``CaptureDataOutputSynchronizer`` synchronizes the output, and the
    /// delegate it stands in for (the engine hands products over only while a delegate is set).
    package final class SynchronizedRoute: Sendable, CaptureMetadataOutputObjectsDelegate {
        let sink = Mutex<SynchronizedDataSink?>(nil)
    }

    /// The output's job on the shared core: decode on the staging lanes, hand results over.
    package struct Body: OutputBody {
        package typealias Delegate = any CaptureMetadataOutputObjectsDelegate
        package let reports = ReportState()
        package let route = SynchronizedRoute()

        package var label: String { "metadata-output" }
        package var acceptedMediaTypes: [MediaType] { [.video] }
        package var initialSettings: Settings { Settings() }
        /// Asks nothing of the camera: it reads whatever format the session negotiates.
        package func request(for settings: Settings) -> OutputRequest {
            var request = OutputRequest()
            request.sharesDecode = false
            return request
        }

        /// The name drops of frames that could not be read are counted under.
        static let dropName = "metadata detector"

        /// Decoding runs on two lanes (two cores), off the capture thread and off the delegate's
        /// queue; nothing is staged while no type is asked for.
        package var staging: DeliveryEngine<Context, Found>.Staging? {
            .init(
                lanes: { $0.request.types.isEmpty ? 0 : 2 },
                run: { sample, context, lane in
                    let result = context.detect(sample, lane: lane)
                    if case .failure = result { return .dropped(.droppedByProcessor(Self.dropName)) }
                    context.store(result, for: sample.sequenceNumber)
                    return .staged(sample)
                })
        }

        package func makeContext(
            format: CaptureDevice.Format, frameDuration: MediaTime, settings: Settings
        ) throws(CaptureError) -> Context {
            Context(request: CodeDetector.Request(types: Set(settings.types), rectOfInterest: settings.rectOfInterest))
        }

        package func prepare(
            _ sample: CapturedSample, context: Context, budget: FrameBudget, connection: CaptureConnection
        ) -> DeliveryEngine<Context, Found>.Preparation {
            // Staged frames have their result waiting; others (nothing asked for) are read here.
            switch context.take(sample.sequenceNumber) ?? context.detect(sample, lane: 0) {
            case .success(let objects):
                return .ready(Found(objects: objects, time: sample.presentationTime), holdsSlot: false)
            case .failure: return .dropped(.droppedByProcessor(Self.dropName))
            }
        }

        package func consume(
            _ found: Found, from connection: CaptureConnection, output: CaptureOutput, delegate: Delegate
        ) {
            if let sink = route.sink.withLock({ $0 }) {
                // Synchronized: every frame read is handed over, with or without objects.
                sink.receive(
                    CaptureSynchronizedMetadataObjectData(metadataObjects: found.objects, timestamp: found.time),
                    at: found.time)
                return
            }
            let objects = found.objects
            let hadObjects = reports.reportedObjects.withLock { had in
                defer { had = !objects.isEmpty }
                return had
            }
            guard !objects.isEmpty || hadObjects, let output = output as? CaptureMetadataOutput else { return }
            delegate.metadataOutput(output, didOutput: objects, from: connection)
        }

        /// AVFoundation's metadata delegate hears of no drops: they are counted in the
        /// statistics. A synchronizer is told of the (first) dropped frame, with no data, so that
        /// the video frame of its time is still handed over.
        package func reportDrop(
            _ drop: DeliveryEngine<Context, Found>.DropReport, output: CaptureOutput, delegate: Delegate
        ) {
            route.sink.withLock { $0 }?.receive(nil, at: drop.presentationTime)
        }

        package func streamDidBegin(_ context: Context) {}
    }

    package let core: EngineOutputCore<Body>

    /// An output that finds nothing until ``metadataObjectTypes`` is set.
    public override init() {
        core = EngineOutputCore(Body(), budgetLimit: 4)
        super.init()
        adopt(core)
    }

    // MARK: Delegate

    /// Sets the delegate (held weakly) and the queue it is called on; `nil` for both stops
    /// delivery. A delegate with a `nil` queue is called on a private serial queue.
    public func setMetadataObjectsDelegate(
        _ objectsDelegate: (any CaptureMetadataOutputObjectsDelegate)?, queue objectsCallbackQueue: DispatchQueue?
    ) {
        core.setDelegate(
            objectsDelegate.map { delegate in { [weak delegate] in delegate } }, queue: objectsCallbackQueue)
    }

    /// The delegate, if one is set and still alive.
    public var metadataObjectsDelegate: (any CaptureMetadataOutputObjectsDelegate)? { core.delegate }

    /// The queue the delegate is called on.
    public var metadataObjectsCallbackQueue: DispatchQueue? { core.callbackQueue }

    // MARK: Synchronizer

    /// Hands every frame's result to a synchronizer's `sink` on `queue` instead of the delegate
    /// (which it replaces, as AVFoundation's synchronizer does); `nil` stops that.
    package func routeSynchronizedData(to sink: SynchronizedDataSink?, queue: DispatchQueue?) {
        let route = core.body.route
        route.sink.withLock { $0 = sink }
        if sink != nil {
            core.setDelegate({ route }, queue: queue)
        } else {
            core.setDelegate(nil, queue: nil)
        }
    }

    // MARK: Types

    /// Every type this library can find in video frames: the machine-readable codes ZXing-cpp 1.4
    /// decodes (QR, Micro QR, Data Matrix, Aztec, PDF417, EAN-13 with UPC-A, EAN-8, UPC-E,
    /// Code 39 with and without its modulo-43 check, Code 93, Code 128, Interleaved 2 of 5,
    /// ITF-14, Codabar, GS1 DataBar and DataBar Expanded). Not MicroPDF417, GS1 DataBar Limited,
    /// faces, bodies or salient objects.
    public static var decodableObjectTypes: [MetadataObject.ObjectType] { CodeDetector.decodableTypes }

    /// The types ``metadataObjectTypes`` may hold now: ``decodableObjectTypes`` once the output is
    /// connected to a camera (a session with a video input), empty before.
    public var availableMetadataObjectTypes: [MetadataObject.ObjectType] {
        connection(with: .video) == nil ? [] : CodeDetector.decodableTypes
    }

    /// The types to find; empty (the default) finds nothing and costs nothing per frame. Every
    /// one must be in ``availableMetadataObjectTypes``: otherwise the value is refused, the old one
    /// stays and the error is posted as a runtime error (AVFoundation raises an exception; use
    /// ``setMetadataObjectTypes(_:)`` to get it thrown). Setting `nil` sets an empty list.
    public var metadataObjectTypes: [MetadataObject.ObjectType]! {
        get { core.currentSettings.types }
        set { core.postingFailure { () throws(CaptureError) in try setMetadataObjectTypes(newValue ?? []) } }
    }

    /// Sets ``metadataObjectTypes``; throws ``CaptureError/Code/invalidArgument``,
    /// naming the types, when one is not available (not connected to a camera yet, or a type this
    /// library cannot find), keeping the old types.
    public func setMetadataObjectTypes(_ types: [MetadataObject.ObjectType]) throws(CaptureError) {
        let available = availableMetadataObjectTypes
        let unavailable = types.filter { !available.contains($0) }
        if !unavailable.isEmpty {
            let names = unavailable.map(\.rawValue).joined(separator: ", ")
            let why =
                available.isEmpty
                ? "the output is not connected to a camera yet: add it to a session with a video input first"
                : "available are \(available.map(\.rawValue).joined(separator: ", "))"
            throw CaptureError(.invalidArgument, "metadata object types not available: \(names) — \(why)")
        }
        var unique: [MetadataObject.ObjectType] = []
        for type in types where !unique.contains(type) { unique.append(type) }
        try core.applyChange { settings, _ in settings.types = unique }
    }

    // MARK: Where

    /// The part of the picture searched, in metadata-output coordinates ((0, 0) top-left to
    /// (1, 1) bottom-right of the unrotated picture; convert a view's rectangle with the preview
    /// layer's ``CaptureVideoPreviewLayer/metadataOutputRectConverted(fromLayerRect:)``).
    /// Default: the whole picture. Codes partly outside may still be found if enough of them is
    /// inside. A rectangle not within 0…1 is refused as ``metadataObjectTypes`` describes.
    public var rectOfInterest: CGRect {
        get { core.currentSettings.rectOfInterest }
        set { core.postingFailure { () throws(CaptureError) in try setRectOfInterest(newValue) } }
    }

    /// Sets ``rectOfInterest``; throws ``CaptureError/Code/invalidArgument`` for a
    /// rectangle that is not within (0, 0, 1, 1) or not finite, keeping the old one.
    public func setRectOfInterest(_ rect: CGRect) throws(CaptureError) {
        let slack: CGFloat = 1e-9
        let standard = rect.standardized
        guard !rect.isNull, standard.minX.isFinite, standard.minY.isFinite, standard.maxX.isFinite,
            standard.maxY.isFinite, standard.minX >= -slack, standard.minY >= -slack, standard.maxX <= 1 + slack,
            standard.maxY <= 1 + slack
        else {
            throw CaptureError(
                .invalidArgument,
                "rectOfInterest \(rect) is not within (0, 0, 1, 1): give it in metadata-output coordinates "
                    + "(metadataOutputRectConverted(fromLayerRect:) converts a view's rectangle)")
        }
        try core.applyChange { settings, _ in settings.rectOfInterest = standard }
    }
}
