/// Why a source lost audio before a chunk.
package enum AudioLossReason: Sendable, Hashable {
    /// The capture buffer overflowed (ALSA xrun, `-EPIPE`): the device wrote faster than it was read.
    case overrun
    /// Every pooled buffer was held downstream; the period was read and discarded.
    case outOfBuffers
}

/// Receives what a streaming audio source produces, on the source's capture thread, which must
/// never block: implementations queue work and return.
package protocol AudioStreamSink: AnyObject, Sendable {
    /// A chunk of audio arrived.
    func audioStreamDidCapture(_ chunk: AudioChunk)
    /// `frames` frames were lost (`frames` may be 0 when the count is unknown). The next chunk's
    /// ``AudioChunk/framesLostBefore`` carries the same count.
    func audioStreamDidLose(frames: Int, reason: AudioLossReason)
    /// The source failed; capture has stopped.
    func audioStreamDidFail(_ error: CaptureError)
}

/// A microphone behind a future `CaptureDevice`: an ALSA PCM (``ALSAMicrophone``) or the
/// ``VirtualMicrophone``.
///
/// Thread safety: implementations are callable from any thread; `startCapture` and `stopCapture`
/// must be serialised by the caller.
package protocol AudioCaptureSource: AnyObject, Sendable {
    /// Stable across runs where the system allows (the ALSA PCM name).
    var uniqueID: String { get }
    /// A name for people.
    var localizedName: String { get }
    /// Whether the device is still there.
    var isConnected: Bool { get }
    /// The formats the source offers.
    var formats: [AudioFormat] { get }
    /// Starts capturing in `format`, chunks of about `framesPerChunk` frames, delivering to
    /// `sink` on the source's own thread until ``stopCapture()``. Returns the format actually
    /// used (a device may adjust the rate or channel count to the nearest it has).
    func startCapture(format: AudioFormat, framesPerChunk: Int, sink: AudioStreamSink) throws(CaptureError)
        -> AudioFormat
    /// Stops capturing and joins the capture thread: once this returns, the sink gets nothing more.
    func stopCapture()
}
