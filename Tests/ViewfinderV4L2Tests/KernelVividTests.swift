import CV4L2
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ViewfinderCore
@testable import ViewfinderTestSupport
@testable import ViewfinderV4L2

#if canImport(Glibc)
    import Glibc
#endif

/// The kernel's vivid driver, as `Scripts/test.sh` loads it in the VM (`Scripts/kernel-vm.sh`):
/// webcam-like capture nodes, `v4l2-ctl` the oracle.
enum Vivid {
    /// vivid's video capture nodes, in node order (`/sys/class/video4linux/videoN/name` is
    /// `vivid-NNN-vid-cap`).
    static func nodes() -> [String] {
        let classDirectory = "/sys/class/video4linux"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: classDirectory)) ?? []
        return
            names
            .filter { name in
                let label = (try? String(contentsOfFile: "\(classDirectory)/\(name)/name", encoding: .utf8)) ?? ""
                return label.hasPrefix("vivid-") && label.contains("vid-cap")
            }
            .sorted { Int($0.dropFirst(5)) ?? 0 < Int($1.dropFirst(5)) ?? 0 }
            .map { "/dev/\($0)" }
    }

    /// The production backends of the vivid nodes, through `path` (libv4l2, or plain ioctls for
    /// native formats): scanned once per path (probing every node is slow on an emulated CPU).
    static func backends(streaming path: V4L2StreamingPath) -> [V4L2CameraBackend] {
        if let cached = scanned.withLock({ $0[path] }) { return cached }
        let found = V4L2DeviceProvider(interface: LibV4L2Interface(streamingPath: path)).presentCameras()
        scanned.withLock { $0[path] = found }
        return found
    }
    private static let scanned = Mutex<[V4L2StreamingPath: [V4L2CameraBackend]]>([:])

    /// The production backend of the vivid node `node`, through `path`.
    static func backend(_ node: String, streaming path: V4L2StreamingPath) throws -> V4L2CameraBackend {
        try #require(backends(streaming: path).first { $0.path == node }, "no backend for \(node)")
    }

    /// `v4l2-ctl -d node arguments…`; fails the test when it fails.
    @discardableResult
    static func ctl(_ node: String, _ arguments: String...) throws -> String {
        let (status, output) = try KernelVM.run("v4l2-ctl", ["-d", node] + arguments)
        try #require(status == 0, "v4l2-ctl \(arguments.joined(separator: " ")) failed: \(output)")
        return output
    }

    /// A vivid control's ID from `v4l2-ctl --list-ctrls` (vivid's own controls have no V4L2 name).
    static func controlID(_ node: String, _ name: String) throws -> UInt32 {
        let listing = try ctl(node, "--list-ctrls")
        let line = try #require(
            listing.split(separator: "\n").first { $0.split(separator: " ").first == Substring(name) }, "no \(name)")
        let hex = try #require(line.split(separator: " ").dropFirst().first?.dropFirst(2))
        return try #require(UInt32(hex, radix: 16))
    }

    /// Presses a vivid button control (an error injection) through the production backend.
    static func press(_ node: String, _ name: String, on backend: V4L2CameraBackend) throws {
        try backend.setV4L2Value(1, of: try controlID(node, name))
    }

    /// Static pictures: vivid's text overlay off, no movement, the 75% colour bars.
    static func makeStill(_ node: String) throws {
        try ctl(node, "-c", "osd_text_mode=2,horizontal_movement=3,vertical_movement=3,test_pattern=0")
    }
}

/// A sink that keeps the first frame's bytes and every frame's sequence number and time.
final class KernelFrameSink: DeviceStreamSink, @unchecked Sendable {  // unchecked: state is in a Mutex.
    struct State {
        var firstBytes: [UInt8]?
        var sequences: [UInt64] = []
        var times: [MediaTime] = []
        var sizes: [Int] = []
        var errors: [CaptureError] = []
        var skipped = 0
    }
    let state = Mutex(State())
    let arrived = DispatchSemaphore(value: 0)
    let failed = DispatchSemaphore(value: 0)

    func deviceDidCapture(_ frame: CapturedSample) {
        state.withLock { state in
            if state.firstBytes == nil {
                state.firstBytes = Array(
                    UnsafeRawBufferPointer(start: frame.buffer.baseAddress, count: frame.buffer.dataSize))
            }
            state.sequences.append(frame.sequenceNumber)
            state.times.append(frame.presentationTime)
            state.sizes.append(frame.buffer.dataSize)
        }
        arrived.signal()
    }

    func deviceDidFail(_ error: CaptureError) {
        state.withLock { $0.errors.append(error) }
        failed.signal()
    }

    func deviceDidSkipFrame(_ cause: SkippedFrameCause) {
        state.withLock { $0.skipped += 1 }
    }

    /// Waits for `count` more frames (generous: the VM emulates its CPU).
    func waitForFrames(_ count: Int = 1, timeout: Double = 60) -> Bool {
        (0..<count).allSatisfy { _ in arrived.wait(timeout: .now() + timeout) == .success }
    }
}

/// The V4L2 backend against the kernel's vivid driver, through both streaming paths. Skipped
/// outside the kernel VM; inside it, a missing vivid fails.
@Suite("Kernel vivid", .serialized, .enabled(if: KernelVM.isInside, "runs in Scripts/kernel-vm.sh's VM"))
struct KernelVividTests {
    static let paths: [V4L2StreamingPath] = [.automatic, .libv4l2]
    static let thirtyFPS = MediaTime(value: 1, timescale: 30)

    @Test("vivid is loaded: the VM offers its capture nodes")
    func loaded() {
        #expect(Vivid.nodes().count >= 3, "modprobe vivid n_devs=… node_types=0x1,… (Scripts/test.sh)")
    }

    @Test("formats, sizes and frame intervals equal v4l2-ctl --list-formats-ext", arguments: paths)
    func enumeration(path: V4L2StreamingPath) throws {
        let node = try #require(Vivid.nodes().first)
        let listing = try Vivid.ctl(node, "--list-formats-ext")
        // "FOURCC WxH fps,fps,…" for every size of every format Viewfinder handles.
        var expected: [String] = []
        var fourCC: UInt32?
        var size = ""
        var rates: [String] = []
        func flush() {
            if let fourCC, !size.isEmpty {
                expected.append("\(V4L2FourCC.string(fourCC)) \(size) \(rates.joined(separator: ","))")
            }
            size = ""
            rates = []
        }
        for line in listing.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line.hasPrefix("["), let open = line.firstIndex(of: "'") {
                flush()
                let name = String(line[line.index(after: open)...].prefix(4))
                let code = V4L2FourCC.code(name)
                fourCC = code.flatMap { V4L2FourCC.pixelFormat($0) != nil ? $0 : nil }
            } else if line.hasPrefix("Size: Discrete ") {
                flush()
                size = String(line.dropFirst("Size: Discrete ".count))
            } else if line.hasPrefix("Interval: Discrete "), let open = line.firstIndex(of: "(") {
                rates.append(String(line[line.index(after: open)...].prefix { $0 != " " }))
            }
        }
        flush()
        #expect(expected.count > 10, "\(listing)")
        let backend = try Vivid.backend(node, streaming: path)
        let found = backend.formats.filter { !$0.isEmulated }.map { format in
            let fps = format.videoSupportedFrameRateRanges.map {
                String(format: "%.3f", 1 / $0.minFrameDuration.seconds)
            }
            return
                "\(V4L2FourCC.string(format.backendCode)) \(format.dimensions.width)x\(format.dimensions.height) \(fps.joined(separator: ","))"
        }
        #expect(found == expected)
        // libv4l2 adds emulated formats (RGB from YUYV, …); each is a size the driver has.
        let sizes = Set(backend.formats.filter { !$0.isEmulated }.map { "\($0.dimensions)" })
        #expect(backend.formats.filter(\.isEmulated).allSatisfy { sizes.contains("\($0.dimensions)") })
    }

    @Test("every format vivid offers delivers the frames v4l2-ctl --stream-to captures", arguments: paths)
    func frames(path: V4L2StreamingPath) throws {
        let node = try #require(Vivid.nodes().first)
        try Vivid.makeStill(node)
        let backend = try Vivid.backend(node, streaming: path)
        let native = backend.formats.filter {
            !$0.isEmulated && $0.dimensions.width == 640 && $0.dimensions.height == 360
        }
        #expect(Set(native.map(\.pixelFormat)).isSuperset(of: [.yuyv, .i420, .nv12VideoRange, .bgra]))
        for format in native {
            let name = V4L2FourCC.string(format.backendCode)
            let reference = "/tmp/vivid-\(name.trimmingCharacters(in: .whitespaces)).raw"
            try Vivid.ctl(
                node, "--set-fmt-video=width=640,height=360,pixelformat=\(name)", "--stream-mmap", "--stream-count=1",
                "--stream-to=\(reference)")
            let expected = try [UInt8](Data(contentsOf: URL(fileURLWithPath: reference)))
            let before = KernelVM.resources()
            let sink = KernelFrameSink()
            _ = try backend.startStreaming(format: format, frameDuration: Self.thirtyFPS, sink: sink)
            let got = sink.waitForFrames(2)
            backend.stopStreaming()
            #expect(got, "\(name): no frames")
            let bytes = sink.state.withLock { $0.firstBytes } ?? []
            #expect(bytes.count == expected.count, "\(name)")
            #expect(bytes == expected, "\(name): the pixels differ from v4l2-ctl's")
            #expect(sink.state.withLock { $0.errors }.isEmpty)
            #expect(KernelVM.resources() == before, "\(name): a descriptor or mapping was left behind")
        }
    }

    @Test("controls agree with v4l2-ctl --list-ctrls-menus; values set on either side are read on the other")
    func controls() throws {
        let node = try #require(Vivid.nodes().first)
        let backend = try Vivid.backend(node, streaming: .automatic)
        let listing = try Vivid.ctl(node, "--list-ctrls-menus")
        struct Listed {
            var type: String
            var fields: [String: String]
            var menu: [Int: String] = [:]
        }
        var listed: [UInt32: Listed] = [:]
        var current: UInt32?
        for line in listing.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            if parts.count >= 3, parts[1].hasPrefix("0x"), let id = UInt32(parts[1].dropFirst(2), radix: 16) {
                let type = parts[2].trimmingCharacters(in: CharacterSet(charactersIn: "():"))
                var fields: [String: String] = [:]
                for part in parts where part.contains("=") {
                    let pair = part.split(separator: "=", maxSplits: 1)
                    if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
                }
                listed[id] = Listed(type: type, fields: fields)
                current = id
            } else if let current, line.hasPrefix("\t\t\t\t"), let colon = line.firstIndex(of: ":") {
                let index = Int(line[..<colon].trimmingCharacters(in: .whitespaces))!
                var name = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                if listed[current]?.type == "intmenu", let space = name.firstIndex(of: " ") {
                    name = String(name[..<space])
                }
                listed[current]?.menu[index] = name
            }
        }
        let kinds: [String: CaptureDevice.Control.Kind] = [
            "int": .integer, "bool": .boolean, "menu": .menu, "intmenu": .menu, "button": .button,
        ]
        let ours = try backend.v4l2Controls()
        let comparable = listed.filter { kinds[$0.value.type] != nil }
        #expect(Set(ours.map(\.id)).symmetricDifference(comparable.keys).isEmpty, "\(listing)")
        for control in ours {
            guard let oracle = listed[control.id] else { continue }
            #expect(kinds[oracle.type] == control.kind, "\(control.name)")
            if oracle.type == "int" || oracle.type == "menu" || oracle.type == "intmenu" {
                #expect(oracle.fields["min"].flatMap { Int($0) } == control.minimum, "\(control.name) min")
                #expect(oracle.fields["max"].flatMap { Int($0) } == control.maximum, "\(control.name) max")
                #expect(oracle.fields["default"].flatMap { Int($0) } == control.defaultValue, "\(control.name) default")
            }
            if oracle.type == "int" {
                #expect(oracle.fields["step"].flatMap { Int($0) } == control.step, "\(control.name) step")
            }
            if oracle.type == "bool" {
                #expect(oracle.fields["default"].flatMap { Int($0) } == control.defaultValue, "\(control.name) default")
            }
            if control.kind == .menu {
                #expect(
                    Dictionary(uniqueKeysWithValues: control.menuItems.map { ($0.value, $0.name) }) == oracle.menu,
                    "\(control.name) menu")
            }
            let flags = oracle.fields["flags"] ?? ""
            #expect(control.isReadOnly == flags.contains("read-only"), "\(control.name) read-only")
        }
        // Set through the backend, read by v4l2-ctl; set by v4l2-ctl, read through the backend.
        try backend.setV4L2Value(201, of: V4L2ControlID.brightness)
        #expect(try Vivid.ctl(node, "-C", "brightness").contains("brightness: 201"))
        try Vivid.ctl(node, "-c", "contrast=77")
        #expect(try backend.v4l2Value(of: V4L2ControlID.contrast) == 77)
        // Through the device API: configuration locked, then the generic control.
        let device = DeviceRegistry.shared.device(for: backend)
        let brightness = try #require(device.controls.first { $0.name == "Brightness" })
        try device.lockForConfiguration()
        try device.setValue(brightness.defaultValue, for: brightness.id)
        device.unlockForConfiguration()
        #expect(try Vivid.ctl(node, "-C", "brightness").contains("brightness: \(brightness.defaultValue)"))
        try Vivid.ctl(node, "-c", "contrast=128")
    }

    @Test("several vivid instances stream at once", arguments: paths)
    func severalInstances(path: V4L2StreamingPath) throws {
        let nodes = Array(Vivid.nodes().prefix(3))
        try #require(nodes.count == 3)
        let backends = try nodes.map { try Vivid.backend($0, streaming: path) }
        let sinks = backends.map { _ in KernelFrameSink() }
        for (backend, sink) in zip(backends, sinks) {
            let format = try #require(backend.formats.first { $0.pixelFormat == .yuyv && $0.dimensions.width == 320 })
            _ = try backend.startStreaming(format: format, frameDuration: Self.thirtyFPS, sink: sink)
        }
        defer { for backend in backends { backend.stopStreaming() } }
        for (node, sink) in zip(nodes, sinks) { #expect(sink.waitForFrames(3), "\(node)") }
    }

    @Test("more than 16 cameras stream in one process through the direct path (libv4l2 stops at 16)")
    func manyCameras() throws {
        let nodes = Vivid.nodes()
        try #require(nodes.count > 16, "load vivid with n_devs=17 or more")
        // libv4l2 alone (Viewfinder before the direct path) opens at most 16 at once.
        let libv4l2 = LibV4L2Interface(streamingPath: .libv4l2)
        var opened: [Int32] = []
        var refusal: V4L2Errno?
        for node in nodes {
            do {
                opened.append(try libv4l2.open(node, flags: O_RDWR | O_NONBLOCK))
            } catch {
                refusal = error
                break
            }
        }
        for fd in opened { libv4l2.close(fd) }
        #expect(
            opened.count == 16 && refusal != nil, "libv4l2 opened \(opened.count), then \(String(describing: refusal))")
        let backends = try nodes.map { try Vivid.backend($0, streaming: .automatic) }
        let sinks = backends.map { _ in KernelFrameSink() }
        let before = KernelVM.resources()
        for (backend, sink) in zip(backends, sinks) {
            let format = try #require(backend.formats.first { $0.pixelFormat == .yuyv && $0.dimensions.width == 320 })
            _ = try backend.startStreaming(
                format: format, frameDuration: MediaTime(value: 1, timescale: 10), sink: sink)
        }
        for (node, sink) in zip(nodes, sinks) { #expect(sink.waitForFrames(2, timeout: 120), "\(node)") }
        #expect(KernelVM.resources().descriptors >= before.descriptors + nodes.count)
        for backend in backends { backend.stopStreaming() }
        #expect(sinks.allSatisfy { $0.state.withLock { $0.errors }.isEmpty })
        #expect(KernelVM.resources() == before)
    }

    @Test("setActiveFormat and the frame rate change on a running session; v4l2-ctl sees them")
    func reconfigureRunning() throws {
        let node = try #require(Vivid.nodes().dropFirst().first)
        let backend = try Vivid.backend(node, streaming: .automatic)
        let device = DeviceRegistry.shared.device(for: backend)
        let delegate = RecordingDelegate(readsPattern: false)
        let (session, _) = try makeSession(device: device, delegate: delegate, preset: .inputPriority)
        let small = try #require(device.formats.first { $0.pixelFormat == .yuyv && $0.dimensions.width == 320 })
        let large = try #require(device.formats.first { $0.pixelFormat == .yuyv && $0.dimensions.width == 640 })
        try device.lockForConfiguration()
        device.activeFormat = small
        device.unlockForConfiguration()
        session.startRunning()
        defer { session.stopRunning() }
        #expect(delegate.waitForMoreFrames(2, timeout: 60))
        #expect(delegate.frames.last?.width == 320)
        try device.lockForConfiguration()
        device.activeFormat = large
        device.activeVideoMinFrameDuration = MediaTime(value: 1, timescale: 10)
        device.unlockForConfiguration()
        #expect(delegate.waitUntil(timeout: 60) { $0.width == 640 })
        #expect(try Vivid.ctl(node, "--get-fmt-video").contains("640/360"))
        #expect(try Vivid.ctl(node, "--get-parm").contains("10.000 (10/1)"))
    }
}

extension RecordingDelegate {
    /// Waits until a frame satisfying `condition` arrives.
    func waitUntil(timeout: Double, _ condition: (Frame) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if frames.contains(where: condition) { return true }
            _ = waitForMoreFrames(1, timeout: 1)
        }
        return frames.contains(where: condition)
    }
}

/// vivid's error injection, through the production backend: each fault ends in the error or
/// count the contract promises, with nothing left behind, and the next stream works.
@Suite("Kernel vivid faults", .serialized, .enabled(if: KernelVM.isInside, "runs in Scripts/kernel-vm.sh's VM"))
struct KernelVividFaultTests {
    static let thirtyFPS = MediaTime(value: 1, timescale: 30)

    /// A node the other vivid tests leave alone (the third).
    static func node() throws -> String { try #require(Vivid.nodes().dropFirst(2).first) }

    static func format(_ backend: V4L2CameraBackend) throws -> CaptureDevice.Format {
        try #require(backend.formats.first { $0.pixelFormat == .yuyv && $0.dimensions.width == 320 && !$0.isEmulated })
    }

    @Test(
        "an ioctl that fails while a stream starts (REQBUFS, QBUF, STREAMON) is a typed error, leaves nothing behind, and the next start works",
        arguments: ["inject_vidioc_reqbufs_error", "inject_vidioc_qbuf_error", "inject_vidioc_streamon_error"])
    func startFailures(injection: String) throws {
        let node = try Self.node()
        let backend = try Vivid.backend(node, streaming: .automatic)
        let format = try Self.format(backend)
        let before = KernelVM.resources()
        try Vivid.press(node, injection, on: backend)
        let sink = KernelFrameSink()
        #expect(throws: CaptureError.self, "\(injection)") {
            _ = try backend.startStreaming(format: format, frameDuration: Self.thirtyFPS, sink: sink)
            backend.stopStreaming()
        }
        #expect(KernelVM.resources() == before, "\(injection): a descriptor or mapping was left behind")
        _ = try backend.startStreaming(format: format, frameDuration: Self.thirtyFPS, sink: sink)
        #expect(sink.waitForFrames(2), "\(injection): the next stream delivers")
        backend.stopStreaming()
        #expect(KernelVM.resources() == before)
    }

    @Test("a buffer the driver flags V4L2_BUF_FLAG_ERROR is skipped and counted; the stream goes on")
    func errorFlag() throws {
        let node = try Self.node()
        let backend = try Vivid.backend(node, streaming: .automatic)
        let sink = KernelFrameSink()
        _ = try backend.startStreaming(format: try Self.format(backend), frameDuration: Self.thirtyFPS, sink: sink)
        defer { backend.stopStreaming() }
        #expect(sink.waitForFrames(2))
        try Vivid.press(node, "inject_v4l2_buf_flag_error", on: backend)
        // The buffer after the press carries the flag: wait for four frames delivered after it.
        let pressed = sink.state.withLock { $0.sequences.count }
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, sink.state.withLock({ $0.sequences.count < pressed + 4 }) {
            _ = sink.waitForFrames(1)
        }
        #expect(sink.state.withLock { $0.sequences.count } >= pressed + 4)
        #expect(sink.state.withLock { $0.skipped } == 1)
        #expect(sink.state.withLock { $0.errors }.isEmpty)
    }

    @Test("a fatal streaming error ends the stream with an error; nothing is left behind; a new stream works")
    func fatalError() throws {
        let node = try Self.node()
        let backend = try Vivid.backend(node, streaming: .automatic)
        let before = KernelVM.resources()
        let sink = KernelFrameSink()
        _ = try backend.startStreaming(format: try Self.format(backend), frameDuration: Self.thirtyFPS, sink: sink)
        #expect(sink.waitForFrames(2))
        try Vivid.press(node, "inject_fatal_streaming_error", on: backend)
        #expect(sink.failed.wait(timeout: .now() + 60) == .success)
        backend.stopStreaming()
        #expect(KernelVM.resources() == before)
        let again = KernelFrameSink()
        _ = try backend.startStreaming(format: try Self.format(backend), frameDuration: Self.thirtyFPS, sink: again)
        #expect(again.waitForFrames(2))
        backend.stopStreaming()
    }

    @Test("dropped buffers show up as sequence gaps the session counts as drops")
    func droppedBuffers() throws {
        let node = try Self.node()
        let backend = try Vivid.backend(node, streaming: .automatic)
        let id = try Vivid.controlID(node, "percentage_of_dropped_buffers")
        try backend.setV4L2Value(50, of: id)
        defer { try? backend.setV4L2Value(0, of: id) }
        let device = DeviceRegistry.shared.device(for: backend)
        let delegate = RecordingDelegate(readsPattern: false)
        try device.lockForConfiguration()
        device.activeFormat = try Self.format(backend)
        device.unlockForConfiguration()
        let (session, _) = try makeSession(device: device, delegate: delegate, preset: .inputPriority)
        session.startRunning()
        #expect(delegate.waitForMoreFrames(10, timeout: 120))
        session.stopRunning()
        let sequences = delegate.frames.map(\.sequenceNumber)
        let missing = Int(sequences.last! - sequences.first!) + 1 - sequences.count
        #expect(missing > 0, "half the buffers are dropped: \(sequences)")
        let counted = delegate.drops.filter { $0.reason == .discontinuity || $0.reason == .frameWasLate }.map(\.count)
            .reduce(0, +)
        #expect(counted >= missing, "every missing frame is reported dropped: \(delegate.drops)")
    }

    @Test("the driver's 32-bit sequence number wraps; frame numbers go on increasing")
    func sequenceWrap() throws {
        let node = try Self.node()
        let backend = try Vivid.backend(node, streaming: .automatic)
        let id = try Vivid.controlID(node, "wrap_sequence_number")
        try backend.setV4L2Value(1, of: id)
        defer { try? backend.setV4L2Value(0, of: id) }
        let sink = KernelFrameSink()
        let format = try #require(backend.formats.first { $0.pixelFormat == .yuyv && $0.dimensions.width == 320 })
        _ = try backend.startStreaming(format: format, frameDuration: MediaTime(value: 1, timescale: 60), sink: sink)
        defer { backend.stopStreaming() }
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline, (sink.state.withLock { $0.sequences.last } ?? 0) <= UInt64(UInt32.max) {
            _ = sink.waitForFrames(1)
        }
        let sequences = sink.state.withLock { $0.sequences }
        #expect(sequences.first.map { $0 >= 0xFFFF_FF00 } == true, "vivid starts near the wrap: \(sequences.prefix(3))")
        #expect(sequences.last.map { $0 > UInt64(UInt32.max) } == true)
        // Never back across the wrap. Not strictly increasing: vivid derives its sequence number
        // from the time elapsed since streaming began, and in the TCG VM under load it once gave
        // its first two buffers the same number (0xffffff80 twice). What the backend must keep is
        // the 64-bit number: past 2^32 it goes on, never back to 0.
        #expect(
            zip(sequences, sequences.dropFirst()).allSatisfy { $0 <= $1 },
            "\(sequences.map { String($0, radix: 16) })")
        #expect(Set(sequences).count > sequences.count / 2, "the numbers advance")
    }

    @Test(
        "the driver's timestamps wrap (vivid's 64-bit and 32-bit wrap): presentation times go on increasing, nothing traps",
        arguments: [1, 2])
    func timestampWrap(mode: Int) throws {
        let node = try Self.node()
        let backend = try Vivid.backend(node, streaming: .automatic)
        let id = try Vivid.controlID(node, "wrap_timestamp")
        try backend.setV4L2Value(mode, of: id)
        defer { try? backend.setV4L2Value(0, of: id) }
        let sink = KernelFrameSink()
        let format = try #require(backend.formats.first { $0.pixelFormat == .yuyv && $0.dimensions.width == 320 })
        _ = try backend.startStreaming(format: format, frameDuration: MediaTime(value: 1, timescale: 10), sink: sink)
        defer { backend.stopStreaming() }
        // vivid starts 16 s before the wrap: stream past it.
        let start = HostClock().now()
        while (HostClock().now() - start).seconds < 20, sink.state.withLock({ $0.errors }).isEmpty {
            _ = sink.waitForFrames(1)
        }
        #expect(sink.waitForFrames(2))
        let times = sink.state.withLock { $0.times }
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "\(times.map(\.nanoseconds))")
        #expect(sink.state.withLock { $0.errors }.isEmpty)
    }

    @Test(
        "a camera unplugged mid-stream (vivid's disconnect) ends the stream with deviceDisconnected; back, it streams again"
    )
    func disconnect() throws {
        let node = try #require(Vivid.nodes().last)
        try #require(Vivid.nodes().count > 17, "the disconnect test takes a spare node")
        let provider = V4L2DeviceProvider(interface: LibV4L2Interface())
        let backend = try #require(provider.presentCameras().first { $0.path == node })
        let device = DeviceRegistry.shared.device(for: backend)
        let delegate = RecordingDelegate(readsPattern: false)
        try device.lockForConfiguration()
        device.activeFormat = try Self.format(backend)
        device.unlockForConfiguration()
        let (session, _) = try makeSession(device: device, delegate: delegate, preset: .inputPriority)
        let errors = NotificationRecorder(CaptureSession.runtimeErrorNotification, object: session)
        let before = KernelVM.resources()
        session.startRunning()
        #expect(delegate.waitForMoreFrames(2, timeout: 60))
        try Vivid.press(node, "disconnect", on: backend)
        #expect(errors.wait(timeout: 60))
        #expect(errors.lastError?.code == .deviceDisconnected, "\(String(describing: errors.lastError))")
        session.stopRunning()
        #expect(KernelVM.resources() == before)
        // vivid (6.1) fails the stream as unplugged but keeps its node, which opens again: the
        // camera is back, and a session started on it streams.
        #expect(provider.presentCameras().contains { $0.path == node })
        session.startRunning()
        #expect(delegate.waitForMoreFrames(2, timeout: 60), "a session streams from the camera once it is back")
        session.stopRunning()
    }
}
