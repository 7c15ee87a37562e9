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

/// A delegate that records what it receives, can hold every buffer, and can be blocked on a gate
/// so tests control exactly when it is "busy".
package final class RecordingDelegate: CaptureVideoDataOutputSampleBufferDelegate {
    package struct Frame: Sendable {
        package let presentationTime: MediaTime
        package let sequenceNumber: UInt64
        package let patternNumber: UInt64?
        package let width: Int
        package let height: Int
        package let pixelFormat: PixelFormat
        /// Where the image's pixels live (to tell ring buffers apart).
        package let address: UInt
    }
    package struct Drop: Sendable {
        package let reason: DroppedFrameReason
        package let sequenceNumber: UInt64
        package let count: Int
    }
    private struct State {
        var frames: [Frame] = []
        var drops: [Drop] = []
        var held: [SampleBuffer] = []
        var overlapping = false
        var inside = false
        var gateClosed = false
    }
    private let state = Mutex(State())
    private let condition = NSCondition()
    private let gate = DispatchSemaphore(value: 0)
    private let arrived = DispatchSemaphore(value: 0)
    /// Signalled each time a callback blocks on the closed gate.
    package let entered = DispatchSemaphore(value: 0)
    /// A serial queue for this delegate's callbacks, for tests that want one.
    package let queue = DispatchQueue(label: "test.delegate")
    /// Keep every delivered buffer (starving the pool).
    package let holdsBuffers: Bool
    /// Read the test pattern's sequence number from each frame.
    package let readsPattern: Bool
    /// Called with each delivered buffer before it is recorded.
    package let inspect: (@Sendable (SampleBuffer) -> Void)?

    package init(
        holdsBuffers: Bool = false, blocksOnFirstFrame: Bool = false, readsPattern: Bool = true,
        inspect: (@Sendable (SampleBuffer) -> Void)? = nil
    ) {
        self.holdsBuffers = holdsBuffers
        self.readsPattern = readsPattern
        self.inspect = inspect
        state.withLock { $0.gateClosed = blocksOnFirstFrame }
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
        inspect?(sampleBuffer)
        let image = sampleBuffer.imageBuffer
        let frame = Frame(
            presentationTime: sampleBuffer.presentationTimeStamp, sequenceNumber: sampleBuffer.sequenceNumber,
            patternNumber: readsPattern ? image.flatMap(TestPattern.readSequenceNumber(from:)) : nil,
            width: image?.width ?? 0, height: image?.height ?? 0, pixelFormat: image?.pixelFormat ?? .bgra,
            address: image.map { UInt(bitPattern: $0.baseAddress) } ?? 0)
        condition.lock()
        state.withLock { state in
            state.frames.append(frame)
            if holdsBuffers { state.held.append(sampleBuffer) }
            state.inside = false
        }
        condition.broadcast()
        condition.unlock()
        arrived.signal()
    }

    package func captureOutput(
        _ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        let count = sampleBuffer.attachment(forKey: .droppedFrameCount) as? Int ?? 0
        condition.lock()
        state.withLock {
            $0.drops.append(
                Drop(
                    reason: sampleBuffer.droppedFrameReason!, sequenceNumber: sampleBuffer.sequenceNumber, count: count)
            )
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Makes the next callbacks block (signalling ``entered``) until ``openGate()``.
    package func closeGate() { state.withLock { $0.gateClosed = true } }

    /// Opens the gate and lets a blocked callback return.
    package func openGate() {
        state.withLock { $0.gateClosed = false }
        gate.signal()
    }

    /// Drops every held buffer.
    package func releaseHeldBuffers() { state.withLock { $0.held.removeAll() } }

    package var frames: [Frame] { state.withLock { $0.frames } }
    package var drops: [Drop] { state.withLock { $0.drops } }
    package var sawOverlappingCalls: Bool { state.withLock { $0.overlapping } }

    /// Frames reported dropped for `reason`, report counts added up.
    package func dropped(_ reason: DroppedFrameReason) -> Int {
        drops.filter { $0.reason == reason }.reduce(0) { $0 + $1.count }
    }

    /// Waits for `count` frames more than have been waited for so far.
    package func waitForMoreFrames(_ count: Int = 1, timeout: Double = 10) -> Bool {
        (0..<count).allSatisfy { _ in arrived.wait(timeout: .now() + timeout) == .success }
    }

    /// Waits until at least `count` frames arrived.
    @discardableResult
    package func waitForFrames(_ count: Int, timeout: Double = 20) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while frames.count < count {
            if !condition.wait(until: deadline) { return frames.count >= count }
        }
        return true
    }
}

/// Collects notifications of one name posted by one session.
package final class NotificationRecorder: @unchecked Sendable {  // unchecked: `observer` is set once in init.
    private final class Inbox: Sendable {
        let received = Mutex<[CaptureError?]>([])
        let signal = DispatchSemaphore(value: 0)
    }
    private let inbox = Inbox()
    private var observer: NSObjectProtocol?
    private let center: NotificationCenter

    package init(_ name: Notification.Name, object: AnyObject? = nil, center: NotificationCenter = .default) {
        self.center = center
        let inbox = self.inbox
        observer = center.addObserver(forName: name, object: object, queue: nil) { note in
            let error = note.userInfo?[CaptureSessionErrorKey] as? CaptureError
            inbox.received.withLock { $0.append(error) }
            inbox.signal.signal()
        }
    }

    deinit {
        if let observer { center.removeObserver(observer) }
    }

    /// Waits for the next notification; returns whether one came and its error.
    package func next(timeout: Double = 10) -> (received: Bool, error: CaptureError?) {
        guard inbox.signal.wait(timeout: .now() + timeout) == .success else { return (false, nil) }
        return (true, inbox.received.withLock { $0.last ?? nil })
    }

    /// Waits for the next notification; false on timeout.
    package func wait(timeout: Double = 10) -> Bool { next(timeout: timeout).received }

    /// The error of the last notification received.
    package var lastError: CaptureError? { inbox.received.withLock { $0.last ?? nil } }

    package var count: Int { inbox.received.withLock { $0.count } }
}

/// A running session over a virtual camera with one video data output.
package struct Rig {
    package let camera: VirtualCamera
    package let session: CaptureSession
    package let output: CaptureVideoDataOutput
    package let center = NotificationCenter()

    package init(
        camera configuration: VirtualCamera.Configuration, preset: CaptureSession.Preset = .vga640x480,
        settings: VideoSettings = VideoSettings(), bufferBudget: Int = 6, discardsLate: Bool = true,
        delegate: RecordingDelegate, queue: DispatchQueue = DispatchQueue(label: "test.frames")
    ) throws {
        camera = VirtualCamera(configuration: configuration)
        session = CaptureSession(notificationCenter: center)
        output = CaptureVideoDataOutput(bufferBudget: bufferBudget)
        output.typedVideoSettings = settings
        output.alwaysDiscardsLateVideoFrames = discardsLate
        output.setSampleBufferDelegate(delegate, queue: queue)
        session.beginConfiguration()
        session.sessionPreset = preset
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        try session.tryAddOutput(output)
        session.commitConfiguration()
    }

    /// Advances `clock` by `steps` frame periods one at a time, each time waiting until the camera
    /// has produced the frame and the output has handed it over.
    package func step(
        _ clock: ManualClock, by period: MediaTime, times steps: Int = 1,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        settle(clock, sourceLocation: sourceLocation)
        for _ in 0..<steps {
            clock.advance(by: period)
            settle(clock, sourceLocation: sourceLocation)
        }
    }

    /// Waits until the camera has produced every frame due on `clock` and the output has handed
    /// them all over.
    package func settle(_ clock: ManualClock, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(clock.waitUntilSleeping(), "the camera did not come back to wait", sourceLocation: sourceLocation)
        #expect(output.waitUntilDelivered(timeout: 10), "the output did not drain", sourceLocation: sourceLocation)
    }

    /// Starts the session with `delegate` (made with `blocksOnFirstFrame`) stuck in frame 0, lets
    /// the camera produce `frames` more at 60 fps, and returns the output's figures then.
    package func startWithDelegateBusy(
        _ delegate: RecordingDelegate, clock: ManualClock, frames: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> CaptureVideoDataOutput.Statistics {
        start(sourceLocation: sourceLocation)
        #expect(delegate.entered.wait(timeout: .now() + 10) == .success, sourceLocation: sourceLocation)
        clock.advance(by: .fps(60) * Int64(frames))
        #expect(clock.waitUntilSleeping(), sourceLocation: sourceLocation)
        return output.statistics
    }

    /// Records the session's notifications named `name`.
    package func record(_ name: Notification.Name) -> NotificationRecorder {
        NotificationRecorder(name, object: session, center: center)
    }

    /// Starts the session and fails the test if it posts an error.
    package func start(sourceLocation: SourceLocation = #_sourceLocation) {
        let errors = record(CaptureSession.runtimeErrorNotification)
        session.startRunning()
        #expect(session.isRunning, "session did not start", sourceLocation: sourceLocation)
        #expect(errors.count == 0, "session posted an error", sourceLocation: sourceLocation)
    }
}

/// Formats of one pixel format only, so a test controls what the camera captures.
package func virtualFormats(_ pixelFormat: PixelFormat) -> [CaptureDevice.Format] {
    VirtualCamera.standardFormats.filter { $0.pixelFormat == pixelFormat }
}

extension MediaTime {
    package static func fps(_ rate: Int32) -> MediaTime { MediaTime(value: 1, timescale: rate) }
}
