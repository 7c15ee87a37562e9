import Dispatch
import Foundation
import Synchronization
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// An output that records to files (the counterpart of `AVCaptureFileOutput`): starting and
/// stopping recordings, their live figures and limits, and the recording delegate. Use the
/// concrete ``CaptureMovieFileOutput``.
///
/// The contract (AVFoundation's):
/// - ``startRecording(to:recordingDelegate:)`` never overwrites: an existing file ends the
///   recording with ``CaptureError/Code/fileAlreadyExists``.
/// - `didFinishRecordingTo` arrives exactly once per `startRecording`, also when nothing was
///   written (``CaptureError/Code/noDataCaptured``, and no file is left); `didStartRecordingTo`
///   only once the first sample is written. When `didFinishRecordingTo` arrives the file is
///   complete (trailer written, fsynced).
/// - Reaching ``maxRecordedDuration``, ``maxRecordedFileSize`` or ``minFreeDiskSpaceLimit`` ends
///   the recording with ``CaptureError/Code/maximumDurationReached``,
///   ``CaptureError/Code/maximumFileSizeReached`` or ``CaptureError/Code/diskFull``; an unplugged
///   camera with ``CaptureError/Code/deviceWasDisconnected``; the loss of another device of the
///   session (or a session stopped by a failure) with ``CaptureError/Code/sessionWasInterrupted``.
///   Each such error carries ``CaptureError/recordingSuccessfullyFinished``: true when the file
///   is playable. ``CaptureSession/stopRunning()`` finishes the recording without an error.
/// - Timestamps in the file are the frames' own (shifted to start at 0). Frames the encoder
///   cannot keep up with are dropped and counted (``CaptureOutput/Statistics/droppedOutOfBuffers``),
///   never queued without bound.
///
/// Encoding runs on the output's own serial recording queue, never on the capture thread or a
/// queue of yours; the delegate is called on ``delegateCallbackQueue``.
///
/// Thread safety: every member may be used from any thread.
// unchecked: state is in the recorder's Mutexes or confined to its queue.
public class CaptureFileOutput: CaptureOutput, @unchecked Sendable {
    /// Frames in flight (queued for, or inside, the encoder) before new ones drop as
    /// ``DroppedFrameReason/outOfBuffers``.
    public let bufferBudget: Int

    /// The serial queue the recording delegate is called on (AVFoundation leaves the queue
    /// unspecified; Viewfinder documents it: one private serial queue per output).
    public var delegateCallbackQueue: DispatchQueue { recorder.delegateQueue }

    /// The recordings, and the video's job: it writes each frame its core accepts.
    package let recorder: MovieRecorder
    /// The video: its settings (each connection's encoding) and its engine.
    package let videoCore: EngineOutputCore<MovieRecorder>
    /// Delivers the microphone's buffers to the recording, in order, beside the video.
    package let audioCore: EngineOutputCore<MovieRecorder.AudioTrack>

    package init(bufferBudget: Int = 6) {
        self.bufferBudget = max(1, bufferBudget)
        // The engines' deliveries run on the recording queue, which confines the recording.
        recorder = MovieRecorder()
        videoCore = EngineOutputCore(recorder, budgetLimit: self.bufferBudget, deliveringOn: recorder.queue)
        audioCore = EngineOutputCore(
            MovieRecorder.AudioTrack(recorder: recorder), budgetLimit: 64, deliveringOn: recorder.queue)
        super.init()
        adopt(videoCore, audioCore)
    }

    // MARK: Recording

    /// Starts recording to `outputFileURL` — a file URL, whose extension picks the container
    /// (`.mov` (default), `.mp4`, `.mkv`), or a streaming server's `rtmp://` (FLV) or `srt://`
    /// (MPEG-TS) URL (both tested against ffmpeg listeners on loopback; `rtsp://` goes through
    /// libavformat the same way, untested here) — telling `delegate` when the recording starts and
    /// ends.
    /// A recording already under way is finished first (without error). Never overwrites: an
    /// existing file ends the new recording at once with ``CaptureError/Code/fileAlreadyExists``.
    /// The output holds `delegate` until its `didFinishRecordingTo` has been called.
    public func startRecording(
        to outputFileURL: URL, recordingDelegate delegate: any CaptureFileOutputRecordingDelegate
    ) {
        recorder.start(to: outputFileURL, delegate: RecordingDelegateBox(delegate), output: self)
    }

    /// Finishes the recording under way: frames already queued are written, then the trailer,
    /// and the delegate's `didFinishRecordingTo` follows. Does nothing when not recording.
    public func stopRecording() { recorder.stop() }

    /// Pauses the recording under way (AVFoundation's `pauseRecording()`): from the next frame,
    /// nothing is written until ``resumeRecording()``, and the time paused is taken off the
    /// timestamps written after it, so the file plays on without a gap. The delegate's
    /// `didPauseRecordingTo` follows at the first frame held back. Does nothing when not
    /// recording or before the recording has started (its first frame written).
    public func pauseRecording() {
        recorder.status.withLock { if $0.isRecording { $0.isPaused = true } }
    }

    /// Resumes a paused recording: the delegate's `didResumeRecordingTo` follows at the next
    /// frame, the first written again. Does nothing when not paused.
    public func resumeRecording() {
        recorder.status.withLock { $0.isPaused = false }
    }

    /// Whether the recording is paused (from ``pauseRecording()`` to ``resumeRecording()``).
    public var isRecordingPaused: Bool { recorder.status.withLock { $0.isRecording && $0.isPaused } }

    /// Whether a recording is under way (from ``startRecording(to:recordingDelegate:)`` until its
    /// end is being reported).
    public var isRecording: Bool { recorder.status.withLock { $0.isRecording } }

    /// The file of the current (or last) recording.
    public var outputFileURL: URL? { recorder.status.withLock { $0.outputFileURL } }

    /// The media time recorded so far: from the first frame's presentation time to the end of
    /// the last frame's.
    public var recordedDuration: MediaTime { recorder.status.withLock { $0.recordedDuration } }

    /// The bytes recorded so far: the media data handed to the muxer (a fragmented file reaches
    /// the disk fragment by fragment, so this runs ahead of the file by up to a fragment); once
    /// the recording has finished, the file's size.
    public var recordedFileSize: Int64 { recorder.status.withLock { $0.recordedFileSize } }

    /// Frames written to the current (or last) recording.
    public var recordedFrameCount: Int { recorder.status.withLock { $0.recordedFrames } }

    /// The longest recording; reaching it ends the recording with
    /// ``CaptureError/Code/maximumDurationReached`` (the last frame written is the last that ends
    /// within it). ``MediaTime/invalid`` (the default) for no limit. Applies from the next frame.
    public var maxRecordedDuration: MediaTime {
        get { recorder.status.withLock { $0.maxRecordedDuration } }
        set {
            recorder.status.withLock {
                $0.maxRecordedDuration = newValue.isNumeric && newValue > .zero ? newValue : .invalid
            }
        }
    }

    /// The largest file a recording may make, in bytes, as AVFoundation documents it: the file
    /// on disk, its container's boxes and final index included, never grows past it. Before
    /// every frame the output keeps room for the frame, the frames the encoder still holds, the
    /// audio up to the next frame and the index written at the end; when they would not fit, the
    /// recording ends with ``CaptureError/Code/maximumFileSizeReached`` (and
    /// ``CaptureError/recordingSuccessfullyFinished`` true): the file is closed, playable and at
    /// most this size. The room is bounded from above, so a file ends up somewhat below the limit
    /// (Motion-JPEG passthrough: within a frame and the index; H.264: within about the encoder's
    /// lookahead of frames). 0 (the default) for no limit. Applies from the next frame.
    public var maxRecordedFileSize: Int64 {
        get { recorder.status.withLock { $0.maxRecordedFileSize } }
        set { recorder.status.withLock { $0.maxRecordedFileSize = max(0, newValue) } }
    }

    /// The free space, in bytes, the file's disk must keep; when less is left the recording ends
    /// with ``CaptureError/Code/diskFull``. 0 (the default) for no limit (a full disk still ends
    /// it with ``CaptureError/Code/diskFull``). Checked at every frame.
    public var minFreeDiskSpaceLimit: Int64 {
        get { recorder.status.withLock { $0.minFreeDiskSpaceLimit } }
        set { recorder.status.withLock { $0.minFreeDiskSpaceLimit = max(0, newValue) } }
    }
}
