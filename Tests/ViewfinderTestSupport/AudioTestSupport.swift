import Foundation
import Synchronization

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// An audio sink that copies what arrives, can hold the first chunks' buffers (starving the
/// pool) until the source reports a loss, and signals once enough frames have arrived.
package final class RecordingAudioSink: AudioStreamSink {
    package struct Received: Sendable {
        package let sampleIndex: UInt64
        package let frameCount: Int
        package let framesLostBefore: Int
        package let presentationTime: MediaTime
        package let format: AudioFormat
        package let bytes: [UInt8]
    }
    package struct State {
        package var chunks: [Received] = []
        package var losses: [(frames: Int, reason: AudioLossReason)] = []
        package var errors: [CaptureError] = []
        package var held: [AudioChunk] = []
        package var frames = 0
        package var signalled = false
    }
    package let state = Mutex(State())
    package let enough = DispatchSemaphore(value: 0)
    package let framesWanted: Int
    package let holdCount: Int

    /// Signals ``enough`` once `framesWanted` frames have arrived (or on failure); keeps the
    /// first `holdCount` chunks' buffers until the first loss.
    package init(framesWanted: Int, holdCount: Int = 0) {
        self.framesWanted = framesWanted
        self.holdCount = holdCount
    }

    package func audioStreamDidCapture(_ chunk: AudioChunk) {
        let received = Received(
            sampleIndex: chunk.sampleIndex, frameCount: chunk.frameCount, framesLostBefore: chunk.framesLostBefore,
            presentationTime: chunk.presentationTime, format: chunk.format, bytes: Array(chunk.bytes))
        let signal = state.withLock { state -> Bool in
            state.chunks.append(received)
            if state.held.count < holdCount, state.losses.isEmpty { state.held.append(chunk) }
            state.frames += chunk.frameCount
            guard state.frames >= framesWanted, !state.signalled else { return false }
            state.signalled = true
            return true
        }
        if signal { enough.signal() }
    }

    package func audioStreamDidLose(frames: Int, reason: AudioLossReason) {
        // Release the held buffers outside the lock (their deinit takes the pool's lock).
        let released = state.withLock { state -> [AudioChunk] in
            state.losses.append((frames, reason))
            defer { state.held.removeAll() }
            return state.held
        }
        _ = released
    }

    package func audioStreamDidFail(_ error: CaptureError) {
        let signal = state.withLock { state -> Bool in
            state.errors.append(error)
            defer { state.signalled = true }
            return !state.signalled
        }
        if signal { enough.signal() }
    }

    package var chunks: [Received] { state.withLock { $0.chunks } }
    package var errors: [CaptureError] { state.withLock { $0.errors } }
    package var losses: [(frames: Int, reason: AudioLossReason)] { state.withLock { $0.losses } }
}

/// Test audio helpers.
package enum AudioTestSignal {
    /// Interleaved int16 samples that differ frame to frame and channel to channel (a ramp mixed
    /// with a hash), so any shift, swap or loss shows.
    package static func distinctiveInt16(frames: Int, channels: Int) -> [Int16] {
        (0..<(frames * channels)).map { index in
            let value = UInt32(truncatingIfNeeded: index &* 2_654_435_761) >> 16
            return Int16(truncatingIfNeeded: value)
        }
    }

    /// A temporary file holding `bytes`; removed by the caller.
    package static func temporaryFile(_ bytes: [UInt8], suffix: String = ".raw") throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "viewfinder-audio-\(UUID().uuidString)\(suffix)")
        try Data(bytes).write(to: url)
        return url
    }

    /// A sine of `frequency` Hz and peak `amplitude` (full scale 1) at `rate`, `frames` long.
    package static func sine(frequency: Double, amplitude: Double, rate: Int, frames: Int, phase: Double = 0) -> [Float]
    {
        (0..<frames).map { Float(amplitude * sin(2 * .pi * frequency * Double($0) / Double(rate) + phase)) }
    }

    /// The bytes of `values`.
    package static func bytes<T>(of values: [T]) -> [UInt8] {
        values.withUnsafeBytes { Array($0) }
    }
}

/// Measures of a captured tone: what the audio tests assert about it.
package enum AudioAnalysis {
    /// The frequency of a sine from its rising zero crossings (linearly interpolated).
    package static func frequency(of samples: [Float], rate: Int) -> Double {
        var crossings: [Double] = []
        for index in 1..<samples.count where samples[index - 1] < 0 && samples[index] >= 0 {
            let a = Double(samples[index - 1])
            let b = Double(samples[index])
            crossings.append(Double(index - 1) + (-a / (b - a)))
        }
        guard let first = crossings.first, let last = crossings.last, crossings.count > 1 else { return 0 }
        return Double(crossings.count - 1) / ((last - first) / Double(rate))
    }

    package static func rms(_ samples: [Float]) -> Double {
        (samples.map { Double($0) * Double($0) }.reduce(0, +) / Double(max(1, samples.count))).squareRoot()
    }
}
