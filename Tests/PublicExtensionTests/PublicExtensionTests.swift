// Extending Viewfinder from outside: `import Viewfinder` only (never @testable), so what compiles
// here is what another module can write.
import Dispatch
import Foundation
import Synchronization
import Testing
import Viewfinder

/// Collects what a frame log hands over, on its queue.
private final class LogCollector: FrameLogDelegate, @unchecked Sendable {
    // unchecked: written on the output's one callback queue, read after waiting for it.
    var entries: [FrameLogEntry] = []
    var dropped = 0
    func frameLog(_ output: CaptureOutput, didOutput entry: FrameLogEntry) { entries.append(entry) }
    func frameLog(_ output: CaptureOutput, didDrop count: Int, reason: DroppedFrameReason) { dropped += count }
}

/// A camera of another kind: it hands `frameCount` numbered gray frames to the session from a
/// thread of its own, as fast as the session takes them.
private final class CountingBackend: DeviceBackend, Sendable {
    let uniqueID = "public-extension:counting"
    var localizedName: String { "Counting Camera" }
    var modelID: String { "counting" }
    var manufacturer: String { "PublicExtensionTests" }
    var deviceType: CaptureDevice.DeviceType { .external }
    let formats = [
        CaptureDevice.Format(pixelFormat: .bgra, width: 32, height: 24, frameRateRanges: [.init(framesPerSecond: 30)])
    ]
    var isConnected: Bool { true }
    let frameCount: Int
    let producer = ProducerThread()

    init(frameCount: Int) { self.frameCount = frameCount }

    func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: any DeviceStreamSink
    ) throws(CaptureError) -> MediaTime {
        try checkCanStream(format)
        // A buffer per frame: the camera never has to wait for the session to give one back.
        let pool = try PixelBufferPool(pixelFormat: .bgra, width: 32, height: 24, capacity: frameCount + 1)
        producer.start(count: frameCount) { number in
            guard let buffer = pool.makePixelBuffer() else { return false }
            let time = frameDuration * Int64(number)
            sink.deviceDidCapture(
                CapturedSample(
                    buffer: buffer, presentationTime: time, duration: frameDuration, sequenceNumber: UInt64(number),
                    hostArrivalTime: time))
            return true
        }
        return frameDuration
    }

    func stopStreaming() { producer.stop() }
}

/// Runs a backend's producing loop on a thread of its own: `count` turns at most, until a turn
/// says to stop or `stop()` is called; `finished` is signalled when the loop ends.
private final class ProducerThread: @unchecked Sendable {
    // unchecked: `thread` is written in start/stop, which the owning CaptureDevice serialises.
    let finished = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private var thread: Thread?

    func start(count: Int, turn: @escaping @Sendable (Int) -> Bool) {
        stopping.store(false, ordering: .relaxed)
        let thread = Thread { [self] in
            for number in 0..<count where !stopping.load(ordering: .relaxed) {
                if !turn(number) { break }
            }
            finished.signal()
        }
        self.thread = thread
        thread.start()
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        thread = nil
    }
}

/// Lists `backend` only on a thread that set `key` in its thread dictionary, so the process's
/// other tests never see it.
private struct ThreadListedProvider: DeviceProvider {
    let key: String
    let backend: any DeviceBackend
    var sortOrder: Int { Int.max }
    func discoverBackends() -> [any DeviceBackend] {
        Thread.current.threadDictionary[key] == nil ? [] : [backend]
    }
}

@Suite("Extending Viewfinder without @testable")
struct PublicExtensionTests {
    @Test("an output written on the public core gets every frame, in order, with the counts balanced")
    func frameLogOutput() throws {
        let camera = VirtualCamera(configuration: .init(isPaced: false, frameLimit: 24))
        let session = CaptureSession()
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let output = FrameLogOutput()
        let collector = LogCollector()
        let queue = DispatchQueue(label: "frame-log")
        output.setDelegate(collector, queue: queue)
        try session.tryAddOutput(output)
        try output.setPixelFormat(.bgra)
        session.startRunning()
        #expect(camera.waitUntilFinished(timeout: 20))
        #expect(output.waitUntilDelivered(timeout: 20))
        #expect(output.streamFormat?.pixelFormat == .bgra, "the setting reached the negotiation")
        session.stopRunning()
        let stats = output.statistics
        let (entries, dropped) = queue.sync { (collector.entries, collector.dropped) }
        #expect(stats.captured == 24)
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
        #expect(entries.count == stats.delivered)
        #expect(dropped == stats.dropped)
        #expect(zip(entries, entries.dropFirst()).allSatisfy { $0.sequenceNumber < $1.sequenceNumber })
        #expect(entries.allSatisfy { $0.width == output.streamFormat.map { Int($0.dimensions.width) } })

        // A setting the camera cannot give is refused, and the old one stays.
        session.startRunning()
        #expect(throws: CaptureError.self) { try output.setPixelFormat(.nv12FullRange) }
        session.stopRunning()
    }

    @Test("a backend of another kind, registered through its provider, streams into a session")
    func registeredBackend() throws {
        let backend = CountingBackend(frameCount: 12)
        let key = "PublicExtensionTests.listing"
        CaptureDevice.registerProvider(ThreadListedProvider(key: key, backend: backend))
        Thread.current.threadDictionary[key] = true
        defer { Thread.current.threadDictionary[key] = nil }
        let device = try #require(CaptureDevice.device(withUniqueID: backend.uniqueID))
        #expect(device.localizedName == "Counting Camera")
        #expect(CaptureDevice.devices(for: .video).last === device, "the highest sort order comes last")

        let session = CaptureSession()
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        let output = FrameLogOutput()
        let collector = LogCollector()
        let queue = DispatchQueue(label: "frame-log")
        output.setDelegate(collector, queue: queue)
        try session.tryAddOutput(output)
        session.startRunning()
        #expect(backend.producer.finished.wait(timeout: .now() + 20) == .success)
        #expect(output.waitUntilDelivered(timeout: 20))
        session.stopRunning()
        let stats = output.statistics
        let entries = queue.sync { collector.entries }
        #expect(stats.captured == 12)
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
        #expect(entries.count == stats.delivered)
        #expect(entries.first.map { ($0.width, $0.height) } ?? (0, 0) == (32, 24))
    }
}

/// A microphone of another kind: it hands `chunkCount` chunks of 480 mono 16-bit frames to the
/// session from a thread of its own, each sample holding its own stream position (mod 2^15).
private final class RampMicrophoneBackend: DeviceBackend, Sendable {
    static let format = AudioFormat(sampleRate: 48_000, channelCount: 1, sampleFormat: .int16)
    static let framesPerChunk = 480
    let uniqueID = "public-extension:ramp-microphone"
    var localizedName: String { "Ramp Microphone" }
    var modelID: String { "ramp" }
    var manufacturer: String { "PublicExtensionTests" }
    var deviceType: CaptureDevice.DeviceType { .microphone }
    var mediaTypes: [MediaType] { [.audio] }
    let formats = [CaptureDevice.Format(audioFormat: RampMicrophoneBackend.format)]
    var isConnected: Bool { true }
    let chunkCount: Int
    let producer = ProducerThread()

    init(chunkCount: Int) { self.chunkCount = chunkCount }

    func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: any DeviceStreamSink
    ) throws(CaptureError) -> MediaTime {
        try checkCanStream(format)
        guard format.audioFormat == Self.format else {
            throw CaptureError(.unsupportedFormat, "the ramp microphone captures \(Self.format) only")
        }
        let frames = Self.framesPerChunk
        producer.start(count: chunkCount) { chunk in
            let first = chunk * frames
            let samples = (0..<frames).map { Int16(truncatingIfNeeded: (first + $0) & 0x7FFF) }
            let time = Self.format.duration(ofFrames: first)
            let sample = samples.withUnsafeBytes { bytes in
                try? CapturedSample(
                    audio: bytes, format: Self.format, presentationTime: time, sampleIndex: UInt64(first),
                    sequenceNumber: UInt64(chunk), hostArrivalTime: time)
            }
            guard let sample else { return false }
            sink.deviceDidCapture(sample)
            return true
        }
        return Self.format.duration(ofFrames: frames)
    }

    func stopStreaming() { producer.stop() }
}

/// Keeps every delivered buffer's samples, on its queue.
private final class SampleCollector: CaptureAudioDataOutputSampleBufferDelegate, @unchecked Sendable {
    // unchecked: written on the output's one callback queue, read after waiting for it.
    var samples: [Int16] = []
    var buffers = 0
    var dropped = 0
    private let changed = NSCondition()

    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        _ = sampleBuffer.withAudioSamples(as: Int16.self) { samples.append(contentsOf: $0) }
        changed.withLock { buffers += 1 }
        changed.broadcast()
    }

    func captureOutput(_ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection)
    {
        changed.withLock { dropped += sampleBuffer.droppedFrameCount }
        changed.broadcast()
    }

    /// Waits until `count` buffers were delivered or reported dropped; `false` at the deadline.
    func waitForAccounted(_ count: Int, timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return changed.withLock {
            while buffers + dropped < count { if !changed.wait(until: deadline) { return false } }
            return true
        }
    }
}

@Suite("A microphone backend without @testable")
struct PublicMicrophoneExtensionTests {
    @Test("a microphone of another kind, registered through its provider, delivers every sample in order")
    func registeredMicrophone() throws {
        let backend = RampMicrophoneBackend(chunkCount: 20)
        let key = "PublicExtensionTests.microphone"
        CaptureDevice.registerProvider(ThreadListedProvider(key: key, backend: backend))
        Thread.current.threadDictionary[key] = true
        defer { Thread.current.threadDictionary[key] = nil }
        let device = try #require(CaptureDevice.device(withUniqueID: backend.uniqueID))
        #expect(device.hasMediaType(.audio))
        #expect(CaptureDevice.devices(for: .audio).contains { $0 === device })

        let session = CaptureSession()
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        let output = CaptureAudioDataOutput()
        let collector = SampleCollector()
        let queue = DispatchQueue(label: "ramp")
        output.setSampleBufferDelegate(collector, queue: queue)
        try session.tryAddOutput(output)
        session.startRunning()
        #expect(session.isRunning)
        #expect(backend.producer.finished.wait(timeout: .now() + 20) == .success)
        #expect(collector.waitForAccounted(20, timeout: 20), "every chunk delivered or reported dropped")
        session.stopRunning()
        let stats = output.statistics
        let (samples, buffers, dropped) = queue.sync { (collector.samples, collector.buffers, collector.dropped) }
        #expect(stats.captured == 20)
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
        #expect(buffers == stats.delivered)
        #expect(dropped == stats.dropped)
        #expect(samples.count == buffers * RampMicrophoneBackend.framesPerChunk)
        // The delivered buffers are whole chunks in order: each sample is its stream position.
        let first = Int(samples.first ?? 0)
        #expect(first % RampMicrophoneBackend.framesPerChunk == 0)
        if stats.dropped == 0 {
            #expect(samples.enumerated().allSatisfy { Int($0.element) == (first + $0.offset) & 0x7FFF })
        }
    }

    @Test("an audio sample of bytes that are not whole frames is refused with a typed error")
    func partialFrameRefused() {
        let stereo = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .float32)
        let bytes = [UInt8](repeating: 0, count: 12)
        #expect {
            try bytes.withUnsafeBytes {
                _ = try CapturedSample(
                    audio: $0, format: stereo, presentationTime: .zero, sampleIndex: 0, sequenceNumber: 0,
                    hostArrivalTime: .zero)
            }
        } throws: { ($0 as? CaptureError)?.code == .invalidArgument }
    }
}

/// An app's session class, as AVFoundation code writes one: a subclass with its own state whose
/// `init` calls `super.init()`.
private final class AppCaptureSession: CaptureSession, @unchecked Sendable {
    let label: String
    override init() {
        label = "app"
        super.init()
    }
}

/// An app's multi-camera session class.
private final class AppMultiCamSession: CaptureMultiCamSession, @unchecked Sendable {}

@Suite("AVFoundation's object model without @testable")
struct PublicObjectModelTests {
    @Test("sessions subclass, and a subclass's key paths can be observed")
    func sessionSubclass() {
        let session = AppCaptureSession()
        #expect(session.label == "app")
        #expect(!session.isRunning)
        let observation = session.observe(\.isRunning, options: [.initial, .new]) { _, _ in }
        observation.invalidate()
        let multi = AppMultiCamSession()
        #expect(multi.inputs.isEmpty)
        #expect(multi != session as CaptureSession)
    }

    @Test("outputs and inputs work in sets and as dictionary keys")
    func hashable() {
        let video = CaptureVideoDataOutput()
        let photo = CapturePhotoOutput()
        var names: [CaptureOutput: String] = [video: "video", photo: "photo"]
        names[video] = "frames"
        #expect(names.count == 2)
        #expect(names[photo] == "photo")
    }
}
