import Foundation

/// Hears how a photo request goes (the counterpart of `AVCapturePhotoCaptureDelegate`). Every
/// method is optional.
///
/// For each request, exactly once each and in this order, on one serial queue of the output's
/// (never the capture thread, never a video data output's queue):
/// 1. `photoOutput(_:willBeginCaptureFor:)` — the request was accepted (or refused),
/// 2. `photoOutput(_:willCapturePhotoFor:)` and
/// 3. `photoOutput(_:didCapturePhotoFor:)` — the frame was taken,
/// 4. `photoOutput(_:didFinishProcessingPhoto:error:)` — the photo is ready (encoded); or, with
///    deferred delivery, `photoOutput(_:didFinishCapturingDeferredPhotoProxy:error:)`,
/// 5. `photoOutput(_:didFinishCaptureFor:error:)` — the request is over.
///
/// A request that fails (a reused ``CapturePhotoSettings/uniqueID``, a session not running, an
/// unusable format, a camera unplugged before a frame came) still gets all five, the last two
/// with the error. Accepted requests finish in the order they were accepted.
///
/// The output holds the delegate weakly, as AVFoundation does: keep it alive until
/// `didFinishCaptureFor` (one object per request, kept in a collection, is the usual pattern).
///
/// Not `Sendable`, like AVFoundation's: an AVCam-style `PhotoCaptureProcessor` class with mutable
/// state (`private(set) var photoData: Data?`) is accepted in Swift 6 mode. Its methods are called
/// only on the output's one serial callback queue, one at a time, so that state is confined to
/// that queue; read it there, or after `didFinishCaptureFor` has returned.
public protocol CapturePhotoCaptureDelegate: AnyObject {
    /// The request was accepted and will be taken from the next frame (also called, first, for a
    /// refused request).
    func photoOutput(_ output: CapturePhotoOutput, willBeginCaptureFor resolvedSettings: CaptureResolvedPhotoSettings)
    /// The frame for the photo is about to be taken.
    func photoOutput(_ output: CapturePhotoOutput, willCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings)
    /// The frame for the photo was taken (play a shutter sound here).
    func photoOutput(_ output: CapturePhotoOutput, didCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings)
    /// The photo is ready, or `error` says why there is none.
    func photoOutput(_ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?)
    /// The photo's frame was taken and is handed over unprocessed (instead of
    /// `photoOutput(_:didFinishProcessingPhoto:error:)`), with
    /// ``CapturePhotoOutput/isAutoDeferredPhotoDeliveryEnabled``: the proxy makes the JPEG when
    /// asked (``CaptureDeferredPhotoProxy/fileDataRepresentation()``). Implement it when turning
    /// deferred delivery on: by default it does nothing and the photo is lost.
    func photoOutput(
        _ output: CapturePhotoOutput,
        didFinishCapturingDeferredPhotoProxy deferredPhotoProxy: CaptureDeferredPhotoProxy?,
        error: (any Error)?)
    /// The request is over (always the last call), with the error it failed with, if any.
    func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings,
        error: (any Error)?)
    /// The photo as sample buffers (AVFoundation's API before ``CapturePhoto``): never called;
    /// photos arrive through `photoOutput(_:didFinishProcessingPhoto:error:)`.
    func photoOutput(
        _ output: CapturePhotoOutput, didFinishProcessingPhoto photoSampleBuffer: SampleBuffer?,
        previewPhoto previewPhotoSampleBuffer: SampleBuffer?, resolvedSettings: CaptureResolvedPhotoSettings,
        bracketSettings: CaptureBracketedStillImageSettings?, error: (any Error)?)
    /// A RAW photo as sample buffers: never called (no RAW).
    func photoOutput(
        _ output: CapturePhotoOutput, didFinishProcessingRawPhoto rawSampleBuffer: SampleBuffer?,
        previewPhoto previewPhotoSampleBuffer: SampleBuffer?, resolvedSettings: CaptureResolvedPhotoSettings,
        bracketSettings: CaptureBracketedStillImageSettings?, error: (any Error)?)
    /// A Live Photo's movie has all its frames: never called (no Live Photos).
    func photoOutput(
        _ output: CapturePhotoOutput, didFinishRecordingLivePhotoMovieForEventualFileAt outputFileURL: URL,
        resolvedSettings: CaptureResolvedPhotoSettings)
    /// A Live Photo's movie is written: never called (no Live Photos).
    func photoOutput(
        _ output: CapturePhotoOutput, didFinishProcessingLivePhotoToMovieFileAt outputFileURL: URL,
        duration: MediaTime, photoDisplayTime: MediaTime, resolvedSettings: CaptureResolvedPhotoSettings,
        error: (any Error)?)
}

extension CapturePhotoCaptureDelegate {
    /// Does nothing.
    public func photoOutput(
        _ output: CapturePhotoOutput, didFinishProcessingPhoto photoSampleBuffer: SampleBuffer?,
        previewPhoto previewPhotoSampleBuffer: SampleBuffer?, resolvedSettings: CaptureResolvedPhotoSettings,
        bracketSettings: CaptureBracketedStillImageSettings?, error: (any Error)?
    ) {}
    /// Does nothing.
    public func photoOutput(
        _ output: CapturePhotoOutput, didFinishProcessingRawPhoto rawSampleBuffer: SampleBuffer?,
        previewPhoto previewPhotoSampleBuffer: SampleBuffer?, resolvedSettings: CaptureResolvedPhotoSettings,
        bracketSettings: CaptureBracketedStillImageSettings?, error: (any Error)?
    ) {}
    /// Does nothing.
    public func photoOutput(
        _ output: CapturePhotoOutput, didFinishRecordingLivePhotoMovieForEventualFileAt outputFileURL: URL,
        resolvedSettings: CaptureResolvedPhotoSettings
    ) {}
    /// Does nothing.
    public func photoOutput(
        _ output: CapturePhotoOutput, didFinishProcessingLivePhotoToMovieFileAt outputFileURL: URL,
        duration: MediaTime, photoDisplayTime: MediaTime, resolvedSettings: CaptureResolvedPhotoSettings,
        error: (any Error)?
    ) {}
    /// Does nothing.
    public func photoOutput(
        _ output: CapturePhotoOutput, willBeginCaptureFor resolvedSettings: CaptureResolvedPhotoSettings
    ) {}
    /// Does nothing.
    public func photoOutput(
        _ output: CapturePhotoOutput, willCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings
    ) {}
    /// Does nothing.
    public func photoOutput(
        _ output: CapturePhotoOutput, didCapturePhotoFor resolvedSettings: CaptureResolvedPhotoSettings
    ) {}
    /// Does nothing.
    public func photoOutput(
        _ output: CapturePhotoOutput, didFinishProcessingPhoto photo: CapturePhoto, error: (any Error)?
    ) {}
    /// Does nothing.
    public func photoOutput(
        _ output: CapturePhotoOutput,
        didFinishCapturingDeferredPhotoProxy deferredPhotoProxy: CaptureDeferredPhotoProxy?,
        error: (any Error)?
    ) {}
    /// Does nothing.
    public func photoOutput(
        _ output: CapturePhotoOutput, didFinishCaptureFor resolvedSettings: CaptureResolvedPhotoSettings,
        error: (any Error)?
    ) {}
}

/// Forwards a request's callbacks to a photo delegate (held weakly).
// unchecked: the delegate is not Sendable (as AVFoundation's is not); the pipeline calls a
// client only on its one serial callback queue, one call at a time.
package struct PhotoDelegateClient: PhotoRequestClient, @unchecked Sendable {
    package weak var output: CapturePhotoOutput?
    package weak var delegate: (any CapturePhotoCaptureDelegate)?

    package func willBeginCapture(_ resolved: CaptureResolvedPhotoSettings) {
        guard let output, let delegate else { return }
        delegate.photoOutput(output, willBeginCaptureFor: resolved)
    }
    package func willCapturePhoto(_ resolved: CaptureResolvedPhotoSettings) {
        guard let output, let delegate else { return }
        delegate.photoOutput(output, willCapturePhotoFor: resolved)
    }
    package func didCapturePhoto(_ resolved: CaptureResolvedPhotoSettings) {
        guard let output, let delegate else { return }
        delegate.photoOutput(output, didCapturePhotoFor: resolved)
    }
    package func didFinishProcessing(_ photo: CapturePhoto, error: CaptureError?) {
        guard let output, let delegate else { return }
        delegate.photoOutput(output, didFinishProcessingPhoto: photo, error: error)
    }
    package func didFinishCapturingDeferredPhotoProxy(_ proxy: CaptureDeferredPhotoProxy, error: CaptureError?) {
        guard let output, let delegate else { return }
        delegate.photoOutput(output, didFinishCapturingDeferredPhotoProxy: proxy, error: error)
    }
    package func didFinishCapture(_ resolved: CaptureResolvedPhotoSettings, error: CaptureError?) {
        guard let output, let delegate else { return }
        delegate.photoOutput(output, didFinishCaptureFor: resolved, error: error)
    }
}
