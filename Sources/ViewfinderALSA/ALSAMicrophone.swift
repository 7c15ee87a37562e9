import Synchronization
import ViewfinderCore

/// One ALSA capture PCM as an ``AudioCaptureSource``: the `default` device (which reaches
/// PipeWire or PulseAudio through their ALSA plug-ins where they run), a card's `hw:` or
/// `plughw:` device, or a PCM an extra configuration text defines (the `file` plug-in in tests,
/// ``ALSAConfigurationText/fileCapture(pcmName:inputPath:)``).
///
/// The PCM is opened when capture starts and closed when it stops, so other programs can use
/// the device in between. Formats are probed once (opening the PCM briefly) and cached.
///
/// Thread safety: all members may be used from any thread; `startCapture` and `stopCapture`
/// must be serialised by the caller.
package final class ALSAMicrophone: AudioCaptureSource {
    /// The sample rates formats are listed at, when the device takes them.
    package static let standardRates = [8000, 11025, 16000, 22050, 32000, 44100, 48000, 88200, 96000]

    /// The ALSA PCM name.
    package let pcmName: String
    package let localizedName: String
    /// Configuration text parsed over the system configuration when opening (nil: system only).
    package let extraConfiguration: String?
    /// Pooled chunk buffers per stream.
    package let bufferCount: Int
    package var uniqueID: String { "alsa:\(pcmName)" }

    private let connected = Atomic<Bool>(true)
    private let formatCache = Mutex<[AudioFormat]?>(nil)
    private let stream = Mutex<ALSACaptureStream?>(nil)

    /// A microphone for PCM `pcmName`.
    package init(pcmName: String, localizedName: String? = nil, extraConfiguration: String? = nil, bufferCount: Int = 8)
    {
        self.pcmName = pcmName
        self.localizedName = localizedName ?? pcmName
        self.extraConfiguration = extraConfiguration
        self.bufferCount = max(1, bufferCount)
    }

    /// A microphone for a listed device.
    package convenience init(info: ALSADeviceInfo, bufferCount: Int = 8) {
        self.init(pcmName: info.name, localizedName: info.localizedName, bufferCount: bufferCount)
    }

    package var isConnected: Bool { connected.load(ordering: .acquiring) }

    /// Called by a provider when the device appears or disappears.
    package func setConnected(_ present: Bool) { connected.store(present, ordering: .releasing) }

    /// Interleaved formats at the ``standardRates`` the device takes, mono and stereo (and the
    /// device's own channel count up to 8), in each of int16, int32 and float32 it takes.
    /// Empty when the device cannot be opened (busy, gone); asked again next time.
    package var formats: [AudioFormat] {
        if let cached = formatCache.withLock({ $0 }) { return cached }
        guard let probed = try? probeFormats() else { return [] }
        formatCache.withLock { $0 = probed }
        return probed
    }

    /// Opens the PCM briefly and lists its formats.
    package func probeFormats() throws(CaptureError) -> [AudioFormat] {
        let pcm = try ALSAPCM(name: pcmName, extraConfiguration: extraConfiguration)
        defer { pcm.close() }
        let capabilities = try pcm.capabilities()
        var channelCounts = [1, 2].filter { capabilities.channels.contains($0) }
        if capabilities.channels.lowerBound <= 8, !channelCounts.contains(capabilities.channels.lowerBound) {
            channelCounts.append(capabilities.channels.lowerBound)
        }
        var result: [AudioFormat] = []
        for sampleFormat in capabilities.sampleFormats {
            for channels in channelCounts {
                for rate in Self.standardRates where capabilities.rates.contains(rate) {
                    let format = AudioFormat(sampleRate: rate, channelCount: channels, sampleFormat: sampleFormat)
                    if pcm.supports(format) { result.append(format) }
                }
            }
        }
        return result
    }

    package func startCapture(format: AudioFormat, framesPerChunk: Int, sink: AudioStreamSink) throws(CaptureError)
        -> AudioFormat
    {
        try format.validate()
        guard framesPerChunk > 0 else {
            throw CaptureError(.invalidArgument, "audio chunks need at least one frame, got \(framesPerChunk)")
        }
        let pcm: ALSAPCM
        do {
            pcm = try ALSAPCM(name: pcmName, extraConfiguration: extraConfiguration)
        } catch {
            if error.code == .deviceDisconnected { setConnected(false) }
            throw error
        }
        let setup: ALSAPCM.Setup
        do {
            setup = try pcm.configure(format, periodFrames: framesPerChunk)
        } catch {
            pcm.close()
            throw error
        }
        let running = try ALSACaptureStream(pcm: pcm, setup: setup, bufferCount: bufferCount, sink: sink)
        let previous = stream.withLock { stream in
            defer { stream = running }
            return stream
        }
        previous?.stop()
        return setup.format
    }

    /// The running (or last) stream's counts, if any.
    package var statistics: ALSACaptureStream.Counters? { stream.withLock { $0?.statistics } }

    /// The running stream's period in frames, if any.
    package var periodFrames: Int? { stream.withLock { $0?.setup.periodFrames } }

    package func stopCapture() {
        let running = stream.withLock { $0 }
        running?.stop()
    }
}
