import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// An audio delegate that records every buffer (its timing, format and bytes) and every drop,
/// can block on a gate, and can hold the buffers it gets (starving the source's pool).
package final class RecordingAudioDelegate: CaptureAudioDataOutputSampleBufferDelegate {
    package struct Buffer: Sendable {
        package let presentationTime: MediaTime
        package let duration: MediaTime
        package let sequenceNumber: UInt64
        package let numSamples: Int
        package let format: AudioFormat?
        package let formatDescription: FormatDescription?
        package let bytes: [UInt8]
        package let mediaType: MediaType
        package let connectionMediaType: MediaType

        /// Channel `channel` as floats in −1…1.
        package func samples(channel: Int = 0) -> [Float] {
            guard let format else { return [] }
            return bytes.withUnsafeBytes { VirtualMicrophoneSignal.samples(of: $0, format: format, channel: channel) }
        }
    }
    package struct Drop: Sendable {
        package let reason: DroppedFrameReason
        package let count: Int
        package let sampleCount: Int
        package let presentationTime: MediaTime
        package let sequenceNumber: UInt64
        package let hasData: Bool
    }
    private struct State {
        var buffers: [Buffer] = []
        var drops: [Drop] = []
        var held: [SampleBuffer] = []
        var frames = 0
        var gateClosed = false
        var inside = false
        var overlapping = false
    }
    private let state = Mutex(State())
    private let gate = DispatchSemaphore(value: 0)
    private let progress = NSCondition()
    /// Signalled when a callback blocks on the closed gate.
    package let entered = DispatchSemaphore(value: 0)
    package let queue = DispatchQueue(label: "test.audio")
    package let holdsBuffers: Bool

    package init(blocksOnFirstBuffer: Bool = false, holdsBuffers: Bool = false) {
        self.holdsBuffers = holdsBuffers
        state.withLock { $0.gateClosed = blocksOnFirstBuffer }
    }

    package func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        let block = state.withLock { state -> Bool in
            if state.inside { state.overlapping = true }
            state.inside = true
            return state.gateClosed
        }
        if block {
            entered.signal()
            gate.wait()
        }
        let buffer = Buffer(
            presentationTime: sampleBuffer.presentationTimeStamp, duration: sampleBuffer.duration,
            sequenceNumber: sampleBuffer.sequenceNumber, numSamples: sampleBuffer.numSamples,
            format: sampleBuffer.audioFormat, formatDescription: sampleBuffer.formatDescription,
            bytes: sampleBuffer.audioData.map { Array($0) } ?? [], mediaType: sampleBuffer.mediaType,
            connectionMediaType: connection.mediaType)
        progress.lock()
        state.withLock { state in
            state.buffers.append(buffer)
            state.frames += buffer.numSamples
            if holdsBuffers { state.held.append(sampleBuffer) }
            state.inside = false
        }
        progress.broadcast()
        progress.unlock()
    }

    package func captureOutput(
        _ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        let drop = Drop(
            reason: sampleBuffer.droppedFrameReason!, count: sampleBuffer.droppedFrameCount,
            sampleCount: sampleBuffer.attachment(forKey: .droppedAudioSampleCount) as? Int ?? -1,
            presentationTime: sampleBuffer.presentationTimeStamp, sequenceNumber: sampleBuffer.sequenceNumber,
            hasData: sampleBuffer.dataIsReady)
        state.withLock { $0.drops.append(drop) }
    }

    package func openGate() {
        state.withLock { $0.gateClosed = false }
        gate.signal()
    }

    /// Lets go of held buffers (outside the lock: their release takes the pool's lock).
    package func releaseHeldBuffers() {
        let held = state.withLock { state -> [SampleBuffer] in
            defer { state.held.removeAll() }
            return state.held
        }
        _ = held
    }

    package var buffers: [Buffer] { state.withLock { $0.buffers } }
    package var drops: [Drop] { state.withLock { $0.drops } }
    package var sawOverlappingCalls: Bool { state.withLock { $0.overlapping } }

    /// Waits until at least `frames` sample frames arrived.
    package func waitForFrames(_ frames: Int, timeout: Double = 30) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        progress.lock()
        defer { progress.unlock() }
        while state.withLock({ $0.frames }) < frames {
            if !progress.wait(until: deadline) { return state.withLock { $0.frames } >= frames }
        }
        return true
    }
}

/// Lists one microphone backend (a file-backed ALSA PCM, a virtual microphone) to a test registry.
package struct TestMicrophoneProvider: DeviceProvider {
    package let backend: AudioDeviceBackend
    package var sortOrder: Int { 50 }
    package func discoverBackends() -> [any DeviceBackend] { [backend] }
}

/// A running session over one microphone with one audio data output.
package struct AudioRig {
    package let session: CaptureSession
    package let output: CaptureAudioDataOutput
    package let device: CaptureDevice
    package let center = NotificationCenter()

    package init(
        device: CaptureDevice, settings: AudioSettings = AudioSettings(), bufferBudget: Int = 16,
        delegate: RecordingAudioDelegate
    ) throws {
        self.device = device
        session = CaptureSession(notificationCenter: center)
        output = CaptureAudioDataOutput(bufferBudget: bufferBudget)
        try output.setAudioSettings(settings)
        output.setSampleBufferDelegate(delegate, queue: delegate.queue)
        session.beginConfiguration()
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        try session.tryAddOutput(output)
        session.commitConfiguration()
    }

    /// Starts the session; fails the test if it posts an error.
    package func start(sourceLocation: SourceLocation = #_sourceLocation) {
        let errors = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: session, center: center)
        session.startRunning()
        #expect(session.isRunning, "session did not start", sourceLocation: sourceLocation)
        #expect(
            errors.count == 0, "session posted \(String(describing: errors.lastError))", sourceLocation: sourceLocation)
    }

    /// Advances `clock` by `chunk` `times` times, each time waiting until the microphone has
    /// produced the chunk and the output has handed it over.
    package func step(
        _ clock: ManualClock, by chunk: MediaTime, times: Int = 1, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(clock.waitUntilSleeping(), sourceLocation: sourceLocation)
        for _ in 0..<times {
            clock.advance(by: chunk)
            #expect(clock.waitUntilSleeping(), sourceLocation: sourceLocation)
            #expect(output.waitUntilDelivered(timeout: 10), sourceLocation: sourceLocation)
        }
    }
}

extension MediaTime {
    /// 10 ms: one audio chunk of the session.
    package static let audioChunk = MediaTime(value: 1, timescale: 100)
}
