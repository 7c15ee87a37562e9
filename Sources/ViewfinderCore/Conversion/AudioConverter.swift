import CSwresample
import CSwscale

#if canImport(Glibc)
    import Glibc
#endif

/// Converts PCM between ``AudioFormat``s — sample format, sample rate, channel count,
/// interleaving — through FFmpeg's libswresample (`swr_convert`), for outputs whose
/// `audioSettings` ask for something other than what the device captures. Channel counts map
/// through FFmpeg's default layouts (1 = mono, 2 = stereo, …) and its standard rematrixing.
///
/// A rate converter keeps a few frames of history: output lags input by ``delayFrames`` and
/// ``flush(into:capacity:)`` drains them at the end of a stream. ``convert(_:pool:)`` keeps a
/// chunk stream's timestamps and sample index consistent in the output rate.
///
/// Thread safety: one owner at a time (an output's queue); calls must not overlap.
package final class AudioConverter: @unchecked Sendable {  // the SwrContext is used by one serial owner at a time
    /// What goes in.
    package let source: AudioFormat
    /// What comes out.
    package let destination: AudioFormat
    private var context: OpaquePointer?
    private var outputIndex: UInt64 = 0
    private var expectedInputIndex: UInt64?

    /// A converter from `source` to `destination`.
    package init(from source: AudioFormat, to destination: AudioFormat) throws(CaptureError) {
        try source.validate()
        try destination.validate()
        self.source = source
        self.destination = destination
        var made: OpaquePointer?
        let result = vf_swr_make(
            &made, Self.avFormat(destination), Int32(destination.sampleRate), Int32(destination.channelCount),
            Self.avFormat(source), Int32(source.sampleRate), Int32(source.channelCount))
        guard result >= 0, let made else {
            throw CaptureError(
                .conversionFailed,
                "libswresample cannot convert \(source) to \(destination) (error \(result)): choose other audio settings"
            )
        }
        context = made
    }

    deinit { swr_free(&context) }

    package static func avFormat(_ format: AudioFormat) -> AVSampleFormat {
        switch (format.sampleFormat, format.isInterleaved) {
        case (.int16, true): return AV_SAMPLE_FMT_S16
        case (.int16, false): return AV_SAMPLE_FMT_S16P
        case (.int32, true): return AV_SAMPLE_FMT_S32
        case (.int32, false): return AV_SAMPLE_FMT_S32P
        case (.float32, true): return AV_SAMPLE_FMT_FLT
        case (.float32, false): return AV_SAMPLE_FMT_FLTP
        }
    }

    /// Frames held inside the converter, in the destination rate.
    package var delayFrames: Int { Int(swr_get_delay(context, Int64(destination.sampleRate))) }

    /// The most frames converting `inputFrames` more can produce (including what is buffered).
    package func maximumOutputFrames(forInputFrames inputFrames: Int) -> Int {
        max(0, Int(swr_get_out_samples(context, Int32(clamping: inputFrames))))
    }

    /// Pointers to the planes of `memory`: one for interleaved formats, one per channel
    /// (each `capacity` frames long, back to back) otherwise.
    private static func planes(_ memory: UnsafeRawPointer, format: AudioFormat, capacity: Int) -> [UnsafePointer<
        UInt8
    >?] {
        let bytes = memory.assumingMemoryBound(to: UInt8.self)
        let stride = capacity * format.sampleFormat.bytesPerSample
        return (0..<format.bufferCount).map { bytes + $0 * stride }
    }

    /// Converts `inputFrames` frames at `input` (planes back to back, `inputFrames` frames each,
    /// when non-interleaved) into `output`, which holds `capacity` frames (per plane). Returns
    /// the frames written.
    package func convert(
        _ input: UnsafeRawPointer, frames inputFrames: Int, into output: UnsafeMutableRawPointer, capacity: Int
    ) throws(CaptureError) -> Int {
        var inputs = Self.planes(input, format: source, capacity: inputFrames)
        var outputs = Self.planes(output, format: destination, capacity: capacity).map {
            UnsafeMutablePointer(mutating: $0)
        }
        let written = outputs.withUnsafeMutableBufferPointer { out in
            inputs.withUnsafeMutableBufferPointer { inp in
                swr_convert(
                    context, out.baseAddress, Int32(clamping: capacity), inp.baseAddress, Int32(clamping: inputFrames))
            }
        }
        guard written >= 0 else {
            throw CaptureError(
                .conversionFailed, "libswresample failed converting \(source) to \(destination) (error \(written))")
        }
        return Int(written)
    }

    /// Drains the frames the converter still holds into `output` (`capacity` frames). Returns
    /// the frames written.
    package func flush(into output: UnsafeMutableRawPointer, capacity: Int) throws(CaptureError) -> Int {
        var outputs = Self.planes(output, format: destination, capacity: capacity).map {
            UnsafeMutablePointer(mutating: $0)
        }
        let written = outputs.withUnsafeMutableBufferPointer { out in
            swr_convert(context, out.baseAddress, Int32(clamping: capacity), nil, 0)
        }
        guard written >= 0 else {
            throw CaptureError(
                .conversionFailed, "libswresample failed draining \(source) to \(destination) (error \(written))")
        }
        return Int(written)
    }

    /// Converts a chunk (interleaved, in ``source``) into a new chunk in ``destination``, in a
    /// buffer from `pool` (or one of its own). The output's presentation time is the input's
    /// minus the frames the converter was still holding, its sample index counts output frames
    /// (lost input frames scaled to the output rate). `nil` when the converter produced nothing
    /// yet, or `pool` had no free buffer.
    package func convert(_ chunk: AudioChunk, pool: PCMBufferPool? = nil) throws(CaptureError) -> AudioChunk? {
        guard chunk.format == source else {
            throw CaptureError(.conversionFailed, "a converter for \(source) was handed \(chunk.format)")
        }
        if let expected = expectedInputIndex, chunk.sampleIndex > expected {
            let lost = Double(chunk.sampleIndex - expected) * Double(destination.sampleRate) / Double(source.sampleRate)
            outputIndex += UInt64(lost.rounded())
        }
        expectedInputIndex = chunk.sampleIndex + UInt64(chunk.frameCount)
        let held = delayFrames
        let capacity = maximumOutputFrames(forInputFrames: chunk.frameCount)
        guard capacity > 0 else { return nil }
        let buffer: PCMBuffer
        if let pool {
            guard pool.bytesPerBuffer >= capacity * destination.sampleFormat.bytesPerSample * destination.channelCount,
                let pooled = pool.makeBuffer()
            else { return nil }
            buffer = pooled
        } else {
            let bytes = capacity * destination.sampleFormat.bytesPerSample * destination.channelCount
            buffer = PCMBuffer(copying: UnsafeRawBufferPointer(start: nil, count: 0), capacity: bytes)
        }
        let written = try convert(
            UnsafeRawPointer(chunk.buffer.memory), frames: chunk.frameCount, into: buffer.memory, capacity: capacity)
        guard written > 0 else { return nil }
        if !destination.isInterleaved, written < capacity {
            // Planes were laid out `capacity` frames apart: close them up to `written`, so the
            // chunk's planes lie back to back as AudioChunk says.
            let plane = destination.sampleFormat.bytesPerSample
            for channel in 1..<destination.channelCount {
                memmove(
                    buffer.memory + channel * written * plane, buffer.memory + channel * capacity * plane,
                    written * plane)
            }
        }
        let time = chunk.presentationTime - destination.duration(ofFrames: held)
        let index = outputIndex
        outputIndex += UInt64(written)
        return AudioChunk(
            buffer: buffer, frameCount: written, format: destination, presentationTime: time, sampleIndex: index,
            framesLostBefore: chunk.framesLostBefore == 0
                ? 0
                : Int(
                    (Double(chunk.framesLostBefore) * Double(destination.sampleRate) / Double(source.sampleRate))
                        .rounded()),
            hostArrivalTime: chunk.hostArrivalTime)
    }
}

extension AudioConverter {
    /// What converting `format` as `settings` ask costs, for negotiation: 0 when delivered as is; a
    /// sample-rate change costs most (resampling filters), then a channel change (mixing), then a
    /// sample-format change, then re-interleaving, each well above the next.
    package static func estimatedCost(from format: AudioFormat, to settings: AudioSettings?) -> Int {
        guard let settings else { return 0 }
        var cost = 0
        if let rate = settings.sampleRate, rate != format.sampleRate { cost += 100 }
        if let channels = settings.channelCount, channels != format.channelCount { cost += 10 }
        if let sampleFormat = settings.sampleFormat, sampleFormat != format.sampleFormat { cost += 2 }
        if settings.isInterleaved != format.isInterleaved { cost += 1 }
        return cost
    }
}
