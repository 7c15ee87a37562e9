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

/// A virtual X display the test starts itself: `Xvfb -displayfd` picks a free display number and
/// writes it once the server accepts clients, so nothing waits on a guess.
final class VirtualXDisplay {
    let process = Process()
    let number: Int
    var name: String { ":\(number)" }

    /// Whether the tools the window test needs are installed.
    static var toolsInstalled: Bool {
        ["Xvfb", "xwd", "pnmtopng"].allSatisfy { FFmpegTools.path($0) != nil }
    }

    init() throws {
        let xvfb = try #require(FFmpegTools.path("Xvfb"))
        let ready = Pipe()
        process.executableURL = URL(fileURLWithPath: xvfb)
        process.arguments = ["-displayfd", "1", "-screen", "0", "1024x768x24", "-nolisten", "tcp", "-noreset"]
        process.standardOutput = ready
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Blocks until Xvfb writes its display number (it does once it accepts connections).
        var text = ""
        while !text.contains("\n") {
            let chunk = ready.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        number = try #require(Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), "Xvfb said '\(text)'")
    }

    /// Stops the server. SIGKILL: a process spawned from a test thread inherits its signal
    /// mask, in which SIGTERM may be blocked. Its lock file and socket are removed with it.
    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: "/tmp/.X\(number)-lock")
        try? FileManager.default.removeItem(atPath: "/tmp/.X11-unix/X\(number)")
    }

    /// A screenshot of the window titled `title` (`xwd`), as RGB, also saved as `png` (through
    /// netpbm's `pnmtopng`). The XWD image is decoded here with its own channel masks.
    func screenshot(windowTitled title: String, png: URL) throws -> (width: Int, height: Int, rgb: [UInt8]) {
        let xwd = Process()
        xwd.executableURL = URL(fileURLWithPath: try #require(FFmpegTools.path("xwd")))
        xwd.arguments = ["-display", name, "-name", title, "-silent", "-nobdrs"]
        let output = Pipe()
        xwd.standardOutput = output
        try xwd.run()
        let data = [UInt8](output.fileHandleForReading.readDataToEndOfFile())
        xwd.waitUntilExit()
        try #require(xwd.terminationStatus == 0 && data.count > 100, "xwd failed")
        func card32(_ index: Int) -> Int {
            Int(data[index * 4]) << 24 | Int(data[index * 4 + 1]) << 16 | Int(data[index * 4 + 2]) << 8
                | Int(data[index * 4 + 3])
        }
        let headerSize = card32(0)
        let (format, width, height) = (card32(2), card32(4), card32(5))
        let (byteOrder, bitsPerPixel, bytesPerLine) = (card32(7), card32(11), card32(12))
        let (redMask, greenMask, blueMask, colorCount) = (card32(14), card32(15), card32(16), card32(19))
        try #require(
            format == 2 && bitsPerPixel == 32, "a ZPixmap of 32-bit pixels expected, got \(format)/\(bitsPerPixel)")
        let start = headerSize + colorCount * 12
        try #require(data.count >= start + bytesPerLine * height)
        func channel(_ pixel: Int, _ mask: Int) -> UInt8 {
            UInt8(truncatingIfNeeded: (pixel & mask) >> mask.trailingZeroBitCount)
        }
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let at = start + y * bytesPerLine + x * 4
                let pixel =
                    byteOrder == 0
                    ? Int(data[at]) | Int(data[at + 1]) << 8 | Int(data[at + 2]) << 16 | Int(data[at + 3]) << 24
                    : Int(data[at]) << 24 | Int(data[at + 1]) << 16 | Int(data[at + 2]) << 8 | Int(data[at + 3])
                let target = (y * width + x) * 3
                rgb[target] = channel(pixel, redMask)
                rgb[target + 1] = channel(pixel, greenMask)
                rgb[target + 2] = channel(pixel, blueMask)
            }
        }
        let ppm = png.deletingPathExtension().appendingPathExtension("ppm")
        try (Data("P6\n\(width) \(height)\n255\n".utf8) + Data(rgb)).write(to: ppm)
        let convert = Process()
        convert.executableURL = URL(fileURLWithPath: try #require(FFmpegTools.path("pnmtopng")))
        convert.arguments = [ppm.path]
        _ = FileManager.default.createFile(atPath: png.path, contents: nil)
        convert.standardOutput = try FileHandle(forWritingTo: png)
        convert.standardError = FileHandle.nullDevice
        try convert.run()
        convert.waitUntilExit()
        try? FileManager.default.removeItem(at: ppm)
        return (width, height, rgb)
    }
}

/// Keeps a copy of each frame a layer renders (its BGRA bytes), by sequence number.
final class FrameCopies: Sendable {
    private let copies = Mutex<[UInt64: (width: Int, height: Int, bgra: [UInt8])]>([:])

    func keep(_ frame: PreviewFrame) {
        guard let buffer = frame.pixelBuffer else { return }
        var bytes = [UInt8](repeating: 0, count: buffer.width * buffer.height * 4)
        let base = buffer.baseAddress.assumingMemoryBound(to: UInt8.self)
        for row in 0..<buffer.height {
            for column in 0..<(buffer.width * 4) {
                bytes[row * buffer.width * 4 + column] = base[row * buffer.bytesPerRow + column]
            }
        }
        copies.withLock { $0[frame.sequenceNumber] = (buffer.width, buffer.height, bytes) }
    }

    func copy(_ sequence: UInt64) -> (width: Int, height: Int, bgra: [UInt8])? { copies.withLock { $0[sequence] } }
}

@Suite("Preview window (SDL2 under Xvfb)", .serialized)
struct PreviewWindowTests {
    static var artifacts: URL {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent(".build/artifacts/preview-window", isDirectory: true)
    }

    @Test("no display: opening a window is a typed error that says what to do")
    func noDisplay() throws {
        let saved = ProcessInfo.processInfo.environment["DISPLAY"]
        setenv("DISPLAY", ":65000", 1)
        defer {
            if let saved { setenv("DISPLAY", saved, 1) } else { unsetenv("DISPLAY") }
        }
        let layer = CaptureVideoPreviewLayer()
        let error = #expect(throws: CaptureError.self) { try PreviewWindow(layer: layer, title: "nowhere") }
        #expect(error?.code == .systemError && error?.message.contains("DISPLAY") == true)
        #expect(layer.presenters.isEmpty)
    }

    @Test(
        "a screenshot of the window is the layer's frame at the window's size, for every gravity, before and after a resize"
    )
    func screenshotsMatchTheFrame() throws {
        guard VirtualXDisplay.toolsInstalled else {
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                Issue.record("Xvfb, xwd or pnmtopng is missing: run Scripts/install-dependencies.sh")
            }
            return
        }
        let x = try VirtualXDisplay()
        defer { x.stop() }
        let saved = ProcessInfo.processInfo.environment["DISPLAY"]
        setenv("DISPLAY", x.name, 1)
        defer {
            if let saved { setenv("DISPLAY", saved, 1) } else { unsetenv("DISPLAY") }
        }
        try FileManager.default.createDirectory(at: Self.artifacts, withIntermediateDirectories: true)

        let clock = ManualClock()
        let rig = try Rig(camera: .init(clock: clock, formats: virtualFormats(.yuyv)), delegate: RecordingDelegate())
        let layer = CaptureVideoPreviewLayer(session: rig.session)
        let copies = FrameCopies()
        let copyQueue = DispatchQueue(label: "test.copies")
        let tap = CallbackPreviewPresenter(queue: copyQueue) { copies.keep($0) }
        let title = "viewfinder-preview-test-\(ProcessInfo.processInfo.processIdentifier)"
        let window = try PreviewWindow(layer: layer, title: title, width: 480, height: 200)
        defer { window.close() }
        layer.addPresenter(tap)
        #expect(layer.bounds.size == CGSize(width: 480, height: 200))
        rig.start()
        defer { rig.session.stopRunning() }

        /// Draw signals taken so far (one per frame the window drew).
        var signals = 0
        /// Steps the camera until the window has drawn a frame of `size` and nothing it was given
        /// is still waiting to be drawn (so the screenshot shows that frame); returns its number.
        func drawnFrame(of size: CaptureDevice.Dimensions) throws -> UInt64 {
            for _ in 0..<30 {
                rig.step(clock, by: .fps(60))
                #expect(layer.output.waitUntilDelivered(timeout: 10))
                copyQueue.sync {}  // the copy presenter's hand-off, queued before this, is done
                while true {
                    let counts = window.statistics
                    if signals >= counts.presented && counts.received == counts.presented + counts.replaced { break }
                    guard window.frameDrawn.wait(timeout: .now() + 10) == .success else { break }
                    signals += 1
                }
                if let drawn = window.lastDrawn, drawn.width == size.width, drawn.height == size.height,
                    copies.copy(drawn.sequenceNumber) != nil
                {
                    return drawn.sequenceNumber
                }
            }
            throw CaptureError(.unknown, "the window never drew a \(size) frame")
        }

        for size in [CaptureDevice.Dimensions(width: 480, height: 200), .init(width: 260, height: 400)] {
            if window.size != size {
                try window.setSize(width: size.pixelWidth, height: size.pixelHeight)
            }
            for gravity in [LayerVideoGravity.resizeAspect, .resizeAspectFill, .resize] {
                layer.videoGravity = gravity
                let sequence = try drawnFrame(of: size)
                #expect(layer.bounds.size == CGSize(width: size.pixelWidth, height: size.pixelHeight))
                let png = Self.artifacts.appendingPathComponent("\(gravity.rawValue)-\(size.width)x\(size.height).png")
                let shot = try x.screenshot(windowTitled: title, png: png)
                let frame = try #require(copies.copy(sequence))
                #expect(shot.width == size.width && shot.height == size.height)
                #expect(frame.width == size.width && frame.height == size.height)
                guard shot.width == frame.width, shot.height == frame.height else { continue }
                var mismatches = 0
                for pixel in 0..<(shot.width * shot.height) {
                    let (r, g, b) = (shot.rgb[pixel * 3], shot.rgb[pixel * 3 + 1], shot.rgb[pixel * 3 + 2])
                    let (fb, fg, fr) = (frame.bgra[pixel * 4], frame.bgra[pixel * 4 + 1], frame.bgra[pixel * 4 + 2])
                    if abs(Int(r) - Int(fr)) > 2 || abs(Int(g) - Int(fg)) > 2 || abs(Int(b) - Int(fb)) > 2 {
                        mismatches += 1
                    }
                }
                #expect(mismatches == 0, "\(gravity) \(size): \(mismatches) pixels differ from frame \(sequence)")
                // The gravity as seen on screen: black bands only for aspect (the camera is 4:3,
                // neither window is), the sequence number readable when the whole picture is shown.
                let geometry = layer.geometry
                let content = geometry.contentRect
                let corner = (Int(shot.rgb[0]), Int(shot.rgb[1]), Int(shot.rgb[2]))
                let band = content.minX > 4 || content.minY > 4
                #expect(band == (gravity == .resizeAspect))
                if gravity == .resizeAspect { #expect(corner == (0, 0, 0)) }
                if gravity != .resizeAspectFill {
                    #expect(Self.sequenceNumber(in: shot, content: content) == sequence)
                }
            }
        }
        // A click in the window sets the camera's points of interest to the layer's conversion.
        layer.videoGravity = .resizeAspect
        let device = rig.camera.device
        let expected = layer.captureDevicePointConverted(fromLayerPoint: CGPoint(x: 100.5, y: 150.5))
        window.windowWasClicked(x: 100, y: 150)
        window.waitForLayerChanges()
        #expect(device.focusPointOfInterest == expected && device.exposurePointOfInterest == expected)
        #expect(window.statistics.presented >= 6)
        window.close()
        #expect(window.isClosed && layer.presenters.count == 1)
    }

    /// Reads the test pattern's sequence number from the part of a screenshot showing the picture.
    static func sequenceNumber(in shot: (width: Int, height: Int, rgb: [UInt8]), content: CGRect) -> UInt64? {
        let x0 = max(0, Int(content.minX.rounded()))
        let y0 = max(0, Int(content.minY.rounded()))
        let width = min(shot.width - x0, Int(content.width.rounded()))
        let height = min(shot.height - y0, Int(content.height.rounded()))
        guard width > 0, height > 0,
            let pool = try? PixelBufferPool(pixelFormat: .bgra, width: width, height: height, capacity: 1),
            let buffer = pool.makePixelBuffer()
        else { return nil }
        let base = buffer.baseAddress.assumingMemoryBound(to: UInt8.self)
        for y in 0..<height {
            for x in 0..<width {
                let source = ((y0 + y) * shot.width + x0 + x) * 3
                let target = y * buffer.bytesPerRow + x * 4
                base[target] = shot.rgb[source + 2]
                base[target + 1] = shot.rgb[source + 1]
                base[target + 2] = shot.rgb[source]
                base[target + 3] = 255
            }
        }
        return TestPattern.readSequenceNumber(from: buffer)
    }
}
