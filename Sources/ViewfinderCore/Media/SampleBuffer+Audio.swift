import Foundation

extension SampleBuffer {
    /// An audio buffer's PCM.
    package convenience init(audio chunk: AudioChunk, sequenceNumber: UInt64, budget: FrameBudget?) {
        self.init(
            media: .audio(chunk), mediaType: .audio, presentationTimeStamp: chunk.presentationTime,
            duration: chunk.duration, sequenceNumber: sequenceNumber, budget: budget)
    }

    /// The PCM of an audio sample, or `nil` for video and for dropped-sample reports.
    package var audioChunk: AudioChunk? {
        if case .audio(let chunk) = media { return chunk }
        return nil
    }

    /// The PCM layout of an audio sample (``FormatDescription/audioFormat`` of
    /// ``formatDescription``), or `nil` for video and for dropped-sample reports.
    public var audioFormat: AudioFormat? { audioChunk?.format }

    /// Runs `body` on the audio samples as `T` — `Int16`, `Int32` or `Float`, matching
    /// ``audioFormat``'s sample format — ``numSamples`` × channel count values: interleaved
    /// (L R L R …), or for a non-interleaved format one channel after another. Returns `nil`,
    /// without calling `body`, for buffers without audio or when `T` does not match the sample
    /// format. The pointer is valid only inside `body`.
    ///
    /// ```swift
    /// sampleBuffer.withAudioSamples(as: Int16.self) { samples in
    ///     let peak = samples.map { abs(Int($0)) }.max() ?? 0
    /// }
    /// ```
    public func withAudioSamples<T, R>(as type: T.Type, _ body: (UnsafeBufferPointer<T>) throws -> R) rethrows -> R? {
        guard let chunk = audioChunk, Self.sampleType(T.self, matches: chunk.format.sampleFormat) else { return nil }
        return try chunk.withSamples(as: T.self, body)
    }

    /// Runs `body` on the audio bytes (``numSamples`` frames of ``audioFormat``, planes back to
    /// back when non-interleaved), the counterpart of reading `CMSampleBufferGetDataBuffer`'s
    /// block buffer. Returns `nil`, without calling `body`, for buffers without audio. The
    /// pointer is valid only inside `body`.
    public func withUnsafeAudioBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        guard let chunk = audioChunk else { return nil }
        return try body(chunk.bytes)
    }

    /// Runs `body` on the audio as Core Audio's `AudioBufferList` lays it out
    /// (`CMSampleBufferGetAudioBufferListWithRetainedBlockBuffer`, without its out-parameters
    /// and retained block buffer): one ``AudioBuffer`` holding every channel when interleaved,
    /// one per channel otherwise. Returns `nil`, without calling `body`, for buffers without
    /// audio. The pointers are valid only inside `body`.
    public func withAudioBufferList<R>(_ body: ([AudioBuffer]) throws -> R) rethrows -> R? {
        guard let chunk = audioChunk else { return nil }
        let bytes = chunk.bytes
        let format = chunk.format
        let count = format.bufferCount
        let size = bytes.count / max(1, count)
        let buffers = (0..<count).map { index in
            AudioBuffer(
                numberChannels: format.isInterleaved ? format.channelCount : 1,
                data: UnsafeRawBufferPointer(rebasing: bytes[(index * size)..<((index + 1) * size)]))
        }
        return try body(buffers)
    }

    /// A copy of the audio bytes (what ``withUnsafeAudioBytes(_:)`` shows, the counterpart of
    /// `CMSampleBufferGetDataBuffer` read into `Data`), or `nil` for buffers without audio.
    public var audioData: Data? {
        withUnsafeAudioBytes { Data($0) }
    }

    private static func sampleType<T>(_ type: T.Type, matches format: AudioFormat.SampleFormat) -> Bool {
        switch format {
        case .int16: return T.self == Int16.self
        case .int32: return T.self == Int32.self
        case .float32: return T.self == Float.self
        }
    }
}

/// One buffer of an audio sample, as Core Audio's `AudioBuffer` has it: how many interleaved
/// channels it holds (`mNumberChannels`) and its bytes (`mData`, `mDataByteSize`).
///
/// Thread safety: a view of memory owned by the sample buffer; use it only inside the closure
/// that received it.
public struct AudioBuffer {
    /// Interleaved channels in the buffer: every channel for interleaved audio, 1 otherwise.
    public var numberChannels: Int
    /// The bytes.
    public var data: UnsafeRawBufferPointer
}
