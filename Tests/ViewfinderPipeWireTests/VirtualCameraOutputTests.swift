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

/// A consumer of a PipeWire camera node in another process: `gst-launch-1.0 pipewiresrc` writing
/// `count` raw frames in `format` (GStreamer's name: BGRx, NV12, YUY2) into a file.
struct GStreamerConsumer {
    let format: String
    let count: Int
    let file: URL
    /// How long the consumer spends on each frame (GStreamer's `identity sleep-time`), for a
    /// consumer slower than the camera; 0 for none.
    var microsecondsPerFrame = 0

    /// Whether gst-launch-1.0 with the PipeWire plug-in is installed; the reason and fix when not.
    static func missingParts() -> String? {
        for directory in ["/usr/bin", "/usr/local/bin"]
        where FileManager.default.isExecutableFile(atPath: directory + "/gst-launch-1.0") {
            let inspect = Process()
            inspect.executableURL = URL(fileURLWithPath: directory + "/gst-inspect-1.0")
            inspect.arguments = ["pipewiresrc"]
            inspect.standardOutput = FileHandle.nullDevice
            inspect.standardError = FileHandle.nullDevice
            guard (try? inspect.run()) != nil else { return "gst-inspect-1.0 did not run" }
            inspect.waitUntilExit()
            return inspect.terminationStatus == 0
                ? nil
                : "GStreamer's pipewiresrc is missing: install gstreamer1.0-pipewire (Scripts/install-dependencies.sh)"
        }
        return "gst-launch-1.0 is missing: install gstreamer1.0-tools (Scripts/install-dependencies.sh)"
    }

    /// Runs the consumer against node `target` until it has written its frames (or `timeout`
    /// passes: it is then stopped). Returns its exit status and what it printed.
    func run(target: String, remote: String, timeout: Double = 30) throws -> (status: Int32, log: String) {
        try start(target: target, remote: remote).wait(timeout: timeout)
    }

    /// A consumer process on its way.
    struct Running {
        let process: Process
        let log: Pipe
        let exited: DispatchSemaphore

        /// Waits until it has written its frames (or `timeout` passes: it is then stopped).
        func wait(timeout: Double = 30) -> (status: Int32, log: String) {
            if exited.wait(timeout: .now() + timeout) == .timedOut {
                process.terminate()
                exited.wait()
            }
            let text = String(decoding: log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return (process.terminationStatus, text)
        }
    }

    /// Starts the consumer against node `target`.
    func start(target: String, remote: String) throws -> Running {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
        process.arguments = [
            "-q", "pipewiresrc", "target-object=\(target)", "num-buffers=\(count)", "always-copy=true", "!",
            "video/x-raw,format=\(format)", "!",
        ]
        if microsecondsPerFrame > 0 {
            process.arguments! += ["identity", "sleep-time=\(microsecondsPerFrame)", "!"]
        }
        process.arguments! += ["filesink", "location=\(file.path(percentEncoded: false))"]
        var environment = ProcessInfo.processInfo.environment
        environment["PIPEWIRE_REMOTE"] = remote
        process.environment = environment
        let log = Pipe()
        process.standardOutput = log
        process.standardError = log
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        return Running(process: process, log: log, exited: exited)
    }

    /// The pixel format `format` is written in.
    var pixelFormat: PixelFormat {
        switch format {
        case "NV12": .nv12VideoRange
        case "YUY2": .yuyv
        case "I420": .i420
        default: .bgra
        }
    }

    /// The frames in the file, each as a packed buffer of `width` x `height`.
    func frames(width: Int, height: Int) throws -> (frames: [PixelBuffer], leftover: Int) {
        let data = try Data(contentsOf: file)
        let layout = PlaneLayout(pixelFormat: pixelFormat, width: width, height: height, planeAlignment: 1)
        let size = layout.totalBytes
        var frames: [PixelBuffer] = []
        let pool = try PixelBufferPool(
            pixelFormat: pixelFormat, width: width, height: height, capacity: max(1, data.count / size))
        for start in stride(from: 0, to: data.count - size + 1, by: size) {
            guard let buffer = pool.makePixelBuffer() else { break }
            data.withUnsafeBytes { bytes in
                let frame = PixelBuffer(
                    memory: UnsafeMutableRawPointer(mutating: bytes.baseAddress! + start), layout: layout, owner: nil,
                    slot: 0)
                PixelCopy.copy(frame, into: buffer)
            }
            frames.append(buffer)
        }
        return (frames, data.count % size)
    }
}

/// How far a frame is from gray: the largest |R−G|, |G−B| (BGRA) or |chroma − 128| (YUV).
func distanceFromGray(_ image: PixelBuffer) -> Int {
    var worst = 0
    switch image.pixelFormat {
    case .bgra:
        for row in 0..<image.height {
            let pixels = (image.baseAddress(ofPlane: 0) + row * image.bytesPerRow(ofPlane: 0)).assumingMemoryBound(
                to: UInt8.self)
            for x in 0..<image.width {
                let (b, g, r) = (Int(pixels[x * 4]), Int(pixels[x * 4 + 1]), Int(pixels[x * 4 + 2]))
                worst = max(worst, abs(r - g), abs(g - b))
            }
        }
    case .yuyv:
        for row in 0..<image.height {
            let pixels = (image.baseAddress(ofPlane: 0) + row * image.bytesPerRow(ofPlane: 0)).assumingMemoryBound(
                to: UInt8.self)
            for x in stride(from: 1, to: image.width * 2, by: 2) { worst = max(worst, abs(Int(pixels[x]) - 128)) }
        }
    default:
        for plane in 1..<image.planeCount {
            for row in 0..<image.height(ofPlane: plane) {
                let pixels = (image.baseAddress(ofPlane: plane) + row * image.bytesPerRow(ofPlane: plane))
                    .assumingMemoryBound(to: UInt8.self)
                for x in 0..<image.bytesPerRow(ofPlane: plane) { worst = max(worst, abs(Int(pixels[x]) - 128)) }
            }
        }
    }
    return worst
}

@Suite(
    "Virtual camera output", .serialized,
    .enabled(
        if: PipeWireTestDaemon.isAvailable || PipeWireTestDaemon.environment["VIEWFINDER_PIPEWIRE_SKIPPED"] != nil,
        "needs Scripts/pipewire.sh"))
struct VirtualCameraOutputTests {
    /// The daemon's socket; a recorded failure (not a skip) when the script could not start one.
    func remote() throws -> String {
        try #require(
            PipeWireTestDaemon.remote,
            "no PipeWire daemon: \(PipeWireTestDaemon.environment["VIEWFINDER_PIPEWIRE_SKIPPED"] ?? "run under Scripts/pipewire.sh")"
        )
    }

    static let format = CaptureDevice.Format(
        pixelFormat: .yuyv, width: 320, height: 240, frameRateRanges: [FrameRateRange(framesPerSecond: 30)])

    /// A session on a 320x240 YUYV test-pattern camera feeding a video data output and a virtual
    /// camera named `name` with a grayscale processor. The data output converts to BGRA and may
    /// queue a second of frames (the camera's ring is as deep), so a loaded machine that starves
    /// its delegate for a while loses it nothing: any drop it reports is the virtual camera's doing.
    func makeSession(name: String, remote: String, delegate: RecordingDelegate) throws -> (
        CaptureSession, CaptureVideoDataOutput, CaptureVirtualCameraOutput, VirtualCamera
    ) {
        let camera = VirtualCamera(configuration: .init(bufferCount: 40, formats: [Self.format]))
        let session = CaptureSession()
        session.beginConfiguration()
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let data = CaptureVideoDataOutput(bufferBudget: 30)
        data.alwaysDiscardsLateVideoFrames = false
        data.typedVideoSettings = try VideoSettings(pixelFormat: .bgra)
        data.setSampleBufferDelegate(delegate, queue: delegate.queue)
        try session.tryAddOutput(data)
        let virtual = try CaptureVirtualCameraOutput(
            name: name, description: "Viewfinder gray test camera", remoteName: remote)
        try virtual.addProcessor(GrayscaleProcessor(), named: "gray")
        try session.tryAddOutput(virtual)
        session.commitConfiguration()
        return (session, data, virtual, camera)
    }

    @Test(
        "another process receives the processed (gray) frames, numbered and in order, while a data output keeps its rate",
        arguments: ["BGRx", "NV12", "YUY2"])
    func consumerInAnotherProcess(format: String) throws {
        let remote = try remote()
        if let missing = GStreamerConsumer.missingParts() {
            Issue.record(Comment(rawValue: missing))
            return
        }
        let name = PipeWireTestDaemon.uniqueName("vcam-\(format.lowercased())")
        // The camera's own frames are in colour (so the gray check below can tell).
        let colour = Mutex<[Int]>([])
        let delegate = RecordingDelegate(inspect: { buffer in
            guard colour.withLock({ $0.count }) < 2, let image = buffer.imageBuffer else { return }
            let distance = distanceFromGray(image)
            colour.withLock { $0.append(distance) }
        })
        let (session, data, virtual, camera) = try makeSession(name: name, remote: remote, delegate: delegate)
        let errors = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: session)
        session.startRunning()
        #expect(delegate.waitForFrames(3))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).raw")
        defer { try? FileManager.default.removeItem(at: file) }
        let consumer = GStreamerConsumer(format: format, count: 40, file: file)
        let running = try consumer.start(target: name, remote: remote)
        // While it streams, the output says so and names the format the consumer chose (polled
        // against a deadline: the link comes up in PipeWire's own time).
        let deadline = Date(timeIntervalSinceNow: 10)
        var agreed: CaptureDevice.Format?
        while agreed == nil, Date() < deadline, running.process.isRunning {
            if virtual.isConsumerConnected { agreed = virtual.consumerFormat }
            if agreed == nil { usleep(2000) }
        }
        let (status, log) = running.wait()
        session.stopRunning()
        #expect(agreed?.pixelFormat == consumer.pixelFormat, "the consumer's \(format): \(String(describing: agreed))")
        #expect(agreed?.dimensions == CaptureDevice.Dimensions(width: 320, height: 240))
        delegate.queue.sync {}
        #expect(status == 0, "gst-launch-1.0: \(log)")
        #expect(errors.count == 0, "\(String(describing: errors.lastError))")

        // What the other process received: every frame gray, each showing its number, in order.
        let (frames, leftover) = try consumer.frames(width: 320, height: 240)
        #expect(frames.count == 40, "\(format): \(frames.count) whole frames")
        #expect(leftover == 0)
        let numbers = frames.compactMap(TestPattern.readSequenceNumber(from:))
        #expect(numbers.count == frames.count, "every frame shows its sequence number")
        #expect(PipeWireBackendTests.isIncreasing(numbers), "in order: \(numbers)")
        let worst = frames.map(distanceFromGray).max() ?? 255
        #expect(worst <= 2, "\(format) frames are gray (furthest from gray: \(worst))")
        #expect(colour.withLock { $0 }.allSatisfy { $0 > 64 }, "the data output's frames are in colour")

        // The virtual camera's own account: every frame accounted for, each gap one it dropped.
        let statistics = virtual.statistics
        #expect(statistics.delivered + statistics.dropped + statistics.rateGated == statistics.captured)
        #expect(statistics.delivered >= 40)
        #expect(
            PipeWireBackendTests.missing(numbers) <= statistics.dropped,
            "every gap was counted: \(numbers), \(statistics)")
        #expect(virtual.publishingStatistics.published == statistics.delivered)

        // The data output beside it kept the camera's rate: nothing dropped, every frame there.
        let dataStatistics = data.statistics
        #expect(dataStatistics.delivered + dataStatistics.dropped + dataStatistics.rateGated == dataStatistics.captured)
        #expect(dataStatistics.dropped == 0, "\(dataStatistics), drops \(delegate.drops.map(\.sequenceNumber))")
        #expect(dataStatistics.delivered == dataStatistics.captured, "\(dataStatistics)")
        #expect(dataStatistics.captured + 1 >= camera.framesProduced, "\(camera.framesProduced) frames made")
        let here = delegate.frames.map(\.sequenceNumber)
        #expect(PipeWireBackendTests.missing(here) == 0 && PipeWireBackendTests.isIncreasing(here))
    }

    @Test("a Viewfinder session in another process captures the node: each buffer's header carries the frame's number")
    func viewfinderConsumer() throws {
        let remote = try remote()
        let probeURL = try #require(
            PipeWireBackendTests.probeURL, "viewfinder-pipewire-probe is not built: run swift build --build-tests")
        let name = PipeWireTestDaemon.uniqueName("vcam-probe")
        let delegate = RecordingDelegate()
        let (session, _, virtual, _) = try makeSession(name: name, remote: remote, delegate: delegate)
        session.startRunning()
        #expect(delegate.waitForFrames(3))
        let probe = Process()
        probe.executableURL = probeURL
        probe.arguments = ["capture", name, "20"]
        var environment = ProcessInfo.processInfo.environment
        environment["PIPEWIRE_REMOTE"] = remote
        probe.environment = environment
        let pipe = Pipe()
        probe.standardOutput = pipe
        try probe.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        probe.waitUntilExit()
        session.stopRunning()
        #expect(probe.terminationStatus == 0, "\(text)")
        // "seq N P": N is the buffer's spa_meta_header seq, P the number its (gray) pixels show.
        let frames = text.split(separator: "\n").filter { $0.hasPrefix("seq ") }.map { $0.split(separator: " ") }
        #expect(frames.count == 20)
        #expect(frames.allSatisfy { $0.count == 3 && $0[1] == $0[2] }, "header and pixels agree: \(frames)")
        let numbers = frames.compactMap { UInt64($0[1]) }
        #expect(PipeWireBackendTests.isIncreasing(numbers), "in order: \(numbers)")
        #expect(
            PipeWireBackendTests.missing(numbers) <= virtual.statistics.dropped, "\(numbers), \(virtual.statistics)")
    }

    @Test("a consumer slower than the camera: the newest frame wins, the rest are counted, capture keeps its rate")
    func slowConsumer() throws {
        let remote = try remote()
        if let missing = GStreamerConsumer.missingParts() {
            Issue.record(Comment(rawValue: missing))
            return
        }
        let name = PipeWireTestDaemon.uniqueName("vcam-slow")
        let delegate = RecordingDelegate()
        let (session, data, virtual, _) = try makeSession(name: name, remote: remote, delegate: delegate)
        session.startRunning()
        #expect(delegate.waitForFrames(3))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).raw")
        defer { try? FileManager.default.removeItem(at: file) }
        // 4 frames a second at most, against the camera's 30 (still far faster on a loaded machine,
        // where it made 13 a second).
        let consumer = GStreamerConsumer(format: "NV12", count: 8, file: file, microsecondsPerFrame: 250_000)
        let (status, log) = try consumer.run(target: name, remote: remote)
        session.stopRunning()
        delegate.queue.sync {}
        #expect(status == 0, "gst-launch-1.0: \(log)")

        let (frames, _) = try consumer.frames(width: 320, height: 240)
        #expect(frames.count == 8)
        let numbers = frames.compactMap(TestPattern.readSequenceNumber(from:))
        #expect(numbers.count == frames.count && PipeWireBackendTests.isIncreasing(numbers), "\(numbers)")
        let statistics = virtual.statistics
        #expect(statistics.delivered + statistics.dropped + statistics.rateGated == statistics.captured)
        #expect(virtual.publishingStatistics.droppedConsumerBusy > 0, "\(virtual.publishingStatistics)")
        #expect(PipeWireBackendTests.missing(numbers) <= statistics.dropped, "\(numbers), \(statistics)")
        // Newest wins at the publisher: a frame the busy consumer had no buffer for was dropped
        // (droppedConsumerBusy, above), not queued for it. What the consumer itself queues in the
        // buffers it holds is its own: under load GStreamer's pipewiresrc handed over 9 queued
        // frames in a row (numbers 5 to 13), so how many numbers it skipped is not asserted; that
        // none of them went unreported is.
        let dataStatistics = data.statistics
        #expect(dataStatistics.dropped == 0, "\(dataStatistics)")
        #expect(dataStatistics.delivered == dataStatistics.captured)
    }

    @Test("with no consumer, capture goes on and every frame is counted as dropped for want of one")
    func noConsumer() throws {
        let remote = try remote()
        let name = PipeWireTestDaemon.uniqueName("vcam-idle")
        let delegate = RecordingDelegate()
        let (session, data, virtual, _) = try makeSession(name: name, remote: remote, delegate: delegate)
        session.startRunning()
        #expect(delegate.waitForFrames(20))
        #expect(!virtual.isConsumerConnected)
        session.stopRunning()
        delegate.queue.sync {}
        let statistics = virtual.statistics
        #expect(statistics.captured >= 20)
        #expect(statistics.delivered == 0)
        #expect(statistics.dropped == statistics.captured, "\(statistics)")
        // Each frame reaches the publisher and is dropped there for want of a consumer, unless the
        // output was still busy with the one before (a busy machine): then it is replaced as late.
        #expect(statistics.droppedByProcessor + statistics.droppedLate == statistics.captured, "\(statistics)")
        #expect(statistics.droppedByProcessor > 0)
        #expect(virtual.publishingStatistics.droppedNoConsumer == statistics.droppedByProcessor)
        let dataStatistics = data.statistics
        #expect(dataStatistics.dropped == 0, "\(dataStatistics)")
        #expect(dataStatistics.delivered == dataStatistics.captured)
    }

    @Test("the node is a camera other programs list, by the name and description chosen, until the output goes")
    func listedAsCamera() throws {
        _ = try remote()
        let (registry, _) = try PipeWireTestDaemon.registry()
        let name = PipeWireTestDaemon.uniqueName("vcam-listed")
        var virtual: CaptureVirtualCameraOutput? = try CaptureVirtualCameraOutput(
            name: name, description: "Listed virtual camera", remoteName: PipeWireTestDaemon.remote)
        let device = try #require(PipeWireTestDaemon.device("pipewire:\(name)", in: registry))
        #expect(device.localizedName == "Listed virtual camera")
        #expect(virtual?.nodeName == name)
        let offered = Set(device.formats.map(\.pixelFormat))
        #expect(offered.isSuperset(of: [.bgra, .nv12VideoRange, .yuyv]), "offers \(offered)")
        // Nothing holds on to the output: letting go of it removes the node.
        let gone = NotificationRecorder(CaptureDevice.wasDisconnectedNotification, object: device)
        virtual = nil
        #expect(gone.wait())
    }

    @Test("a settings change on the running session re-offers the node: a consumer then gets the new size")
    func settingsChangeReoffers() throws {
        let remote = try remote()
        if let missing = GStreamerConsumer.missingParts() {
            Issue.record(Comment(rawValue: missing))
            return
        }
        let name = PipeWireTestDaemon.uniqueName("vcam-resize")
        let delegate = RecordingDelegate()
        let (session, _, virtual, _) = try makeSession(name: name, remote: remote, delegate: delegate)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(delegate.waitForFrames(3))
        #expect(virtual.offeredFormats.first?.dimensions == CaptureDevice.Dimensions(width: 320, height: 240))
        try virtual.setVideoSettings(try VideoSettings(pixelFormat: .bgra, width: 160, height: 120))
        let first = try #require(virtual.offeredFormats.first)
        #expect(first.pixelFormat == .bgra && first.dimensions == CaptureDevice.Dimensions(width: 160, height: 120))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).raw")
        defer { try? FileManager.default.removeItem(at: file) }
        let consumer = GStreamerConsumer(format: "BGRx", count: 10, file: file)
        let (status, log) = try consumer.run(target: name, remote: remote)
        #expect(status == 0, "gst-launch-1.0: \(log)")
        let (frames, leftover) = try consumer.frames(width: 160, height: 120)
        #expect(frames.count == 10 && leftover == 0)
        #expect(frames.allSatisfy { TestPattern.readSequenceNumber(from: $0) != nil })
        #expect((frames.map(distanceFromGray).max() ?? 255) <= 2)
    }
}

/// Needs no daemon (it checks what happens without one), so it runs with or without the script.
@Suite("Virtual camera output without a daemon")
struct VirtualCameraOutputNoDaemonTests {
    @Test("no PipeWire daemon: a typed error that says what to do")
    func noDaemon() {
        #expect {
            _ = try CaptureVirtualCameraOutput(name: "viewfinder-absent", remoteName: "viewfinder-no-such-daemon")
        } throws: { error in
            guard let error = error as? CaptureError else { return false }
            return error.code == .deviceNotFound && error.message.contains("viewfinder-no-such-daemon")
                && error.message.contains("start the user's PipeWire daemon")
        }
        #expect(throws: CaptureError.self) { _ = try CaptureVirtualCameraOutput(name: "two words") }
    }
}
