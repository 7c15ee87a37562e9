import Dispatch
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

/// The preview layer end to end: a virtual camera, a session, the layer, its web page, and
/// Debian's headless Chromium looking at it.
@Suite(
    "Preview layer in a browser", .serialized, .sharedBrowser,
    .enabled(if: Browser.isEnabled, Browser.missingReason))
struct PreviewLayerBrowserTests {
    private static let state = "JSON.stringify(window.viewfinderPreview)"

    /// A session on a virtual camera whose frames the test steps with a manual clock, a layer of
    /// `width` × `height` with `gravity`, and its page.
    private struct Rig {
        let clock = ManualClock()
        let camera: VirtualCamera
        let session = CaptureSession(notificationCenter: NotificationCenter())
        let layer: CaptureVideoPreviewLayer
        let page: PreviewWebPresenter

        init(width: Int, height: Int, gravity: LayerVideoGravity = .resizeAspect, data: CaptureVideoDataOutput? = nil)
            throws
        {
            camera = VirtualCamera(
                configuration: .init(
                    clock: clock, formats: virtualFormats(.nv12VideoRange).filter { $0.dimensions.width == 640 }))
            try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
            if let data { try session.tryAddOutput(data) }
            layer = CaptureVideoPreviewLayer(session: session)
            layer.frame = CGRect(x: 0, y: 0, width: width, height: height)
            layer.videoGravity = gravity
            page = try PreviewWebPresenter(layer: layer)
            session.startRunning()
            #expect(session.isRunning)
            #expect(clock.waitUntilSleeping())
        }

        /// The camera's next frame, handed through the layer to the page.
        func nextFrame() {
            clock.advance(by: camera.device.activeVideoMinFrameDuration)
            #expect(clock.waitUntilSleeping())
        }

        func stop() {
            session.stopRunning()
            page.close()
        }
    }

    @Test("the canvas shows the camera's frames: their own sequence numbers, increasing, read back from its pixels")
    func cameraFramesInTheCanvas() async throws {
        let browser = try Browser.current()
        let rig = try Rig(width: 640, height: 480)
        defer { rig.stop() }
        try await browser.navigate(to: rig.page.url)
        try await browser.waitUntil("window.viewfinderPreview.connected", describe: Self.state)
        var seen: [UInt64] = []
        for _ in 0..<5 {
            rig.nextFrame()
            let sent = rig.camera.framesProduced - 1
            try await browser.waitUntil(
                "window.viewfinderPreview.lastSequence >= \(sent)", describe: Self.state)
            let picture = try await browser.canvasPixels("#picture")
            #expect(picture.width == 640 && picture.height == 480)
            let number = try #require(TestPattern.readSequenceNumber(from: picture))
            seen.append(number)
        }
        #expect(seen == seen.sorted() && Set(seen).count == seen.count, "\(seen)")
        // The live figures arrive.
        let figures = "document.getElementById('figures').innerText"
        try await browser.waitUntil("\(figures).includes('frames shown')", describe: figures)
        try await browser.saveScreenshot(named: "preview-layer-page")
    }

    @Test(
        "a square layer with resizeAspect letterboxes the 4:3 camera: black bands above and below, the picture between")
    func letterboxGeometry() async throws {
        let browser = try Browser.current()
        let rig = try Rig(width: 480, height: 480, gravity: .resizeAspect)
        defer { rig.stop() }
        try await browser.navigate(to: rig.page.url)
        try await browser.waitUntil("window.viewfinderPreview.connected", describe: Self.state)
        rig.nextFrame()
        let sent = rig.camera.framesProduced - 1
        try await browser.waitUntil("window.viewfinderPreview.lastSequence >= \(sent)", describe: Self.state)
        try await browser.saveScreenshot(named: "preview-layer-letterbox")
        let picture = try await browser.canvasPixels("#picture")
        #expect(picture.width == 480 && picture.height == 480)
        // 640x480 fitted into 480 wide is 480x360: bands of 60 rows above and below.
        func luma(_ row: Int) -> Double {
            let bytes = picture.bytes(ofPlane: 0)
            let stride = picture.bytesPerRow(ofPlane: 0)
            var total = 0
            for x in stride / 4 / 4..<(3 * stride / 4 / 4) {
                let pixel = row * stride + x * 4
                total += Int(bytes[pixel]) + Int(bytes[pixel + 1]) + Int(bytes[pixel + 2])
            }
            return Double(total) / Double(stride / 8 * 3)
        }
        for row in [2, 30, 57, 422, 450, 477] { #expect(luma(row) < 8, "row \(row) is in a band: \(luma(row))") }
        for row in [150, 240, 380] { #expect(luma(row) > 40, "row \(row) shows the picture: \(luma(row))") }
    }

    @Test("a click on the page sets the camera's focus and exposure point to the layer's conversion of that point")
    func clickSetsPointOfInterest() async throws {
        let browser = try Browser.current()
        let rig = try Rig(width: 640, height: 360, gravity: .resizeAspectFill)
        defer { rig.stop() }
        let device = rig.camera.device
        #expect(device.isFocusPointOfInterestSupported)
        try await browser.navigate(to: rig.page.url)
        try await browser.waitUntil("window.viewfinderPreview.connected", describe: Self.state)
        rig.nextFrame()
        try await browser.waitUntil("window.viewfinderPreview.drawn >= 1", describe: Self.state)
        let box = try #require(
            try await browser.evaluate(
                """
                const canvas = document.getElementById('picture');
                canvas.style.width = canvas.width + 'px';
                const box = canvas.getBoundingClientRect();
                return [box.left, box.top];
                """) as? [NSNumber]
        ).map(\.intValue)
        let (x, y) = (160, 90)
        try await browser.click(x: box[0] + x, y: box[1] + y)
        let expected = rig.layer.captureDevicePointConverted(
            fromLayerPoint: CGPoint(x: Double(x) + 0.5, y: Double(y) + 0.5))
        #expect(rig.page.clickApplied.wait(timeout: .now() + 10) == .success, "the click reached the camera")
        #expect(
            abs(device.focusPointOfInterest.x - expected.x) < 0.01,
            "focus at \(device.focusPointOfInterest), expected \(expected)")
        #expect(abs(device.focusPointOfInterest.y - expected.y) < 0.01)
        #expect(abs(device.exposurePointOfInterest.x - expected.x) < 0.01)
        // With fill, the 4:3 picture is cropped top and bottom: the point is nearer the middle.
        #expect(expected.x > 0.24 && expected.x < 0.26 && expected.y > 0.3 && expected.y < 0.4, "\(expected)")
    }

    @Test("8 pages at once all get the camera's frames while a data output beside them keeps its full rate")
    func eightViewersAndADataOutput() async throws {
        let browser = try Browser.current()
        let data = CaptureVideoDataOutput()
        let delegate = RecordingDelegate(readsPattern: false)
        data.setSampleBufferDelegate(delegate, queue: delegate.queue)
        let rig = try Rig(width: 320, height: 240, data: data)
        defer { rig.stop() }
        var tabs = [try await browser.currentTab()]
        for index in 0..<8 {
            if index > 0 { tabs.append(try await browser.openTab()) }
            try await browser.navigate(to: rig.page.url)
            try await browser.waitUntil("window.viewfinderPreview.connected", describe: Self.state)
        }
        #expect(rig.page.viewerCount == 8)
        let frames = 20
        for _ in 0..<frames {
            rig.nextFrame()
            #expect(data.waitUntilDelivered(timeout: 10))
        }
        let last = rig.camera.framesProduced - 1
        for tab in tabs {
            try await browser.switchTo(tab: tab)
            try await browser.waitUntil("window.viewfinderPreview.lastSequence === \(last)", describe: Self.state)
            let drawn = try await browser.evaluate("return window.viewfinderPreview.drawn") as? NSNumber
            #expect((drawn?.intValue ?? 0) >= 1)
        }
        let statistics = data.statistics
        #expect(statistics.delivered == statistics.captured, "the data output lost nothing: \(statistics)")
        #expect(statistics.captured >= frames)
        let viewers = rig.page.webServer.statistics.viewers
        #expect(viewers.count == 8 && viewers.allSatisfy { $0.framesSent >= 1 })
        try await browser.closeOtherTabs()
    }
}
