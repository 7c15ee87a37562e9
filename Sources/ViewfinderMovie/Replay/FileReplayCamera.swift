import Foundation
import Synchronization
import ViewfinderCore

extension CaptureDevice {
    /// How a file-replay camera plays its file (``CaptureDevice/replaying(_:options:)``).
    ///
    /// Thread safety: a value type; freely sendable.
    public struct ReplayOptions: Sendable {
        /// The clock that paces and stamps the frames (``HostClock`` for real time, a
        /// ``ManualClock`` in tests).
        public var clock: any CaptureClock
        /// `true` (the default): each frame comes when its time in the file has come on `clock`.
        /// `false`: frames come as fast as the pipeline takes them, stamped with the file's times.
        public var isPaced: Bool
        /// Whether to start over at the end (timestamps keep increasing); otherwise the camera
        /// stops producing at the end of the file.
        public var loops: Bool
        /// The pixel format frames are decoded into: NV12 (either range), I420 or BGRA; or `.mjpeg` for a
        /// Motion-JPEG file, whose frames then come as they are stored (no decode), as from an MJPEG webcam.
        public var pixelFormat: PixelFormat
        /// The camera's name; `nil` for "Replay of <file name>".
        public var name: String?
        /// Decoded frames that may be held downstream at once.
        public var bufferCount: Int

        /// Options; every parameter has a default.
        public init(
            clock: any CaptureClock = HostClock(), isPaced: Bool = true, loops: Bool = false,
            pixelFormat: PixelFormat = .nv12VideoRange, name: String? = nil, bufferCount: Int = 6
        ) {
            self.clock = clock
            self.isPaced = isPaced
            self.loops = loops
            self.pixelFormat = pixelFormat
            self.name = name
            self.bufferCount = bufferCount
        }
    }

    /// A camera that plays the video of a file — anything libavformat reads (`.y4m`, `.mp4`,
    /// `.mov`, `.mkv`, Motion-JPEG `.avi`, …) — decoded into ``ReplayOptions/pixelFormat`` at
    /// the file's size and frame rate, paced by the file's timestamps or as fast as taken, once or
    /// looping. Once made it is listed like any camera (``devices(for:)``, ``device(withUniqueID:)``,
    /// after the real cameras, before the virtual one) in the current device registry.
    /// AVFoundation has no counterpart: this is for testing apps on recordings of real scenes.
    ///
    /// ```swift
    /// let replay = try CaptureDevice.replaying(URL(fileURLWithPath: "street.mp4"), options: .init(loops: true))
    /// try session.tryAddInput(try CaptureDeviceInput(device: replay))
    /// ```
    ///
    /// Throws ``CaptureError/Code/ioError`` when the file cannot be opened or read,
    /// ``CaptureError/Code/unsupportedFormat`` when it has no decodable video,
    /// ``CaptureError/Code/unsupportedPixelFormat`` for a pixel format the decoder cannot make.
    public static func replaying(_ url: URL, options: ReplayOptions = ReplayOptions()) throws(CaptureError)
        -> CaptureDevice
    {
        let backend = try FileReplayBackend(url: url, options: options)
        let registry = DeviceRegistry.current
        registry.register(FileReplayProvider(backend: backend))
        return registry.device(for: backend)
    }
}

/// Lists one file-replay camera.
package struct FileReplayProvider: DeviceProvider {
    package let backend: FileReplayBackend
    package var sortOrder: Int { 900 }
    package func discoverBackends() -> [any DeviceBackend] { [backend] }
}

/// A camera whose frames come from a movie file, decoded by ``MovieFileReader`` on its own
/// capture thread.
///
/// Thread safety: all members may be called from any thread; streaming state is in a Mutex.
package final class FileReplayBackend: DeviceBackend {
    package let url: URL
    package let options: CaptureDevice.ReplayOptions
    package let uniqueID: String
    package let localizedName: String
    package var modelID: String { "Viewfinder File Replay" }
    package var manufacturer: String { "Viewfinder" }
    package var deviceType: CaptureDevice.DeviceType { .virtual }
    package let formats: [CaptureDevice.Format]
    package var isConnected: Bool { true }
    /// The file's frame interval.
    package let frameDuration: MediaTime

    private static let counter = Atomic<Int>(0)
    private let thread = Mutex<CaptureThread?>(nil)

    package init(url: URL, options: CaptureDevice.ReplayOptions) throws(CaptureError) {
        guard options.bufferCount > 0 else {
            throw CaptureError(
                .invalidArgument, "a replay camera needs at least one buffer, got \(options.bufferCount)")
        }
        let probe = try MovieFileReader(url: url, outputPixelFormat: options.pixelFormat, poolCapacity: 1)
        self.url = url
        self.options = options
        let serial = Self.counter.add(1, ordering: .relaxed).newValue
        uniqueID = "viewfinder.replay.\(serial):\(url.path)"
        localizedName = options.name ?? "Replay of \(url.lastPathComponent)"
        let rate = probe.video.frameRate ?? 30
        if abs(rate - rate.rounded()) < 0.001, rate >= 1 {
            frameDuration = MediaTime(value: 1, timescale: Int32(rate.rounded()))
        } else {
            frameDuration = MediaTime(seconds: 1 / max(rate, 1))
        }
        formats = [
            CaptureDevice.Format(
                pixelFormat: options.pixelFormat, width: probe.video.width, height: probe.video.height,
                frameRateRanges: [FrameRateRange(frameDuration: frameDuration)])
        ]
    }

    package func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: DeviceStreamSink
    ) throws(CaptureError) -> MediaTime {
        try checkCanStream(format)
        let reader = try MovieFileReader(
            url: url, outputPixelFormat: options.pixelFormat, poolCapacity: options.bufferCount)
        let start = options.clock.now()
        let interval = self.frameDuration
        let capture = CaptureThread(name: "viewfinder.file-replay") { [self] thread in
            play(reader, start: start, interval: interval, sink: sink, isCancelled: { thread.isCancelled })
        }
        thread.withLock { $0 = capture }
        return interval
    }

    package func stopStreaming() {
        let capture = thread.withLock { thread in
            defer { thread = nil }
            return thread
        }
        capture?.stop()
    }

    /// The capture loop: decode, wait for the frame's time (when paced), hand it over.
    private func play(
        _ reader: MovieFileReader, start: MediaTime, interval: MediaTime, sink: DeviceStreamSink,
        isCancelled: () -> Bool
    ) {
        let host = HostClock()
        var sequence: UInt64 = 0
        var framesThisLoop: Int64 = 0
        /// Where the current pass of the file starts on the clock, and the file's first time.
        var passStart = start
        var fileOrigin: MediaTime?
        var lastOffset = MediaTime.zero
        while !isCancelled() {
            let next: (buffer: PixelBuffer, presentationTime: MediaTime)?
            do throws(CaptureError) {
                next = try reader.nextFrame()
            } catch {
                if error.code == .outOfBuffers {
                    // Every decoded frame is held downstream: wait for one to come back (the file
                    // is not a live source; nothing is lost).
                    var pause = timespec(tv_sec: 0, tv_nsec: 1_000_000)
                    nanosleep(&pause, nil)
                    continue
                }
                sink.deviceDidFail(error)
                return
            }
            guard let (buffer, fileTime) = next else {
                guard options.loops, framesThisLoop > 0 else { return }
                do throws(CaptureError) {
                    try reader.rewind()
                } catch {
                    sink.deviceDidFail(error)
                    return
                }
                passStart = passStart + lastOffset + interval
                fileOrigin = nil
                framesThisLoop = 0
                continue
            }
            let time = fileTime.isNumeric ? fileTime : (fileOrigin ?? .zero) + interval * framesThisLoop
            if fileOrigin == nil { fileOrigin = time }
            var offset = time - (fileOrigin ?? time)
            if framesThisLoop > 0, offset <= lastOffset { offset = lastOffset + interval }
            let due = passStart + offset
            if options.isPaced {
                guard options.clock.wait(until: due, isCancelled: isCancelled) else { return }
            }
            sink.deviceDidCapture(
                CapturedFrame(
                    buffer: buffer, presentationTime: due, duration: interval, sequenceNumber: sequence,
                    hostArrivalTime: host.now()))
            sequence += 1
            framesThisLoop += 1
            lastOffset = offset
        }
    }
}
