import Dispatch
import Foundation
import Synchronization
import Viewfinder

#if canImport(Glibc)
    import Glibc
#endif

/// The peers of the latency group: ffmpeg and GStreamer each serving the bench's JPEG frames as
/// a `multipart/x-mixed-replace` stream over HTTP on 127.0.0.1.
///
/// The bench hands each frame to the peer's stdin as one part of a multipart stream with a
/// `Content-Length` (ffmpeg's `mpjpeg` demuxer and GStreamer's `multipartdemux` then read exactly
/// one frame, waiting for nothing after it), through a writer thread with a one-frame mailbox
/// (newest wins, replaced frames counted), so a peer that is not reading never stalls the camera.
// unchecked: the mutable state is in Mutexes; `process` and the pipes are set up in init.
final class LatencyPeer: @unchecked Sendable {
    enum Kind: String {
        case ffmpeg
        case gstreamer

        /// The executable, when installed.
        var executable: String? {
            let name = self == .ffmpeg ? "ffmpeg" : "gst-launch-1.0"
            return ["/usr/bin/\(name)", "/usr/local/bin/\(name)"].first {
                FileManager.default.isExecutableFile(atPath: $0)
            }
        }
    }

    let kind: Kind
    let port: Int
    let process = Process()
    private let stdin = Pipe()
    private let errors = Pipe()
    private let errorText = Mutex("")
    private let mailbox = Mutex<(frame: [UInt8]?, replaced: Int, closed: Bool)>((nil, 0, false))
    private let wake = DispatchSemaphore(value: 0)
    private let writerDone = DispatchSemaphore(value: 0)

    /// The stream's URL.
    var url: URL { URL(string: "http://127.0.0.1:\(port)/stream")! }

    /// Starts `kind` on a free loopback port.
    init(_ kind: Kind) throws {
        guard let executable = kind.executable else {
            throw BenchError("\(kind.rawValue) is not installed (Scripts/install-dependencies.sh)")
        }
        self.kind = kind
        port = try Self.freePort()
        process.executableURL = URL(fileURLWithPath: executable)
        switch kind {
        case .ffmpeg:
            // -c copy: the same JPEG bytes out; nobuffer/low_delay/probesize: no input buffering;
            // -flush_packets 1: every part leaves at once. ffmpeg's HTTP server (-listen 1) serves
            // one client.
            process.arguments = [
                "-hide_banner", "-loglevel", "error", "-nostdin", "-fflags", "nobuffer", "-flags", "low_delay",
                "-probesize", "32", "-analyzeduration", "0", "-f", "mpjpeg", "-i", "pipe:0", "-c", "copy", "-f",
                "mpjpeg", "-flush_packets", "1", "-listen", "1", "-content_type",
                "multipart/x-mixed-replace;boundary=ffmpeg", url.absoluteString,
            ]
        case .gstreamer:
            // tcpserversink speaks no HTTP: the response head goes out as the stream header every
            // client gets first (caps' streamheader), then the parts.
            let head =
                "HTTP/1.0 200 OK\r\nContent-Type: multipart/x-mixed-replace;boundary=gst\r\nCache-Control: no-cache\r\n\r\n"
            let hex = head.utf8.map { String(format: "%02x", $0) }.joined()
            process.arguments = [
                "-q", "fdsrc", "fd=0", "blocksize=65536", "!", "multipartdemux", "single-stream=true", "!",
                "image/jpeg", "!", "multipartmux", "boundary=gst", "!", "capssetter", "join=true",
                "caps=multipart/x-mixed-replace,streamheader=(buffer)<\(hex)>", "!", "tcpserversink",
                "host=127.0.0.1", "port=\(port)", "sync=false",
            ]
        }
        process.standardInput = stdin
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        let reader = errors.fileHandleForReading
        Thread.detachNewThread { [self] in
            while case let data = reader.availableData, !data.isEmpty {
                errorText.withLock { $0 += String(decoding: data, as: UTF8.self) }
            }
        }
        let writer = stdin.fileHandleForWriting.fileDescriptor
        Thread.detachNewThread { [self] in
            writeLoop(writer)
            writerDone.signal()
        }
    }

    deinit { stop() }

    /// What the peer printed on stderr so far.
    var printed: String { errorText.withLock { $0 } }

    /// Frames replaced in the mailbox before the peer took them.
    var replaced: Int { mailbox.withLock { $0.replaced } }

    /// Hands `jpeg` to the peer (newest wins).
    func hand(_ jpeg: [UInt8]) {
        let wasEmpty = mailbox.withLock { state -> Bool in
            if state.frame != nil { state.replaced += 1 }
            let empty = state.frame == nil
            state.frame = jpeg
            return empty
        }
        if wasEmpty { wake.signal() }
    }

    private func writeLoop(_ descriptor: Int32) {
        signal(SIGPIPE, SIG_IGN)
        while true {
            wake.wait()
            let (frame, closed) = mailbox.withLock { state in
                defer { state.frame = nil }
                return (state.frame, state.closed)
            }
            if closed { return }
            guard let frame else { continue }
            let head = Array("--vfbench\r\nContent-Type: image/jpeg\r\nContent-Length: \(frame.count)\r\n\r\n".utf8)
            guard Self.write(descriptor, head), Self.write(descriptor, frame), Self.write(descriptor, [13, 10])
            else { return }
        }
    }

    private static func write(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
    }

    /// Whether something listens on the peer's port now (read from /proc/net/tcp, so no client
    /// connection is spent: ffmpeg serves only one).
    var isListening: Bool {
        guard let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else { return false }
        let local = String(format: "0100007F:%04X", port)
        return table.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && fields[1] == local && fields[3] == "0A"
        }
    }

    /// CPU seconds the peer process has used so far.
    var cpuSeconds: Double { Self.cpuSeconds(of: process.processIdentifier) }

    /// CPU seconds (user + system) of process `pid`, from /proc.
    static func cpuSeconds(of pid: pid_t) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15 (1-based, whole line).
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Ends the writer and the peer.
    func stop() {
        let first = mailbox.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        wake.signal()
        if process.isRunning {
            process.terminate()
            let deadline = Date().addingTimeInterval(2)
            while process.isRunning && Date() < deadline { usleep(10000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        // The writer returns once the peer is gone (EPIPE) or at the wake-up above.
        _ = writerDone.wait(timeout: .now() + 2)
        try? stdin.fileHandleForWriting.close()
    }

    /// A loopback port free now.
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else { throw BenchError("no free loopback port: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
