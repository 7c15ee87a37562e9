import Dispatch
import Foundation
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

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's headless Chromium, driven through chromedriver's WebDriver API on 127.0.0.1, for
/// tests of pages served by the tests themselves.
///
/// Use one browser for a whole suite with the ``SharedBrowser`` trait (serialized suites):
///
///     @Suite(.serialized, .sharedBrowser, .enabled(if: Browser.isEnabled, Browser.missingReason))
///     struct MyPageTests {
///         @Test func page() async throws {
///             let browser = try Browser.current()
///             try await browser.navigate(to: server.pageURL)
///             try await browser.waitUntil("window.viewfinderPreview.lastSequence === 3")
///             let picture = try await browser.canvasPixels()          // a BGRA PixelBuffer
///             try await browser.click(x: 100, y: 80)                  // page (viewport) pixels
///             try await browser.saveScreenshot(named: "my-page")      // PNG in the artifacts folder
///         }
///     }
///
/// or start one yourself with ``start(width:height:)`` and ``stop()`` it. Without chromium or
/// chromedriver the suite is skipped (its reason says what to install), unless `CI=true`,
/// where ``start(width:height:)`` fails instead.
package final class Browser: @unchecked Sendable {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    // MARK: Availability

    /// The chromium executable, if installed (`$VIEWFINDER_CHROMIUM` names another).
    package static let chromiumPath = locate("VIEWFINDER_CHROMIUM", ["chromium", "chromium-browser"])
    /// The chromedriver executable, if installed (`$VIEWFINDER_CHROMEDRIVER` names another).
    package static let driverPath = locate("VIEWFINDER_CHROMEDRIVER", ["chromedriver"])
    /// Whether both are installed.
    package static var isAvailable: Bool { chromiumPath != nil && driverPath != nil }
    /// Whether browser tests must run even without a browser (and so fail): `CI=true`.
    package static var isRequired: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }
    /// For `.enabled(if:)`: run when a browser is installed or required.
    package static var isEnabled: Bool { isAvailable || isRequired }
    /// Why browser tests are skipped.
    package static var missingReason: Comment { Comment(rawValue: missingText) }

    private static let missingText =
        "chromium and chromedriver are not installed (apt-get install chromium chromium-driver, or run "
        + "Scripts/install-dependencies.sh); browser tests are skipped, and fail when CI=true"

    private static func locate(_ variable: String, _ names: [String]) -> String? {
        if let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty {
            return FileManager.default.isExecutableFile(atPath: path) ? path : nil
        }
        return executable(named: names)
    }

    private static func executable(named names: [String]) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for name in names {
            for directory in path.split(separator: ":") + ["/usr/bin", "/usr/lib/chromium"] {
                let candidate = "\(directory)/\(name)"
                if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            }
        }
        return nil
    }

    // MARK: The suite's browser

    /// The browser of the suite running (the ``SharedBrowser`` trait).
    @TaskLocal package static var shared: Browser?

    /// The suite's browser; fails if the suite lacks the ``SharedBrowser`` trait.
    package static func current() throws -> Browser {
        guard let shared else { throw Failure(description: "the suite needs the .sharedBrowser trait") }
        return shared
    }

    // MARK: Life

    private let driver: Process
    private let session: URL
    private let profile: URL
    private let browserProcess: pid_t?
    private let stopped = NSLock()
    private var isStopped = false

    private init(driver: Process, session: URL, profile: URL, browserProcess: pid_t?) {
        self.driver = driver
        self.session = session
        self.profile = profile
        self.browserProcess = browserProcess
    }

    deinit { terminateDriver() }

    /// Starts chromedriver on a free loopback port and a headless Chromium with a window of
    /// `width` × `height` CSS pixels (device scale 1) and a fresh profile.
    package static func start(width: Int = 1280, height: Int = 800) async throws -> Browser {
        guard let chromiumPath, let driverPath else {
            throw Failure(description: missingText)
        }
        let driver = Process()
        driver.executableURL = URL(fileURLWithPath: driverPath)
        driver.arguments = ["--port=0"]
        let output = Pipe()
        driver.standardOutput = output
        driver.standardError = FileHandle.nullDevice
        try driver.run()
        // "ChromeDriver was started successfully on port 41039."
        var text = ""
        var port: Int?
        while port == nil {
            let data = output.fileHandleForReading.availableData
            guard !data.isEmpty else {
                driver.waitUntilExit()
                throw Failure(
                    description: "chromedriver exited (\(driver.terminationStatus)) before listening: \(text)")
            }
            text += String(decoding: data, as: UTF8.self)
            if let range = text.range(of: "started successfully on port ") {
                let digits = text[range.upperBound...].prefix { $0.isNumber }
                if text[range.upperBound...].count > digits.count { port = Int(digits) }
            }
        }
        // Keep reading what chromedriver (and the Chromium it starts, which inherits the pipe) writes,
        // so a full pipe never blocks them; it is thrown away.
        let reader = output.fileHandleForReading
        Thread.detachNewThread {
            while !reader.availableData.isEmpty {}
        }
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "viewfinder-chromium-\(UUID().uuidString)")
        var arguments = [
            "--headless=new", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
            "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
            "--disable-backgrounding-occluded-windows", "--hide-scrollbars", "--force-device-scale-factor=1",
            "--window-size=\(width),\(height)", "--user-data-dir=\(profile.path)", "--disable-crash-reporter",
            "--disable-breakpad",
        ]
        if geteuid() == 0 { arguments.append("--no-sandbox") }  // Chromium refuses to run as root sandboxed
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "browserName": "chrome",
                    "goog:chromeOptions": ["binary": chromiumPath, "args": arguments],
                ]
            ]
        ]
        let root = URL(string: "http://127.0.0.1:\(port!)")!
        do {
            let value = try await request("POST", root.appendingPathComponent("session"), capabilities)
            guard let id = (value as? [String: Any])?["sessionId"] as? String else {
                throw Failure(description: "chromedriver gave no session: \(String(describing: value))")
            }
            let granted = (value as? [String: Any])?["capabilities"] as? [String: Any]
            let browser = Browser(
                driver: driver, session: root.appendingPathComponent("session").appendingPathComponent(id),
                profile: profile, browserProcess: (granted?["goog:processID"] as? NSNumber).map { pid_t($0.int32Value) }
            )
            try await browser.command("POST", "timeouts", ["script": 30000, "pageLoad": 30000])
            return browser
        } catch {
            end(driver)
            try? FileManager.default.removeItem(at: profile)
            throw error
        }
    }

    /// Ends the session (Chromium quits), then chromedriver; removes the profile. Later calls
    /// do nothing.
    package func stop() async {
        guard markStopped() else { return }
        _ = try? await command("DELETE", nil)
        terminateDriver()
    }

    private func markStopped() -> Bool {
        stopped.withLock {
            if isStopped { return false }
            isStopped = true
            return true
        }
    }

    /// Ends chromedriver (which may ignore SIGTERM) and the Chromium it started, if the session
    /// did not end it.
    private func terminateDriver() {
        Self.end(driver)
        if let browserProcess { Self.end(process: browserProcess) }
        try? FileManager.default.removeItem(at: profile)
    }

    private static func end(_ process: Process) {
        guard process.isRunning else { return }
        process.terminate()
        if !waitForExit(seconds: 3, { !process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    private static func end(process: pid_t) {
        guard kill(process, 0) == 0 else { return }
        kill(process, SIGTERM)
        if !waitForExit(seconds: 3, { kill(process, 0) != 0 }) { kill(process, SIGKILL) }
    }

    private static func waitForExit(seconds: Double, _ exited: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if exited() { return true }
            usleep(20000)
        }
        return exited()
    }

    // MARK: WebDriver

    /// One WebDriver call. chromedriver's replies are plain HTTP/1.1 (FoundationNetworking's
    /// URLSession fails on their headers), so this speaks HTTP over a socket itself, on a
    /// thread of its own.
    private static func request(_ method: String, _ url: URL, _ body: Any?) async throws -> Any? {
        let payload = try body.map { try JSONSerialization.data(withJSONObject: $0) }
        let port = url.port ?? 80
        let data: Data = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try http(method, port: port, path: url.path, body: payload) })
            }
        }
        let object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? [String: Any]
        let value = object?["value"]
        if let error = value as? [String: Any], let kind = error["error"] as? String {
            throw Failure(description: "WebDriver \(method) \(url.path): \(kind): \(error["message"] ?? "")")
        }
        return value is NSNull ? nil : value
    }

    private static func http(_ method: String, port: Int, path: String, body: Data?) throws -> Data {
        let socket = try RawSocket(port: port, timeout: 90)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        try socket.send(Array((head + "\r\n").utf8) + Array(body ?? Data()))
        let response = try RawSocket.parseHead(try socket.readHead())
        if response.headers["content-length"] != nil { return Data(try socket.readBody(response)) }
        return Data(try socket.readToEnd())
    }

    @discardableResult
    private func command(_ method: String, _ path: String?, _ body: Any? = nil) async throws -> Any? {
        let url = path.map { session.appendingPathComponent($0) } ?? session
        return try await Self.request(method, url, body ?? (method == "POST" ? [String: Any]() : nil))
    }

    // MARK: Pages

    /// Loads `url` and waits for its load event.
    package func navigate(to url: URL) async throws {
        try await command("POST", "url", ["url": url.absoluteString])
    }

    /// Runs `script` (a function body: `return …`) in the page; returns its JSON result.
    @discardableResult
    package func evaluate(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        try await command("POST", "execute/sync", ["script": script, "args": arguments])
    }

    /// Polls JavaScript `expression` in the page every animation frame until it is truthy
    /// (returns its value) or `timeout` seconds pass (throws, with `describe` evaluated for the
    /// message).
    @discardableResult
    package func waitUntil(_ expression: String, timeout: Double = 10, describe: String = "document.title") async throws
        -> Any?
    {
        let script = """
            const done = arguments[arguments.length - 1];
            const deadline = performance.now() + \(Int(timeout * 1000));
            const poll = () => {
              let value;
              try { value = (\(expression)); } catch (error) { value = undefined; }
              if (value) { done({ ok: true, value }); return; }
              if (performance.now() > deadline) {
                let state;
                try { state = (\(describe)); } catch (error) { state = String(error); }
                done({ ok: false, state: JSON.stringify(state) });
                return;
              }
              setTimeout(poll, 5);
            };
            poll();
            """
        let result = try await command("POST", "execute/async", ["script": script, "args": []]) as? [String: Any]
        guard result?["ok"] as? Bool == true else {
            throw Failure(
                description: "timed out after \(timeout) s waiting for \(expression); \(describe) = "
                    + "\(result?["state"] ?? "?")")
        }
        return result?["value"]
    }

    /// Clicks (left button) at viewport point (`x`, `y`) in CSS pixels.
    package func click(x: Int, y: Int) async throws {
        let actions: [[String: Any]] = [
            ["type": "pointerMove", "duration": 0, "x": x, "y": y, "origin": "viewport"],
            ["type": "pointerDown", "button": 0],
            ["type": "pointerUp", "button": 0],
        ]
        try await command(
            "POST", "actions",
            [
                "actions": [
                    ["type": "pointer", "id": "mouse", "parameters": ["pointerType": "mouse"], "actions": actions]
                ]
            ])
        try await command("DELETE", "actions")
    }

    /// The pixels of the `<canvas>` matching `selector` (getImageData), as a BGRA buffer.
    package func canvasPixels(_ selector: String = "canvas") async throws -> PixelBuffer {
        let script = """
            const canvas = document.querySelector(arguments[0]);
            if (!canvas) return null;
            const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
            let text = '';
            for (let i = 0; i < data.length; i += 0x8000) {
              text += String.fromCharCode.apply(null, data.subarray(i, i + 0x8000));
            }
            return { width: canvas.width, height: canvas.height, rgba: btoa(text) };
            """
        guard let result = try await evaluate(script, [selector]) as? [String: Any],
            let width = (result["width"] as? NSNumber)?.intValue,
            let height = (result["height"] as? NSNumber)?.intValue,
            let base64 = result["rgba"] as? String, let rgba = Data(base64Encoded: base64),
            rgba.count == width * height * 4
        else { throw Failure(description: "no canvas matches \(selector)") }
        let pool = try PixelBufferPool(pixelFormat: .bgra, width: width, height: height, capacity: 1)
        guard let buffer = pool.makePixelBuffer() else { throw Failure(description: "no pixel buffer") }
        rgba.withUnsafeBytes { (source: UnsafeRawBufferPointer) in
            for row in 0..<height {
                let destination = (buffer.baseAddress + row * buffer.bytesPerRow).assumingMemoryBound(to: UInt8.self)
                for column in 0..<width {
                    let pixel = (row * width + column) * 4
                    destination[column * 4] = source[pixel + 2]
                    destination[column * 4 + 1] = source[pixel + 1]
                    destination[column * 4 + 2] = source[pixel]
                    destination[column * 4 + 3] = source[pixel + 3]
                }
            }
        }
        return buffer
    }

    /// A PNG of the visible page.
    package func screenshot() async throws -> Data {
        guard let base64 = try await command("GET", "screenshot") as? String, let png = Data(base64Encoded: base64)
        else { throw Failure(description: "no screenshot") }
        return png
    }

    /// Where test artifacts go: `$VIEWFINDER_TEST_ARTIFACTS`, or `.build/test-artifacts` in the
    /// package.
    package static var artifactsDirectory: URL {
        if let path = ProcessInfo.processInfo.environment["VIEWFINDER_TEST_ARTIFACTS"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return package.appendingPathComponent(".build/test-artifacts")
    }

    /// Saves a screenshot as `<artifacts>/<name>.png`; returns its location.
    @discardableResult
    package func saveScreenshot(named name: String) async throws -> URL {
        let png = try await screenshot()
        let directory = Self.artifactsDirectory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("\(name).png")
        try png.write(to: file)
        return file
    }

    // MARK: Windows

    /// The current tab's handle.
    package func currentTab() async throws -> String {
        guard let handle = try await command("GET", "window") as? String else { throw Failure(description: "no tab") }
        return handle
    }

    /// Opens a new tab and makes it current; returns its handle.
    package func openTab() async throws -> String {
        guard
            let handle = (try await command("POST", "window/new", ["type": "tab"]) as? [String: Any])?["handle"]
                as? String
        else { throw Failure(description: "no new tab") }
        try await switchTo(tab: handle)
        return handle
    }

    /// Makes tab `handle` current.
    package func switchTo(tab handle: String) async throws {
        try await command("POST", "window", ["handle": handle])
    }

    /// Closes every tab but the first, which it makes current and blank.
    package func closeOtherTabs() async throws {
        guard let handles = try await command("GET", "window/handles") as? [String], let first = handles.first else {
            return
        }
        for handle in handles.dropFirst() {
            try await switchTo(tab: handle)
            try await command("DELETE", "window")
        }
        try await switchTo(tab: first)
        try await navigate(to: URL(string: "about:blank")!)
    }
}

/// Runs a suite with one headless Chromium (``Browser/current()``), started before its first
/// test and stopped after its last. Use with `.serialized`.
package struct SharedBrowser: SuiteTrait, TestScoping {
    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let browser = try await Browser.start()
        do {
            try await Browser.$shared.withValue(browser) { try await function() }
        } catch {
            await browser.stop()
            throw error
        }
        await browser.stop()
    }
}

extension Trait where Self == SharedBrowser {
    /// One headless Chromium for the whole suite: ``Browser/current()``.
    package static var sharedBrowser: Self { SharedBrowser() }
}
