import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The headless Chromium the latency group looks through: chromedriver's WebDriver API on
/// 127.0.0.1, just what the group needs (windows, navigation that does not wait for a load event,
/// scripts). The test suite's `Browser` (Tests/ViewfinderTests/BrowserSupport.swift) is the full
/// harness; the bench cannot import test code, so this is a small client of its own.
///
/// Navigation uses WebDriver's `pageLoadStrategy: none`: a `multipart/x-mixed-replace` stream
/// opened as a page never finishes loading, so the group waits on a script condition instead.
final class LatencyBrowser {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let driver: Process
    private let driverPort: Int
    private var sessionPath: String
    private let profile: URL
    private var windows: [String]

    /// The Chromium and chromedriver executables, when installed.
    static func locate() -> (chromium: String, driver: String)? {
        let environment = ProcessInfo.processInfo.environment
        func find(_ variable: String, _ names: [String]) -> String? {
            if let path = environment[variable], !path.isEmpty { return path }
            let directories =
                (environment["PATH"] ?? "/usr/bin").split(separator: ":").map(String.init) + [
                    "/usr/bin", "/usr/lib/chromium",
                ]
            return names.lazy.flatMap { name in directories.lazy.map { "\($0)/\(name)" } }
                .first { FileManager.default.isExecutableFile(atPath: $0) }
        }
        guard let chromium = find("VIEWFINDER_CHROMIUM", ["chromium", "chromium-browser"]),
            let driver = find("VIEWFINDER_CHROMEDRIVER", ["chromedriver"])
        else { return nil }
        return (chromium, driver)
    }

    /// Starts chromedriver and a headless Chromium whose windows are `width` × `height`.
    init(width: Int, height: Int) throws {
        guard let paths = Self.locate() else {
            throw Failure(description: "chromium and chromedriver are not installed (Scripts/install-dependencies.sh)")
        }
        driver = Process()
        driver.executableURL = URL(fileURLWithPath: paths.driver)
        driver.arguments = ["--port=0"]
        let output = Pipe()
        driver.standardOutput = output
        driver.standardError = FileHandle.nullDevice
        try driver.run()
        var banner = ""
        var port: Int?
        while port == nil {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { throw Failure(description: "chromedriver exited before listening: \(banner)") }
            banner += String(decoding: data, as: UTF8.self)
            if let match = banner.firstMatch(of: /on port (\d+)\./) { port = Int(match.1) }
        }
        driverPort = port!
        let reader = output.fileHandleForReading
        Thread.detachNewThread { while !reader.availableData.isEmpty {} }
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("viewfinder-bench-chromium-\(getpid())")
        var arguments = [
            "--headless=new", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions",
            "--disable-background-networking", "--disable-renderer-backgrounding",
            "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
            "--force-device-scale-factor=1", "--window-size=\(width),\(height)", "--user-data-dir=\(profile.path)",
            "--disable-crash-reporter", "--disable-breakpad",
        ]
        if geteuid() == 0 { arguments.append("--no-sandbox") }
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "browserName": "chrome", "pageLoadStrategy": "none",
                    "goog:chromeOptions": ["binary": paths.chromium, "args": arguments],
                ]
            ]
        ]
        sessionPath = ""
        windows = []
        let reply = try call("POST", "/session", capabilities) as? [String: Any]
        guard let id = reply?["sessionId"] as? String else {
            throw Failure(description: "chromedriver gave no session: \(String(describing: reply))")
        }
        sessionPath = "/session/\(id)"
        _ = try command("POST", "timeouts", ["script": 30000])
        windows = [try command("GET", "window") as? String ?? ""]
    }

    deinit {
        _ = try? command("DELETE", nil)
        if driver.isRunning {
            driver.terminate()
            driver.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: profile)
    }

    /// CPU seconds used so far by the Chromium processes of this browser (found by the profile
    /// directory on their command line; processes that already exited are not counted).
    var cpuSeconds: Double {
        let marker = Array("--user-data-dir=\(profile.path)".utf8)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).reduce(0) { total, pid in
            guard let line = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
                Array(line).firstRange(of: marker) != nil
            else { return total }
            return total + LatencyPeer.cpuSeconds(of: pid)
        }
    }

    /// Opens windows until there are `count`; the first stays current.
    func ensureWindows(_ count: Int) throws {
        while windows.count < count {
            let reply = try command("POST", "window/new", ["type": "window"]) as? [String: Any]
            guard let handle = reply?["handle"] as? String else { throw Failure(description: "no new window") }
            windows.append(handle)
        }
    }

    /// Makes window `index` current.
    func select(_ index: Int) throws { _ = try command("POST", "window", ["handle": windows[index]]) }

    /// Starts loading `url` in the current window (returns at once).
    func open(_ url: URL) throws { _ = try command("POST", "url", ["url": url.absoluteString]) }

    /// Runs `script` (a function body) in the current window's page; its JSON result.
    func run(_ script: String, _ arguments: [Any] = []) throws -> Any? {
        try command("POST", "execute/sync", ["script": script, "args": arguments])
    }

    /// Polls `expression` in the page until it is truthy or `timeout` seconds pass.
    func waitUntil(_ expression: String, timeout: Double) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let value = try? run("try { return !!(\(expression)); } catch (e) { return false; }"),
                value as? Bool == true
            {
                return
            }
            if Date() > deadline {
                throw Failure(description: "timed out after \(timeout) s waiting for \(expression)")
            }
            usleep(20000)
        }
    }

    private func command(_ method: String, _ path: String?, _ body: Any? = nil) throws -> Any? {
        try call(method, sessionPath + (path.map { "/\($0)" } ?? ""), body ?? (method == "POST" ? [:] : nil))
    }

    /// One WebDriver request: HTTP/1.1 with `Connection: close`, read to the end.
    private func call(_ method: String, _ path: String, _ body: Any?) throws -> Any? {
        let payload = try body.map { try JSONSerialization.data(withJSONObject: $0) } ?? Data()
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        if body != nil { request += "Content-Type: application/json\r\nContent-Length: \(payload.count)\r\n" }
        let response = try Self.exchange(port: driverPort, Data((request + "\r\n").utf8) + payload)
        guard let split = response.range(of: Data("\r\n\r\n".utf8)) else {
            throw Failure(description: "WebDriver \(method) \(path): no HTTP response")
        }
        let object = try JSONSerialization.jsonObject(with: response[split.upperBound...]) as? [String: Any]
        let value = object?["value"]
        if let error = value as? [String: Any], let kind = error["error"] as? String {
            throw Failure(description: "WebDriver \(method) \(path): \(kind): \(error["message"] ?? "")")
        }
        return value is NSNull ? nil : value
    }

    private static func exchange(port: Int, _ request: Data) throws -> Data {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw Failure(description: "connect: \(String(cString: strerror(errno)))") }
        try request.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let sent = send(descriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                guard sent > 0 else { throw Failure(description: "send: \(String(cString: strerror(errno)))") }
                offset += sent
            }
        }
        // To the end of the body: its Content-Length when given (chromedriver may keep the
        // connection open), else the connection's end.
        var response = Data()
        var chunk = [UInt8](repeating: 0, count: 65536)
        var expected: Int?
        while expected.map({ response.count < $0 }) ?? true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            response.append(contentsOf: chunk[0..<count])
            if expected == nil, let split = response.range(of: Data("\r\n\r\n".utf8)) {
                let head = String(decoding: response[..<split.lowerBound], as: UTF8.self).lowercased()
                if let match = head.firstMatch(of: /content-length: *(\d+)/), let length = Int(match.1) {
                    expected = split.upperBound + length
                }
            }
        }
        return response
    }
}
