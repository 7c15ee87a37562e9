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

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Preview web server: HTTP, multipart and WebSocket through raw sockets")
struct PreviewWebServerTests {
    private func origin(_ server: PreviewWebServer) -> String { "http://127.0.0.1:\(server.port)" }

    @Test("binds 127.0.0.1 only, on a free port, with a 32-character random token")
    func bindsLoopback() throws {
        let server = try PreviewWebServer()
        defer { server.stop() }
        #expect(server.port > 0)
        #expect(server.token.count == 32)
        #expect(server.token.utf8.allSatisfy(PreviewWebToken.isTokenByte))
        #expect(server.pageURL.absoluteString == "http://127.0.0.1:\(server.port)/?token=\(server.token)")
        #expect(server.streamURL.absoluteString == "http://127.0.0.1:\(server.port)/stream.mjpg?token=\(server.token)")
        let other = try PreviewWebServer()
        defer { other.stop() }
        #expect(other.token != server.token)
        // The kernel's table of listening sockets: this port is bound to 127.0.0.1 and nothing else.
        let hexPort = String(format: "%04X", server.port)
        var listening: [String] = []
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let text = (try? String(contentsOfFile: table, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 3, fields[3] == "0A", fields[1].hasSuffix(":\(hexPort)") else { continue }
                listening.append(String(fields[1]))
            }
        }
        #expect(listening == ["0100007F:\(hexPort)"])
    }

    @Test("a bad address, a taken port and a malformed token are typed errors")
    func badConfiguration() throws {
        #expect(throws: CaptureError.self) { try PreviewWebServer(configuration: .init(address: "localhost")) }
        #expect(throws: CaptureError.self) { try PreviewWebServer(configuration: .init(token: "short")) }
        #expect(throws: CaptureError.self) { try PreviewWebServer(configuration: .init(maxViewers: 0)) }
        #expect(throws: CaptureError.self) { try PreviewWebServer(configuration: .init(port: 70000)) }
        let server = try PreviewWebServer()
        defer { server.stop() }
        do {
            _ = try PreviewWebServer(configuration: .init(port: server.port))
            Issue.record("a second server bound a taken port")
        } catch {
            #expect(error.code == .systemError)
            #expect(error.errno == EADDRINUSE)
        }
        do {
            _ = try PreviewWebServer(configuration: .init(address: "::1:2:3:zz"))
            Issue.record("a malformed address was accepted")
        } catch {
            #expect(error.code == .invalidArgument)
        }
    }

    @Test("every request without the right token is answered 403 and counted; with it, the page")
    func tokenRequired() throws {
        let server = try PreviewWebServer()
        defer { server.stop() }
        for target in [
            "/", "/?token=", "/?token=\(String(server.token.reversed()))", "/viewer.js", "/stream.mjpg",
            "/favicon.ico", "/?tok=\(server.token)", "/?token=\(server.token)x",
        ] {
            let socket = try RawSocket(port: server.port)
            #expect(try socket.get(target).status == 403, "\(target)")
        }
        #expect(server.statistics.refusedForToken == 8)
        let socket = try RawSocket(port: server.port)
        let page = try socket.get("/?token=\(server.token)")
        #expect(page.status == 200)
        #expect(page.headers["content-type"]?.hasPrefix("text/html") == true)
        #expect(page.headers["content-security-policy"]?.contains("frame-ancestors 'none'") == true)
        #expect(page.headers["referrer-policy"] == "no-referrer")
        let html = String(decoding: try socket.readBody(page), as: UTF8.self)
        #expect(html.contains("<canvas id=\"picture\""))
        #expect(html.contains("viewer.js?token=\(server.token)"))
        // Keep-alive: the script on the same connection.
        let script = try socket.get("/viewer.js?token=\(server.token)&v=1")
        #expect(script.status == 200)
        #expect(String(decoding: try socket.readBody(script), as: UTF8.self).contains("createImageBitmap"))
        #expect(try RawSocket(port: server.port).get("/nothing?token=\(server.token)").status == 404)
        #expect(server.statistics.refusedForToken == 8)
        #expect(server.statistics.refusedOther == 1)
    }

    @Test("a WebSocket needs the token and the server's own Origin (or none)")
    func webSocketOriginAndToken() throws {
        let server = try PreviewWebServer()
        defer { server.stop() }
        let target = "/ws?token=\(server.token)"
        for foreign in [
            "http://evil.example", "http://127.0.0.1:\(server.port + 1)", "null",
            "https://127.0.0.1:\(server.port)", "http://127.0.0.1:\(server.port).evil.example",
        ] {
            #expect(try RawSocket(port: server.port).upgrade(target, origin: foreign).status == 403, "\(foreign)")
        }
        #expect(server.statistics.refusedForOrigin == 5)
        #expect(try RawSocket(port: server.port).upgrade("/ws", origin: origin(server)).status == 403)
        #expect(try RawSocket(port: server.port).upgrade("/ws?token=nope", origin: nil).status == 403)
        #expect(server.statistics.refusedForToken == 2)
        #expect(server.viewerCount == 0)
        for allowed in [origin(server), "http://localhost:\(server.port)", nil] {
            let socket = try RawSocket(port: server.port)
            #expect(try socket.upgrade(target, origin: allowed).status == 101, "\(allowed ?? "no Origin")")
        }
        #expect(server.statistics.refusedForOrigin == 5)
    }

    @Test("the multipart stream yields the published JPEGs as parts, in order")
    func multipartStream() throws {
        let server = try PreviewWebServer()
        defer { server.stop() }
        let socket = try RawSocket(port: server.port)
        let head = try socket.get("/stream.mjpg?token=\(server.token)")
        #expect(head.status == 200)
        let type = try #require(head.headers["content-type"])
        #expect(type == "multipart/x-mixed-replace; boundary=viewfinder-frame")
        #expect(PreviewWebTestSupport.wait(server) { server.viewerCount == 1 })
        // The stream opens with the first boundary and part headers; each JPEG is followed at
        // once by the next boundary and part headers.
        #expect(try socket.readHead() == "--viewfinder-frame\r\nContent-Type: image/jpeg")
        let trailer = Array("\r\n--viewfinder-frame\r\nContent-Type: image/jpeg\r\n\r\n".utf8)
        for sequence: UInt64 in 100..<104 {
            PreviewWebTestSupport.publish(server, try PreviewWebTestSupport.patternJPEG(sequence), sequence: sequence)
            let jpeg = try socket.read(until: trailer)
            #expect(jpeg.prefix(2) == [0xFF, 0xD8])
            #expect(jpeg.suffix(2) == [0xFF, 0xD9])
            #expect(try PreviewWebTestSupport.sequence(ofJPEG: jpeg) == sequence)
        }
        #expect(server.statistics.framesSent == 4)
        // A viewer that leaves is noticed when the frames written to it next fail.
        socket.close()
        var sequence: UInt64 = 105
        #expect(
            PreviewWebTestSupport.wait(server) {
                PreviewWebTestSupport.publish(server, [0xFF, 0xD8, 0xFF, 0xD9], sequence: sequence)
                sequence += 1
                return server.viewerCount == 0
            })
    }

    @Test("ffmpeg reads the multipart stream", .enabled(if: FFmpegTools.ffmpeg != nil, FFmpegTools.missing))
    func ffmpegReadsStream() throws {
        let server = try PreviewWebServer()
        defer { server.stop() }
        let (width, height) = (320, 240)
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: FFmpegTools.ffmpeg!)
        ffmpeg.arguments = [
            "-nostdin", "-loglevel", "error", "-i", server.streamURL.absoluteString, "-frames:v", "3",
            "-f", "rawvideo", "-pix_fmt", "bgra", "-",
        ]
        let output = Pipe()
        ffmpeg.standardOutput = output
        ffmpeg.standardError = FileHandle.nullDevice
        try ffmpeg.run()
        // Publish until ffmpeg has its three frames (bounded: 2000 frames, 2 ms apart).
        let publisher = Thread {
            var sequence: UInt64 = 1
            while ffmpeg.isRunning && sequence <= 2000 {
                if let jpeg = try? PreviewWebTestSupport.patternJPEG(sequence, width: width, height: height) {
                    PreviewWebTestSupport.publish(server, jpeg, sequence: sequence, width: width, height: height)
                }
                sequence += 1
                usleep(2000)
            }
        }
        publisher.start()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        ffmpeg.waitUntilExit()
        #expect(ffmpeg.terminationStatus == 0)
        let frameSize = width * height * 4
        #expect(data.count == 3 * frameSize)
        var sequences: [UInt64] = []
        for index in 0..<min(3, data.count / frameSize) {
            let frame = try JPEGTestSupport.buffer(.bgra, width, height)
            data.withUnsafeBytes { bytes in
                for row in 0..<height {
                    (frame.baseAddress + row * frame.bytesPerRow).copyMemory(
                        from: bytes.baseAddress! + index * frameSize + row * width * 4, byteCount: width * 4)
                }
            }
            sequences.append(try #require(TestPattern.readSequenceNumber(from: frame)))
        }
        #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count, "\(sequences)")
    }

    @Test("idle stream and WebSocket viewers stay connected past libwebsockets' timeouts")
    func idleViewersStay() throws {
        let server = try PreviewWebServer()
        defer { server.stop() }
        let stream = try RawSocket(port: server.port, timeout: 10)
        #expect(try stream.get("/stream.mjpg?token=\(server.token)").status == 200)
        let page = try RawSocket(port: server.port, timeout: 10)
        #expect(try page.upgrade("/ws?token=\(server.token)", origin: nil).status == 101)
        #expect(PreviewWebTestSupport.wait(server) { server.viewerCount == 2 })
        // libwebsockets ends an HTTP response after 5 s unless the server says it lasts.
        #expect(!PreviewWebTestSupport.wait(server, timeout: 6) { server.viewerCount < 2 })
        PreviewWebTestSupport.publish(server, [0xFF, 0xD8, 0xFF, 0xD9], sequence: 9)
        #expect(try stream.readHead() == "--viewfinder-frame\r\nContent-Type: image/jpeg")
        #expect(try stream.read(until: Array("\r\n--viewfinder-frame\r\n".utf8)) == [0xFF, 0xD8, 0xFF, 0xD9])
        #expect(try PreviewFrameMessage(page.readMessage().payload).sequenceNumber == 9)
    }

    @Test("8 WebSocket viewers at once all get every frame, and the newest frame on joining")
    func eightViewers() throws {
        let server = try PreviewWebServer()
        defer { server.stop() }
        PreviewWebTestSupport.publish(server, [0xFF, 0xD8, 0xFF, 0xD9], sequence: 1)
        var viewers: [RawSocket] = []
        for _ in 0..<8 {
            let socket = try RawSocket(port: server.port)
            #expect(try socket.upgrade("/ws?token=\(server.token)", origin: origin(server)).status == 101)
            viewers.append(socket)
        }
        for viewer in viewers {
            let message = try viewer.readMessage()
            #expect(message.opcode == 2)
            #expect(try PreviewFrameMessage(message.payload).sequenceNumber == 1)
        }
        #expect(server.viewerCount == 8)
        for sequence: UInt64 in 2...6 {
            let jpeg = try PreviewWebTestSupport.patternJPEG(sequence, width: 320, height: 240)
            PreviewWebTestSupport.publish(server, jpeg, sequence: sequence, width: 320, height: 240)
            for viewer in viewers {
                let frame = try PreviewFrameMessage(viewer.readMessage().payload)
                #expect(frame.sequenceNumber == sequence)
                #expect(frame.width == 320 && frame.height == 240)
                #expect(frame.presentationSeconds == Double(sequence) / 30)
                #expect(frame.jpeg == jpeg)
            }
        }
        let statistics = server.statistics
        #expect(statistics.viewers.count == 8)
        #expect(statistics.viewers.allSatisfy { $0.framesSent == 6 && $0.framesReplaced == 0 && $0.kind == .webSocket })
        #expect(statistics.framesPublished == 6)
    }

    @Test("a viewer that never reads loses frames (counted) but slows neither publish nor the others")
    func stalledViewer() throws {
        let server = try PreviewWebServer(configuration: .init(queueLimitPerViewer: 2))
        defer { server.stop() }
        // One stream viewer with a tiny receive buffer that never reads, one WebSocket that does.
        let stalled = try RawSocket(port: server.port, receiveBuffer: 4096)
        #expect(try stalled.get("/stream.mjpg?token=\(server.token)").status == 200)
        let reader = try RawSocket(port: server.port)
        #expect(try reader.upgrade("/ws?token=\(server.token)", origin: nil).status == 101)
        #expect(PreviewWebTestSupport.wait(server) { server.viewerCount == 2 })
        let frames = 150
        let payload = [UInt8](repeating: 0xA5, count: 256 * 1024)
        for sequence in 1...UInt64(frames) {
            PreviewWebTestSupport.publish(server, payload, sequence: sequence)
            let frame = try PreviewFrameMessage(reader.readMessage().payload)
            #expect(frame.sequenceNumber == sequence)
            #expect(frame.jpeg.count == payload.count)
        }
        let statistics = server.statistics
        #expect(statistics.framesPublished == frames)
        let slow = try #require(statistics.viewers.first { $0.kind == .multipart })
        let fast = try #require(statistics.viewers.first { $0.kind == .webSocket })
        #expect(fast.framesSent == frames && fast.framesReplaced == 0)
        // 37.5 MiB published; the stalled socket holds a few frames at most.
        #expect(slow.framesReplaced > frames / 2)
        #expect(slow.framesSent + slow.framesReplaced <= frames)
        #expect(server.viewerCount == 2)
        stalled.close()
        #expect(PreviewWebTestSupport.wait(server) { server.viewerCount == 1 })
    }

    @Test("queueLimitPerViewer frames wait at most; beyond it the newest replaces the oldest")
    func newestWins() throws {
        let server = try PreviewWebServer(configuration: .init(queueLimitPerViewer: 1))
        defer { server.stop() }
        let reader = try RawSocket(port: server.port)
        #expect(try reader.upgrade("/ws?token=\(server.token)", origin: nil).status == 101)
        #expect(PreviewWebTestSupport.wait(server) { server.viewerCount == 1 })
        // A burst faster than anything is sent: whatever arrives is in order and ends with the last.
        let payload = [UInt8](repeating: 0x5A, count: 512 * 1024)
        for sequence in 1...UInt64(40) { PreviewWebTestSupport.publish(server, payload, sequence: sequence) }
        var received: [UInt64] = []
        while received.last != 40 {
            received.append(try PreviewFrameMessage(reader.readMessage().payload).sequenceNumber)
        }
        #expect(received == received.sorted())
        #expect(Set(received).count == received.count)
        let viewer = try #require(server.statistics.viewers.first)
        #expect(viewer.framesSent == received.count)
        #expect(viewer.framesSent + viewer.framesReplaced == 40)
    }

    @Test("figures reach the WebSocket as JSON text; the newest replaces unsent ones")
    func figures() throws {
        let server = try PreviewWebServer()
        defer { server.stop() }
        server.publish(figures: ["fps": 29.97, "drops.late": 3])
        let reader = try RawSocket(port: server.port)
        #expect(try reader.upgrade("/ws?token=\(server.token)", origin: nil).status == 101)
        let first = try reader.readMessage()
        #expect(first.opcode == 1)
        let json = try JSONSerialization.jsonObject(with: Data(first.payload)) as? [String: Any]
        #expect(json?["type"] as? String == "figures")
        let figures = try #require(json?["figures"] as? [String: Any])
        #expect((figures["fps"] as? NSNumber)?.doubleValue == 29.97)
        #expect((figures["drops.late"] as? NSNumber)?.doubleValue == 3)
        server.publish(figures: ["latency \"ms\"": .nan])
        let second = try JSONSerialization.jsonObject(with: Data(reader.readMessage().payload)) as? [String: Any]
        #expect((second?["figures"] as? [String: Any])?["latency \"ms\""] is NSNull)
    }

    @Test("clicks and paint reports from the page reach onClick and onPaintReport")
    func clicksAndPaintReports() throws {
        let server = try PreviewWebServer()
        defer { server.stop() }
        let clicks = Mutex<[(Double, Double)]>([])
        let reports = Mutex<[PreviewWebServer.PaintReport]>([])
        let arrived = DispatchSemaphore(value: 0)
        server.onClick = { x, y in
            clicks.withLock { $0.append((x, y)) }
            arrived.signal()
        }
        server.onPaintReport = { report in
            reports.withLock { $0.append(report) }
            arrived.signal()
        }
        PreviewWebTestSupport.publish(server, [0xFF, 0xD8, 0xFF, 0xD9], sequence: 7, width: 640, height: 480)
        let page = try RawSocket(port: server.port)
        #expect(try page.upgrade("/ws?token=\(server.token)", origin: origin(server)).status == 101)
        _ = try page.readMessage()
        try page.sendText(#"{"type":"click","x":12.5,"y":470}"#)
        try page.sendText(#"{"type":"click","x":700,"y":10}"#)  // outside the picture: not passed on
        try page.sendText(#"{"type":"click","x":639.9,"y":0}"#)
        try page.sendText(#"{"type":"paint","sequence":7,"time":1764000000123.5}"#)
        for _ in 0..<3 { #expect(arrived.wait(timeout: .now() + 5) == .success) }
        #expect(clicks.withLock { $0.map { [$0.0, $0.1] } } == [[12.5, 470], [639.9, 0]])
        let viewer = try #require(server.statistics.viewers.first?.id)
        #expect(reports.withLock { $0 } == [.init(viewer: viewer, sequenceNumber: 7, paintTime: 1_764_000_000_123.5)])
        #expect(server.statistics.clicksReceived == 3)
        // Not JSON: the connection is closed.
        try page.sendText("hello")
        #expect(page.readsEndOfStream())
        #expect(PreviewWebTestSupport.wait(server) { server.viewerCount == 0 })
    }

    @Test("beyond maxViewers, viewers are answered 503 and counted")
    func capacity() throws {
        let server = try PreviewWebServer(configuration: .init(maxViewers: 2))
        defer { server.stop() }
        let first = try RawSocket(port: server.port)
        #expect(try first.upgrade("/ws?token=\(server.token)", origin: nil).status == 101)
        let second = try RawSocket(port: server.port)
        #expect(try second.get("/stream.mjpg?token=\(server.token)").status == 200)
        #expect(PreviewWebTestSupport.wait(server) { server.viewerCount == 2 })
        #expect(try RawSocket(port: server.port).upgrade("/ws?token=\(server.token)", origin: nil).status == 503)
        #expect(try RawSocket(port: server.port).get("/stream.mjpg?token=\(server.token)").status == 503)
        #expect(server.statistics.refusedForCapacity == 2)
        first.close()
        #expect(PreviewWebTestSupport.wait(server) { server.viewerCount == 1 })
        #expect(try RawSocket(port: server.port).upgrade("/ws?token=\(server.token)", origin: nil).status == 101)
    }

    @Test("stop closes every connection; publishing afterwards does nothing")
    func stopCloses() throws {
        let server = try PreviewWebServer()
        let viewer = try RawSocket(port: server.port)
        #expect(try viewer.upgrade("/ws?token=\(server.token)", origin: nil).status == 101)
        #expect(PreviewWebTestSupport.wait(server) { server.viewerCount == 1 })
        server.stop()
        #expect(viewer.readsEndOfStream())
        #expect(server.viewerCount == 0)
        PreviewWebTestSupport.publish(server, [1, 2, 3], sequence: 1)
        server.stop()
        #expect(throws: RawSocket.Failure.self) { try RawSocket(port: server.port) }
    }
}
