import Foundation
import Synchronization
import Testing
import ViewfinderSimulator

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// The PipeWire daemon the tests use: the one `Scripts/pipewire.sh` started (its socket in
/// `VIEWFINDER_PIPEWIRE_REMOTE`). With `VIEWFINDER_PIPEWIRE_EXPECTED` set (the script sets it,
/// and `Scripts/test.sh` runs every test through the script) a missing daemon fails the tests;
/// without it (a bare `swift test`) they are skipped.
enum PipeWireTestDaemon {
    static let environment = ProcessInfo.processInfo.environment
    static var remote: String? { environment["VIEWFINDER_PIPEWIRE_REMOTE"] }
    static var isExpected: Bool { environment["VIEWFINDER_PIPEWIRE_EXPECTED"] == "1" }
    static var isAvailable: Bool { isExpected || remote != nil }

    /// A node name no other test uses.
    static func uniqueName(_ label: String) -> String {
        "viewfinder-test-\(label)-\(getpid())-\(counter.add(1, ordering: .relaxed).newValue)"
    }
    private static let counter = Atomic<Int>(0)

    /// A registry with only a PipeWire provider on the test daemon.
    static func registry() throws -> (DeviceRegistry, PipeWireDeviceProvider) {
        let remote = try #require(remote, "Scripts/pipewire.sh sets VIEWFINDER_PIPEWIRE_REMOTE")
        #expect(PipeWireConnection.socketExists(remoteName: remote), "the test daemon's socket '\(remote)' is missing")
        let provider = PipeWireDeviceProvider(remoteName: remote)
        return (DeviceRegistry(providers: [provider]), provider)
    }

    /// Waits until `registry` lists a device with `uniqueID` (the node is published asynchronously).
    static func device(_ uniqueID: String, in registry: DeviceRegistry, timeout: Double = 10) -> CaptureDevice? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        let connected = NotificationRecorder(CaptureDevice.wasConnectedNotification)
        repeat {
            if let device = registry.devices().first(where: { $0.uniqueID == uniqueID }) { return device }
        } while connected.next(timeout: max(0, deadline.timeIntervalSinceNow)).received
        return registry.devices().first { $0.uniqueID == uniqueID }
    }
}

/// Checks each delivered frame of a PipeWire test camera: the number its pixels show equals its
/// sequence number, and (for `exact`) its bytes equal the pattern's.
final class PipeWireFrameCheck: Sendable {
    private struct State {
        var mismatched: [UInt64] = []
        var unreadable = 0
        var compared = 0
    }
    private let state = Mutex(State())
    let exactFormat: CaptureDevice.Format?

    init(exactFormat: CaptureDevice.Format? = nil) { self.exactFormat = exactFormat }

    func check(_ sample: SampleBuffer) {
        guard let image = sample.imageBuffer else { return }
        var exact = true
        if let format = exactFormat,
            let expected = PipeWireTestCamera.expectedFrame(sample.sequenceNumber, format: format)
        {
            for plane in 0..<image.planeCount {
                let rows = image.height(ofPlane: plane)
                let bytes = expected.bytesPerRow(ofPlane: plane)
                for row in 0..<rows
                where memcmp(
                    image.baseAddress(ofPlane: plane) + row * image.bytesPerRow(ofPlane: plane),
                    expected.baseAddress(ofPlane: plane) + row * bytes, bytes) != 0
                {
                    exact = false
                    break
                }
            }
        }
        let number = TestPattern.readSequenceNumber(from: image)
        state.withLock { state in
            state.compared += 1
            if number == nil { state.unreadable += 1 }
            if !exact || (number != nil && number != sample.sequenceNumber & 0xFFFF_FFFF) {
                state.mismatched.append(sample.sequenceNumber)
            }
        }
    }

    var mismatched: [UInt64] { state.withLock { $0.mismatched } }
    var unreadable: Int { state.withLock { $0.unreadable } }
    var compared: Int { state.withLock { $0.compared } }
}

@Suite("PipeWire backend", .serialized, .enabled(if: PipeWireTestDaemon.isAvailable, "needs Scripts/pipewire.sh"))
struct PipeWireBackendTests {
    /// Publishes a test camera, finds it through a private registry and runs `body` with it.
    func withCamera(
        _ label: String, format: String = "yuyv", width: Int = 320, height: Int = 240, fps: Int32 = 30,
        _ body: (CaptureDevice, PipeWireTestCamera, DeviceRegistry, String) throws -> Void
    ) throws {
        let (registry, _) = try PipeWireTestDaemon.registry()
        let name = PipeWireTestDaemon.uniqueName(label)
        let camera = try PipeWireTestCamera(
            name: name, format: format, width: width, height: height, framesPerSecond: fps,
            remoteName: PipeWireTestDaemon.remote)
        defer { camera.close() }
        try DeviceRegistry.$current.withValue(registry) {
            let device = try #require(PipeWireTestDaemon.device("pipewire:\(name)", in: registry))
            try body(device, camera, registry, name)
        }
    }

    @Test("a camera node is listed with its formats, and leaves the list when it goes")
    func listedWithFormats() throws {
        try withCamera("list", format: "nv12", width: 640, height: 480, fps: 15) { device, camera, registry, name in
            #expect(device.localizedName == "Viewfinder test camera \(name)")
            #expect(device.hasMediaType(.video))
            #expect(device.formats.count == 1)
            let format = try #require(device.formats.first)
            #expect(format.pixelFormat == .nv12VideoRange)
            #expect(format.dimensions.width == 640 && format.dimensions.height == 480)
            #expect(format.videoSupportedFrameRateRanges == [FrameRateRange(frameDuration: .fps(15))])
            #expect(CaptureDevice.devices(for: .video).contains { $0 === device })
            let gone = NotificationRecorder(CaptureDevice.wasDisconnectedNotification, object: device)
            camera.close()
            #expect(gone.wait())
            #expect(!device.isConnected)
            #expect(!registry.devices().contains { $0.uniqueID == device.uniqueID })
        }
    }

    /// Captures `count` frames of a `format` node into `settings`, checking each with `check`.
    func capture(
        _ label: String, format: String, settings: VideoSettings, check: PipeWireFrameCheck, count: Int = 20
    ) throws -> CaptureVideoDataOutput.Statistics {
        var statistics = CaptureVideoDataOutput.Statistics()
        try withCamera(label, format: format) { device, _, _, _ in
            let delegate = RecordingDelegate(inspect: { check.check($0) })
            let (session, output) = try makeSession(
                device: device, delegate: delegate, settings: settings, discardsLate: false)
            let errors = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: session)
            session.startRunning()
            #expect(delegate.waitForFrames(count))
            session.stopRunning()
            delegate.queue.sync {}
            statistics = output.statistics
            #expect(statistics.delivered + statistics.dropped + statistics.rateGated == statistics.captured)
            #expect(errors.count == 0, "\(String(describing: errors.lastError))")
            // Every frame, in order: a frame lost on the way (the producer had no free buffer, or
            // every slot was held, on a loaded machine) is a gap the output reported (as a discontinuity, or dropped itself).
            let numbers = delegate.frames.map(\.sequenceNumber)
            #expect(Self.isIncreasing(numbers), "in order: \(numbers)")
            #expect(Self.missing(numbers) <= statistics.dropped, "every gap reported: \(numbers)")
        }
        return statistics
    }

    @Test("YUYV frames arrive natively and byte-exact, every one, in order")
    func yuyvByteExact() throws {
        let check = PipeWireFrameCheck(
            exactFormat: PipeWireFormat.published(.yuyv, width: 320, height: 240, frameDuration: .fps(30)))
        _ = try capture(
            "yuyv", format: "yuyv", settings: try VideoSettings(pixelFormat: .yuyv), check: check)
        #expect(check.compared >= 20)
        #expect(check.mismatched.isEmpty)
        #expect(check.unreadable == 0)
    }

    @Test("BGRx frames arrive as BGRA, byte-exact")
    func bgrxByteExact() throws {
        let check = PipeWireFrameCheck(
            exactFormat: PipeWireFormat.published(.bgra, width: 320, height: 240, frameDuration: .fps(30)))
        _ = try capture("bgrx", format: "bgrx", settings: try VideoSettings(pixelFormat: .bgra), check: check)
        #expect(check.compared >= 20)
        #expect(check.mismatched.isEmpty)
    }

    @Test(
        "NV12 and I420 nodes are converted to BGRA and still show their sequence numbers", arguments: ["nv12", "i420"])
    func converted(format: String) throws {
        let check = PipeWireFrameCheck()
        _ = try capture(format, format: format, settings: try VideoSettings(pixelFormat: .bgra), check: check)
        #expect(check.compared >= 20)
        #expect(check.unreadable == 0)
        #expect(check.mismatched.isEmpty)
    }

    @Test("a Motion-JPEG node is decoded (to NV12 and BGRA) and shows its sequence numbers")
    func mjpegDecoded() throws {
        for pixelFormat in [PixelFormat.bgra, .nv12VideoRange] {
            let check = PipeWireFrameCheck()
            _ = try capture(
                "mjpeg", format: "mjpeg", settings: try VideoSettings(pixelFormat: pixelFormat), check: check)
            #expect(check.compared >= 20)
            #expect(check.unreadable == 0, "\(pixelFormat)")
            #expect(check.mismatched.isEmpty, "\(pixelFormat)")
        }
    }

    /// With `formatDelay` the node appears offering nothing and offers its format that much later,
    /// as a producer's node does when the update carrying its formats reaches the daemon after the
    /// node is in the registry. Under load the provider once listed such a camera that came back
    /// with no format, as another camera, and the session streamed by the old node's serial.
    @Test(
        "a node that goes interrupts the session; when it comes back, as the same camera, capture resumes",
        arguments: [0, 300])
    func unplugInterruptsAndResumes(formatDelay: Int) throws {
        let (registry, _) = try PipeWireTestDaemon.registry()
        let name = PipeWireTestDaemon.uniqueName("unplug")
        let remote = PipeWireTestDaemon.remote
        func publish() throws -> PipeWireTestCamera {
            try PipeWireTestCamera(
                name: name, format: "yuyv", width: 320, height: 240, framesPerSecond: 30, remoteName: remote,
                formatDelayMilliseconds: formatDelay)
        }
        var camera = try publish()
        defer { camera.close() }
        try DeviceRegistry.$current.withValue(registry) {
            let device = try #require(PipeWireTestDaemon.device("pipewire:\(name)", in: registry))
            #expect(device.formats.count == 1, "listed with the format it offered \(formatDelay) ms after appearing")
            #expect(device.formats.first?.dimensions == CaptureDevice.Dimensions(width: 320, height: 240))
            let delegate = RecordingDelegate()
            let (session, _) = try makeSession(device: device, delegate: delegate)
            let interrupted = NotificationRecorder(CaptureSession.wasInterruptedNotification, object: session)
            let ended = NotificationRecorder(CaptureSession.interruptionEndedNotification, object: session)
            let gone = NotificationRecorder(CaptureDevice.wasDisconnectedNotification, object: device)
            session.startRunning()
            defer { session.stopRunning() }
            #expect(delegate.waitForFrames(5))
            camera.close()
            let interruption = interrupted.next()
            #expect(interruption.received)
            #expect(interruption.error?.code == .deviceDisconnected)
            // The stream's unlink and the registry's removal come separately: wait for the latter.
            #expect(gone.wait())
            #expect(!device.isConnected)
            let before = delegate.frames.count
            camera = try publish()
            #expect(ended.wait())
            #expect(registry.devices().first { $0.uniqueID == device.uniqueID } === device, "the same device object")
            #expect(device.isConnected)
            #expect(device.formats.count == 1)
            #expect(delegate.waitForFrames(before + 5), "frames again after the node came back")
            #expect(session.isRunning)
        }
    }

    @Test("two Viewfinder processes capture the same camera at once and both get every frame")
    func twoProcesses() throws {
        try withCamera("shared") { device, _, _, name in
            let delegate = RecordingDelegate()
            let (session, output) = try makeSession(device: device, delegate: delegate, discardsLate: false)
            session.startRunning()
            defer { session.stopRunning() }
            #expect(delegate.waitForFrames(3))
            let probe = Process()
            guard let url = Self.probeURL else {
                Issue.record("viewfinder-pipewire-probe is not built: run swift build --build-tests")
                return
            }
            probe.executableURL = url
            probe.arguments = ["capture", name, "30"]
            var environment = ProcessInfo.processInfo.environment
            environment["PIPEWIRE_REMOTE"] = PipeWireTestDaemon.remote
            probe.environment = environment
            let pipe = Pipe()
            probe.standardOutput = pipe
            try probe.run()
            let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            probe.waitUntilExit()
            #expect(probe.terminationStatus == 0, "\(text)")
            let lines = text.split(separator: "\n")
            let frames = lines.filter { $0.hasPrefix("seq ") }.map { $0.split(separator: " ") }
            #expect(frames.count == 30)
            let numbers = frames.compactMap { UInt64($0[1]) }
            let reported = lines.last?.split(separator: " ").last.flatMap { Int($0) } ?? -1
            #expect(numbers.count == 30 && Self.isIncreasing(numbers), "the other process got its frames in order")
            #expect(Self.missing(numbers) <= reported, "every frame it missed was reported: \(numbers)")
            #expect(frames.allSatisfy { $0.count == 3 && $0[1] == $0[2] }, "its pixels show the same numbers")
            #expect(lines.last?.hasPrefix("done 30 ") == true)
            // Meanwhile this process kept getting every frame too.
            #expect(delegate.waitForFrames(delegate.frames.count + 1))
            let here = delegate.frames.map(\.sequenceNumber)
            #expect((here.last ?? 0) >= (numbers.last ?? .max))
            #expect(Self.isIncreasing(here))
            #expect(Self.missing(here) <= output.statistics.dropped, "every gap here reported")
        }
    }

    /// Whether `numbers` is non-empty and strictly increasing.
    static func isIncreasing(_ numbers: [UInt64]) -> Bool {
        !numbers.isEmpty && zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }
    }

    /// How many numbers are missing between the first and the last of `numbers`.
    static func missing(_ numbers: [UInt64]) -> Int {
        guard let first = numbers.first, let last = numbers.last else { return 0 }
        return Int(last - first + 1) - numbers.count
    }

    /// The probe executable, built beside the test bundle.
    static var probeURL: URL? {
        let candidates: [String?] = [
            Bundle.main.executableURL?.deletingLastPathComponent().appendingPathComponent("viewfinder-pipewire-probe")
                .path(percentEncoded: false),
            FileManager.default.currentDirectoryPath + "/.build/debug/viewfinder-pipewire-probe",
        ]
        return candidates.compactMap { $0 }.first(where: FileManager.default.isExecutableFile).map {
            URL(fileURLWithPath: $0)
        }
    }
}
