import Dispatch
import Foundation
import Synchronization
import ViewfinderCore

/// Viewfinder's built-in virtual camera ("Test Pattern Camera"): a device that captures a
/// ``TestPattern`` in YUYV, NV12 or BGRA at 640x480, 1280x720 and 1920x1080, 15, 30 or 60 fps,
/// so everything runs and is tested on a machine with no camera.
///
/// Frames are paced by an injected ``CaptureClock`` (``HostClock`` for real time, a
/// ``ManualClock`` for exact tests), or produced as fast as the pipeline takes them
/// (`isPaced = false`) for benchmarks. Like a V4L2 driver, it fills a fixed ring of buffers; when
/// every buffer is held downstream a paced camera skips the frame, which shows up as a gap in
/// sequence numbers (a `.discontinuity` drop), and an unpaced one waits for a buffer to come back.
/// A format without a usable frame rate is refused when streaming starts
/// (``CaptureDevice/Format/validate()``), and a paced camera never produces a frame before it
/// is due: should its clock's wait return early, the stream fails with
/// ``CaptureError/Code/driverError`` (a runtime error) instead of spinning.
///
/// ```swift
/// let camera = VirtualCamera(configuration: .init(clock: ManualClock(), frameLimit: 100))
/// let input = try CaptureDeviceInput(device: camera.device)
/// ```
///
/// Thread safety: all members may be used from any thread.
public final class VirtualCamera: Sendable {
    /// How the camera behaves.
    public struct Configuration: Sendable {
        /// The device's name.
        public var name: String
        /// The device's unique ID (default: one made up for this instance).
        public var uniqueID: String?
        /// The clock that paces frames and stamps them.
        public var clock: any CaptureClock
        /// `true`: one frame per frame interval of `clock`. `false`: as fast as buffers free up
        /// (it waits for a free buffer, so no frame is lost), timestamps still one interval apart.
        public var isPaced: Bool
        /// Stop after this many frames (lost ones included); `nil` for no end.
        public var frameLimit: Int?
        /// Buffers in the capture ring (like V4L2's `REQBUFS` count).
        public var bufferCount: Int
        /// `true`: every frame's pixels show its own sequence number and box position.
        /// `false`: each ring buffer is drawn once, showing frame 0, and reused as is (for
        /// benchmarks of the pipeline itself, where drawing would dominate).
        public var rendersEveryFrame: Bool
        /// The formats offered.
        public var formats: [CaptureDevice.Format]
        /// Times (on `clock`) of flashes: the first frame stamped at or after each one is drawn
        /// all white but for its sequence-number strip (``TestPattern/isFlash(_:)`` detects it),
        /// so A/V sync can be checked against a virtual microphone's click at the same time.
        public var flashTimes: [MediaTime]

        /// A configuration; every parameter has the default of the built-in camera.
        public init(
            name: String = "Test Pattern Camera", uniqueID: String? = nil,
            clock: any CaptureClock = HostClock(), isPaced: Bool = true, frameLimit: Int? = nil,
            bufferCount: Int = 8, rendersEveryFrame: Bool = true,
            formats: [CaptureDevice.Format] = VirtualCamera.standardFormats, flashTimes: [MediaTime] = []
        ) {
            self.name = name
            self.uniqueID = uniqueID
            self.clock = clock
            self.isPaced = isPaced
            self.frameLimit = frameLimit
            self.bufferCount = bufferCount
            self.rendersEveryFrame = rendersEveryFrame
            self.formats = formats
            self.flashTimes = flashTimes
        }
    }

    /// YUYV, NV12 (video range) and BGRA at 640x480, 1280x720 and 1920x1080, each at 15, 30
    /// and 60 fps.
    public static let standardFormats: [CaptureDevice.Format] = {
        let sizes = [(640, 480), (1280, 720), (1920, 1080)]
        let rates: [FrameRateRange] = [60, 30, 15].map { FrameRateRange(framesPerSecond: $0) }
        return [PixelFormat.yuyv, .nv12VideoRange, .bgra].flatMap { format in
            sizes.map { CaptureDevice.Format(pixelFormat: format, width: $0.0, height: $0.1, frameRateRanges: rates) }
        }
    }()

    /// The device to add to a session through ``CaptureDeviceInput``.
    public let device: CaptureDevice
    package let backend: VirtualCameraBackend

    /// A virtual camera configured by `configuration`.
    public init(configuration: Configuration = Configuration()) {
        backend = VirtualCameraBackend(configuration: configuration)
        device = CaptureDevice(backend: backend)
    }

    /// Frames the camera has produced in its current or last stream (lost ones included).
    public var framesProduced: Int { backend.framesProduced }

    /// Waits until a camera with a ``Configuration/frameLimit`` has produced its last frame.
    /// Returns `false` on timeout.
    public func waitUntilFinished(timeout seconds: Double) -> Bool {
        backend.waitUntilFinished(timeout: seconds)
    }

    /// Makes the running stream fail with `error` at its next frame, as a driver error would.
    /// (Public as `simulateFailure(_:)` in ViewfinderSimulator, the test-only product.)
    package func injectFailure(_ error: CaptureError) {
        backend.inject(.fail(error))
    }

    /// Unplugs the camera: a running stream fails with ``CaptureError/Code/deviceDisconnected``
    /// at its next frame, and the device reports itself disconnected until ``injectReconnect()``
    /// (a stopped camera is disconnected at once).
    package func injectDisconnect() {
        backend.inject(.disconnect)
    }

    /// Plugs the camera back in: posts ``CaptureDevice/wasConnectedNotification``, and a session
    /// interrupted by the unplug resumes.
    package func injectReconnect() {
        backend.setConnected(true)
        NotificationCenter.default.post(name: CaptureDevice.wasConnectedNotification, object: device)
    }
}

/// Finds the machine's one built-in virtual camera.
package struct VirtualCameraProvider: DeviceProvider {
    package static let shared = VirtualCamera(
        configuration: .init(uniqueID: "viewfinder.virtual.test-pattern.0"))

    /// The provider of the machine's one virtual camera.
    package init() {}

    package var sortOrder: Int { 1000 }
    package func discoverBackends() -> [any DeviceBackend] { [Self.shared.backend] }
}

/// The virtual camera's backend: a capture thread that draws into a ring of buffers.
package final class VirtualCameraBackend: DeviceBackend {
    package enum Injection: Sendable {
        case fail(CaptureError)
        case disconnect
    }

    package let configuration: VirtualCamera.Configuration
    package let uniqueID: String
    package var localizedName: String { configuration.name }
    package var modelID: String { "Viewfinder Virtual Camera" }
    package var manufacturer: String { "Viewfinder" }
    package var deviceType: CaptureDevice.DeviceType { .virtual }
    package var formats: [CaptureDevice.Format] { configuration.formats }
    /// Focus and exposure points of interest are kept and read back (the picture does not
    /// change), so a tap-to-focus path can be tested end to end.
    package var supportsPointsOfInterest: Bool { true }

    private static let counter = Atomic<Int>(0)

    private struct Stream {
        var thread: CaptureThread?
        var produced = 0
        var pending: Injection?
        var connected = true
    }
    private let stream = Mutex(Stream())
    private let finish = FinishSignal()

    package init(configuration: VirtualCamera.Configuration) {
        self.configuration = configuration
        let serial = Self.counter.add(1, ordering: .relaxed).newValue
        self.uniqueID = configuration.uniqueID ?? "viewfinder.virtual.\(serial)"
    }

    package var isConnected: Bool { stream.withLock { $0.connected } }
    package var framesProduced: Int { stream.withLock { $0.produced } }

    package func inject(_ injection: Injection) {
        stream.withLock { stream in
            if case .disconnect = injection, stream.thread == nil {
                // Nothing streams: unplugged now, not at some later start.
                stream.connected = false
            } else {
                stream.pending = injection
            }
        }
    }

    package func setConnected(_ connected: Bool) {
        stream.withLock { stream in
            stream.connected = connected
            // Plugged back in before the stream saw the unplug: the unplug is over.
            if connected, case .disconnect = stream.pending { stream.pending = nil }
        }
    }

    package func waitUntilFinished(timeout: Double) -> Bool { finish.wait(timeout: timeout) }

    package func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: DeviceStreamSink
    ) throws(CaptureError) -> MediaTime {
        try checkCanStream(format)
        guard configuration.bufferCount > 0 else {
            throw CaptureError(
                .invalidArgument,
                "the virtual camera needs at least one buffer, got bufferCount \(configuration.bufferCount)")
        }
        let duration = format.supports(frameDuration: frameDuration) ? frameDuration : format.minFrameDuration
        // A deadline that does not advance would let a paced camera produce frames as fast as it can.
        guard duration.isNumeric, duration > .zero else {
            throw CaptureError(
                .invalidArgument,
                "'\(localizedName)' cannot pace \(format) with frames \(FrameRateRange.describe(duration)) s apart: give the format a positive frame duration"
            )
        }
        let ring = try PixelBufferPool(
            pixelFormat: format.pixelFormat, width: format.dimensions.pixelWidth, height: format.dimensions.pixelHeight,
            capacity: configuration.bufferCount)
        // Draw every ring buffer before the clock starts, so the first frames come on time
        // instead of in a burst behind the full drawing (later frames only update what changes).
        var drawn: [PixelBuffer] = []
        while let (buffer, _) = ring.makePixelBufferWithSlot() {
            TestPattern.render(sequenceNumber: 0, into: buffer)
            drawn.append(buffer)
        }
        drawn.removeAll()
        stream.withLock { $0.produced = 0 }
        finish.reset()
        // The stream's time origin is taken now, so a clock advanced right after this returns
        // counts from here.
        let start = configuration.clock.now()
        let flashes = Set(
            configuration.flashTimes.compactMap { Self.frameIndex(at: $0, start: start, frameDuration: duration) })
        let thread = CaptureThread(name: "viewfinder.virtual-camera") { [self] thread in
            run(
                ring: ring, start: start, frameDuration: duration, flashes: flashes, sink: sink,
                isCancelled: { thread.isCancelled })
        }
        stream.withLock { $0.thread = thread }
        return duration
    }

    package func stopStreaming() {
        let thread = stream.withLock { stream in
            defer { stream.thread = nil }
            return stream.thread
        }
        thread?.stop()
    }

    private func markFinished() { finish.markFinished() }

    /// The index of the first frame stamped at or after `time` in a stream that started at
    /// `start` with frames `frameDuration` apart; `nil` for times before the start. Exact to a
    /// nanosecond (1/30 s is no whole number of them).
    package static func frameIndex(at time: MediaTime, start: MediaTime, frameDuration: MediaTime) -> UInt64? {
        guard time.isNumeric, start.isNumeric, frameDuration.isNumeric, frameDuration > .zero, time >= start else {
            return nil
        }
        let frames = (time - start).seconds / frameDuration.seconds
        return UInt64(max(0, (frames - 1e-9 / frameDuration.seconds).rounded(.up)))
    }

    private func run(
        ring: PixelBufferPool, start: MediaTime, frameDuration: MediaTime, flashes: Set<UInt64>,
        sink: DeviceStreamSink, isCancelled: () -> Bool
    ) {
        let clock = configuration.clock
        let host = HostClock()
        // Every slot holds frame 0's picture (drawn in startStreaming); nil: a flash, to redraw.
        var slotSequence = [UInt64?](repeating: 0, count: ring.capacity)
        var sequence: UInt64 = 0
        defer { markFinished() }
        while !isCancelled() {
            if let limit = configuration.frameLimit, sequence >= UInt64(limit) { return }
            let deadline = start + frameDuration * Int64(sequence)
            var taken: (buffer: PixelBuffer, slot: Int)?
            if configuration.isPaced {
                guard clock.wait(until: deadline, isCancelled: isCancelled) else { return }
                // Never ahead of the format: frame k is due k intervals after the start, and a
                // clock whose wait returned before that would have the camera spin.
                let now = clock.now()
                guard now >= deadline else {
                    sink.deviceDidFail(
                        CaptureError(
                            .driverError,
                            "'\(localizedName)' was about to produce frame \(sequence) at \(now.seconds) s on its clock, before it is due at \(deadline.seconds) s (frames \(FrameRateRange.describe(frameDuration)) s apart): its clock's wait(until:) returned early; the stream stopped instead of producing frames faster than its format allows"
                        ))
                    return
                }
            } else {
                // As fast as buffers free up: wait for one rather than losing frames.
                guard let free = ring.makePixelBufferWithSlot(waitingUnless: isCancelled) else { return }
                taken = free
            }
            // One lock a frame: take any injected fault, and count the frame unless one came.
            let injection: Injection? = stream.withLock { stream in
                defer { stream.pending = nil }
                if stream.pending == nil { stream.produced += 1 }
                return stream.pending
            }
            switch injection {
            case .fail(let error):
                sink.deviceDidFail(error)
                return
            case .disconnect:
                setConnected(false)
                sink.deviceDidFail(
                    CaptureError(
                        .deviceDisconnected,
                        "'\(localizedName)' was disconnected while capturing: reconnect it; the session resumes when it returns",
                        errno: ENODEV))
                return
            case nil:
                break
            }
            let current = sequence
            sequence += 1
            // Like a V4L2 driver with no queued buffer: the frame is lost, the counter moves on.
            var buffer = (taken ?? ring.makePixelBufferWithSlot()).map {
                draw(current, into: $0, flashes: flashes, &slotSequence)
            }
            taken = nil
            guard buffer != nil else { continue }
            sink.deviceDidCapture(
                CapturedFrame(
                    buffer: buffer!, presentationTime: deadline, duration: frameDuration, sequenceNumber: current,
                    hostArrivalTime: host.now()))
            // Whoever lets go last (this thread, or the output once it delivered) recycles the buffer.
            PixelBuffer.recycle(&buffer)
        }
    }

    /// Draws frame `current` into the ring buffer `taken` (a flash when `flashes` has it; else
    /// only what changed since the slot's last frame, `slotSequence` says which) and returns the
    /// buffer.
    private func draw(
        _ current: UInt64, into taken: (buffer: PixelBuffer, slot: Int), flashes: Set<UInt64>,
        _ slotSequence: inout [UInt64?]
    ) -> PixelBuffer {
        let (buffer, slot) = taken
        if flashes.contains(current) {
            TestPattern.renderFlash(sequenceNumber: current, into: buffer)
            slotSequence[slot] = nil
        } else if let previous = slotSequence[slot] {
            if configuration.rendersEveryFrame {
                TestPattern.stamp(sequenceNumber: current, previous: previous, into: buffer)
                slotSequence[slot] = current
            }
        } else {
            // A slot a flash overwrote is drawn again in full.
            TestPattern.render(sequenceNumber: current, into: buffer)
            slotSequence[slot] = current
        }
        return buffer
    }
}
