extension FormatNegotiator {
    /// How long the audio chunks a session asks of a microphone are: 10 ms.
    package static let audioChunkDuration = MediaTime(value: 1, timescale: 100)

    /// The audio path: picks, for a microphone, the format that needs the least conversion for
    /// every output's ``OutputRequest/audioSettings`` (a sample-rate change costs most, then a
    /// channel-count change, then a sample-format change), ties going to the active format (so a
    /// running device is not restarted for nothing), then to the device's order of preference
    /// (its first format first). A format chosen under the device's configuration
    /// lock is kept. Chunks are ``audioChunkDuration`` long; presets do
    /// not apply to audio.
    package static func negotiateAudio(device: CaptureDevice, requests: [OutputRequest]) throws(CaptureError) -> Choice
    {
        let formats = device.formats.filter { $0.audioFormat != nil }
        let candidates =
            device.userChoseFormat && device.activeFormat.audioFormat != nil ? [device.activeFormat] : formats
        var best: (cost: Int, format: CaptureDevice.Format)?
        for candidate in candidates {
            guard let audio = candidate.audioFormat else { continue }
            let cost = requests.reduce(0) { $0 + audioConversionCost(from: audio, to: $1.audioSettings) }
            // Ties keep the active format (no restart), else go to the device's first.
            if best == nil || cost < best!.cost || (cost == best!.cost && candidate == device.activeFormat) {
                best = (cost, candidate)
            }
        }
        guard let best else {
            throw CaptureError(
                .unsupportedFormat,
                "'\(device.localizedName)' lists no audio formats: it may be busy or gone; check it with `arecord -L`")
        }
        return Choice(format: best.format, frameDuration: audioChunkDuration)
    }

    /// What delivering `format` as `settings` asks: 0 when it is delivered as is.
    package static func audioConversionCost(from format: AudioFormat, to settings: AudioSettings?) -> Int {
        AudioConverter.estimatedCost(from: format, to: settings)
    }
}
