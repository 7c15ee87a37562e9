/// Receives audio from a ``CaptureAudioDataOutput`` (the counterpart of
/// `AVCaptureAudioDataOutputSampleBufferDelegate`).
///
/// Both methods run on the queue given to
/// ``CaptureAudioDataOutput/setSampleBufferDelegate(_:queue:)``, one call at a time, buffers in
/// presentation order. One class may serve a video and an audio output at once (tell them apart
/// by `output` or `connection.mediaType`), as with AVFoundation.
///
/// Not `Sendable`, like AVFoundation's: a delegate class with mutable state (a counter, a level
/// history) is accepted in Swift 6 mode. The output calls it only on the queue you passed, one
/// call at a time, so its state is confined to that queue.
///
/// The methods (``CaptureDataOutputSampleBufferDelegate``): `captureOutput(_:didOutput:from:)`, a
/// buffer of PCM was captured — read it with ``SampleBuffer/withAudioSamples(as:_:)``,
/// ``SampleBuffer/withAudioBufferList(_:)`` or ``SampleBuffer/audioData``, its format with
/// ``SampleBuffer/audioFormat``; `captureOutput(_:didDrop:from:)` (optional), audio was dropped —
/// ``SampleBuffer/droppedFrameCount`` says how many buffers the report stands for and its
/// ``SampleBuffer/AttachmentKey/droppedAudioSampleCount`` attachment how many sample frames;
/// ``DroppedFrameReason/outOfBuffers``: the delegate fell behind;
/// ``DroppedFrameReason/discontinuity``: the device lost audio (an overrun).
public protocol CaptureAudioDataOutputSampleBufferDelegate: CaptureDataOutputSampleBufferDelegate {}

extension SampleBuffer.AttachmentKey {
    /// On audio drop reports: the sample frames (`Int`) the dropped buffers held, or for a
    /// discontinuity the frames the device lost.
    public static let droppedAudioSampleCount: SampleBuffer.AttachmentKey = "viewfinder.droppedAudioSampleCount"
}
