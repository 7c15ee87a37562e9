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
final class RecordingAudioSink: AudioStreamSink {
    struct Received: Sendable {
        let sampleIndex: UInt64
        let frameCount: Int
        let framesLostBefore: Int
        let presentationTime: MediaTime
        let format: AudioFormat
        let bytes: [UInt8]
    }
    struct State {
        var chunks: [Received] = []
        var losses: [(frames: Int, reason: AudioLossReason)] = []
        var errors: [CaptureError] = []
        var held: [AudioChunk] = []
        var frames = 0
        var signalled = false
    }
    let state = Mutex(State())
    let enough = DispatchSemaphore(value: 0)
    let framesWanted: Int
    let holdCount: Int

    /// Signals ``enough`` once `framesWanted` frames have arrived (or on failure); keeps the
    /// first `holdCount` chunks' buffers until the first loss.
    init(framesWanted: Int, holdCount: Int = 0) {
        self.framesWanted = framesWanted
        self.holdCount = holdCount
    }

    func audioStreamDidCapture(_ chunk: AudioChunk) {
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

    func audioStreamDidLose(frames: Int, reason: AudioLossReason) {
        // Release the held buffers outside the lock (their deinit takes the pool's lock).
        let released = state.withLock { state -> [AudioChunk] in
            state.losses.append((frames, reason))
            defer { state.held.removeAll() }
            return state.held
        }
        _ = released
    }

    func audioStreamDidFail(_ error: CaptureError) {
        let signal = state.withLock { state -> Bool in
            state.errors.append(error)
            defer { state.signalled = true }
            return !state.signalled
        }
        if signal { enough.signal() }
    }

    var chunks: [Received] { state.withLock { $0.chunks } }
    var errors: [CaptureError] { state.withLock { $0.errors } }
    var losses: [(frames: Int, reason: AudioLossReason)] { state.withLock { $0.losses } }
}

/// Test audio helpers.
enum AudioTestSignal {
    /// Interleaved int16 samples that differ frame to frame and channel to channel (a ramp mixed
    /// with a hash), so any shift, swap or loss shows.
    static func distinctiveInt16(frames: Int, channels: Int) -> [Int16] {
        (0..<(frames * channels)).map { index in
            let value = UInt32(truncatingIfNeeded: index &* 2_654_435_761) >> 16
            return Int16(truncatingIfNeeded: value)
        }
    }

    /// A temporary file holding `bytes`; removed by the caller.
    static func temporaryFile(_ bytes: [UInt8], suffix: String = ".raw") throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "viewfinder-audio-\(UUID().uuidString)\(suffix)")
        try Data(bytes).write(to: url)
        return url
    }

    /// A sine of `frequency` Hz and peak `amplitude` (full scale 1) at `rate`, `frames` long.
    static func sine(frequency: Double, amplitude: Double, rate: Int, frames: Int, phase: Double = 0) -> [Float] {
        (0..<frames).map { Float(amplitude * sin(2 * .pi * frequency * Double($0) / Double(rate) + phase)) }
    }

    /// The bytes of `values`.
    static func bytes<T>(of values: [T]) -> [UInt8] {
        values.withUnsafeBytes { Array($0) }
    }
}
