import CALSA
import Synchronization
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// One open alsa-lib capture PCM (`snd_pcm_t`): opened by name on the system configuration, or
/// on the system configuration extended by a configuration text (``ALSAConfiguration``), then
/// configured for interleaved capture with monotonic timestamps.
///
/// Thread safety: not thread-safe; one owner (the capture thread once streaming) uses it.
package final class ALSAPCM: @unchecked Sendable {  // handed to the capture thread once, used there alone
    /// The PCM's name (`default`, `hw:1,0`, `plughw:CARD=…`, a name the extra configuration defines).
    package let name: String
    private var handle: OpaquePointer?
    private var configuration: OpaquePointer?

    private static let quiet: Void = vf_alsa_silence_errors()

    /// Opens `name` for non-blocking capture; `extraConfiguration` is parsed over the system
    /// configuration for this PCM only (nothing global changes).
    package init(name: String, extraConfiguration: String? = nil) throws(CaptureError) {
        _ = Self.quiet
        self.name = name
        var pcm: OpaquePointer?
        var tree: OpaquePointer?
        let result: Int32
        if let extraConfiguration {
            result = vf_alsa_open_capture(&pcm, name, extraConfiguration, 1, &tree)
        } else {
            result = vf_alsa_open_capture(&pcm, name, nil, 1, &tree)
        }
        guard result >= 0, let pcm else { throw CaptureError.alsa(result, "opening", name: name) }
        handle = pcm
        configuration = tree
    }

    deinit { close() }

    /// Closes the PCM (later calls do nothing).
    package func close() {
        if let handle { snd_pcm_close(handle) }
        if let configuration { snd_config_delete(configuration) }
        handle = nil
        configuration = nil
    }

    /// The ALSA sample format for `format`.
    package static func alsaFormat(_ format: AudioFormat.SampleFormat) -> snd_pcm_format_t {
        switch format {
        case .int16: return SND_PCM_FORMAT_S16_LE
        case .int32: return SND_PCM_FORMAT_S32_LE
        case .float32: return SND_PCM_FORMAT_FLOAT_LE
        }
    }

    /// What the PCM can do: its rate and channel ranges and sample formats.
    package struct Capabilities: Sendable, Hashable {
        package var rates: ClosedRange<Int>
        package var channels: ClosedRange<Int>
        package var sampleFormats: [AudioFormat.SampleFormat]
    }

    /// Asks the PCM (it must not be configured yet) what it supports.
    package func capabilities() throws(CaptureError) -> Capabilities {
        guard let handle else { throw closedError() }
        var rateMin: UInt32 = 0
        var rateMax: UInt32 = 0
        var channelsMin: UInt32 = 0
        var channelsMax: UInt32 = 0
        var mask: UInt32 = 0
        let result = vf_alsa_probe(handle, &rateMin, &rateMax, &channelsMin, &channelsMax, &mask)
        guard result >= 0 else { throw CaptureError.alsa(result, "querying", name: name) }
        let formats = AudioFormat.SampleFormat.allCases.enumerated().compactMap { index, format in
            mask & (1 << UInt32(index)) != 0 ? format : nil
        }
        let rateTop = Int(min(rateMax, UInt32(Int32.max)))
        let channelTop = Int(min(channelsMax, 1024))
        return Capabilities(
            rates: Int(rateMin)...max(Int(rateMin), rateTop),
            channels: Int(channelsMin)...max(Int(channelsMin), channelTop), sampleFormats: formats)
    }

    /// Whether the PCM takes exactly `format` (interleaved).
    package func supports(_ format: AudioFormat) -> Bool {
        guard let handle, format.isValid, format.isInterleaved else { return false }
        return vf_alsa_supports(
            handle, Self.alsaFormat(format.sampleFormat), UInt32(format.sampleRate), UInt32(format.channelCount)) == 1
    }

    /// The negotiated stream: format and period / buffer sizes in frames.
    package struct Setup: Sendable, Hashable {
        package var format: AudioFormat
        package var periodFrames: Int
        package var bufferFrames: Int
    }

    /// Sets the hardware and software parameters. The device may pick the nearest rate and
    /// channel count, period and buffer size; the result says what it chose. The buffer holds
    /// `periods` periods, or a quarter second if that is more.
    package func configure(_ format: AudioFormat, periodFrames: Int, periods: Int = 4) throws(CaptureError) -> Setup {
        guard let handle else { throw closedError() }
        try format.validate()
        guard format.isInterleaved else {
            throw CaptureError(
                .unsupportedFormat, "ALSA capture delivers interleaved PCM: ask for an interleaved format")
        }
        var rate = UInt32(format.sampleRate)
        var channels = UInt32(format.channelCount)
        var period = snd_pcm_uframes_t(max(16, periodFrames))
        // At least a quarter second of slack: a reader held up for longer than a few short
        // periods (a busy machine; 4 periods of 10 ms overran under an emulated CPU) would
        // otherwise lose audio. Latency is unchanged: each period is read as it completes.
        let slack = (snd_pcm_uframes_t(format.sampleRate / 4) + period - 1) / period
        var buffer = max(snd_pcm_uframes_t(max(2, periods)), slack) * period
        let result = vf_alsa_configure(handle, Self.alsaFormat(format.sampleFormat), &rate, &channels, &period, &buffer)
        guard result >= 0 else { throw CaptureError.alsa(result, "configuring \(format) on", name: name) }
        var chosen = format
        chosen.sampleRate = Int(rate)
        chosen.channelCount = Int(channels)
        return Setup(format: chosen, periodFrames: Int(period), bufferFrames: Int(buffer))
    }

    /// `snd_pcm_start`.
    package func start() -> Int32 { handle.map { snd_pcm_start($0) } ?? -EBADF }

    /// `snd_pcm_prepare` (recovers from an xrun).
    package func prepare() -> Int32 { handle.map { snd_pcm_prepare($0) } ?? -EBADF }

    /// `snd_pcm_resume` (after a system suspend; `-EAGAIN` while it is not done yet).
    package func resume() -> Int32 { handle.map { snd_pcm_resume($0) } ?? -EBADF }

    /// `snd_pcm_wait`: 1 when frames can be read, 0 on timeout, a negative errno otherwise.
    package func wait(milliseconds: Int32) -> Int32 { handle.map { snd_pcm_wait($0, milliseconds) } ?? -EBADF }

    /// Frames readable at a moment on the PCM's timestamp clock (`snd_pcm_htimestamp`);
    /// `nil` when the PCM gives no timestamp.
    package func timestamp() -> (available: Int, nanoseconds: Int64)? {
        guard let handle else { return nil }
        var available: snd_pcm_uframes_t = 0
        var stamp = snd_htimestamp_t()
        guard snd_pcm_htimestamp(handle, &available, &stamp) >= 0, stamp.tv_sec != 0 || stamp.tv_nsec != 0 else {
            return nil
        }
        return (Int(available), Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_nsec))
    }

    /// When the last xrun happened, in nanoseconds on the PCM's clock, while it is in the xrun state.
    package func xrunTime() -> Int64? {
        guard let handle else { return nil }
        let value = vf_alsa_xrun_nanoseconds(handle)
        return value > 0 ? value : nil
    }

    /// `snd_pcm_readi` of up to `frames` frames into `memory`: frames read, or a negative errno.
    package func read(into memory: UnsafeMutableRawPointer, frames: Int) -> Int {
        guard let handle else { return Int(-EBADF) }
        return Int(snd_pcm_readi(handle, memory, snd_pcm_uframes_t(frames)))
    }

    /// Whether the PCM's card is gone: alsa-lib then answers a wait with `-EIO`, not `-ENODEV`.
    /// The kernel first swaps the card's file operations for ones that fail every poll and ioctl
    /// (`-ENODEV`), and only then marks each PCM `SND_PCM_STATE_DISCONNECTED`; a wait that fails
    /// in between still reads the old state, so an ioctl answering `-ENODEV` (`snd_pcm_avail`
    /// synchronises with the driver) counts too. Seen in the snd-aloop suite: the card unbound
    /// mid-capture failed with `-EIO` while the state read `RUNNING`.
    package var isDisconnected: Bool {
        guard let handle else { return false }
        return snd_pcm_state(handle) == SND_PCM_STATE_DISCONNECTED || snd_pcm_avail(handle) == -Int(ENODEV)
    }

    private func closedError() -> CaptureError {
        CaptureError(.invalidArgument, "ALSA device '\(name)' is closed: open it again", errno: EBADF)
    }
}
