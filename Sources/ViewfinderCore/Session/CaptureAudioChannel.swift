import Synchronization

/// One audio channel of a connection, with the levels a level meter shows (the counterpart of
/// `AVCaptureAudioChannel`). Get them from ``CaptureConnection/audioChannels``; the audio data
/// output updates them as it delivers buffers, from the audio the device captured (before any
/// conversion its ``CaptureAudioDataOutput/audioSettings`` ask for), so inside its delegate
/// callback they are the levels of the buffer at hand.
///
/// Thread safety: may be read from any thread.
public final class CaptureAudioChannel: Sendable {
    private let levels = Mutex(AudioChannelLevel(averagePowerLevel: -160, peakHoldLevel: -160))

    package init() {}

    /// The RMS power of the latest buffer in dBFS, −160 (silence) … 0 (full scale): a
    /// full-scale sine reads about −3.
    public var averagePowerLevel: Float { levels.withLock { $0.averagePowerLevel } }

    /// The highest sample level of about the last second in dBFS, −160 … 0: a full-scale sine
    /// reads 0.
    public var peakHoldLevel: Float { levels.withLock { $0.peakHoldLevel } }

    package func update(_ level: AudioChannelLevel) { levels.withLock { $0 = level } }
}

/// A connection's level meter: the channels it shows and the meter that measures them.
package struct AudioMeterState: Sendable {
    package var channels: [CaptureAudioChannel] = []
    package var meter: AudioLevelMeter?
    package var sampleRate = 0
}

extension CaptureConnection {
    /// The audio channels of an audio connection, each with its levels; empty for video
    /// connections and before the first audio buffer has passed.
    public var audioChannels: [CaptureAudioChannel] {
        audioMeter.withLock { $0.channels }
    }

    /// Measures `chunk` and updates ``audioChannels`` (on the output's delivery path, before the
    /// buffer is handed over; readers only copy two numbers).
    package func measureAudio(_ chunk: AudioChunk) {
        guard mediaType == .audio, chunk.format.isInterleaved else { return }
        audioMeter.withLock { state in
            if state.meter == nil || state.sampleRate != chunk.format.sampleRate {
                state.meter = AudioLevelMeter(sampleRate: chunk.format.sampleRate)
                state.sampleRate = chunk.format.sampleRate
            }
            let levels = state.meter!.measure(chunk)
            if state.channels.count != levels.count {
                state.channels = levels.map { _ in CaptureAudioChannel() }
            }
            for (channel, level) in zip(state.channels, levels) { channel.update(level) }
        }
    }
}
