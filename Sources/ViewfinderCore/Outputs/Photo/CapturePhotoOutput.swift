import Dispatch
import Foundation
import Synchronization

/// Takes photos from the running camera stream (the counterpart of `AVCapturePhotoOutput`).
///
/// ```swift
/// let photos = CapturePhotoOutput()
/// try session.tryAddOutput(photos)
/// session.startRunning()
/// photos.capturePhoto(with: CapturePhotoSettings(), delegate: handler)  // handler: CapturePhotoCaptureDelegate
/// // handler.photoOutput(_:didFinishProcessingPhoto:error:) gets photo.fileDataRepresentation()
/// ```
///
/// How a photo is taken (by default; ``isZeroShutterLagEnabled``, ``isResponsiveCaptureEnabled``
/// and ``isAutoDeferredPhotoDeliveryEnabled`` change the first two points):
/// - From the first frame that arrives after the request (never one already waiting), without
///   stopping or reconfiguring the stream: the output asks the device for nothing (no format, no
///   size, no rate), so it never changes what a video data output negotiates, and other outputs
///   keep every frame they would have had. Requests waiting together share one frame.
/// - The frame is encoded only once it became a photo, on the output's own serial queue (never
///   the capture thread or a video delegate's queue), with libjpeg-turbo; an MJPEG camera's photo
///   is its own JPEG frame, not re-encoded (the standard Huffman tables added where the camera
///   leaves them out). EXIF (libexif) holds the capture date and time, the device's make and
///   model, the pixel size, the orientation from the connection's rotation and mirroring (written
///   as a tag, pixels are not turned) and the settings' ``CapturePhotoSettings/metadata``.
/// - Photos are the stream's size: ``maxPhotoDimensions`` is the negotiated format's size. For
///   the largest photos pick a large format (the `.photo` preset is the camera's largest size).
///
/// Thread safety: every member may be used from any thread.
public final class CapturePhotoOutput: CaptureOutput, @unchecked Sendable {
    // unchecked: state lives in the pipeline's Mutex and the core.
    /// The uncompressed formats photos can come in.
    package static let photoPixelFormats: [PixelFormat] = [.bgra, .nv12VideoRange, .nv12FullRange]

    package let pipeline = PhotoCapturePipeline(label: "photo-output", kind: .photo)
    package let core: EngineOutputCore<PhotoCapturePipeline.Body>
    /// Key-value observers and the porting surface's settings (`Porting/KeyValueObserving+Capture.swift`).
    package let porting = PortingState(PhotoOutputExtras())
    /// The readiness coordinators made for this output (told of every readiness change).
    package let readinessCoordinators = Mutex<[WeakReference<CapturePhotoOutputReadinessCoordinator>]>([])

    /// A photo output.
    public override init() {
        core = pipeline.makeCore()
        super.init()
        adopt(core)
        pipeline.onReadinessChange { [weak self] readiness in self?.readinessDidChange(readiness) }
    }

    // MARK: Capabilities

    /// The codecs photos can be written with: JPEG.
    public var availablePhotoCodecTypes: [VideoCodecType] { [.jpeg] }

    /// The pixel formats uncompressed photos can come in: BGRA and NV12 (both ranges).
    public var availablePhotoPixelFormatTypes: [PixelFormat] { Self.photoPixelFormats }

    /// The flash modes the camera supports: ``CaptureDevice/FlashMode/off`` only (webcams have no
    /// flash).
    public var supportedFlashModes: [CaptureDevice.FlashMode] { [.off] }

    /// The size photos are taken at: the negotiated stream's size while the session runs,
    /// otherwise the connected camera's active format's size (zero with no camera).
    public var maxPhotoDimensions: CaptureDevice.Dimensions {
        if let context = core.context { return context.format.dimensions }
        let device = connection(with: .video)?.device
        return device?.activeFormat.dimensions ?? CaptureDevice.Dimensions(width: 0, height: 0)
    }

    /// Whether photos may be at the highest resolution the format allows
    /// (``CaptureDevice/Format/highResolutionStillImageDimensions``), as AVFoundation's flag.
    /// Kept: a photo is a frame of the running stream, which is already at that size, so photos
    /// are at it whatever is set. Default `false`, as in AVFoundation.
    public var isHighResolutionCaptureEnabled: Bool {
        get { porting.extras.withLock { $0.highResolution } }
        set { porting.extras.withLock { $0.highResolution = newValue } }
    }

    // MARK: Taking photos

    /// Takes a photo as `settings` say from the next frame, telling `delegate` (held weakly) how
    /// it goes, on the output's serial callback queue. Never throws: a request that cannot be
    /// taken (settings used before, a format or flash mode not available, a session not running,
    /// no enabled video connection) reaches the delegate's callbacks with the error.
    public func capturePhoto(with settings: CapturePhotoSettings, delegate: any CapturePhotoCaptureDelegate) {
        session?.outputNeedsDeferredStart(self)
        coordinatorsSubmitted(settings.uniqueID)
        let client = PhotoDelegateClient(output: self, delegate: delegate)
        let (request, refusal) = pipeline.makeRequest(settings, client: client, output: self, context: core.context)
        pipeline.submit(request, refusal: refusal)
    }

}
