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
private final class CountingBackend: DeviceBackend, @unchecked Sendable {
    // unchecked: `thread` is written in start/stop, which the owning CaptureDevice serialises.
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
    let finished = DispatchSemaphore(value: 0)
    private var thread: Thread?
    private let stop = StopFlag()

    init(frameCount: Int) { self.frameCount = frameCount }

    func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: any DeviceStreamSink
    ) throws(CaptureError) -> MediaTime {
        try checkCanStream(format)
        // A buffer per frame: the camera never has to wait for the session to give one back.
        let pool = try PixelBufferPool(pixelFormat: .bgra, width: 32, height: 24, capacity: frameCount + 1)
        stop.value.store(false, ordering: .relaxed)
        let total = frameCount
        let thread = Thread { [stop, finished] in
            var number: UInt64 = 0
            while Int(number) < total, !stop.value.load(ordering: .relaxed) {
                guard let buffer = pool.makePixelBuffer() else { break }
                let time = frameDuration * Int64(number)
                sink.deviceDidCapture(
                    CapturedSample(
                        buffer: buffer, presentationTime: time, duration: frameDuration, sequenceNumber: number,
                        hostArrivalTime: time))
                number += 1
            }
            finished.signal()
        }
        self.thread = thread
        thread.start()
        return frameDuration
    }

    func stopStreaming() {
        stop.value.store(true, ordering: .relaxed)
        thread = nil
    }
}

/// Tells the counting camera's thread to stop.
private final class StopFlag: Sendable {
    let value = Atomic<Bool>(false)
}

/// Lists the counting camera only on a thread that asked for it, so the process's other tests
/// never see it.
private struct CountingProvider: DeviceProvider {
    static let key = "PublicExtensionTests.listing"
    let backend: CountingBackend
    var sortOrder: Int { Int.max }
    func discoverBackends() -> [any DeviceBackend] {
        Thread.current.threadDictionary[Self.key] == nil ? [] : [backend]
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
        #expect(entries.allSatisfy { $0.width == output.streamFormat?.dimensions.width })

        // A setting the camera cannot give is refused, and the old one stays.
        session.startRunning()
        #expect(throws: CaptureError.self) { try output.setPixelFormat(.nv12FullRange) }
        session.stopRunning()
    }

    @Test("a backend of another kind, registered through its provider, streams into a session")
    func registeredBackend() throws {
        let backend = CountingBackend(frameCount: 12)
        CaptureDevice.registerProvider(CountingProvider(backend: backend))
        Thread.current.threadDictionary[CountingProvider.key] = true
        defer { Thread.current.threadDictionary[CountingProvider.key] = nil }
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
        #expect(backend.finished.wait(timeout: .now() + 20) == .success)
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
