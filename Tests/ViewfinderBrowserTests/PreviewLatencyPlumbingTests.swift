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

/// What the glass-to-glass benchmark (`viewfinder-bench --filter latency`) relies on, checked
/// without timing anything: a page opened with `measure=1` names in its paint reports and its
/// stage timeline frames the camera really sent, the number its header names is the one its
/// painted pixels spell, and its stages come in order on the system's wall clock.
@Suite(
    "Latency measurement plumbing", .serialized, .sharedBrowser,
    .enabled(if: Browser.isEnabled, Browser.missingReason))
struct PreviewLatencyPlumbingTests {
    private static let state = "JSON.stringify(window.viewfinderPreview)"

    @Test("measure=1: paint reports and the timeline name sent frames, whose pixels spell the same number")
    func paintsNameSentFrames() async throws {
        let browser = try Browser.current()
        let clock = ManualClock()
        let camera = VirtualCamera(
            configuration: .init(clock: clock, formats: virtualFormats(.bgra).filter { $0.dimensions.width == 640 }))
        let session = CaptureSession(notificationCenter: NotificationCenter())
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        let layer = CaptureVideoPreviewLayer(session: session)
        layer.frame = CGRect(x: 0, y: 0, width: 640, height: 480)
        let page = try PreviewWebPresenter(layer: layer)
        defer {
            session.stopRunning()
            page.close()
        }
        let reports = Mutex<[PreviewWebServer.PaintReport]>([])
        page.webServer.onPaintReport = { report in reports.withLock { $0.append(report) } }
        session.startRunning()
        #expect(clock.waitUntilSleeping())
        try await browser.navigate(to: URL(string: page.url.absoluteString + "&measure=1")!)
        try await browser.waitUntil("window.viewfinderPreview.connected", describe: Self.state)
        let before = Date().timeIntervalSince1970 * 1000
        var spelled: [UInt64: UInt64] = [:]
        for _ in 0..<4 {
            clock.advance(by: camera.device.activeVideoMinFrameDuration)
            #expect(clock.waitUntilSleeping())
            let sent = UInt64(camera.framesProduced - 1)
            try await browser.waitUntil(
                "window.viewfinderPreview.timeline.some((entry) => entry[0] === \(sent))", describe: Self.state)
            let shown = try #require(
                (try await browser.evaluate("return window.viewfinderPreview.lastSequence") as? NSNumber)?.uint64Value)
            spelled[shown] = TestPattern.readSequenceNumber(from: try await browser.canvasPixels("#picture"))
        }
        let after = Date().timeIntervalSince1970 * 1000
        let produced = UInt64(camera.framesProduced)

        // The number in the header is the one the pixels spell.
        #expect(!spelled.isEmpty && spelled.allSatisfy { $0.key == $0.value }, "\(spelled)")
        // Every timeline entry names a frame the camera made, its stages in order, on the wall clock.
        let timeline = try #require(
            try await browser.evaluate("return window.viewfinderPreview.timeline") as? [[NSNumber]])
        #expect(timeline.count >= 4)
        for entry in timeline {
            #expect(entry.count == 6)
            let sequence = entry[0].uint64Value
            let times = entry.dropFirst().map(\.doubleValue)
            #expect(sequence < produced)
            // The page's own stages (received, decoded, drawn, painted) are on one clock and in
            // order. The server's publish stamp is CLOCK_REALTIME, which Chromium's
            // `timeOrigin + now()` follows only as closely as the renderer pinned it: on a
            // pristine root the page's clock ran 10-24 ms behind, so publish → receive is not
            // ordered across the two (the latency bench checks the page's clock every run).
            let pageStages = Array(times.dropFirst())
            #expect(pageStages == pageStages.sorted(), "stages out of order: \(entry)")
            // The server stamps with CLOCK_REALTIME, the page with its wall clock: both fall in the
            // test's run (a second's slack for rounding).
            #expect(times.allSatisfy { $0 > before - 1000 && $0 < after + 1000 }, "\(entry)")
        }
        // The server's paint reports name the same frames as the page's timeline.
        #expect(PreviewWebTestSupport.wait(page.webServer) { reports.withLock { $0.count } >= timeline.count })
        let reported = Set(reports.withLock { $0 }.map(\.sequenceNumber))
        #expect(Set(timeline.map { $0[0].uint64Value }).isSubset(of: reported))
    }
}
