import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ViewfinderCore
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting

/// Digital zoom on the virtual camera (no zoom control): `videoZoomFactor` crops the centre of
/// the test pattern and scales it back to the frame's size, ramps move the factor frame by frame
/// by the frames' timestamps, and factor 1 leaves frames untouched. The camera runs on a
/// ``ManualClock``, so which frames a ramp covers, and their timestamps, are exact.
@Suite("Digital zoom")
struct DigitalZoomTests {
    /// What one delivered frame showed.
    struct Seen: Sendable {
        var time: MediaTime
        /// Colours (R', G', B' 0–1) at the probe points.
        var probes: [(r: Double, g: Double, b: Double)]
        /// The zoom factor measured from the width of bar 3 on the middle row.
        var factor: Double?
        /// Whether the frame is byte for byte the test pattern as the camera drew it.
        var isPattern: Bool
    }

    /// The frames a test saw.
    final class Log: Sendable {
        let list = Mutex<[Seen]>([])
        func withLock<T>(_ body: (inout [Seen]) -> T) -> T { list.withLock { body(&$0) } }
    }

    /// Probe points of a 640x480 frame: the middle row at the centres of 160-pixel quarters, and
    /// one near the bottom.
    static let probes = [(80, 240), (240, 240), (400, 240), (560, 240), (240, 470)]

    /// Records ``Seen`` for each frame, read while the delegate holds it.
    static func recorder(_ seen: Log) -> RecordingDelegate {
        RecordingDelegate(readsPattern: true) { buffer in
            guard let image = buffer.imageBuffer else { return }
            let colours = probes.map {
                ConversionReference.rgb(
                    ConversionReference.components(of: image, x: $0.0, y: $0.1), format: image.pixelFormat)
            }
            let entry = Seen(
                time: buffer.presentationTimeStamp, probes: colours, factor: measuredFactor(image),
                isPattern: isUntouchedPattern(image))
            seen.withLock { $0.append(entry) }
        }
    }

    /// The factor shown by `image`: bar 3 (pure green, 80 pixels wide unzoomed, x 240–320) is
    /// `80 · factor` pixels wide on the middle row. Output x 300 always lies in it (source
    /// x = 320 − 20 / factor).
    static func measuredFactor(_ image: PixelBuffer) -> Double? {
        let y = image.height / 2
        func isBlue(_ x: Int) -> Bool {
            ConversionReference.rgb(ConversionReference.components(of: image, x: x, y: y), format: image.pixelFormat).b
                > 0.375
        }
        guard image.width == 640, !isBlue(300) else { return nil }
        var left = 300
        while left > 0 && !isBlue(left - 1) { left -= 1 }
        var right = 300
        while right < image.width - 1 && !isBlue(right + 1) { right += 1 }
        return Double(right + 1 - left) / 80
    }

    /// Whether BGRA `image` is exactly the pattern the camera draws for its sequence number.
    static func isUntouchedPattern(_ image: PixelBuffer) -> Bool {
        guard image.pixelFormat == .bgra, let number = TestPattern.readSequenceNumber(from: image),
            let pool = try? PixelBufferPool(pixelFormat: .bgra, width: image.width, height: image.height, capacity: 1),
            let drawn = pool.makePixelBuffer()
        else { return false }
        TestPattern.render(sequenceNumber: number, into: drawn)
        let rowBytes = image.width * 4
        for row in 0..<image.height {
            let a = image.bytes(ofPlane: 0)[(row * image.bytesPerRow(ofPlane: 0))...].prefix(rowBytes)
            let b = drawn.bytes(ofPlane: 0)[(row * drawn.bytesPerRow(ofPlane: 0))...].prefix(rowBytes)
            if !a.elementsEqual(b) { return false }
        }
        return true
    }

    static func close(_ a: (r: Double, g: Double, b: Double), _ bar: Int, tolerance: Double = 0.06) -> Bool {
        let c = TestPattern.barColors[bar]
        return abs(a.r - Double(c.r) / 255) <= tolerance && abs(a.g - Double(c.g) / 255) <= tolerance
            && abs(a.b - Double(c.b) / 255) <= tolerance
    }

    /// A running rig's parts; the delegate is kept here (outputs hold theirs weakly).
    struct Parts {
        let rig: Rig
        let delegate: RecordingDelegate
    }

    func makeRig(_ format: PixelFormat, clock: ManualClock, seen: Log) throws -> Parts {
        let delegate = Self.recorder(seen)
        let rig = try Rig(
            camera: .init(clock: clock, formats: virtualFormats(format)),
            settings: try VideoSettings(pixelFormat: format), delegate: delegate)
        return Parts(rig: rig, delegate: delegate)
    }

    @Test(
        "a factor of 2 delivers the centre of the pattern at the full size, in every zoomable format",
        arguments: [PixelFormat.bgra, .nv12VideoRange, .yuyv])
    func factorTwo(format: PixelFormat) throws {
        let clock = ManualClock()
        let seen = Log()
        let parts = try makeRig(format, clock: clock, seen: seen)
        let rig = parts.rig
        let device = rig.camera.device
        #expect(device.videoZoomFactor == 1)
        #expect(device.maxAvailableVideoZoomFactor == 16, "a raw 640x480 format zooms digitally to 16")
        try device.lockForConfiguration()
        try device.setVideoZoomFactor(2)
        device.unlockForConfiguration()
        #expect(device.videoZoomFactor == 2)
        rig.start()
        rig.step(clock, by: device.activeVideoMinFrameDuration, times: 1)
        rig.session.stopRunning()
        withExtendedLifetime(parts.delegate) {}
        let frame = try #require(seen.withLock { $0.last })
        #expect(seen.withLock { $0.count } >= 2)
        // Zoomed: the middle quarters show bars 2, 3, 4 and 5 (unzoomed: bars 1, 3, 5 and 7), and
        // the bottom row still shows bar 3 (unzoomed: the grey below the bars).
        for (index, bar) in [2, 3, 4, 5, 3].enumerated() {
            #expect(Self.close(frame.probes[index], bar), "probe \(Self.probes[index]): \(frame.probes[index])")
        }
        let factor = try #require(frame.factor)
        #expect(abs(factor - 2) <= 0.03, "bar 3 is twice as wide: \(factor)")
        #expect(!frame.isPattern)
    }

    @Test("factor 1 leaves frames untouched (zero-copy, byte for byte the pattern), also after zooming back")
    func factorOneUntouched() throws {
        let clock = ManualClock()
        let seen = Log()
        let parts = try makeRig(.bgra, clock: clock, seen: seen)
        let rig = parts.rig
        let device = rig.camera.device
        rig.start()
        let period = device.activeVideoMinFrameDuration
        rig.step(clock, by: period, times: 2)
        #expect(rig.output.isZeroCopy)
        try device.lockForConfiguration()
        device.videoZoomFactor = 3
        device.unlockForConfiguration()
        let before = seen.withLock { $0.count }
        rig.step(clock, by: period, times: 2)
        try device.lockForConfiguration()
        device.videoZoomFactor = 1
        device.unlockForConfiguration()
        let zoomedEnd = seen.withLock { $0.count }
        rig.step(clock, by: period, times: 2)
        rig.session.stopRunning()
        withExtendedLifetime(parts.delegate) {}
        let frames = seen.withLock { $0 }
        #expect(frames.count >= zoomedEnd + 2)
        #expect(frames[..<before].allSatisfy { $0.isPattern }, "zoom 1 from the start")
        #expect(frames[before..<zoomedEnd].allSatisfy { !$0.isPattern && abs(($0.factor ?? 0) - 3) <= 0.04 })
        #expect(frames[zoomedEnd...].allSatisfy { $0.isPattern }, "zoom 1 again")
    }

    @Test("a ramp moves the factor by 2^(rate · t) on the frames' timestamps and ends at its target")
    func rampFollowsTimestamps() throws {
        let clock = ManualClock()
        let seen = Log()
        let parts = try makeRig(.bgra, clock: clock, seen: seen)
        let rig = parts.rig
        let device = rig.camera.device
        let ended = DispatchSemaphore(value: 0)
        let ramping = device.observe(\.isRampingVideoZoom, options: .new) { _, change in
            if change.newValue == false { ended.signal() }
        }
        defer { ramping.invalidate() }
        rig.start()
        let period = device.activeVideoMinFrameDuration
        rig.step(clock, by: period, times: 1)
        let before = seen.withLock { $0.count }
        try device.lockForConfiguration()
        device.ramp(toVideoZoomFactor: 3, withRate: 2)
        device.unlockForConfiguration()
        #expect(device.isRampingVideoZoom)
        // log2(3) / 2 ≈ 0.79 s of frames, and some after.
        let frameCount = Int((1.2 / period.seconds).rounded(.up))
        rig.step(clock, by: period, times: frameCount)
        rig.session.stopRunning()
        withExtendedLifetime(parts.delegate) {}
        #expect(ended.wait(timeout: .now() + 10) == .success, "observers hear the ramp end")
        #expect(!device.isRampingVideoZoom)
        #expect(device.videoZoomFactor == 3)

        let frames = Array(seen.withLock { $0 }[before...])
        let start = try #require(frames.first?.time, "the ramp's first frame is its time zero")
        var intermediate = 0
        var previous = 0.0
        for frame in frames {
            let t = (frame.time - start).seconds
            let expected = min(3, pow(2, 2 * t))
            let factor = try #require(frame.factor)
            #expect(abs(factor - expected) <= 0.03, "at \(t) s: \(factor), want \(expected)")
            #expect(factor >= previous - 0.03, "the factor only grows")
            previous = factor
            if expected > 1.05 && expected < 2.95 { intermediate += 1 }
        }
        #expect(intermediate >= 5, "the ramp is gradual: \(intermediate) frames between 1 and 3")
        #expect(abs((frames.last?.factor ?? 0) - 3) <= 0.03)
    }

    @Test("cancelling a ramp keeps the factor it reached; setting the factor ends a ramp")
    func cancelStops() throws {
        let clock = ManualClock()
        let seen = Log()
        let parts = try makeRig(.bgra, clock: clock, seen: seen)
        let rig = parts.rig
        let device = rig.camera.device
        rig.start()
        let period = device.activeVideoMinFrameDuration
        try device.lockForConfiguration()
        device.ramp(toVideoZoomFactor: 8, withRate: 1)
        device.unlockForConfiguration()
        rig.step(clock, by: period, times: 6)
        device.cancelVideoZoomRamp()
        #expect(!device.isRampingVideoZoom)
        let reached = device.videoZoomFactor
        #expect(reached > 1 && reached < 2, "six frames at rate 1 zoom in a little: \(reached)")
        let cancelledAt = seen.withLock { $0.count }
        rig.step(clock, by: period, times: 4)
        #expect(device.videoZoomFactor == reached, "the factor stays where the ramp stopped")
        let after = seen.withLock { Array($0[cancelledAt...]) }
        #expect(after.count >= 4)
        for frame in after {
            #expect(abs((frame.factor ?? 0) - Double(reached)) <= 0.03, "\(String(describing: frame.factor))")
        }

        try device.lockForConfiguration()
        device.ramp(toVideoZoomFactor: 1, withRate: 1)
        #expect(device.isRampingVideoZoom)
        device.videoZoomFactor = 2
        #expect(!device.isRampingVideoZoom, "setting the factor ends the ramp")
        device.unlockForConfiguration()
        rig.step(clock, by: period, times: 3)
        rig.session.stopRunning()
        withExtendedLifetime(parts.delegate) {}
        #expect(device.videoZoomFactor == 2)
    }

    @Test("a photo is zoomed as the video frames are (the zoom runs before any output)")
    func photoIsZoomed() throws {
        let clock = ManualClock()
        let camera = VirtualCamera(
            configuration: .init(clock: clock, formats: [PhotoTestSupport.format(.nv12VideoRange)]))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let photos = CapturePhotoOutput()
        let recorder = PhotoRecorder()
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        try session.tryAddOutput(photos)
        try camera.device.lockForConfiguration()
        camera.device.videoZoomFactor = 2
        camera.device.unlockForConfiguration()
        session.startRunning()
        #expect(session.isRunning)
        #expect(clock.waitUntilSleeping())
        let settings = CapturePhotoSettings()
        photos.capturePhoto(with: settings, delegate: recorder)
        clock.advance(by: .fps(30))
        #expect(clock.waitUntilSleeping())
        #expect(recorder.waitForFinished())
        session.stopRunning()
        let photo = try #require(recorder.results(settings.uniqueID).first?.photo)
        let file = [UInt8](try #require(photo.fileDataRepresentation()))
        let decoder = try JPEGDecoder(width: 640, height: 480, pixelFormat: .bgra)
        let image = try JPEGTestSupport.buffer(.bgra, 640, 480)
        try decoder.decode(file, into: image)
        for (index, bar) in [2, 3, 4, 5, 3].enumerated() {
            let (x, y) = Self.probes[index]
            let colour = ConversionReference.rgb(
                ConversionReference.components(of: image, x: x, y: y), format: .bgra)
            #expect(Self.close(colour, bar, tolerance: 0.08), "photo probe \((x, y)): \(colour)")
        }
        let factor = try #require(Self.measuredFactor(image))
        #expect(abs(factor - 2) <= 0.05, "\(factor)")
    }

    @Test("the digital limit: 16 for raw formats, 1 for Motion-JPEG; out-of-range factors throw and name the range")
    func limits() throws {
        let rates = [FrameRateRange(framesPerSecond: 30)]
        let raw = CaptureDevice.Format(pixelFormat: .nv12VideoRange, width: 1920, height: 1080, frameRateRanges: rates)
        #expect(raw.videoMaxZoomFactor == 16)
        let tiny = CaptureDevice.Format(
            pixelFormat: .yuyv, width: 160, height: 120, frameRateRanges: rates)
        #expect(tiny.videoMaxZoomFactor == 7.5, "the centre kept is never under 16 pixels")
        let jpeg = CaptureDevice.Format(
            pixelFormat: .mjpeg, width: 1920, height: 1080, frameRateRanges: rates)
        #expect(jpeg.videoMaxZoomFactor == 1)

        let device = VirtualCamera(configuration: .init(clock: ManualClock())).device
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        let error = #expect(throws: CaptureError.self) { try device.setVideoZoomFactor(17) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("1 … 16") == true, "\(String(describing: error))")
        #expect(throws: CaptureError.self) { try device.rampVideoZoom(to: 0.5, rate: 1) }
        #expect(device.videoZoomFactor == 1)
    }
}
