import Synchronization

/// A microphone behind ``CaptureDevice``: adapts an ``AudioCaptureSource`` (an ALSA PCM, the
/// virtual microphone) to ``DeviceBackend``, so a microphone is a device like a camera — one
/// ``MediaType/audio`` port, ``CaptureDevice/DeviceType/microphone``, its PCM layouts as
/// ``CaptureDevice/Format``s (``CaptureDevice/Format/audioFormat``).
///
/// Formats are listed in order of preference — 48 kHz first, then 44.1 kHz, then the other
/// rates from the highest; stereo before mono; int16, then float32, then int32 — so a device's
/// first format (its default ``CaptureDevice/activeFormat``) is the one a session picks when no
/// output asks for anything.
///
/// Streaming hands each chunk on as a ``CapturedSample`` with an ``CapturedSample/Payload/audio(_:)``
/// payload whose `sequenceNumber` counts chunks. Audio the source lost (an overrun, no free
/// buffer) advances that counter by the chunks it would have filled (at least one), so outputs
/// report the loss as a ``DroppedFrameReason/discontinuity`` whose sample-frame count the next
/// chunk carries (``AudioChunk/framesLostBefore``).
///
/// Thread safety: all members may be used from any thread; streaming is serialised by the
/// owning ``CaptureDevice``.
package final class AudioDeviceBackend: DeviceBackend {
    /// The chunk length used when the session does not ask for one: 10 ms.
    package static let defaultChunkDuration = MediaTime(value: 1, timescale: 100)

    package let source: any AudioCaptureSource
    package let modelID: String
    package let manufacturer: String
    private let bridge = Mutex<AudioSampleBridge?>(nil)

    /// A device for `source`.
    package init(source: any AudioCaptureSource, modelID: String, manufacturer: String) {
        self.source = source
        self.modelID = modelID
        self.manufacturer = manufacturer
    }

    package var uniqueID: String { source.uniqueID }
    package var localizedName: String { source.localizedName }
    package var deviceType: CaptureDevice.DeviceType { .microphone }
    package var mediaTypes: [MediaType] { [.audio] }
    package var isConnected: Bool { source.isConnected }

    package var formats: [CaptureDevice.Format] {
        Self.preferredOrder(source.formats).map { CaptureDevice.Format(audioFormat: $0) }
    }

    /// `formats` in order of preference (see the type's notes), duplicates removed.
    package static func preferredOrder(_ formats: [AudioFormat]) -> [AudioFormat] {
        func rank(_ format: AudioFormat) -> (Int, Int, Int, Int) {
            let rate: Int
            switch format.sampleRate {
            case 48_000: rate = 0
            case 44_100: rate = 1
            default: rate = 2
            }
            let channels = format.channelCount == 2 ? 0 : format.channelCount == 1 ? 1 : 2
            let sample: Int
            switch format.sampleFormat {
            case .int16: sample = 0
            case .float32: sample = 1
            case .int32: sample = 2
            }
            return (rate, -format.sampleRate, channels * 100 + format.channelCount, sample)
        }
        var seen = Set<AudioFormat>()
        return formats.filter { seen.insert($0).inserted }.sorted { rank($0) < rank($1) }
    }

    /// Starts the source in `format`'s ``CaptureDevice/Format/audioFormat``, in chunks
    /// `frameDuration` long (``defaultChunkDuration`` when it is not a positive number). Returns
    /// the chunk duration asked of the source.
    package func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: DeviceStreamSink
    ) throws(CaptureError) -> MediaTime {
        guard let audioFormat = format.audioFormat else {
            throw CaptureError(
                .unsupportedFormat, "'\(localizedName)' is a microphone: it captures audio formats, not \(format)")
        }
        try checkCanStream(format)
        let duration = frameDuration.isNumeric && frameDuration > .zero ? frameDuration : Self.defaultChunkDuration
        let frames = max(1, Int((duration.seconds * Double(audioFormat.sampleRate)).rounded()))
        let bridge = AudioSampleBridge(sink: sink, framesPerChunk: frames)
        stopStreaming()
        _ = try source.startCapture(format: audioFormat, framesPerChunk: frames, sink: bridge)
        self.bridge.withLock { $0 = bridge }
        return audioFormat.duration(ofFrames: frames)
    }

    package func stopStreaming() {
        source.stopCapture()
        bridge.withLock { $0 = nil }
    }
}

/// Turns a source's chunks into ``CapturedSample``s numbered by chunk, lost audio into gaps in
/// those numbers.
///
/// Thread safety: called on the source's capture thread; the counter is in a Mutex.
package final class AudioSampleBridge: AudioStreamSink {
    private let sink: DeviceStreamSink
    private struct Counter {
        var next: UInt64 = 0
        var chunkFrames: Int
    }
    private let counter: Mutex<Counter>

    package init(sink: DeviceStreamSink, framesPerChunk: Int) {
        self.sink = sink
        counter = Mutex(Counter(chunkFrames: max(1, framesPerChunk)))
    }

    package func audioStreamDidCapture(_ chunk: AudioChunk) {
        let sequence = counter.withLock { counter in
            defer {
                counter.next += 1
                if chunk.frameCount > 0 { counter.chunkFrames = chunk.frameCount }
            }
            return counter.next
        }
        sink.deviceDidCapture(CapturedSample(audio: chunk, sequenceNumber: sequence))
    }

    package func audioStreamDidLose(frames: Int, reason: AudioLossReason) {
        counter.withLock { counter in
            let chunks = (max(0, frames) + counter.chunkFrames - 1) / counter.chunkFrames
            counter.next += UInt64(max(1, chunks))
        }
    }

    package func audioStreamDidFail(_ error: CaptureError) {
        sink.deviceDidFail(error)
    }
}

extension CaptureDevice {
    /// A device for an audio source (tests wrap a virtual or file-backed microphone this way).
    package convenience init(microphone source: any AudioCaptureSource, modelID: String, manufacturer: String) {
        self.init(backend: AudioDeviceBackend(source: source, modelID: modelID, manufacturer: manufacturer))
    }
}
