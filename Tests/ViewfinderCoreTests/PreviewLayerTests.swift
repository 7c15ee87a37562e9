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
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// Collects a layer's frames (as a presenter must: without blocking).
final class CollectingPresenter: PreviewPresenter {
    let acceptsJPEG: Bool
    private let frames = Mutex<[PreviewFrame]>([])
    let arrived = DispatchSemaphore(value: 0)
    init(acceptsJPEG: Bool = false) { self.acceptsJPEG = acceptsJPEG }
    func present(_ frame: PreviewFrame) {
        frames.withLock { $0.append(frame) }
        arrived.signal()
    }
    var received: [PreviewFrame] { frames.withLock { $0 } }
    func forget() { frames.withLock { $0.removeAll() } }
}

/// A presenter that breaks the contract: it blocks in `present` until released.
final class BlockingPresenter: PreviewPresenter {
    let entered = DispatchSemaphore(value: 0)
    let gate = DispatchSemaphore(value: 0)
    private let count = Mutex(0)
    func present(_ frame: PreviewFrame) {
        count.withLock { $0 += 1 }
        entered.signal()
        gate.wait()
    }
    var presented: Int { count.withLock { $0 } }
}

@Suite("Preview layer: session, rendering, presenters")
struct PreviewLayerTests {
    // MARK: Rendering against the geometry

    static let sourceFormats: [PixelFormat] = [.yuyv, .nv12VideoRange, .bgra, .mjpeg]

    /// The reference picture: the test pattern drawn in BGRA at the camera's size.
    static func reference(width: Int, height: Int, sequence: UInt64) throws -> PixelBuffer {
        try ProcessorHarness.pattern(.bgra, width: width, height: height, sequenceNumber: sequence)
    }

    static func bgr(_ buffer: PixelBuffer, _ x: Int, _ y: Int) -> (Int, Int, Int) {
        let row = buffer.baseAddress.assumingMemoryBound(to: UInt8.self) + y * buffer.bytesPerRow + x * 4
        return (Int(row[0]), Int(row[1]), Int(row[2]))
    }

    /// Whether the reference's colour is the same all around (x, y) within `radius` pixels.
    static func uniform(_ buffer: PixelBuffer, _ x: Int, _ y: Int, radius: Int) -> Bool {
        guard x >= 0, y >= 0, x < buffer.width, y < buffer.height else { return false }
        let centre = bgr(buffer, x, y)
        for dy in stride(from: -radius, through: radius, by: max(1, radius / 2)) {
            for dx in stride(from: -radius, through: radius, by: max(1, radius / 2)) {
                let (px, py) = (x + dx, y + dy)
                guard px >= 0, py >= 0, px < buffer.width, py < buffer.height else { return false }
                if bgr(buffer, px, py) != centre { return false }
            }
        }
        return true
    }

    static func source(_ format: PixelFormat, width: Int, height: Int, sequence: UInt64) throws -> PixelBuffer {
        guard format == .mjpeg else {
            return try ProcessorHarness.pattern(format, width: width, height: height, sequenceNumber: sequence)
        }
        let bytes = try JPEGTestSupport.jpeg(sequence, width: width, height: height, quality: 0.95)
        return JPEGFrameMemory.buffer(bytes, width: width, height: height)
    }

    static func sample(_ image: PixelBuffer, sequence: UInt64) -> CapturedSample {
        CapturedSample(
            buffer: image, presentationTime: MediaTime(value: Int64(sequence), timescale: 30), duration: .fps(30),
            sequenceNumber: sequence, hostArrivalTime: HostClock().now())
    }

    @Test(
        "every rendered pixel shows the camera's pixel at the device point the layer converts it to",
        arguments: PreviewGeometryTests.setups, sourceFormats)
    func renderedPixelsMatchTheConversion(setup: PreviewGeometryTests.Setup, format: PixelFormat) throws {
        // A small camera into two non-square layers, and 1080p scaled down 3x into a 4:3 window.
        for (cameraWidth, cameraHeight, layerSizes) in [
            (320, 240, [CaptureDevice.Dimensions(width: 300, height: 170), .init(width: 150, height: 260)]),
            (1920, 1080, format == .nv12VideoRange ? [CaptureDevice.Dimensions(width: 640, height: 480)] : []),
        ] {
            let device = CaptureDevice.Format(
                pixelFormat: format, width: cameraWidth, height: cameraHeight,
                frameRateRanges: [.init(framesPerSecond: 30)]
            )
            let reference = try Self.reference(width: cameraWidth, height: cameraHeight, sequence: 0x2D5)
            let image = try Self.source(format, width: cameraWidth, height: cameraHeight, sequence: 0x2D5)
            for layerSize in layerSizes {
                let request = PreviewRenderRequest(
                    size: layerSize, gravity: setup.gravity, rotationAngle: setup.angle, mirrored: setup.mirrored)
                let renderer = try PreviewRenderer(deviceFormat: device, request: request, budget: 2)
                guard case .ready(let frame, _) = renderer.render(Self.sample(image, sequence: 0x2D5)) else {
                    Issue.record("the frame was not rendered")
                    return
                }
                let rendered = try #require(frame.pixelBuffer)
                #expect(rendered.pixelFormat == .bgra && rendered.width == layerSize.width)
                #expect(rendered.height == layerSize.height && frame.jpegBuffer == nil)
                let geometry = PreviewGeometry(
                    imageSize: CGSize(width: cameraWidth, height: cameraHeight),
                    bounds: CGRect(x: 0, y: 0, width: layerSize.pixelWidth, height: layerSize.pixelHeight),
                    gravity: setup.gravity,
                    rotationAngle: setup.angle, mirrored: setup.mirrored)
                var compared = 0
                var black = 0
                var mismatches: [String] = []
                for gy in 0..<24 {
                    for gx in 0..<24 {
                        let x = (gx * layerSize.pixelWidth) / 24 + 2
                        let y = (gy * layerSize.pixelHeight) / 24 + 2
                        let devicePoint = geometry.devicePoint(
                            fromLayerPoint: CGPoint(x: Double(x) + 0.5, y: Double(y) + 0.5))
                        let got = Self.bgr(rendered, x, y)
                        let outside =
                            devicePoint.x < -0.02 || devicePoint.x > 1.02 || devicePoint.y < -0.02
                            || devicePoint.y > 1.02
                        if outside {
                            black += 1
                            if got != (0, 0, 0) { mismatches.append("(\(x),\(y)) in a band is \(got), not black") }
                            continue
                        }
                        let sx = Int(devicePoint.x * Double(cameraWidth))
                        let sy = Int(devicePoint.y * Double(cameraHeight))
                        guard Self.uniform(reference, sx, sy, radius: 6) else { continue }
                        compared += 1
                        let want = Self.bgr(reference, sx, sy)
                        let tolerance = format == .bgra ? 2 : 14
                        if abs(got.0 - want.0) > tolerance || abs(got.1 - want.1) > tolerance
                            || abs(got.2 - want.2) > tolerance
                        {
                            mismatches.append("(\(x),\(y)) -> device (\(sx),\(sy)): \(got), want \(want)")
                        }
                    }
                }
                #expect(compared > 150, "too few comparable points (\(compared))")
                #expect(mismatches.isEmpty, "\(layerSize): \(mismatches.prefix(5))")
                let plan = try #require(renderer.plan)
                #expect((black > 0) == (setup.gravity == .resizeAspect && plan.letterboxes))
            }
        }
    }

    @Test("an MJPEG frame that already fits is passed through undecoded to a presenter that takes JPEG")
    func mjpegPassThrough() throws {
        let device = CaptureDevice.Format(
            pixelFormat: .mjpeg, width: 320, height: 240, frameRateRanges: [.init(framesPerSecond: 30)])
        let image = try Self.source(.mjpeg, width: 320, height: 240, sequence: 7)
        let size = CaptureDevice.Dimensions(width: 320, height: 240)
        // Only JPEG presenters: nothing is decoded.
        let jpegOnly = try PreviewRenderer(
            deviceFormat: device, request: .init(size: size, acceptsJPEG: true, needsBGRA: false), budget: 2)
        #expect(jpegOnly.passesJPEG && jpegOnly.chain == nil)
        guard case .ready(let frame, _) = jpegOnly.render(Self.sample(image, sequence: 7)) else {
            Issue.record("not rendered")
            return
        }
        #expect(frame.jpegBuffer === image && frame.pixelBuffer == nil)
        let bytes = frame.withJPEGBytes { Array($0) }
        #expect(bytes?.count == image.dataSize && bytes?.prefix(2) == [0xFF, 0xD8])
        // A JPEG presenter and a BGRA one: both get theirs.
        let both = try PreviewRenderer(
            deviceFormat: device, request: .init(size: size, acceptsJPEG: true, needsBGRA: true), budget: 2)
        guard case .ready(let mixed, _) = both.render(Self.sample(image, sequence: 8)) else {
            Issue.record("not rendered")
            return
        }
        #expect(mixed.jpegBuffer === image && mixed.pixelBuffer?.pixelFormat == .bgra)
        // A frame that does not fit (another size, a turn, a mirror) is rendered.
        for request in [
            PreviewRenderRequest(size: .init(width: 160, height: 120), acceptsJPEG: true, needsBGRA: false),
            PreviewRenderRequest(size: size, rotationAngle: 180, acceptsJPEG: true, needsBGRA: false),
            PreviewRenderRequest(size: size, mirrored: true, acceptsJPEG: true, needsBGRA: false),
        ] {
            let renderer = try PreviewRenderer(deviceFormat: device, request: request, budget: 2)
            #expect(!renderer.passesJPEG && renderer.chain != nil)
        }
        // A raw camera at the layer's size is never "JPEG".
        let raw = try PreviewRenderer(
            deviceFormat: .init(
                pixelFormat: .yuyv, width: 320, height: 240, frameRateRanges: [.init(framesPerSecond: 30)]),
            request: .init(size: size, acceptsJPEG: true, needsBGRA: false), budget: 2)
        #expect(!raw.passesJPEG)
    }

    @Test("a layer larger than any frame is refused with a typed error")
    func oversizedLayer() {
        let device = CaptureDevice.Format(
            pixelFormat: .yuyv, width: 320, height: 240, frameRateRanges: [.init(framesPerSecond: 30)])
        let error = #expect(throws: CaptureError.self) {
            try PreviewRenderer(
                deviceFormat: device, request: .init(size: .init(width: 20000, height: 10)), budget: 2)
        }
        #expect(error?.code == .invalidArgument)
        #expect(
            CaptureVideoPreviewLayer.pixelSize(of: CGSize(width: 1e9, height: 10.4)).width
                == PixelBuffer.maximumDimension)
        #expect(
            CaptureVideoPreviewLayer.pixelSize(of: CGSize(width: CGFloat.nan, height: -3)) == .init(width: 0, height: 0)
        )
    }

    // MARK: The session

    @Test("the layer connects to the session's camera, is not one of its outputs, and keeps the session alive")
    func sessionGraph() throws {
        let camera = VirtualCamera(configuration: .init(clock: ManualClock()))
        var session: CaptureSession? = CaptureSession(notificationCenter: NotificationCenter())
        weak let weakSession = session
        try session?.tryAddInput(try CaptureDeviceInput(device: camera.device))
        var layer: CaptureVideoPreviewLayer? = CaptureVideoPreviewLayer(session: try #require(session))
        let connection = try #require(layer?.connection)
        #expect(connection.mediaType == .video && connection.inputPorts.first?.input === session?.inputs.first)
        #expect(session?.connections.contains { $0 === connection } == true)
        #expect(session?.outputs.isEmpty == true)
        #expect(layer?.session === session)
        session = nil
        #expect(weakSession != nil, "the layer must keep its session alive")
        layer = nil
        #expect(weakSession == nil, "the session outlived the layer that held it")

        // No connection: kept, not connected; setting `session` connects.
        let other = CaptureSession(notificationCenter: NotificationCenter())
        try other.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let unconnected = CaptureVideoPreviewLayer(sessionWithNoConnection: other)
        #expect(unconnected.session === other && unconnected.connection == nil && other.connections.isEmpty)
        unconnected.session = other
        #expect(unconnected.connection != nil && other.connections.count == 1)
        unconnected.session = nil
        #expect(other.connections.isEmpty && unconnected.connection == nil)
    }

    @Test("conversions use the camera's format and the connection's rotation and mirroring")
    func conversionsFollowTheConnection() throws {
        let camera = VirtualCamera(configuration: .init(clock: ManualClock(), formats: virtualFormats(.yuyv)))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let layer = CaptureVideoPreviewLayer(session: session)
        layer.frame = CGRect(x: 50, y: 60, width: 400, height: 300)
        #expect(layer.bounds == CGRect(x: 0, y: 0, width: 400, height: 300))
        #expect(layer.videoGravity == .resizeAspect)
        let active = camera.device.activeFormat.dimensions
        let connection = try #require(layer.connection)
        for angle in [0.0, 90, 180, 270] {
            for mirrored in [false, true] {
                connection.videoRotationAngle = angle
                connection.isVideoMirrored = mirrored
                let expected = PreviewGeometry(
                    imageSize: CGSize(width: active.pixelWidth, height: active.pixelHeight), bounds: layer.bounds,
                    rotationAngle: angle, mirrored: mirrored)
                let tap = CGPoint(x: 123, y: 45)
                #expect(
                    layer.captureDevicePointConverted(fromLayerPoint: tap) == expected.devicePoint(fromLayerPoint: tap))
                let back = layer.layerPointConverted(
                    fromCaptureDevicePoint: layer.captureDevicePointConverted(fromLayerPoint: tap))
                #expect(abs(back.x - tap.x) < 1e-9 && abs(back.y - tap.y) < 1e-9)
            }
        }
        connection.videoOrientation = .portrait
        #expect(connection.videoRotationAngle == 90)
        #expect(connection.automaticallyAdjustsVideoMirroring == false)
        let rect = CGRect(x: 10, y: 20, width: 100, height: 50)
        let metadata = layer.metadataOutputRectConverted(fromLayerRect: rect)
        let again = layer.layerRectConverted(fromMetadataOutputRect: metadata)
        #expect(abs(again.minX - rect.minX) < 1e-9 && abs(again.width - rect.width) < 1e-9)
    }

    @Test("a tap converted by the layer sets the virtual camera's focus and exposure point")
    func tapToFocus() throws {
        let camera = VirtualCamera(configuration: .init(clock: ManualClock(), formats: virtualFormats(.bgra)))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let layer = CaptureVideoPreviewLayer(session: session)
        layer.bounds = CGRect(x: 0, y: 0, width: 640, height: 480)
        let device = camera.device
        #expect(device.isFocusPointOfInterestSupported && device.isExposurePointOfInterestSupported)
        let point = layer.captureDevicePointConverted(fromLayerPoint: CGPoint(x: 160, y: 360))
        try device.lockForConfiguration()
        device.focusPointOfInterest = point
        device.exposurePointOfInterest = point
        device.unlockForConfiguration()
        #expect(device.focusPointOfInterest == CGPoint(x: 0.25, y: 0.75))
        #expect(device.exposurePointOfInterest == CGPoint(x: 0.25, y: 0.75))
    }

    @Test("frames reach presenters at the layer's size, in order; a resize applies between frames")
    func framesFlow() throws {
        let clock = ManualClock()
        let rig = try Rig(
            camera: .init(clock: clock, formats: virtualFormats(.yuyv)), delegate: RecordingDelegate())
        let layer = CaptureVideoPreviewLayer(session: rig.session)
        layer.videoGravity = .resize
        layer.bounds = CGRect(x: 0, y: 0, width: 200, height: 150)
        let presenter = CollectingPresenter()
        layer.addPresenter(presenter)
        #expect(layer.presenters.count == 1)
        rig.start()
        defer { rig.session.stopRunning() }
        for _ in 0..<5 {
            rig.step(clock, by: .fps(60))
            #expect(layer.output.waitUntilDelivered(timeout: 10))
        }
        let first = presenter.received
        #expect(first.count >= 4)
        #expect(first.allSatisfy { $0.width == 200 && $0.height == 150 && $0.pixelBuffer?.width == 200 })
        let numbers = first.compactMap { $0.pixelBuffer.flatMap(TestPattern.readSequenceNumber(from:)) }
        #expect(numbers.count == first.count && numbers == numbers.sorted() && Set(numbers).count == numbers.count)
        #expect(numbers == first.map(\.sequenceNumber))

        layer.bounds = CGRect(x: 0, y: 0, width: 120, height: 90)
        presenter.forget()
        rig.step(clock, by: .fps(60), times: 2)
        #expect(layer.output.waitUntilDelivered(timeout: 10))
        #expect(!presenter.received.isEmpty && presenter.received.allSatisfy { $0.pixelBuffer?.width == 120 })
        layer.removePresenter(presenter)
        presenter.forget()
        let before = layer.statistics
        rig.step(clock, by: .fps(60), times: 2)
        #expect(presenter.received.isEmpty && layer.statistics == before, "a layer without presenters takes no frames")
    }

    @Test("a presenter stuck in present() stalls only the layer: a data output beside it gets every frame")
    func stalledPresenterCostsNothingElse() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate()
        let rig = try Rig(
            camera: .init(clock: clock, formats: virtualFormats(.nv12VideoRange)), discardsLate: false,
            delegate: delegate)
        let layer = CaptureVideoPreviewLayer(session: rig.session)
        layer.bounds = CGRect(x: 0, y: 0, width: 160, height: 120)
        let stuck = BlockingPresenter()
        layer.addPresenter(stuck)
        rig.start()
        rig.step(clock, by: .fps(60))
        #expect(stuck.entered.wait(timeout: .now() + 10) == .success)
        let frames = 20
        rig.step(clock, by: .fps(60), times: frames)
        // The data output had every frame while the presenter was stuck.
        #expect(delegate.frames.count == frames + 2)
        #expect(rig.output.statistics.droppedLate + rig.output.statistics.droppedOutOfBuffers == 0)
        // The layer kept one frame waiting and counted the rest as late.
        let stalled = layer.statistics
        #expect(stalled.delivered == 1 && stalled.droppedLate >= frames - 2)
        #expect(stuck.presented == 1)
        stuck.gate.signal()
        #expect(stuck.entered.wait(timeout: .now() + 10) == .success)  // the waiting, newest frame
        for _ in 0..<4 { stuck.gate.signal() }
        rig.step(clock, by: .fps(60))
        #expect(layer.output.waitUntilDelivered(timeout: 10))
        #expect(stuck.presented >= 2)
        for _ in 0..<8 { stuck.gate.signal() }
        rig.session.stopRunning()
        let final = layer.statistics
        #expect(final.delivered + final.dropped + final.rateGated == final.captured)
    }

    @Test("the callback presenter hands BGRA frames to its queue, newest wins, one at a time")
    func callbackPresenter() throws {
        let clock = ManualClock()
        let rig = try Rig(camera: .init(clock: clock, formats: virtualFormats(.bgra)), delegate: RecordingDelegate())
        let layer = CaptureVideoPreviewLayer(session: rig.session)
        layer.bounds = CGRect(x: 0, y: 0, width: 96, height: 64)
        let gate = DispatchSemaphore(value: 0)
        let handled = DispatchSemaphore(value: 0)
        let inside = Atomic<Int>(0)
        let overlapped = Atomic<Bool>(false)
        let sizes = Mutex<[CaptureDevice.Dimensions]>([])
        let presenter = CallbackPreviewPresenter(
            queue: DispatchQueue(label: "test.concurrent", attributes: .concurrent)
        ) {
            frame in
            if inside.add(1, ordering: .sequentiallyConsistent).newValue > 1 {
                overlapped.store(true, ordering: .relaxed)
            }
            sizes.withLock {
                $0.append(.init(width: frame.pixelBuffer?.width ?? 0, height: frame.pixelBuffer?.height ?? 0))
            }
            handled.signal()
            gate.wait()
            inside.subtract(1, ordering: .sequentiallyConsistent)
        }
        layer.addPresenter(presenter)
        rig.start()
        rig.step(clock, by: .fps(60))
        #expect(handled.wait(timeout: .now() + 10) == .success)
        // The handler is busy: five more frames; one waits, four are replaced.
        for _ in 0..<5 {
            rig.step(clock, by: .fps(60))
            #expect(layer.output.waitUntilDelivered(timeout: 10))
        }
        let busy = presenter.statistics
        #expect(busy.presented == 1 && busy.replaced == busy.received - 2)
        #expect(busy.received >= 5)
        gate.signal()
        #expect(handled.wait(timeout: .now() + 10) == .success)
        gate.signal()
        rig.session.stopRunning()
        let sawOverlap = overlapped.load(ordering: .relaxed)
        #expect(!sawOverlap)
        #expect(sizes.withLock { $0 }.allSatisfy { $0 == .init(width: 96, height: 64) })
        #expect(presenter.statistics.presented == 2)
    }

    /// The README's "Showing the camera" example for your own toolkit: if it must change, change
    /// the README with it.
    @Test("README: a callback presenter gets BGRA frames at the layer's bounds; a tap converts to a device point")
    func readmeCallbackExample() throws {
        let camera = VirtualCamera(configuration: .init(formats: virtualFormats(.yuyv)))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let previewLayer = CaptureVideoPreviewLayer(session: session)
        previewLayer.videoGravity = .resizeAspectFill
        let uploaded = DispatchSemaphore(value: 0)
        let sizes = Mutex<[String]>([])
        let presenter = CallbackPreviewPresenter(queue: DispatchQueue(label: "test.main")) { frame in
            guard let pixels = frame.pixelBuffer else { return }  // BGRA, frame.width x frame.height
            sizes.withLock {
                $0.append("\(frame.width)x\(frame.height) \(pixels.pixelFormat.name) \(pixels.bytesPerRow)")
            }
            uploaded.signal()
        }
        previewLayer.bounds = CGRect(x: 0, y: 0, width: 800, height: 450)
        previewLayer.addPresenter(presenter)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(uploaded.wait(timeout: .now() + 10) == .success)
        #expect(uploaded.wait(timeout: .now() + 10) == .success)
        #expect(sizes.withLock { $0 }.allSatisfy { $0 == "800x450 \(PixelFormat.bgra.name) 3200" })
        let tap = CGPoint(x: 400, y: 225)
        let point = previewLayer.captureDevicePointConverted(fromLayerPoint: tap)
        #expect(abs(point.x - 0.5) < 1e-9 && abs(point.y - 0.5) < 1e-9)
    }
}
