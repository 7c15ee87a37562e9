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

@Suite(
    "Preview web page in headless Chromium", .serialized, .sharedBrowser,
    .enabled(if: Browser.isEnabled, Browser.missingReason))
struct PreviewWebBrowserTests {
    private static let state = "JSON.stringify(window.viewfinderPreview)"

    /// Publishes test-pattern frame `sequence` and waits until the page has drawn it.
    private func show(
        _ sequence: UInt64, on server: PreviewWebServer, in browser: Browser, width: Int = 640, height: Int = 480
    ) async throws {
        let jpeg = try PreviewWebTestSupport.patternJPEG(sequence, width: width, height: height)
        PreviewWebTestSupport.publish(server, jpeg, sequence: sequence, width: width, height: height)
        try await browser.waitUntil("window.viewfinderPreview.lastSequence === \(sequence)", describe: Self.state)
    }

    @Test("the canvas shows the published frames (their sequence numbers read back from its pixels) and the figures")
    func pageShowsFrames() async throws {
        let browser = try Browser.current()
        let server = try PreviewWebServer()
        defer { server.stop() }
        server.publish(figures: ["fps": 29.5, "drops.late": 2, "latency.p50 ms": 41.25])
        try await browser.navigate(to: server.pageURL)
        try await browser.waitUntil("window.viewfinderPreview && window.viewfinderPreview.connected")
        for sequence: UInt64 in [10, 11, 12, 40, 0x00AB_CDEF] {
            try await show(sequence, on: server, in: browser)
            let picture = try await browser.canvasPixels("#picture")
            #expect(picture.width == 640 && picture.height == 480)
            #expect(TestPattern.readSequenceNumber(from: picture) == sequence)
        }
        let figures = "document.getElementById('figures').innerText"
        let text = try await browser.waitUntil("\(figures).includes('29.5') && \(figures)", describe: figures)
        #expect((text as? String)?.contains("drops.late") == true)
        #expect((text as? String)?.contains("41.3") == true)
        server.publish(figures: ["fps": 15, "drops.late": 7])
        try await browser.waitUntil(
            "\(figures).includes('drops.late\\t7') && !\(figures).includes('latency')", describe: figures)
        // The page asks only for what the token allows: nothing was refused.
        let statistics = server.statistics
        #expect(statistics.refusedForToken == 0 && statistics.refusedOther == 0 && statistics.refusedForOrigin == 0)
        #expect(statistics.viewers.map(\.kind) == [.webSocket])
        let file = try await browser.saveScreenshot(named: "preview-web-page")
        #expect(FileManager.default.fileExists(atPath: file.path))
    }

    @Test("a frame of another size resizes the canvas; a click lands on the picture's own pixel")
    func clickInPictureCoordinates() async throws {
        let browser = try Browser.current()
        let server = try PreviewWebServer()
        defer { server.stop() }
        let clicks = Mutex<[[Double]]>([])
        let clicked = DispatchSemaphore(value: 0)
        server.onClick = { x, y in
            clicks.withLock { $0.append([x, y]) }
            clicked.signal()
        }
        try await browser.navigate(to: server.pageURL)
        try await show(5, on: server, in: browser, width: 960, height: 540)
        let picture = try await browser.canvasPixels("#picture")
        #expect(picture.width == 960 && picture.height == 540)
        #expect(TestPattern.readSequenceNumber(from: picture) == 5)
        // Shown at natural size, then scaled to half: a page point maps to picture pixels.
        for cssWidth in [960, 480] {
            let box = try #require(
                try await browser.evaluate(
                    """
                    const canvas = document.getElementById('picture');
                    canvas.style.width = '\(cssWidth)px';
                    const box = canvas.getBoundingClientRect();
                    return [box.left, box.top, box.width, box.height];
                    """) as? [NSNumber]
            ).map(\.doubleValue)
            #expect(box[2] == Double(cssWidth))
            let (pageX, pageY) = (Int(box[0]) + 123, Int(box[1]) + 77)
            try await browser.click(x: pageX, y: pageY)
            #expect(clicked.wait(timeout: .now() + 5) == .success)
            let scale = 960 / box[2]
            let expected = [(Double(pageX) - box[0]) * scale, (Double(pageY) - box[1]) * scale]
            let got = try #require(clicks.withLock { $0.last })
            #expect(abs(got[0] - expected[0]) <= scale && abs(got[1] - expected[1]) <= scale, "\(got) vs \(expected)")
        }
        #expect(server.statistics.clicksReceived == 2)
    }

    @Test("with ?measure=1 the page reports each painted frame's sequence number and paint time")
    func paintReports() async throws {
        let browser = try Browser.current()
        let server = try PreviewWebServer()
        defer { server.stop() }
        let reports = Mutex<[PreviewWebServer.PaintReport]>([])
        server.onPaintReport = { report in reports.withLock { $0.append(report) } }
        try await browser.navigate(to: URL(string: server.pageURL.absoluteString + "&measure=1")!)
        try await browser.waitUntil("window.viewfinderPreview && window.viewfinderPreview.connected")
        let before = Date().timeIntervalSince1970 * 1000
        for sequence: UInt64 in 1...6 {
            try await show(sequence, on: server, in: browser, width: 320, height: 240)
            try await browser.waitUntil("window.viewfinderPreview.paintReports === \(sequence)", describe: Self.state)
        }
        #expect(PreviewWebTestSupport.wait(server) { reports.withLock { $0.count } == 6 })
        let after = Date().timeIntervalSince1970 * 1000
        let received = reports.withLock { $0 }
        #expect(received.map(\.sequenceNumber) == Array(1...6))
        #expect(Set(received.map(\.viewer)).count == 1)
        #expect(received.map(\.paintTime) == received.map(\.paintTime).sorted())
        // The browser's clock is the system's: paints fall within the run (a second's slack
        // for the clocks' rounding).
        #expect(received.allSatisfy { $0.paintTime > before - 1000 && $0.paintTime < after + 1000 })
    }

    @Test("a page without the token is refused, and so is a WebSocket from another site's page")
    func refusals() async throws {
        let browser = try Browser.current()
        let server = try PreviewWebServer()
        defer { server.stop() }
        try await browser.navigate(to: URL(string: "http://127.0.0.1:\(server.port)/")!)
        #expect(try await browser.evaluate("return window.viewfinderPreview === undefined") as? Bool == true)
        #expect(server.statistics.refusedForToken >= 1)
        // A page of another origin (another port is another site) that knows the URL, token
        // included: the other server's 403 page, which (unlike the preview page, whose
        // Content-Security-Policy allows connections to its own origin only) lets scripts connect
        // anywhere.
        let foreign = try PreviewWebServer()
        defer { foreign.stop() }
        try await browser.navigate(to: URL(string: "http://127.0.0.1:\(foreign.port)/")!)
        let result = try await browser.waitUntil(
            """
            (window.probe = window.probe || (() => {
              const probe = { outcome: null };
              const socket = new WebSocket('\(server.webSocketURL.absoluteString)');
              socket.onopen = () => { probe.outcome = 'open'; };
              socket.onerror = () => { probe.outcome = 'refused'; };
              return probe;
            })()).outcome
            """)
        #expect(result as? String == "refused")
        #expect(server.statistics.refusedForOrigin == 1)
        #expect(server.viewerCount == 0)
        // The same WebSocket from the server's own page opens.
        try await browser.navigate(to: server.pageURL)
        try await browser.waitUntil("window.viewfinderPreview.connected")
        #expect(server.viewerCount == 1)
    }

    @Test("the multipart stream plays in an <img>: each frame replaces the picture as it arrives")
    func streamInImage() async throws {
        let browser = try Browser.current()
        let server = try PreviewWebServer()
        defer { server.stop() }
        try await browser.navigate(to: server.pageURL)
        try await browser.evaluate(
            """
            const image = document.createElement('img');
            image.id = 'stream';
            image.src = arguments[0];
            document.body.appendChild(image);
            const copy = document.createElement('canvas');
            copy.id = 'copy';
            document.body.appendChild(copy);
            """, [server.streamURL.absoluteString])
        #expect(PreviewWebTestSupport.wait(server) { server.statistics.viewers.contains { $0.kind == .multipart } })
        for sequence: UInt64 in 21...23 {
            let jpeg = try PreviewWebTestSupport.patternJPEG(sequence, width: 320, height: 240)
            PreviewWebTestSupport.publish(server, jpeg, sequence: sequence, width: 320, height: 240)
            // Copy what the <img> shows into a canvas until it shows this frame (no later frame
            // is published: the picture must not wait for the next part).
            try await browser.waitUntil(
                """
                (() => {
                  const image = document.getElementById('stream');
                  const copy = document.getElementById('copy');
                  if (image.naturalWidth !== 320) return false;
                  copy.width = 320; copy.height = 240;
                  const context = copy.getContext('2d', { willReadFrequently: true });
                  context.drawImage(image, 0, 0);
                  const strip = context.getImageData(0, 4, 320, 1).data;
                  let value = 0;
                  for (let bit = 0; bit < 32; bit++) {
                    const x = Math.floor((2 * bit + 1) * 320 / 64);
                    if (strip[x * 4] > 128) value += 2 ** bit;
                  }
                  window.streamValue = value;
                  return value === \(sequence);
                })()
                """,
                describe: "[document.getElementById('stream').naturalWidth, window.streamValue]")
            #expect(TestPattern.readSequenceNumber(from: try await browser.canvasPixels("#copy")) == sequence)
        }
    }

    @Test("8 pages at once all draw the newest frame")
    func eightPages() async throws {
        let browser = try Browser.current()
        let server = try PreviewWebServer()
        defer { server.stop() }
        var tabs = [try await browser.currentTab()]
        for index in 0..<8 {
            if index > 0 { tabs.append(try await browser.openTab()) }
            try await browser.navigate(to: server.pageURL)
            try await browser.waitUntil("window.viewfinderPreview.connected")
        }
        #expect(server.viewerCount == 8)
        for sequence: UInt64 in 1...4 {
            let jpeg = try PreviewWebTestSupport.patternJPEG(sequence, width: 320, height: 240)
            PreviewWebTestSupport.publish(server, jpeg, sequence: sequence, width: 320, height: 240)
        }
        for tab in tabs {
            try await browser.switchTo(tab: tab)
            try await browser.waitUntil("window.viewfinderPreview.lastSequence === 4", describe: Self.state)
            #expect(TestPattern.readSequenceNumber(from: try await browser.canvasPixels("#picture")) == 4)
        }
        let viewers = server.statistics.viewers
        #expect(viewers.count == 8)
        #expect(viewers.allSatisfy { $0.framesSent + $0.framesReplaced == 4 && $0.framesSent >= 1 })
        try await browser.closeOtherTabs()
        #expect(PreviewWebTestSupport.wait(server) { server.viewerCount == 0 })
    }
}
