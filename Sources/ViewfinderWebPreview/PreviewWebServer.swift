import CWebSockets
import Foundation
import Synchronization
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// Serves the live preview page, a multipart MJPEG stream and a WebSocket of JPEG frames on
/// loopback (libwebsockets, on a service thread of its own).
///
/// - `pageURL` (`/?token=…`): the page, which draws the newest frame and the live figures and
///   sends clicks on the picture back (``onClick``). Add `&measure=1` and it reports when it
///   painted each frame (``onPaintReport``).
/// - `streamURL` (`/stream.mjpg?token=…`): `multipart/x-mixed-replace` JPEG parts, for `<img>`
///   and tools such as ffplay or curl.
/// - `/ws?token=…`: the page's WebSocket; binary messages are frames (a 40-byte header, see
///   ``PreviewWebPayload``, then the JPEG), text messages are JSON (`{"type":"figures",…}`).
///
/// Security: it binds 127.0.0.1 unless configured otherwise; every HTTP request and WebSocket
/// upgrade must carry the token (32 random characters from the system's random source unless
/// configured), or is answered 403 and counted; a WebSocket whose `Origin` is not this
/// server's own (`http://ADDRESS:PORT`, or `http://localhost:PORT` on loopback) is refused with
/// 403, so no other web page open in the user's browser can watch the camera; a request
/// without `Origin` (not from a browser page) is judged by its token alone.
///
/// Publishing never waits for a viewer: each viewer has a queue of at most
/// `queueLimitPerViewer` frames, a frame beyond it replaces the oldest one waiting (counted),
/// and every queue shares the one copy of the frame made at publish. A viewer that stops
/// reading holds at most its queue, the frame libwebsockets is sending and its socket buffers.
///
/// Thread safety: every method may be called from any thread; ``onClick`` and
/// ``onPaintReport`` run on the server's service thread (do not call ``stop()`` and wait there:
/// it returns at once when called on that thread).
package final class PreviewWebServer: Sendable {
    /// Where and how the server listens.
    package struct Configuration: Sendable {
        /// The numeric IPv4 or IPv6 address to bind; loopback unless the caller names another.
        package var address: String = "127.0.0.1"
        /// The TCP port; 0 chooses any free one.
        package var port: Int = 0
        /// The token every request must carry (16–128 of `A–Z a–z 0–9 - _`); `nil` makes 32
        /// random ones.
        package var token: String? = nil
        /// Viewers served at once (WebSockets and streams together); more are answered 503.
        package var maxViewers: Int = 32
        /// Frames buffered per viewer; a newer frame replaces the oldest beyond it.
        package var queueLimitPerViewer: Int = 2

        /// The defaults: loopback, any port, a random token.
        package init() {}

        /// A configuration binding `address` and `port`.
        package init(
            address: String = "127.0.0.1", port: Int = 0, token: String? = nil, maxViewers: Int = 32,
            queueLimitPerViewer: Int = 2
        ) {
            self.address = address
            self.port = port
            self.token = token
            self.maxViewers = maxViewers
            self.queueLimitPerViewer = queueLimitPerViewer
        }
    }

    /// How a viewer watches.
    package enum ViewerKind: String, Sendable {
        /// The page's WebSocket (`/ws`).
        case webSocket
        /// The multipart stream (`/stream.mjpg`).
        case multipart
    }

    /// One connected viewer's counts.
    package struct ViewerStatistics: Sendable, Equatable {
        /// The viewer's number, unique for the server's life (the first is 1).
        package var id: Int
        /// How it watches.
        package var kind: ViewerKind
        /// Frames handed to its connection.
        package var framesSent: Int
        /// Frames that waited for it and were replaced by newer ones before being sent.
        package var framesReplaced: Int
    }

    /// The server's counts since it started.
    package struct Statistics: Sendable, Equatable {
        /// ``publish(jpeg:sequenceNumber:presentationTime:width:height:)`` calls.
        package var framesPublished = 0
        /// Frames handed to connections, over every viewer there has been.
        package var framesSent = 0
        /// Frames replaced in a viewer's queue before they were sent, over every viewer.
        package var framesReplaced = 0
        /// Requests and WebSocket upgrades answered 403 because the token was missing or wrong.
        package var refusedForToken = 0
        /// WebSocket upgrades answered 403 because their `Origin` was another site's.
        package var refusedForOrigin = 0
        /// Viewers answered 503 because `maxViewers` were watching.
        package var refusedForCapacity = 0
        /// Requests with the token that were not understood (404, 405).
        package var refusedOther = 0
        /// Clicks received (including ones outside the picture, which are not passed on).
        package var clicksReceived = 0
        /// The viewers connected now, by id.
        package var viewers: [ViewerStatistics] = []
    }

    /// A frame the page painted (pages opened with `measure=1`).
    package struct PaintReport: Sendable, Equatable {
        /// The viewer that painted it.
        package var viewer: Int
        /// The frame's sequence number, as published.
        package var sequenceNumber: UInt64
        /// When it was painted: `performance.timeOrigin + performance.now()` in the page, in
        /// milliseconds since 1970 (the browser's wall clock).
        package var paintTime: Double
    }

    /// The configuration in force (its token set).
    package let configuration: Configuration
    /// The port the server listens on.
    package let port: Int
    /// The token requests must carry.
    package var token: String { configuration.token ?? "" }

    private let core: PreviewWebServiceCore
    private let handle: PreviewWebHandle

    /// Binds and starts serving on a thread of its own.
    ///
    /// - Throws: `CaptureError.invalidArgument` for an address that is not a numeric IP
    ///   address, a port outside 0–65535, a malformed token or limits out of range;
    ///   `.systemError` if the address cannot be bound (taken port, address not on this host).
    package init(configuration requested: Configuration = Configuration()) throws(CaptureError) {
        var configuration = requested
        guard (0...65535).contains(configuration.port) else {
            throw CaptureError(
                .invalidArgument, "preview server port \(configuration.port) is outside 0–65535 (0 picks a free one)")
        }
        guard (1...1024).contains(configuration.maxViewers) else {
            throw CaptureError(
                .invalidArgument, "preview server maxViewers \(configuration.maxViewers) is outside 1–1024")
        }
        guard (1...64).contains(configuration.queueLimitPerViewer) else {
            throw CaptureError(
                .invalidArgument,
                "preview server queueLimitPerViewer \(configuration.queueLimitPerViewer) is outside 1–64")
        }
        if let token = configuration.token {
            guard (16...128).contains(token.utf8.count), token.utf8.allSatisfy(PreviewWebToken.isTokenByte) else {
                throw CaptureError(
                    .invalidArgument,
                    "a preview token must be 16–128 characters of A–Z, a–z, 0–9, '-' and '_'; leave it nil for a random one"
                )
            }
        } else {
            configuration.token = PreviewWebToken.random()
        }
        let core = PreviewWebServiceCore(configuration: configuration)
        let context = Unmanaged.passUnretained(core).toOpaque()
        errno = 0
        guard
            let server = vf_ws_server_create(
                configuration.address, Int32(configuration.port), previewWebHandler, context)
        else {
            let error = errno
            if error == EINVAL {
                throw CaptureError(
                    .invalidArgument,
                    "preview server address '\(configuration.address)' is not a numeric IP address (use 127.0.0.1, ::1 or an address of this host)"
                )
            }
            throw CaptureError(
                .systemError,
                "cannot listen on \(configuration.address) port \(configuration.port): \(String(cString: strerror(error))); choose another port (0 picks a free one) or an address of this host",
                errno: error)
        }
        let handle = PreviewWebHandle(server: server)
        self.port = Int(vf_ws_server_port(server))
        configuration.port = port
        self.configuration = configuration
        self.core = core
        self.handle = handle
        core.start(handle: handle, port: port)
    }

    deinit { stop() }

    /// The page: `http://ADDRESS:PORT/?token=TOKEN`.
    package var pageURL: URL { url(path: "/") }
    /// The multipart stream: `http://ADDRESS:PORT/stream.mjpg?token=TOKEN`.
    package var streamURL: URL { url(path: "/stream.mjpg") }
    /// The WebSocket: `ws://ADDRESS:PORT/ws?token=TOKEN`.
    package var webSocketURL: URL { url(path: "/ws", scheme: "ws") }

    private func url(path: String, scheme: String = "http") -> URL {
        URL(string: "\(scheme)://\(core.authority):\(port)\(path)?token=\(token)")!
    }

    /// Hands a JPEG frame to every viewer. Newest wins: beyond a viewer's queue limit it
    /// replaces the oldest frame the viewer has not been sent yet. Copies the JPEG once (the copy
    /// is shared by every viewer, and kept for viewers that join later); never blocks on a viewer.
    package func publish(
        jpeg: UnsafeRawBufferPointer, sequenceNumber: UInt64, presentationTime: MediaTime, width: Int, height: Int
    ) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let published = Double(now.tv_sec) * 1000 + Double(now.tv_nsec) / 1_000_000
        let seconds = presentationTime.isNumeric ? presentationTime.seconds : .nan
        core.publish(width: width, height: height) {
            PreviewWebPayload.frame(
                jpeg: jpeg, sequenceNumber: sequenceNumber, presentationSeconds: seconds,
                publishedMilliseconds: published, width: width, height: height)
        }
    }

    /// Sends live figures (fps, drops by reason, latency, …) to every page as a JSON text
    /// message; a page that has not been sent the previous figures gets only these.
    package func publish(figures: [String: Double]) {
        core.publish(text: PreviewWebJSON.figuresMessage(figures))
    }

    /// A click on the picture, as a point in the picture's own pixel space (0..<width,
    /// 0..<height of the last published frame), called on the server's service thread.
    package var onClick: (@Sendable (_ x: Double, _ y: Double) -> Void)? {
        get { core.shared.withLock { $0.onClick } }
        set { core.shared.withLock { $0.onClick = newValue } }
    }

    /// A frame a page opened with `measure=1` painted, called on the server's service thread.
    package var onPaintReport: (@Sendable (PaintReport) -> Void)? {
        get { core.shared.withLock { $0.onPaintReport } }
        set { core.shared.withLock { $0.onPaintReport = newValue } }
    }

    /// Viewers connected now.
    package var viewerCount: Int { core.shared.withLock { $0.viewerCount } }

    /// The counts so far.
    package var statistics: Statistics { core.shared.withLock { $0.statistics() } }

    /// Waits until `condition` holds, re-checking it each time the service thread has handled
    /// an event, for at most `timeout` seconds. Returns whether it held.
    package func waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        core.eventHandled.lock()
        defer { core.eventHandled.unlock() }
        while !condition() {
            if !core.eventHandled.wait(until: deadline) { return condition() }
        }
        return true
    }

    /// Closes every connection and the listening socket, and waits until the service thread
    /// has ended (unless called on it). Later calls return at once.
    package func stop() {
        core.stop(handle: handle)
    }
}

/// The libwebsockets server pointer, created once and used by the publisher (wake) and the
/// service thread.
package final class PreviewWebHandle: @unchecked Sendable {
    package let server: OpaquePointer
    package init(server: OpaquePointer) { self.server = server }
}

/// Random tokens.
package enum PreviewWebToken {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// 32 characters of the URL-safe base64 alphabet (192 bits), from the system's random
    /// source (getrandom(2), through `SystemRandomNumberGenerator`).
    package static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8]()
        bytes.reserveCapacity(32)
        for _ in 0..<32 { bytes.append(alphabet[Int(generator.next() % 64)]) }
        return String(decoding: bytes, as: UTF8.self)
    }

    package static func isTokenByte(_ byte: UInt8) -> Bool { alphabet.contains(byte) }

    /// Compares in time that depends only on the lengths.
    package static func matches(_ candidate: UnsafeBufferPointer<UInt8>, _ token: [UInt8]) -> Bool {
        guard candidate.count == token.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<token.count { difference |= candidate[index] ^ token[index] }
        return difference == 0
    }
}

/// JSON in and out of the page.
package enum PreviewWebJSON {
    package static func figuresMessage(_ figures: [String: Double]) -> String {
        var text = #"{"type":"figures","figures":{"#
        for (index, key) in figures.keys.sorted().enumerated() {
            if index > 0 { text += "," }
            text += quoted(key) + ":"
            let value = figures[key]!
            text += value.isFinite ? "\(value)" : "null"
        }
        return text + "}}"
    }

    package static func quoted(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20: result += String(format: "\\u%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
