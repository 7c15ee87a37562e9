import Dispatch
import Foundation
import Synchronization

/// Takes still images from the running camera stream, the older shape of a photo output (the
/// counterpart of `AVCaptureStillImageOutput`, deprecated there but common in existing code):
///
/// ```swift
/// let stills = CaptureStillImageOutput()
/// stills.outputSettings = [VideoCodecKey: VideoCodecType.jpeg]
/// try session.tryAddOutput(stills)
/// session.startRunning()
/// stills.captureStillImageAsynchronously(from: stills.connection(with: .video)!) { buffer, error in
///     guard let buffer, let jpeg = CaptureStillImageOutput.jpegStillImageNSDataRepresentation(buffer) else { return }
///     try? jpeg.write(to: URL(fileURLWithPath: "still.jpg"))
/// }
/// ```
///
/// The same machinery as ``CapturePhotoOutput`` (the next frame after the request, EXIF, MJPEG
/// frames kept as they are). A JPEG still comes as a ``SampleBuffer`` whose image buffer is a
/// ``PixelFormat/mjpeg`` buffer holding the file's bytes (``PixelBuffer/dataSize`` of them), with
/// its EXIF fields attached under ``SampleBuffer/AttachmentKey/exifMetadata``; an uncompressed
/// still (`kCVPixelBufferPixelFormatTypeKey` in ``outputSettings``) holds the pixels.
///
/// Thread safety: every member may be used from any thread; completion handlers run on a private
/// serial queue, one at a time.
public final class CaptureStillImageOutput: CaptureOutput, @unchecked Sendable {
    // unchecked: the settings are in a Mutex; the rest lives in the pipeline and the core.
    package let pipeline = PhotoCapturePipeline(label: "still-image-output", kind: .stillImage)
    package let core: EngineOutputCore<PhotoCapturePipeline.Body>
    private let format = Mutex<CapturePhotoSettings?>(nil)

    /// A still image output writing JPEG.
    public override init() {
        core = pipeline.makeCore()
        super.init()
        adopt(core)
    }

    /// What stills are: `[VideoCodecKey: VideoCodecType.jpeg]` (the default; ``VideoQualityKey``
    /// may be added) or `[kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA]` (or an
    /// NV12 format). Settings that cannot be used make captures fail with the reason.
    public var outputSettings: [String: Any] {
        get { format.withLock { $0 }?.format ?? [VideoCodecKey: VideoCodecType.jpeg] }
        set {
            let parsed = CapturePhotoSettings(format: newValue)
            format.withLock { $0 = parsed }
        }
    }

    /// The codecs stills can be written with: JPEG.
    public var availableImageDataCodecTypes: [VideoCodecType] { [.jpeg] }

    /// The uncompressed formats stills can come in (BGRA, NV12).
    public var availableImageDataCVPixelFormatTypes: [OSType] { CapturePhotoOutput.photoPixelFormats.map(\.rawValue) }

    /// Whether a capture was asked for and has not completed yet.
    public var isCapturingStillImage: Bool { pipeline.isCapturing }

    /// Takes a still from the next frame of `connection` (one of this output's) and calls
    /// `completionHandler` with it, or with the error, exactly once, on a private serial queue.
    public func captureStillImageAsynchronously(
        from connection: CaptureConnection,
        completionHandler: @escaping @Sendable (SampleBuffer?, (any Error)?) -> Void
    ) {
        let current = format.withLock { $0 }
        let settings = current.map(CapturePhotoSettings.init(from:)) ?? CapturePhotoSettings()
        let client = CompletionClient(handler: completionHandler)
        let (request, refused) = pipeline.makeRequest(settings, client: client, output: self, context: core.context)
        var refusal = refused
        if refusal == nil, !connections.contains(where: { $0 === connection }) {
            refusal = CaptureError(
                .invalidArgument,
                "the connection is not one of this still image output's: pass connection(with: .video)")
        }
        pipeline.submit(request, refusal: refusal)
    }

    /// The JPEG file's bytes of a still taken as JPEG; `nil` for other buffers.
    public static func jpegStillImageNSDataRepresentation(_ jpegSampleBuffer: SampleBuffer) -> Data? {
        guard let image = jpegSampleBuffer.imageBuffer, image.pixelFormat == .mjpeg, image.dataSize > 0 else {
            return nil
        }
        return Data(bytes: image.baseAddress, count: image.dataSize)
    }

}

extension SampleBuffer.AttachmentKey {
    /// On still-image buffers: the ``EXIFMetadata`` written into (or describing) the image.
    public static let exifMetadata: SampleBuffer.AttachmentKey = "viewfinder.exif"
}

/// Turns a request's outcome into one completion call with a sample buffer.
private struct CompletionClient: PhotoRequestClient {
    let handler: @Sendable (SampleBuffer?, (any Error)?) -> Void

    func didFinishProcessing(_ photo: CapturePhoto, error: CaptureError?) {
        if let error {
            handler(nil, error)
            return
        }
        do throws(CaptureError) {
            handler(try Self.sampleBuffer(for: photo), nil)
        } catch {
            handler(nil, error)
        }
    }

    static func sampleBuffer(for photo: CapturePhoto) throws(CaptureError) -> SampleBuffer {
        let image: PixelBuffer
        if let pixels = photo.pixelBuffer {
            image = pixels
        } else if let jpeg = photo.fileDataRepresentation() {
            let size = photo.resolvedSettings.photoDimensions
            let width = max(1, photo.exif.pixelWidth ?? size.pixelWidth)
            let height = max(1, photo.exif.pixelHeight ?? size.pixelHeight)
            image = JPEGBytes.pixelBuffer(holding: jpeg, width: width, height: height)
        } else {
            throw CaptureError(.conversionFailed, "the still has neither pixels nor JPEG data")
        }
        return SampleBuffer(
            imageBuffer: image, presentationTimeStamp: photo.timestamp, duration: .invalid,
            sequenceNumber: photo.sequenceNumber, attachments: [.exifMetadata: photo.exif], budget: nil)
    }
}
