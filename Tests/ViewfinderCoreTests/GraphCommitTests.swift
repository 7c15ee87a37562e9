import Foundation
import Testing

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

/// Graph commits on a running session follow the one rule for settings (DESIGN.md): only the
/// devices a change touches restart. A virtual camera's sequence numbers and
/// ``VirtualCamera/framesProduced`` start again from 0 when its stream restarts, and the
/// session's ``CaptureSession/deviceStreams`` are new objects, so a restart cannot go unseen.
@Suite("Graph commits restart only the devices they touch")
struct GraphCommitTests {
    /// Virtual cameras on one manual clock, each wired by hand to its own video data output.
    private final class Rig {
        let clock = ManualClock()
        let cameras: [VirtualCamera]
        let inputs: [CaptureDeviceInput]
        let collector = NotificationCollector([
            CaptureSession.runtimeErrorNotification, CaptureSession.didStopRunningNotification,
        ])
        let session: CaptureSession
        private(set) var outputs: [CaptureVideoDataOutput] = []
        private(set) var delegates: [RecordingDelegate] = []

        init(
            cameras count: Int, multiCam: Bool = false, preset: CaptureSession.Preset = .vga640x480,
            formats: [CaptureDevice.Format] = GraphCommitTests.formats
        ) throws {
            let clock = self.clock
            cameras = (0..<count).map { index in
                VirtualCamera(configuration: .init(name: "Camera \(index)", clock: clock, formats: formats))
            }
            session =
                multiCam
                ? CaptureMultiCamSession(notificationCenter: collector.center)
                : CaptureSession(notificationCenter: collector.center)
            session.sessionPreset = preset
            var inputs: [CaptureDeviceInput] = []
            for camera in cameras {
                let input = try CaptureDeviceInput(device: camera.device)
                try session.tryAddInputWithNoConnections(input)
                inputs.append(input)
            }
            self.inputs = inputs
            for index in cameras.indices { try connectOutput(to: index) }
        }

        /// Adds a video data output with its own delegate and connects it to camera `index`.
        @discardableResult
        func connectOutput(to index: Int) throws -> Int {
            let output = CaptureVideoDataOutput()
            let delegate = RecordingDelegate()
            output.setSampleBufferDelegate(delegate, queue: delegate.queue)
            try session.tryAddOutputWithNoConnections(output)
            outputs.append(output)
            delegates.append(delegate)
            try session.tryAddConnection(
                CaptureConnection(inputPorts: inputs[index].ports(for: .video), output: output))
            return outputs.count - 1
        }

        func start() {
            session.startRunning()
            #expect(session.isRunning)
            #expect(clock.waitUntilSleeping(count: cameras.count))
        }

        /// The running stream of camera `index`, if it streams.
        func stream(_ index: Int) -> DeviceStream? {
            session.deviceStreams.first { $0.device === cameras[index].device }
        }

        /// Lets `count` frame intervals pass with `streaming` cameras running, each time waiting
        /// until its frames are handed over (so none is replaced as late).
        func frames(_ count: Int, streaming: Int, sourceLocation: SourceLocation = #_sourceLocation) {
            for _ in 0..<count {
                clock.advance(by: .fps(30))
                #expect(clock.waitUntilSleeping(count: streaming), sourceLocation: sourceLocation)
                for output in outputs {
                    #expect(output.waitUntilDelivered(timeout: 10), sourceLocation: sourceLocation)
                }
            }
        }

        /// Stops, then checks every output accounted for each frame it was given.
        func stopAndCheckAccounting(sourceLocation: SourceLocation = #_sourceLocation) {
            session.stopRunning()
            for (output, delegate) in zip(outputs, delegates) {
                let statistics = output.statistics
                #expect(
                    statistics.delivered + statistics.dropped + statistics.rateGated == statistics.captured,
                    "\(statistics)", sourceLocation: sourceLocation)
                #expect(statistics.inFlight == 0, "\(statistics)", sourceLocation: sourceLocation)
                #expect(statistics.delivered == delegate.frames.count, sourceLocation: sourceLocation)
            }
            #expect(
                collector.notes(CaptureSession.runtimeErrorNotification).isEmpty,
                "\(collector.notes(CaptureSession.runtimeErrorNotification).map { $0.userInfo ?? [:] })",
                sourceLocation: sourceLocation)
        }
    }

    /// The virtual camera's NV12 sizes at 30 fps only: one frame per tick of ``Rig/frames(_:streaming:)``.
    static let formats = virtualFormats(.nv12VideoRange).map {
        CaptureDevice.Format(
            pixelFormat: $0.pixelFormat, width: $0.dimensions.pixelWidth, height: $0.dimensions.pixelHeight,
            frameRateRanges: [FrameRateRange(framesPerSecond: 30)])
    }

    /// Whether `frames` come from one stream that never restarted: sequence numbers strictly rising
    /// (a restarted virtual camera counts from 0 again).
    private static func oneStream(_ frames: [RecordingDelegate.Frame]) -> Bool {
        zip(frames, frames.dropFirst()).allSatisfy { $0.sequenceNumber < $1.sequenceNumber }
    }

    @Test("an output added to camera B of a running multi-camera session leaves camera A streaming untouched")
    func addedOutputRestartsOnlyItsCamera() throws {
        let rig = try Rig(cameras: 2, multiCam: true)
        rig.start()
        rig.frames(3, streaming: 2)
        let streamA = try #require(rig.stream(0))
        let streamB = try #require(rig.stream(1))
        let producedA = rig.cameras[0].framesProduced
        let deliveredA = rig.delegates[0].frames.count
        #expect(deliveredA > 0)

        // Added unconnected: no connection changed, so no device restarts.
        let extra = CaptureVideoDataOutput()
        let extraDelegate = RecordingDelegate()
        extra.setSampleBufferDelegate(extraDelegate, queue: extraDelegate.queue)
        try rig.session.tryAddOutputWithNoConnections(extra)
        #expect(rig.stream(0) === streamA && rig.stream(1) === streamB, "a commit that changed no connection")

        // Connected to B: B restarts with the new output, A does not.
        try rig.session.tryAddConnection(CaptureConnection(inputPorts: rig.inputs[1].ports(for: .video), output: extra))
        #expect(rig.session.isRunning)
        #expect(rig.stream(0) === streamA, "camera A's stream is the same object")
        #expect(rig.stream(1) !== streamB, "camera B restarted with its new output")
        #expect(rig.stream(1)?.outputs.count == 2)
        #expect(rig.session.deviceStreams.count == 2)
        #expect(rig.clock.waitUntilSleeping(count: 2))
        rig.frames(3, streaming: 2)
        #expect(extra.waitUntilDelivered(timeout: 10))

        #expect(rig.cameras[0].framesProduced > producedA, "camera A kept counting: it never restarted")
        #expect(rig.delegates[0].frames.count > deliveredA, "camera A's output kept receiving")
        #expect(Self.oneStream(rig.delegates[0].frames), "\(rig.delegates[0].frames.map(\.sequenceNumber))")
        #expect(rig.delegates[0].dropped(.discontinuity) == 0)
        #expect(!extraDelegate.frames.isEmpty, "the new output receives camera B's frames")
        #expect(!Self.oneStream(rig.delegates[1].frames), "camera B's stream began again")

        rig.stopAndCheckAccounting()
        let statistics = extra.statistics
        #expect(
            statistics.delivered + statistics.dropped + statistics.rateGated == statistics.captured, "\(statistics)")
        #expect(statistics.inFlight == 0)
        #expect(statistics.delivered == extraDelegate.frames.count)
        #expect(rig.session.deviceStreams.isEmpty)
    }

    @Test("removing an input of a running two-camera session stops only that camera")
    func removedInputStopsOnlyItsCamera() throws {
        let rig = try Rig(cameras: 2)
        rig.start()
        rig.frames(2, streaming: 2)
        let streamA = try #require(rig.stream(0))
        let deliveredA = rig.delegates[0].frames.count

        rig.session.removeInput(rig.inputs[1])
        #expect(rig.session.isRunning)
        #expect(rig.stream(0) === streamA, "camera A's stream is untouched")
        #expect(rig.stream(1) == nil)
        #expect(rig.session.deviceStreams.count == 1)
        #expect(rig.outputs[1].connections.isEmpty)
        let producedB = rig.cameras[1].framesProduced
        let deliveredB = rig.delegates[1].frames.count
        rig.frames(3, streaming: 1)

        #expect(rig.cameras[1].framesProduced == producedB, "camera B stopped: the clock no longer makes it capture")
        #expect(rig.delegates[1].frames.count == deliveredB)
        #expect(
            rig.delegates[0].frames.count >= deliveredA + 3,
            "camera A's output keeps receiving: \(rig.outputs[0].statistics)")
        #expect(Self.oneStream(rig.delegates[0].frames), "\(rig.delegates[0].frames.map(\.sequenceNumber))")
        rig.stopAndCheckAccounting()
    }

    @Test("an input added to a running session starts its camera and leaves the other streaming")
    func addedInputStartsOnlyItsCamera() throws {
        let rig = try Rig(cameras: 1)
        rig.start()
        rig.frames(2, streaming: 1)
        let streamA = try #require(rig.stream(0))
        let camera = VirtualCamera(configuration: .init(clock: rig.clock, formats: Self.formats))
        let input = try CaptureDeviceInput(device: camera.device)
        let output = CaptureVideoDataOutput()
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate, queue: delegate.queue)
        rig.session.beginConfiguration()
        try rig.session.tryAddInputWithNoConnections(input)
        try rig.session.tryAddOutputWithNoConnections(output)
        try rig.session.tryAddConnection(CaptureConnection(inputPorts: input.ports(for: .video), output: output))
        rig.session.commitConfiguration()

        #expect(rig.stream(0) === streamA)
        #expect(rig.session.deviceStreams.count == 2)
        #expect(rig.clock.waitUntilSleeping(count: 2))
        rig.frames(2, streaming: 2)
        #expect(output.waitUntilDelivered(timeout: 10))
        #expect(!delegate.frames.isEmpty, "the added camera streams to its output")
        #expect(Self.oneStream(rig.delegates[0].frames))
        rig.stopAndCheckAccounting()
        #expect(output.statistics.inFlight == 0)
        #expect(output.statistics.delivered == delegate.frames.count)
    }

    @Test("a preset changed on a running session restarts the camera: frames come in the preset's size")
    func presetChangeRestarts() throws {
        let rig = try Rig(cameras: 1, preset: .vga640x480)
        rig.start()
        rig.frames(2, streaming: 1)
        let before = try #require(rig.stream(0))
        #expect(rig.delegates[0].frames.allSatisfy { $0.width == 640 && $0.height == 480 })
        let count = rig.delegates[0].frames.count

        rig.session.sessionPreset = .hd1280x720
        #expect(rig.session.isRunning)
        let after = try #require(rig.stream(0))
        #expect(after !== before)
        #expect(after.preset == .hd1280x720)
        #expect(rig.clock.waitUntilSleeping())
        rig.frames(3, streaming: 1)
        let later = rig.delegates[0].frames.dropFirst(count)
        #expect(!later.isEmpty)
        #expect(
            later.allSatisfy { $0.width == 1280 && $0.height == 720 }, "\(later.map { "\($0.width)x\($0.height)" })")

        // Setting the same preset again changes nothing.
        rig.session.sessionPreset = .hd1280x720
        #expect(rig.stream(0) === after)
        rig.stopAndCheckAccounting()
    }

    @Test("settings changed inside a configuration block apply at the commit, between frames, without a restart")
    func deferredSettingsApplyAtCommit() throws {
        let rig = try Rig(cameras: 2)
        rig.start()
        rig.frames(2, streaming: 2)
        let streams = (try #require(rig.stream(0)), try #require(rig.stream(1)))
        rig.session.beginConfiguration()
        try rig.outputs[0].setVideoSettings(try VideoSettings(pixelFormat: .bgra))
        rig.session.commitConfiguration()
        #expect(rig.stream(0) === streams.0, "the camera keeps NV12 (BGRA is converted): no restart")
        #expect(rig.stream(1) === streams.1)
        let count = rig.delegates[0].frames.count
        rig.frames(3, streaming: 2)
        let later = rig.delegates[0].frames.dropFirst(count)
        #expect(!later.isEmpty)
        #expect(later.allSatisfy { $0.pixelFormat == .bgra }, "\(later.map(\.pixelFormat))")
        #expect(rig.delegates[1].frames.allSatisfy { $0.pixelFormat == .nv12VideoRange })
        #expect(Self.oneStream(rig.delegates[0].frames))
        rig.stopAndCheckAccounting()
    }

    @Test("a device format chosen inside a configuration block restarts that camera at the commit")
    func deferredDeviceChangeRestartsAtCommit() throws {
        let rig = try Rig(cameras: 2, preset: .inputPriority)
        rig.start()
        rig.frames(2, streaming: 2)
        let streams = (try #require(rig.stream(0)), try #require(rig.stream(1)))
        let device = rig.cameras[0].device
        let other = try #require(device.formats.first { $0.dimensions != device.activeFormat.dimensions })
        rig.session.beginConfiguration()
        try device.lockForConfiguration()
        try device.setActiveFormat(other)
        device.unlockForConfiguration()
        #expect(rig.stream(0) === streams.0, "nothing applies inside the block")
        rig.session.commitConfiguration()
        #expect(rig.stream(0) !== streams.0, "camera 0 restarted in its new format")
        #expect(rig.stream(1) === streams.1, "camera 1 untouched")
        #expect(rig.clock.waitUntilSleeping(count: 2))
        let count = rig.delegates[0].frames.count
        rig.frames(3, streaming: 2)
        let later = rig.delegates[0].frames.dropFirst(count)
        #expect(!later.isEmpty)
        #expect(
            later.allSatisfy { $0.width == other.dimensions.width && $0.height == other.dimensions.height },
            "\(later.map { "\($0.width)x\($0.height)" }) after choosing \(other)")
        #expect(Self.oneStream(rig.delegates[1].frames))
        rig.stopAndCheckAccounting()
    }
}
