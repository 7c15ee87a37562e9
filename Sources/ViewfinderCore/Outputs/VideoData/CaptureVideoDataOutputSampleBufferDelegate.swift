/// Receives frames from a ``CaptureVideoDataOutput`` (the counterpart of
/// `AVCaptureVideoDataOutputSampleBufferDelegate`).
///
/// Both methods run on the queue given to
/// ``CaptureVideoDataOutput/setSampleBufferDelegate(_:queue:)``, one call at a time, frames in
/// presentation order. Return quickly: while you work, newer frames wait or are dropped as late.
/// Holding on to sample buffers holds pool memory; past the pool's size frames drop with
/// ``DroppedFrameReason/outOfBuffers``.
///
/// The methods (``CaptureDataOutputSampleBufferDelegate``): `captureOutput(_:didOutput:from:)`, a
/// frame was captured and processed; `captureOutput(_:didDrop:from:)` (optional), a frame was
/// dropped — the buffer has timing and ``SampleBuffer/droppedFrameReason`` but no pixels, and its
/// ``SampleBuffer/AttachmentKey/droppedFrameCount`` attachment says how many frames it stands for.
///
/// Not `Sendable`, like AVFoundation's: a delegate class with mutable state is accepted in
/// Swift 6 mode. That is sound under the output's contract: it calls the delegate only on the
/// queue you passed, one call at a time, so the delegate's state is confined to that queue (touch
/// it elsewhere only through that queue, as with AVFoundation).
public protocol CaptureVideoDataOutputSampleBufferDelegate: CaptureDataOutputSampleBufferDelegate {}

extension SampleBuffer.AttachmentKey {
    /// On dropped-frame buffers: the number of frames (`Int`) the report stands for.
    public static let droppedFrameCount: SampleBuffer.AttachmentKey = "viewfinder.droppedFrameCount"
}
