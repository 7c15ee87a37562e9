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

/// A blocking TCP client on loopback for the preview server's tests: plain HTTP, the
/// multipart stream and a minimal WebSocket client (RFC 6455: masked client frames, unmasked
/// server frames). Every read gives up after `timeout` seconds with an error.
package final class RawSocket {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    private var fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to `127.0.0.1:port`; `receiveBuffer` sets SO_RCVBUF first (a stalled reader).
    package init(port: Int, timeout: Double = 5, receiveBuffer: Int? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var interval = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw Failure(description: "connect to port \(port): \(reason)")
        }
    }

    deinit { close() }

    /// Closes the connection now.
    package func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }

    package func send(_ text: String) throws { try send(Array(text.utf8)) }

    package func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw Failure(description: "send: \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    /// Reads more bytes into the buffer; false at the end of the stream.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count == 0 { return false }
        guard count > 0 else {
            throw Failure(
                description: errno == EAGAIN ? "timed out waiting for data" : String(cString: strerror(errno)))
        }
        buffer += chunk[0..<count]
        return true
    }

    package func read(count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else {
                throw Failure(description: "connection closed after \(buffer.count) of \(count) bytes")
            }
        }
        let result = Array(buffer[0..<count])
        buffer.removeFirst(count)
        return result
    }

    /// Reads up to and including `marker`; returns the bytes before it.
    package func read(until marker: [UInt8]) throws -> [UInt8] {
        var searched = 0
        while true {
            if let end = buffer[max(0, searched - marker.count)...].firstRange(of: marker) {
                let result = Array(buffer[..<end.lowerBound])
                buffer.removeFirst(end.upperBound)
                return result
            }
            searched = buffer.count
            guard try fill() else { throw Failure(description: "connection closed before the marker") }
        }
    }

    /// Reads up to and including CR LF CR LF; returns the text before it.
    package func readHead() throws -> String {
        let marker: [UInt8] = [13, 10, 13, 10]
        while true {
            if let end = buffer.firstRange(of: marker) {
                let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                buffer.removeFirst(end.upperBound)
                return head
            }
            guard try fill() else { throw Failure(description: "connection closed before the end of the headers") }
        }
    }

    /// Everything until the peer closes.
    package func readToEnd() throws -> [UInt8] {
        while try fill() {}
        defer { buffer.removeAll() }
        return buffer
    }

    /// Reads until the peer closes; true if it did before the timeout.
    package func readsEndOfStream() -> Bool {
        while true {
            do {
                if try !fill() { return true }
                buffer.removeAll()
            } catch { return false }
        }
    }

    /// An HTTP response's status and headers (names lowercased).
    package struct Head {
        package var status: Int
        package var headers: [String: String]
    }

    package static func parseHead(_ text: String) throws -> Head {
        let lines = text.components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else {
            throw Failure(description: "bad status line: \(lines[0])")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        return Head(status: status, headers: headers)
    }

    /// Sends a GET for `target` and reads the response head.
    package func get(_ target: String, headers: [String: String] = [:]) throws -> Head {
        var request = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        try send(request + "\r\n")
        return try Self.parseHead(try readHead())
    }

    /// Reads a body of `content-length` bytes.
    package func readBody(_ head: Head) throws -> [UInt8] {
        guard let length = head.headers["content-length"].flatMap(Int.init) else {
            throw Failure(description: "no content-length")
        }
        return try read(count: length)
    }

    // MARK: WebSocket

    /// Asks for a WebSocket upgrade of `target` (with `origin` unless nil); returns the
    /// response head (101 when accepted).
    package func upgrade(_ target: String, origin: String?) throws -> Head {
        var headers = [
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        ]
        if let origin { headers["Origin"] = origin }
        return try get(target, headers: headers)
    }

    /// One WebSocket message from the server: opcode (1 text, 2 binary) and payload. Pings
    /// are skipped; a close frame is an error.
    package func readMessage() throws -> (opcode: UInt8, payload: [UInt8]) {
        var opcode: UInt8 = 0
        var payload: [UInt8] = []
        while true {
            let head = try read(count: 2)
            let final = head[0] & 0x80 != 0
            let frameOpcode = head[0] & 0x0F
            var length = Int(head[1] & 0x7F)
            if length == 126 {
                let bytes = try read(count: 2)
                length = Int(bytes[0]) << 8 | Int(bytes[1])
            } else if length == 127 {
                length = try read(count: 8).reduce(0) { $0 << 8 | Int($1) }
            }
            let mask = head[1] & 0x80 != 0 ? try read(count: 4) : nil
            var data = try read(count: length)
            if let mask { for index in data.indices { data[index] ^= mask[index % 4] } }
            switch frameOpcode {
            case 8: throw Failure(description: "the server closed the WebSocket")
            case 9, 10: continue
            case 0: payload += data
            default:
                opcode = frameOpcode
                payload = data
            }
            if final { return (opcode, payload) }
        }
    }

    /// Sends a masked text message.
    package func sendText(_ text: String) throws {
        let data = Array(text.utf8)
        var frame: [UInt8] = [0x81]
        if data.count < 126 {
            frame.append(0x80 | UInt8(data.count))
        } else {
            frame += [0x80 | 126, UInt8(data.count >> 8), UInt8(data.count & 0xFF)]
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += data.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try send(frame)
    }
}

/// A frame message as the server sends it on the WebSocket.
package struct PreviewFrameMessage {
    package var sequenceNumber: UInt64
    package var presentationSeconds: Double
    package var width: Int
    package var height: Int
    package var jpeg: [UInt8]

    package init(_ payload: [UInt8]) throws {
        guard payload.count >= 40 else {
            throw RawSocket.Failure(description: "frame message of \(payload.count) bytes")
        }
        func load<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            payload[offset..<(offset + MemoryLayout<T>.size)].reversed().reduce(0) { $0 << 8 | T($1) }
        }
        #expect(load(0, UInt32.self) == 0x3150_4656, "magic VFP1")
        let headerSize = Int(load(4, UInt32.self))
        sequenceNumber = load(8, UInt64.self)
        presentationSeconds = Double(bitPattern: load(16, UInt64.self))
        width = Int(load(32, UInt32.self))
        height = Int(load(36, UInt32.self))
        jpeg = Array(payload[headerSize...])
    }
}

package enum PreviewWebTestSupport {
    /// A JPEG of test-pattern frame `sequence` (made with the package's JPEGEncoder).
    package static func patternJPEG(_ sequence: UInt64, width: Int = 640, height: Int = 480) throws -> [UInt8] {
        try JPEGTestSupport.jpeg(
            sequence, source: .bgra, width: width, height: height, subsampling: .yuv420, quality: 0.9)
    }

    /// The sequence number a JPEG's test pattern spells.
    package static func sequence(ofJPEG jpeg: [UInt8], width: Int = 640, height: Int = 480) throws -> UInt64? {
        let decoder = try JPEGDecoder(width: width, height: height, pixelFormat: .bgra)
        let frame = try JPEGTestSupport.buffer(.bgra, width, height)
        try decoder.decode(jpeg, into: frame)
        return TestPattern.readSequenceNumber(from: frame)
    }

    package static func publish(
        _ server: PreviewWebServer, _ jpeg: [UInt8], sequence: UInt64, width: Int = 640, height: Int = 480
    ) {
        jpeg.withUnsafeBytes {
            server.publish(
                jpeg: $0, sequenceNumber: sequence, presentationTime: MediaTime(value: Int64(sequence), timescale: 30),
                width: width, height: height)
        }
    }

    /// Waits until `condition` on `server`'s state holds, woken each time its service thread has
    /// handled an event; `false` after `timeout` seconds.
    package static func wait(_ server: PreviewWebServer, timeout: Double = 5, _ condition: () -> Bool) -> Bool {
        server.waitUntil(timeout: timeout, condition)
    }
}
