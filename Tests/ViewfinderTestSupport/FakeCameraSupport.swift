import CV4L2
import Dispatch
import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderSimulator
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// The libv4l2 fake-camera plugin (Tests/V4L2Plugin): whether it is installed where libv4l2 looks,
/// and why not. `Scripts/test.sh` installs it (`Scripts/v4l2-plugin.sh run -- swift test …`).
package enum FakeCameraPlugin {
    /// The plugin's file name in libv4l2's plugin directory.
    package static let fileName = "libv4l-00-viewfinder-fake-camera.so"

    /// libv4l2's plugin directory (Debian multiarch, fixed when libv4l2 was built).
    package static var directory: String {
        #if arch(x86_64)
            "/usr/lib/x86_64-linux-gnu/libv4l/plugins"
        #elseif arch(arm64)
            "/usr/lib/aarch64-linux-gnu/libv4l/plugins"
        #else
            "/usr/lib/libv4l/plugins"
        #endif
    }

    /// Whether libv4l2 will load the plugin in this process.
    package static let isInstalled = FileManager.default.fileExists(atPath: "\(directory)/\(fileName)")

    /// Why the plugin tests are skipped.
    package static var skipReason: Comment {
        let why =
            ProcessInfo.processInfo.environment["VIEWFINDER_FAKE_CAMERA_SKIPPED"]
            ?? "run the tests through Scripts/test.sh (or `Scripts/v4l2-plugin.sh run -- swift test`)"
        return "the libv4l2 fake-camera plugin is not installed in \(directory): \(why)"
    }
}

/// A camera for the fake-camera plugin: what its device file says (see Tests/V4L2Plugin/README.md).
package struct FakeCameraFile {
    package var card = "HD Pro Webcam C920"
    package var driver = "uvcvideo"
    package var busInfo = "usb-fake-\(UUID().uuidString.prefix(8))"
    /// Formats as `v4l2-ctl --list-formats-ext` prints them.
    package var listing = SimulatedUVCCamera.c920Listing
    /// Whether the node is a UVC metadata node (not a capture device).
    package var isMetadata = false
    /// Whether DQBUF waits for each frame's due time (otherwise frames come as fast as asked for).
    package var paced = true
    /// A file the plugin writes the stream's counters to ("delivered lost sequence"), if any.
    package var statsPath: String?
    /// Frames to serve per format and size, cycled (`jpeg`: the plugin encodes the NV12 bytes).
    package var frames: [(fourCC: String, width: Int, height: Int, bytes: [UInt8], jpeg: JPEG?)] = []

    /// How the plugin encodes a frame as JPEG.
    package struct JPEG {
        /// 422 or 420.
        package var subsampling = 422
        package var quality = 85
        /// Leave out the Huffman tables, as many UVC cameras do.
        package var omitsHuffmanTables = false
    }

    /// Brightness, an integer control, with these values.
    package var brightness = (minimum: -64, maximum: 64, defaultValue: 0, value: 0)
    /// More `control` and `menu` lines for the device file (see Tests/V4L2Plugin/README.md).
    package var extraControlLines: [String] = []

    /// Adds `count` test-pattern frames (pattern numbers 0…count-1) of a raw format.
    package mutating func addPatternFrames(_ pixelFormat: PixelFormat, width: Int, height: Int, count: Int) {
        let fourCC = V4L2FourCC.string(V4L2FourCC.fourCC(pixelFormat)!)
        for number in 0..<count {
            frames.append((fourCC, width, height, Self.patternFrame(pixelFormat, width, height, number: number), nil))
        }
    }

    /// Adds `count` MJPG test-pattern frames (full range, as JFIF means), encoded by the plugin.
    package mutating func addJPEGPatternFrames(width: Int, height: Int, count: Int, _ jpeg: JPEG = JPEG()) {
        for number in 0..<count {
            frames.append(
                ("MJPG", width, height, Self.patternFrame(.nv12FullRange, width, height, number: number), jpeg))
        }
    }

    /// The bytes of test-pattern frame `number` in a raw format, rows unpadded.
    package static func patternFrame(_ pixelFormat: PixelFormat, _ width: Int, _ height: Int, number: Int) -> [UInt8] {
        let layout = PlaneLayout(pixelFormat: pixelFormat, width: width, height: height)
        var bytes = [UInt8](repeating: 0, count: layout.totalBytes)
        bytes.withUnsafeMutableBytes { raw in
            let buffer = PixelBuffer(memory: raw.baseAddress!, layout: layout, owner: nil, slot: 0)
            TestPattern.render(sequenceNumber: UInt64(number), into: buffer)
        }
        return bytes
    }

    /// The device file's contents.
    package func contents() throws -> Data {
        let parsed = try V4L2FormatListing.parse(listing)
        var header =
            "VIEWFINDER-FAKE-CAMERA 1\ncard \(card)\ndriver \(driver)\nbus \(busInfo)\npaced \(paced ? 1 : 0)\n"
        if isMetadata { header += "metadata\n" }
        if let statsPath { header += "stats \(statsPath)\n" }
        for format in parsed.formats {
            let description = format.description.isEmpty ? V4L2FourCC.string(format.fourCC) : format.description
            header += "format \(V4L2FourCC.string(format.fourCC)) \(format.isCompressed ? 1 : 0) \(description)\n"
            for (size, intervals) in format.sizes {
                guard case .discrete(let width, let height) = size else { continue }
                header += "size \(width) \(height)\n"
                if case .discrete(let list) = intervals {
                    for interval in list { header += "interval \(interval.numerator) \(interval.denominator)\n" }
                }
            }
        }
        let b = brightness
        header += "control 0x00980900 1 \(b.minimum) \(b.maximum) 1 \(b.defaultValue) \(b.value) 0 Brightness\n"
        for line in extraControlLines { header += line + "\n" }
        var offset = 0
        for frame in frames {
            if let jpeg = frame.jpeg {
                header +=
                    "frame-jpeg \(frame.width) \(frame.height) \(offset) \(frame.bytes.count) \(jpeg.subsampling) \(jpeg.quality) \(jpeg.omitsHuffmanTables ? 1 : 0)\n"
            } else {
                header += "frame \(frame.fourCC) \(frame.width) \(frame.height) \(offset) \(frame.bytes.count)\n"
            }
            offset += frame.bytes.count
        }
        header += "data\n"
        var data = Data(header.utf8)
        for frame in frames { data.append(contentsOf: frame.bytes) }
        return data
    }
}

/// A temporary device directory watched by a production ``V4L2DeviceProvider`` over the real
/// libv4l2 (``LibV4L2Interface``), with a registry of its own.
package final class FakeCameraRig {
    package let directory: String
    package let provider: V4L2DeviceProvider
    package let registry: DeviceRegistry

    package init(bufferCount: Int = 4) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("vf-fake-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        provider = V4L2DeviceProvider(
            directory: V4L2DevDirectory(path: directory), interface: LibV4L2Interface(), bufferCount: bufferCount)
        registry = DeviceRegistry(providers: [])
        registry.register(provider)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Plugs `camera` in as `videoN`: written under another name, then renamed in (a complete file
    /// appears at once, as udev's node does).
    @discardableResult
    package func plug(_ camera: FakeCameraFile, as name: String = "video0") throws -> String {
        let temporary = "\(directory)/.\(name).\(UUID().uuidString)"
        try camera.contents().write(to: URL(fileURLWithPath: temporary))
        let path = "\(directory)/\(name)"
        guard rename(temporary, path) == 0 else { throw CaptureError(.driverError, "rename failed", errno: errno) }
        return path
    }

    /// Unplugs the camera at `name`: deleting its file (open descriptors then fail with ENODEV).
    package func unplug(_ name: String = "video0") throws {
        try FileManager.default.removeItem(atPath: "\(directory)/\(name)")
    }

    /// The V4L2 devices present now.
    package var devices: [CaptureDevice] { registry.devices().filter { $0.backend is V4L2CameraBackend } }

    /// The device of `camera`. Waits for it: a scan that inotify started for the file may still be
    /// running, and until it ends discovery answers with the previous scan's devices.
    package func device(_ camera: FakeCameraFile) throws -> CaptureDevice {
        var found: CaptureDevice?
        _ = wait {
            found = devices.first { $0.uniqueID == "v4l2:\(camera.busInfo)" }
            return found != nil
        }
        return try #require(found)
    }

    /// Waits until `condition` holds: hot-plug is noticed asynchronously through inotify, and a
    /// rescan that changes the devices posts a connected or disconnected notification after it
    /// updated the list, so `condition` is checked again on each of those. A scan that discovery
    /// itself runs (reading the device list) posts nothing, so `condition` is also checked every
    /// 50 ms.
    package func wait(timeout: Double = 10, until condition: () -> Bool) -> Bool {
        let changed = DispatchSemaphore(value: 0)
        let center = NotificationCenter.default
        let observers = [CaptureDevice.wasConnectedNotification, CaptureDevice.wasDisconnectedNotification].map {
            center.addObserver(forName: $0, object: nil, queue: nil) { _ in changed.signal() }
        }
        defer { observers.forEach(center.removeObserver) }
        let deadline = DispatchTime.now() + timeout
        while !condition() {
            if DispatchTime.now() >= deadline { return condition() }
            _ = changed.wait(timeout: min(deadline, .now() + 0.05))
        }
        return true
    }
}

/// Captures what libv4l2 would print on standard error while `body` runs: the lines Viewfinder's
/// log filter passes (libv4l2 writes every message to that filter once it is installed) go to a
/// pipe instead of descriptor 2. Redirecting descriptor 2 itself would swallow every other test's
/// output for as long as `body` runs, the test runner's own lines with it.
package func capturingLibV4L2Messages(_ body: () throws -> Void) throws -> String {
    final class Collected: @unchecked Sendable {  // unchecked: written by the reader, read after `done`.
        var bytes: [UInt8] = []
    }
    var ends: [Int32] = [0, 0]
    try #require(pipe(&ends) == 0)
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }  // no child of a parallel test holds it open
    let reader = ends[0]
    let collected = Collected()
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            collected.bytes.append(contentsOf: chunk[..<count])
        }
        done.signal()
    }
    vf_v4l2_install_log_filter()  // as the first v4l2_open does; once per process
    vf_v4l2_set_log_destination(ends[1])
    let result = Result { try body() }
    vf_v4l2_set_log_destination(-1)
    close(ends[1])
    done.wait()
    close(reader)
    try result.get()
    return String(decoding: collected.bytes, as: UTF8.self)
}
