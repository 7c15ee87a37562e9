import Foundation
import ViewfinderCore

/// Receives the start and end of each recording of a ``CaptureFileOutput`` (the counterpart of
/// `AVCaptureFileOutputRecordingDelegate`).
///
/// Both methods are called on the output's private serial delegate queue
/// (``CaptureFileOutput/delegateCallbackQueue``), in order: `didStartRecordingTo` at most once,
/// when the first sample has been written, then `didFinishRecordingTo` exactly once for every
/// ``CaptureFileOutput/startRecording(to:recordingDelegate:)`` — even when the recording never
/// started (``CaptureError/Code/fileAlreadyExists``, ``CaptureError/Code/noDataCaptured``).
/// When `didFinishRecordingTo` arrives the file is complete: trailer written, fsynced, closed.
///
/// An `error` does not always mean the file is lost: it is a ``CaptureError`` (typed `any Error`,
/// as in AVFoundation, so ported delegates conform unchanged); check its
/// ``CaptureError/recordingSuccessfullyFinished`` (true when the file is playable, e.g. after
/// ``CaptureError/Code/maximumDurationReached``), as AVFoundation code reads
/// `AVErrorRecordingSuccessfullyFinishedKey`.
///
/// Thread safety: implementations need not be `Sendable` (AVFoundation's protocol does not ask
/// it): the output calls them only on its serial delegate queue, one call at a time. It holds
/// the delegate strongly until `didFinishRecordingTo` has been called.
public protocol CaptureFileOutputRecordingDelegate: AnyObject {
    /// The first sample of the recording to `fileURL` has been written.
    func fileOutput(
        _ output: CaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection])

    /// The recording to `outputFileURL` ended; the file is complete. `error` says why it ended,
    /// if not through ``CaptureFileOutput/stopRecording()`` (or the session stopping).
    func fileOutput(
        _ output: CaptureFileOutput, didFinishRecordingTo outputFileURL: URL, from connections: [CaptureConnection],
        error: (any Error)?)

    /// The recording paused (``CaptureFileOutput/pauseRecording()``), at its first frame held back.
    func fileOutput(
        _ output: CaptureFileOutput, didPauseRecordingTo fileURL: URL, from connections: [CaptureConnection])

    /// The recording resumed (``CaptureFileOutput/resumeRecording()``), at its first frame written again.
    func fileOutput(
        _ output: CaptureFileOutput, didResumeRecordingTo fileURL: URL, from connections: [CaptureConnection])
}

extension CaptureFileOutputRecordingDelegate {
    /// Does nothing.
    public func fileOutput(
        _ output: CaptureFileOutput, didPauseRecordingTo fileURL: URL, from connections: [CaptureConnection]
    ) {}
    /// Does nothing.
    public func fileOutput(
        _ output: CaptureFileOutput, didResumeRecordingTo fileURL: URL, from connections: [CaptureConnection]
    ) {}
    /// Does nothing: implementing `didStartRecordingTo` is optional, as in AVFoundation.
    public func fileOutput(
        _ output: CaptureFileOutput, didStartRecordingTo fileURL: URL, from connections: [CaptureConnection]
    ) {}
}
