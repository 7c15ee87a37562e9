import Dispatch
import Foundation
import Synchronization
import ViewfinderCore

/// Viewfinder's built-in virtual microphone ("Test Tone Microphone"): a device that captures a
/// test signal — a tone whose marker bursts spell the running sample count,
/// plus clicks at chosen presentation times — so audio paths run and are tested on a machine
/// with no sound card.
///
/// Chunks are paced by an injected ``CaptureClock`` (``HostClock`` for real time, a
/// ``ManualClock`` for exact tests): chunk *k* of *F* frames is delivered once the clock reaches
/// the time of its last frame, `start + (k + 1)·F / rate`, and stamped with the time of its
/// first, `start + k·F / rate`, where `start` is the clock's time when capture began. Unpaced
/// (`isPaced = false`) it produces as fast as buffers free up, timestamps unchanged. Like a
/// sound card it fills a fixed pool of buffers; when every buffer is held downstream the chunk
/// is lost and reported (as lost for want of buffers) and the sample count moves on.
///
/// A click at presentation time *t* starts at the first sample stamped at or after *t*, so it
/// can be lined up with the virtual camera's flash frame on the same clock.
///
/// ```swift
/// let clock = ManualClock()
/// let microphone = VirtualMicrophone(configuration: .init(clock: clock))
/// let input = try CaptureDeviceInput(device: microphone.device)
/// // … in the audio delegate: VirtualMicrophone.sampleIndex(of: sampleBuffer)
/// ```
///
/// Thread safety: all members may be used from any thread.
public final class VirtualMicrophone: Sendable {
    /// How the microphone behaves.
    public struct Configuration: Sendable {
        /// The device's name.
        public var name: String
        /// The device's unique ID (default: one made up for this instance).
        public var uniqueID: String?
        /// The clock that paces chunks and stamps them.
        public var clock: any CaptureClock
        /// `true`: one chunk per chunk duration of `clock`. `false`: as fast as buffers free up.
        public var isPaced: Bool
        /// Stop after this many frames (lost ones included); `nil` for no end.
        public var frameLimit: Int?
        /// Pooled chunk buffers.
        public var bufferCount: Int
        /// The tone's frequency in hertz.
        public var toneFrequency: Double
        /// The tone's peak level in dBFS (at most −20 while markers are on).
        public var toneLevel: Float
        /// Whether marker bursts encode the sample count (`false`: a pure tone).
        public var hasMarkers: Bool
        /// Presentation times (on `clock`) at which clicks start.
        public var clickTimes: [MediaTime]
        /// The formats offered.
        public var formats: [AudioFormat]

        /// A configuration; every parameter has the default of the built-in microphone.
        public init(
            name: String = "Test Tone Microphone", uniqueID: String? = nil, clock: any CaptureClock = HostClock(),
            isPaced: Bool = true, frameLimit: Int? = nil, bufferCount: Int = 8, toneFrequency: Double = 1000,
            toneLevel: Float = -20, hasMarkers: Bool = true, clickTimes: [MediaTime] = [],
            formats: [AudioFormat] = VirtualMicrophone.standardFormats
        ) {
            self.name = name
            self.uniqueID = uniqueID
            self.clock = clock
            self.isPaced = isPaced
            self.frameLimit = frameLimit
            self.bufferCount = bufferCount
            self.toneFrequency = toneFrequency
            self.toneLevel = toneLevel
            self.hasMarkers = hasMarkers
            self.clickTimes = clickTimes
            self.formats = formats
        }
    }

    /// Interleaved int16, int32 and float32 at 48, 44.1 and 16 kHz, mono and stereo.
    public static let standardFormats: [AudioFormat] = AudioFormat.SampleFormat.allCases.flatMap { sampleFormat in
        [48_000, 44_100, 16_000].flatMap { rate in
            [1, 2].map { AudioFormat(sampleRate: rate, channelCount: $0, sampleFormat: sampleFormat) }
        }
    }

    /// How the microphone behaves.
    public let configuration: Configuration
    /// The device's unique ID.
    public var uniqueID: String { source.uniqueID }
    /// The device's name.
    public var localizedName: String { configuration.name }

    /// The device to add to a session through ``CaptureDeviceInput``.
    public let device: CaptureDevice
    /// The capture thread and its signal, behind ``device``.
    package let source: VirtualMicrophoneSource
    /// The device backend over ``source`` (what the built-in provider lists).
    package let backend: AudioDeviceBackend

    /// A virtual microphone configured by `configuration`.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        source = VirtualMicrophoneSource(configuration: configuration)
        backend = AudioDeviceBackend(
            source: source, modelID: "Viewfinder Virtual Microphone", manufacturer: "Viewfinder")
        device = CaptureDevice(backend: backend)
    }

    /// Whether the microphone is plugged in.
    public var isConnected: Bool { source.isConnected }

    /// Frames produced in the current or last stream (lost ones included).
    public var framesProduced: Int { source.framesProduced }

    /// Frames lost because every buffer was held, in the current or last stream.
    public var framesLost: Int { source.framesLost }

    /// Waits until a microphone with a ``Configuration/frameLimit`` has produced its last frame.
    /// Returns `false` on timeout.
    public func waitUntilFinished(timeout: Double) -> Bool {
        source.waitUntilFinished(timeout: timeout)
    }

    /// The device (kept for callers written when the microphone made one per call): ``device``.
    package func makeDevice() -> CaptureDevice { device }

    /// Makes the running stream fail with `error` at its next chunk. (Public as
    /// `simulateFailure(_:)` in ViewfinderSimulator, the test-only product.)
    package func injectFailure(_ error: CaptureError) { source.injectFailure(error) }

    /// Unplugs the microphone: the running stream fails with ``CaptureError/Code/deviceDisconnected``
    /// at its next chunk, and the device reports itself disconnected until ``injectReconnect()``.
    package func injectDisconnect() { source.injectDisconnect() }

    /// Plugs the microphone back in: posts ``CaptureDevice/wasConnectedNotification`` for its
    /// device, and a session interrupted by the unplug resumes.
    package func injectReconnect() {
        source.injectReconnect()
        NotificationCenter.default.post(name: CaptureDevice.wasConnectedNotification, object: device)
    }

    /// The stream position of a delivered buffer's first sample, read from the marker bursts in
    /// its first channel (``Configuration/hasMarkers``); `nil` when the buffer holds no whole
    /// marker (buffers shorter than 324 frames may not), or no audio.
    public static func sampleIndex(of sampleBuffer: SampleBuffer) -> UInt64? {
        guard let chunk = sampleBuffer.audioChunk, chunk.format.isInterleaved else { return nil }
        return VirtualMicrophoneSignal.readSampleIndex(
            from: VirtualMicrophoneSignal.samples(of: chunk.bytes, format: chunk.format))
    }
}

/// The virtual microphone's capture source: a paced (or unpaced) thread that fills pooled
/// buffers with the test signal, behind an ``AudioDeviceBackend``.
///
/// Thread safety: all members may be used from any thread.
package final class VirtualMicrophoneSource: AudioCaptureSource, Sendable {
    package enum Injection: Sendable {
        case fail(CaptureError)
        case disconnect
    }

    /// How the microphone behaves.
    package let configuration: VirtualMicrophone.Configuration
    /// The device's unique ID.
    package let uniqueID: String
    /// The device's name.
    package var localizedName: String { configuration.name }
    package var formats: [AudioFormat] { configuration.formats }

    private static let counter = Atomic<Int>(0)

    private struct State {
        var thread: CaptureThread?
        var produced = 0
        var lost = 0
        var pending: Injection?
        var connected = true
        var start: MediaTime = .invalid
        var signal: VirtualMicrophoneSignal?
    }
    private let state = Mutex(State())
    private let finish = FinishSignal()

    /// The source of a virtual microphone configured by `configuration`.
    package init(configuration: VirtualMicrophone.Configuration) {
        self.configuration = configuration
        let serial = Self.counter.add(1, ordering: .relaxed).newValue
        uniqueID = configuration.uniqueID ?? "viewfinder.virtual.microphone.\(serial)"
    }

    /// Whether the microphone is plugged in.
    package var isConnected: Bool { state.withLock { $0.connected } }

    /// Frames produced in the current or last stream (lost ones included).
    package var framesProduced: Int { state.withLock { $0.produced } }

    /// Frames lost because every buffer was held, in the current or last stream.
    package var framesLost: Int { state.withLock { $0.lost } }

    /// The clock time the current or last stream started at (sample 0's presentation time).
    package var streamStart: MediaTime { state.withLock { $0.start } }

    /// The signal of the current or last stream (what every sample should be).
    package var signal: VirtualMicrophoneSignal? { state.withLock { $0.signal } }

    /// Makes the running stream fail with `error` at its next chunk. (Public as
    /// `simulateFailure(_:)` in ViewfinderSimulator, the test-only product.)
    package func injectFailure(_ error: CaptureError) { state.withLock { $0.pending = .fail(error) } }

    /// Unplugs the microphone: the stream fails with ``CaptureError/Code/deviceDisconnected``.
    package func injectDisconnect() { state.withLock { $0.pending = .disconnect } }

    /// Plugs the microphone back in: posts ``CaptureDevice/wasConnectedNotification`` for its
    /// device, and a session interrupted by the unplug resumes.
    package func injectReconnect() { state.withLock { $0.connected = true } }

    /// Waits until a microphone with a frame limit has produced its last frame.
    package func waitUntilFinished(timeout: Double) -> Bool { finish.wait(timeout: timeout) }

    /// The stream position of the first sample stamped at or after `time`, for a stream that
    /// started at `start` with `rate` frames per second; `nil` for times before the start.
    package static func sampleIndex(at time: MediaTime, start: MediaTime, rate: Int) -> UInt64? {
        guard time.isValid, start.isValid, time >= start else { return nil }
        let nanoseconds = (time - start).nanoseconds
        let (high, low) = nanoseconds.multipliedFullWidth(by: Int64(rate))
        let division = Int64(1_000_000_000).dividingFullWidth((high, low))
        return UInt64(division.quotient) + (division.remainder > 0 ? 1 : 0)
    }

    package func startCapture(format: AudioFormat, framesPerChunk: Int, sink: AudioStreamSink) throws(CaptureError)
        -> AudioFormat
    {
        guard isConnected else {
            throw CaptureError(
                .deviceDisconnected, "'\(localizedName)' is disconnected: reconnect it before starting the session")
        }
        try format.validate()
        guard formats.contains(format) else {
            throw CaptureError(
                .unsupportedFormat, "'\(localizedName)' does not offer \(format): pick one of its `formats`")
        }
        guard framesPerChunk > 0 else {
            throw CaptureError(.invalidArgument, "audio chunks need at least one frame, got \(framesPerChunk)")
        }
        let pool = try PCMBufferPool(
            bytesPerBuffer: framesPerChunk * format.bytesPerFrame, capacity: max(1, configuration.bufferCount))
        let start = configuration.clock.now()
        let clicks = configuration.clickTimes.compactMap {
            Self.sampleIndex(at: $0, start: start, rate: format.sampleRate)
        }
        let signal = VirtualMicrophoneSignal(
            sampleRate: format.sampleRate, toneFrequency: configuration.toneFrequency,
            toneLevel: configuration.toneLevel, hasMarkers: configuration.hasMarkers, clickIndices: clicks)
        stopCapture()
        state.withLock {
            $0.produced = 0
            $0.lost = 0
            $0.start = start
            $0.signal = signal
        }
        finish.reset()
        let thread = CaptureThread(name: "viewfinder.virtual-microphone") { [self] thread in
            run(
                format: format, framesPerChunk: framesPerChunk, start: start, signal: signal, pool: pool, sink: sink,
                isCancelled: { thread.isCancelled })
        }
        state.withLock { $0.thread = thread }
        return format
    }

    package func stopCapture() {
        let thread = state.withLock { state in
            defer { state.thread = nil }
            return state.thread
        }
        thread?.stop()
    }

    private func markFinished() { finish.markFinished() }

    private func run(
        format: AudioFormat, framesPerChunk: Int, start: MediaTime, signal: VirtualMicrophoneSignal,
        pool: PCMBufferPool, sink: AudioStreamSink, isCancelled: () -> Bool
    ) {
        let clock = configuration.clock
        let host = HostClock()
        var index: UInt64 = 0
        var lostBefore = 0
        defer { markFinished() }
        while !isCancelled() {
            var frames = framesPerChunk
            if let limit = configuration.frameLimit {
                guard index < UInt64(limit) else { return }
                frames = min(frames, limit - Int(index))
            }
            let chunkStart = start + format.duration(ofFrames: Int(index))
            if configuration.isPaced {
                let deadline = start + format.duration(ofFrames: Int(index) + frames)
                guard clock.wait(until: deadline, isCancelled: isCancelled) else { return }
            }
            let injection: Injection? = state.withLock { state in
                defer { state.pending = nil }
                if state.pending == nil { state.produced += frames }
                return state.pending
            }
            switch injection {
            case .fail(let error):
                sink.audioStreamDidFail(error)
                return
            case .disconnect:
                state.withLock { $0.connected = false }
                sink.audioStreamDidFail(
                    CaptureError(
                        .deviceDisconnected,
                        "'\(localizedName)' was disconnected while capturing: reconnect it; the session resumes when it returns",
                        errno: ENODEV))
                return
            case nil:
                break
            }
            let current = index
            index += UInt64(frames)
            guard let buffer = pool.makeBuffer() else {
                state.withLock { $0.lost += frames }
                lostBefore += frames
                sink.audioStreamDidLose(frames: frames, reason: .outOfBuffers)
                continue
            }
            signal.render(from: current, frames: frames, format: format, into: buffer.memory)
            sink.audioStreamDidCapture(
                AudioChunk(
                    buffer: buffer, frameCount: frames, format: format, presentationTime: chunkStart,
                    sampleIndex: current, framesLostBefore: lostBefore, hostArrivalTime: host.now()))
            lostBefore = 0
        }
    }
}

/// Finds the machine's one built-in virtual microphone (a 1 kHz tone at −20 dBFS with sample-count
/// markers, paced by the host clock), listed after every other device.
package struct VirtualMicrophoneProvider: DeviceProvider {
    package static let shared = VirtualMicrophone(
        configuration: .init(uniqueID: "viewfinder.virtual.microphone.0", bufferCount: 32))

    package var sortOrder: Int { 1001 }
    package func discoverBackends() -> [any DeviceBackend] { [Self.shared.backend] }
}
