/// The two methods AVFoundation's video and audio data-output delegate protocols share (their
/// Objective-C selectors are the same, so one method serves both): what
/// ``CaptureVideoDataOutputSampleBufferDelegate`` and ``CaptureAudioDataOutputSampleBufferDelegate``
/// refine. Conform to one of those (or both); this protocol only holds the shared requirements
/// and the one default for `didDrop`, so a class that serves a video and an audio output gets a
/// single default rather than two ambiguous ones.
///
/// Both methods run on the queue given to the output's `setSampleBufferDelegate(_:queue:)`, one
/// call at a time, in presentation order. Not `Sendable`, like AVFoundation's protocols: the
/// output calls the delegate only on that queue, so a delegate's mutable state is confined to it.
public protocol CaptureDataOutputSampleBufferDelegate: AnyObject {
    /// A sample was captured: a video frame (converted and processed as the output's settings
    /// say) or a buffer of PCM. Tell a video and an audio output apart by `output` or
    /// `connection.mediaType`.
    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection)

    /// Samples were dropped. `sampleBuffer` has timing and ``SampleBuffer/droppedFrameReason`` but
    /// no media; ``SampleBuffer/droppedFrameCount`` says how many samples it stands for (more than
    /// one for a device gap, or when drops come faster than the delegate can hear of them).
    func captureOutput(_ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection)
}

extension CaptureDataOutputSampleBufferDelegate {
    /// Does nothing: implement it to hear about dropped samples.
    public func captureOutput(
        _ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {}
}
