import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ViewfinderCore
@testable import ViewfinderTestSupport
@testable import ViewfinderV4L2

/// A real `uvcvideo` camera in the kernel VM: the configfs UVC gadget on `usbip-vudc`, fed by
/// `Tests/UVCGadget/viewfinder_uvc_gadget.c` and attached back over USB/IP on the VM's loopback
/// (`Tests/UVCGadget/setup.sh`).
enum UVCGadget {
    static let setup = "Tests/UVCGadget/setup.sh"

    /// The uvcvideo capture node, attaching the gadget when it is not attached.
    static func attach() throws -> String {
        let (status, output) = try KernelVM.run(setup, ["up"])
        try #require(status == 0, "Tests/UVCGadget/setup.sh up failed: \(output)")
        let node = try #require(output.split(separator: "\n").last.map(String.init))
        try #require(node.hasPrefix("/dev/video"), "setup.sh up printed no node: \(output)")
        return node
    }

    /// Unplugs it (`usbip detach`).
    static func detach() throws {
        let (status, output) = try KernelVM.run(setup, ["detach"])
        try #require(status == 0, "Tests/UVCGadget/setup.sh detach failed: \(output)")
    }

    /// The gadget program's log: one line per state change (`brightness 77`, `stream on: …`).
    static func log() -> String {
        (try? String(contentsOfFile: "/tmp/uvc-gadget/gadget.log", encoding: .utf8)) ?? ""
    }

    /// The production backend of `node`, from a provider of a directory that holds only a link
    /// to it (`/dev` also holds vivid's 22 nodes, slow to probe on an emulated CPU).
    static func backend(_ node: String) throws -> V4L2CameraBackend {
        let directory = "/tmp/uvc-camera"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let link = "\(directory)/\((node as NSString).lastPathComponent)"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: node)
        let provider = V4L2DeviceProvider(
            directory: V4L2DevDirectory(path: directory), interface: LibV4L2Interface(streamingPath: .automatic))
        return try #require(provider.presentCameras().first { $0.path == link }, "no backend for \(node)")
    }
}

/// A sink that keeps each frame's number as the gadget stamped it (YUYV: the first four bytes,
/// little-endian, then their complement and "VFUV").
final class UVCNumberSink: DeviceStreamSink, @unchecked Sendable {  // unchecked: state is in a Mutex.
    struct State {
        var numbers: [UInt32] = []
        var unstamped = 0
        var errors: [CaptureError] = []
    }
    let state = Mutex(State())
    let arrived = DispatchSemaphore(value: 0)
    let failed = DispatchSemaphore(value: 0)

    func deviceDidCapture(_ frame: CapturedSample) {
        let bytes = UnsafeRawBufferPointer(start: frame.buffer.baseAddress, count: min(frame.buffer.dataSize, 12))
        state.withLock { state in
            guard bytes.count == 12, Array(bytes[8..<12]) == Array("VFUV".utf8) else {
                state.unstamped += 1
                return
            }
            let number = bytes.loadUnaligned(as: UInt32.self).littleEndian
            let complement = bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self).littleEndian
            if complement == ~number { state.numbers.append(number) } else { state.unstamped += 1 }
        }
        arrived.signal()
    }

    func deviceDidFail(_ error: CaptureError) {
        state.withLock { $0.errors.append(error) }
        failed.signal()
    }

    func deviceDidSkipFrame(_ cause: SkippedFrameCause) {}

    func waitForFrames(_ count: Int, timeout: Double) -> Bool {
        (0..<count).allSatisfy { _ in arrived.wait(timeout: .now() + timeout) == .success }
    }
}

/// The V4L2 backend against the kernel's own UVC driver. Skipped outside the kernel VM.
@Suite("Kernel uvcvideo", .serialized, .enabled(if: KernelVM.isInside, "runs in Scripts/kernel-vm.sh's VM"))
struct KernelUVCTests {
    @Test("the UVC gadget, attached over USB/IP, is a uvcvideo camera")
    func attached() throws {
        let node = try UVCGadget.attach()
        let info = try Vivid.ctl(node, "--info")
        #expect(info.contains("uvcvideo"), "\(info)")
        #expect(info.contains("Viewfinder UVC Gadget"), "\(info)")
        let backend = try UVCGadget.backend(node)
        #expect(backend.localizedName.contains("Viewfinder UVC Gadget"), "\(backend.localizedName)")
    }

    @Test("formats, sizes and intervals as uvcvideo parsed the descriptors equal v4l2-ctl --list-formats-ext")
    func enumeration() throws {
        let node = try UVCGadget.attach()
        let listing = try Vivid.ctl(node, "--list-formats-ext")
        var expected: [String] = []
        var fourCC = ""
        var size = ""
        var rates: [String] = []
        func flush() {
            if !fourCC.isEmpty, !size.isEmpty { expected.append("\(fourCC) \(size) \(rates.joined(separator: ","))") }
            size = ""
            rates = []
        }
        for line in listing.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line.hasPrefix("["), let open = line.firstIndex(of: "'") {
                flush()
                fourCC = String(line[line.index(after: open)...].prefix(4))
            } else if line.hasPrefix("Size: Discrete ") {
                flush()
                size = String(line.dropFirst("Size: Discrete ".count))
            } else if line.hasPrefix("Interval: Discrete "), let open = line.firstIndex(of: "(") {
                rates.append(String(line[line.index(after: open)...].prefix { $0 != " " }))
            }
        }
        flush()
        // What the gadget's descriptors declare (Tests/UVCGadget/setup.sh): uvcvideo parsed it all.
        #expect(
            expected == [
                "YUYV 160x120 30.000,15.000,10.000", "YUYV 320x240 30.000,15.000,10.000",
                "MJPG 320x240 30.000,15.000,10.000", "MJPG 640x360 30.000,15.000,10.000",
            ], "\(listing)")
        let backend = try UVCGadget.backend(node)
        let found = backend.formats.filter { !$0.isEmulated }.map { format in
            let fps = format.videoSupportedFrameRateRanges.map {
                String(format: "%.3f", 1 / $0.minFrameDuration.seconds)
            }
            return
                "\(V4L2FourCC.string(format.backendCode)) \(format.dimensions.width)x\(format.dimensions.height) \(fps.joined(separator: ","))"
        }
        #expect(found == expected)
    }

    @Test(
        "the processing unit's brightness: set through the backend it reaches the gadget; set by v4l2-ctl it reads back"
    )
    func brightness() throws {
        let node = try UVCGadget.attach()
        let backend = try UVCGadget.backend(node)
        let control = try #require(try backend.v4l2Controls().first { $0.id == V4L2ControlID.brightness })
        #expect(control.minimum == 0 && control.maximum == 255 && control.defaultValue == 128)
        try backend.setV4L2Value(77, of: V4L2ControlID.brightness)
        #expect(try Vivid.ctl(node, "-C", "brightness").contains("brightness: 77"))
        #expect(UVCGadget.log().contains("brightness 77"), "the SET_CUR did not reach the gadget: \(UVCGadget.log())")
        try Vivid.ctl(node, "-c", "brightness=201")
        #expect(try backend.v4l2Value(of: V4L2ControlID.brightness) == 201)
        try backend.setV4L2Value(128, of: V4L2ControlID.brightness)
    }

    @Test(
        "uvcvideo answers UVCIOC_CTRL_QUERY for a unit that is not an extension unit with ENOENT, as the plug-in camera does; the descriptors are read from sysfs"
    )
    func extensionUnitQuery() throws {
        let node = try UVCGadget.attach()
        // The gadget declares no extension unit: its descriptors are read, and hold none.
        #expect(V4L2Sysfs().identity(ofNode: node).extensionUnits == [])
        let interface = LibV4L2Interface()
        let fd = try interface.open(node, flags: O_RDWR | O_NONBLOCK)
        defer { interface.close(fd) }
        // Unit 2 is the gadget's processing unit, 0x42 no unit at all.
        for unit in [2, 0x42] {
            #expect(throws: V4L2Errno(ENOENT)) {
                try UVCExtensionQuery.length(unit: unit, selector: 1, fd: fd, interface: interface)
            }
        }
        // A map that names a unit ID is not used where the descriptors say which units there are.
        let guid = UUID()
        try CaptureDevice.registerExtensionUnit(
            .init(
                guid: guid, name: "Absent", unitID: 2,
                controls: [
                    .init(id: .init(rawValue: "absent"), name: "Absent", selector: 2, byteCount: 1, type: .boolean)
                ]
            ))
        defer { CaptureDevice.unregisterExtensionUnit(guid: guid) }
        let backend = try UVCGadget.backend(node)
        let ids = try backend.controls().map(\.id.rawValue)
        #expect(!ids.contains("absent"))
        #expect(ids.contains("brightness"))
    }

    @Test("unplugged mid-stream (usbip detach): the stream ends with deviceDisconnected; nothing is left behind")
    func unplug() throws {
        let node = try UVCGadget.attach()
        let backend = try UVCGadget.backend(node)
        let format = try #require(backend.formats.first { $0.pixelFormat == .yuyv && $0.dimensions.width == 160 })
        let before = KernelVM.resources()
        let sink = UVCNumberSink()
        do {
            _ = try backend.startStreaming(
                format: format, frameDuration: MediaTime(value: 1, timescale: 30), sink: sink)
        } catch {
            Issue.record("the stream did not start: \(error); the gadget's log: \(UVCGadget.log())")
            return
        }
        try UVCGadget.detach()
        #expect(sink.failed.wait(timeout: .now() + 60) == .success, "no failure after usbip detach")
        let errors = sink.state.withLock { $0.errors }
        #expect(errors.last?.code == .deviceDisconnected, "\(errors)")
        backend.stopStreaming()
        #expect(KernelVM.resources() == before, "a descriptor or mapping was left behind")
        #expect(!FileManager.default.fileExists(atPath: node), "uvcvideo's node outlived the unplug")
        // Plugged back, it is a camera again.
        let again = try UVCGadget.attach()
        #expect(try UVCGadget.backend(again).formats.contains { $0.pixelFormat == .yuyv })
    }

    // Last in the suite: stopping this stream has once oopsed usbip-vudc (vep_dequeue, a NULL
    // dereference in the kernel, on a fresh-machine run), killing the gadget program, and the
    // test after it then found a camera that answered no probe (EIO).
    @Test("YUYV frames arrive carrying the gadget's increasing numbers")
    func frames() throws {
        let node = try UVCGadget.attach()
        let backend = try UVCGadget.backend(node)
        let format = try #require(backend.formats.first { $0.pixelFormat == .yuyv && $0.dimensions.width == 160 })
        let sink = UVCNumberSink()
        _ = try backend.startStreaming(format: format, frameDuration: MediaTime(value: 1, timescale: 30), sink: sink)
        defer { backend.stopStreaming() }
        #expect(UVCGadget.log().contains("stream on: YUYV 160x120"), "\(UVCGadget.log())")
        // usbip-vudc has no isochronous transfers (drivers/usb/usbip/vudc_transfer.c ends each
        // with -EXDEV, "TODO: support"; dmesg: "uvcvideo 1-1:1.1: Non-zero status (-18) in video
        // completion handler.") and the 6.1 UVC gadget streams only isochronously: no frame
        // arrives over USB/IP. Known until a kernel streams them; then this passes as it is.
        withKnownIssue("usbip-vudc ends isochronous URBs with -EXDEV", isIntermittent: true) {
            #expect(sink.waitForFrames(3, timeout: 10), "no frames: \(UVCGadget.log())")
            let numbers = sink.state.withLock { $0.numbers }
            #expect(!numbers.isEmpty)
            #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "\(numbers)")
            #expect(sink.state.withLock { $0.unstamped } == 0)
        }
    }
}
