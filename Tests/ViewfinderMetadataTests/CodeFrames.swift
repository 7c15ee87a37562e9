// Frames that carry known codes: symbols made by Debian's qrencode (QR) and zint (the other
// symbologies), drawn into pixel buffers of the camera formats, and a rig that feeds them to a
// metadata output through its frame entry point.
import Dispatch
import Foundation
import Testing
import ViewfinderCore
import ViewfinderMetadata
import ViewfinderTesting

/// A symbol's modules, row by row (`true` is dark).
struct Symbol {
    var rows: [[Bool]]
    var width: Int { rows.map(\.count).max() ?? 0 }
    var height: Int { rows.count }

    /// Runs `tool` with `arguments`, returning what it printed; fails the test if it is missing or
    /// fails (install with `Scripts/install-dependencies.sh tests`).
    static func run(_ tool: String, _ arguments: [String]) throws -> String {
        let path = "/usr/bin/\(tool)"
        try #require(
            FileManager.default.isExecutableFile(atPath: path),
            "\(tool) is missing: Scripts/install-dependencies.sh tests")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "\(tool) \(arguments) failed")
        return String(decoding: data, as: UTF8.self)
    }

    /// A QR code saying `text`, from qrencode's text output (two characters a module, `#` dark),
    /// without its quiet zone.
    static func qr(_ text: String) throws -> Symbol {
        let art = try run("qrencode", ["-t", "ASCII", "-m", "0", text])
        let rows = art.split(separator: "\n").map { line in
            stride(from: 0, to: line.count, by: 2).map { line[line.index(line.startIndex, offsetBy: $0)] == "#" }
        }
        return Symbol(rows: rows)
    }

    /// A symbol of zint's symbology `barcode` (its `-b` number) saying `data`, from zint's text
    /// output (each row as hexadecimal, a bit a module). A 1-D barcode's single row is repeated
    /// `barHeight` times.
    static func zint(_ barcode: Int, _ data: String, options: [String] = [], barHeight: Int = 20) throws -> Symbol {
        let text = try run("zint", ["-b", "\(barcode)", "-d", data, "--filetype=TXT", "--direct"] + options)
        var rows: [[Bool]] = text.split(separator: "\n").map { line in
            line.split(separator: " ").flatMap { token -> [Bool] in
                let value = Int(token, radix: 16) ?? 0
                let bits = token.count * 4
                return (0..<bits).map { value >> (bits - 1 - $0) & 1 == 1 }
            }
        }
        if rows.count == 1 { rows = Array(repeating: rows[0], count: barHeight) }
        return Symbol(rows: rows)
    }

    /// The symbol turned clockwise by `quarterTurns` quarter turns.
    func turned(_ quarterTurns: Int) -> Symbol {
        var symbol = self
        for _ in 0..<((quarterTurns % 4 + 4) % 4) {
            let source = symbol
            symbol.rows = (0..<source.width).map { column in
                (0..<source.height).map { row in
                    let from = source.rows[source.height - 1 - row]
                    return column < from.count && from[column]
                }
            }
        }
        return symbol
    }
}

/// A frame to draw codes into: white, `width` x `height`, of `pixelFormat`.
struct CodeFrame {
    let pixelFormat: PixelFormat
    let width: Int
    let height: Int
    /// Luma (0…255) per pixel, drawn first and written into buffers on demand.
    var luma: [UInt8]

    init(pixelFormat: PixelFormat = .nv12VideoRange, width: Int = 640, height: Int = 480) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        luma = Array(repeating: 235, count: width * height)
    }

    /// Draws `symbol` with its top-left module at pixel (`x`, `y`), `module` pixels a module.
    mutating func draw(_ symbol: Symbol, x: Int, y: Int, module: Int) {
        for (row, bits) in symbol.rows.enumerated() {
            for (column, dark) in bits.enumerated() where dark {
                for dy in 0..<module {
                    let py = y + row * module + dy
                    guard py >= 0, py < height else { continue }
                    for dx in 0..<module {
                        let px = x + column * module + dx
                        if px >= 0, px < width { luma[py * width + px] = 16 }
                    }
                }
            }
        }
    }

    /// A pixel buffer of the frame, from `pool`.
    func buffer(from pool: PixelBufferPool) throws -> PixelBuffer {
        let buffer = try #require(pool.makePixelBuffer())
        switch pixelFormat {
        case .nv12VideoRange, .nv12FullRange, .i420:
            fill(buffer, plane: 0) { row, column in luma[row * width + column] }
            for plane in 1..<buffer.planeCount {
                let bytes = buffer.bytesPerRow(ofPlane: plane) * buffer.height(ofPlane: plane)
                buffer.baseAddress(ofPlane: plane).initializeMemory(as: UInt8.self, repeating: 128, count: bytes)
            }
        case .yuyv:
            let base = buffer.baseAddress.assumingMemoryBound(to: UInt8.self)
            for row in 0..<height {
                for column in 0..<width {
                    base[row * buffer.bytesPerRow + column * 2] = luma[row * width + column]
                    base[row * buffer.bytesPerRow + column * 2 + 1] = 128
                }
            }
        case .bgra:
            let base = buffer.baseAddress.assumingMemoryBound(to: UInt8.self)
            for row in 0..<height {
                for column in 0..<width {
                    let grey: UInt8 = luma[row * width + column] < 128 ? 0 : 255
                    let pixel = row * buffer.bytesPerRow + column * 4
                    (base[pixel], base[pixel + 1], base[pixel + 2], base[pixel + 3]) = (grey, grey, grey, 255)
                }
            }
        default:
            Issue.record("no drawing for \(pixelFormat)")
        }
        return buffer
    }

    private func fill(_ buffer: PixelBuffer, plane: Int, _ value: (Int, Int) -> UInt8) {
        let base = buffer.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self)
        for row in 0..<buffer.height(ofPlane: plane) {
            for column in 0..<buffer.width(ofPlane: plane) {
                base[row * buffer.bytesPerRow(ofPlane: plane) + column] = value(row, column)
            }
        }
    }
}

/// Collects what a metadata output reports, on its own queue, and whether every call came on it.
final class MetadataCollector: CaptureMetadataOutputObjectsDelegate, @unchecked Sendable {
    // unchecked: written on `queue` only, read through `queue.sync`.
    let queue = DispatchQueue(label: "metadata-collector")
    private let key = DispatchSpecificKey<Int>()
    private(set) var reports: [[MetadataObject]] = []
    private(set) var callsOffQueue = 0

    init() { queue.setSpecific(key: key, value: 1) }

    func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [MetadataObject], from connection: CaptureConnection
    ) {
        if DispatchQueue.getSpecific(key: key) != 1 { callsOffQueue += 1 }
        reports.append(metadataObjects)
    }

    /// The reports so far, read on the queue.
    var collected: [[MetadataObject]] { queue.sync { reports } }
}

/// A session with a virtual camera of one format and a metadata output (and, if asked, a video
/// data output), never started: frames go to the metadata output by hand, as the camera would
/// hand them over.
final class MetadataRig {
    let format: CaptureDevice.Format
    let camera: VirtualCamera
    let session = CaptureSession()
    let output = CaptureMetadataOutput()
    let video = CaptureVideoDataOutput()
    let collector = MetadataCollector()
    let connection: CaptureConnection
    let pool: PixelBufferPool
    private var sequence: UInt64 = 0

    init(pixelFormat: PixelFormat = .nv12VideoRange, width: Int = 640, height: Int = 480, withVideoOutput: Bool = false)
        throws
    {
        format = CaptureDevice.Format(
            pixelFormat: pixelFormat, width: width, height: height, frameRateRanges: [.init(framesPerSecond: 30)])
        camera = VirtualCamera(configuration: .init(clock: ManualClock(), isPaced: false, formats: [format]))
        try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
        try session.tryAddOutput(output)
        if withVideoOutput { try session.tryAddOutput(video) }
        connection = try #require(output.connection(with: .video))
        output.setMetadataObjectsDelegate(collector, queue: collector.queue)
        pool = try PixelBufferPool(pixelFormat: pixelFormat, width: width, height: height, capacity: 8)
    }

    /// Sets the types and starts the output's stream of the camera's format (or of `streamFormat`).
    func start(
        types: [MetadataObject.ObjectType], rectOfInterest: CGRect? = nil, streamFormat: CaptureDevice.Format? = nil
    ) throws {
        try output.setMetadataObjectTypes(types)
        if let rectOfInterest { try output.setRectOfInterest(rectOfInterest) }
        output.sessionWillStartRunning()
        try output.prepareToStream(format: streamFormat ?? format, frameDuration: MediaTime(value: 1, timescale: 30))
    }

    /// Hands `frame` to the output as the camera's next frame.
    func feed(_ frame: CodeFrame) throws {
        feed(buffer: try frame.buffer(from: pool))
    }

    /// Hands `buffer` to the output as the camera's next frame.
    func feed(buffer: PixelBuffer) {
        sequence += 1
        output.receive(
            CapturedSample(
                buffer: buffer, presentationTime: MediaTime(value: Int64(sequence), timescale: 30),
                duration: MediaTime(value: 1, timescale: 30), sequenceNumber: sequence,
                hostArrivalTime: HostClock().now()),
            from: connection)
    }

    /// Feeds `frame` and waits until it has been handed over; the codes reported for it.
    func scan(_ frame: CodeFrame) throws -> [MetadataMachineReadableCodeObject] {
        try scan(buffer: try frame.buffer(from: pool))
    }

    /// Feeds `buffer` and waits until it has been handed over; the codes reported for it.
    func scan(buffer: PixelBuffer) throws -> [MetadataMachineReadableCodeObject] {
        let before = collector.collected.count
        feed(buffer: buffer)
        #expect(output.waitUntilDelivered(timeout: 30))
        let reports = collector.collected
        guard reports.count > before else { return [] }
        return reports[before...].flatMap { $0 }.compactMap { $0 as? MetadataMachineReadableCodeObject }
    }
}

/// Where a symbol of `width` x `height` modules drawn at (`x`, `y`) with `module` pixels a module
/// and turned `quarterTurns` clockwise has its own corners (top-left, top-right, bottom-right,
/// bottom-left of the symbol as it reads), normalized to a `frameWidth` x `frameHeight` frame.
func expectedCorners(
    width: Int, height: Int, x: Int, y: Int, module: Int, quarterTurns: Int, frameWidth: Int, frameHeight: Int
) -> [CGPoint] {
    let symbolCorners = [(0, 0), (width, 0), (width, height), (0, height)]
    return symbolCorners.map { corner in
        // A clockwise quarter turn takes (cx, cy) in a w x h box to (h - cy, cx) in an h x w box.
        var (cx, cy, w, h) = (corner.0, corner.1, width, height)
        for _ in 0..<quarterTurns {
            (cx, cy) = (h - cy, cx)
            (w, h) = (h, w)
        }
        return CGPoint(
            x: CGFloat(x + cx * module) / CGFloat(frameWidth), y: CGFloat(y + cy * module) / CGFloat(frameHeight))
    }
}

/// Whether every point of `actual` is within `tolerance` (normalized units) of its counterpart.
func close(_ actual: [CGPoint], _ expected: [CGPoint], tolerance: CGFloat) -> Bool {
    actual.count == expected.count
        && zip(actual, expected).allSatisfy { abs($0.x - $1.x) <= tolerance && abs($0.y - $1.y) <= tolerance }
}

/// GS1's check digit for `digits` (EAN, UPC, ITF-14): weights 3 and 1 alternating from the right.
func gs1CheckDigit(_ digits: String) -> String {
    let values = digits.compactMap(\.wholeNumberValue)
    var sum = 0
    for (index, value) in values.reversed().enumerated() { sum += value * (index % 2 == 0 ? 3 : 1) }
    return String((10 - sum % 10) % 10)
}

/// Whether every point of `actual` is within `tolerance` of some point of `expected`, and the
/// other way round (the same points in any order).
func closeAsSet(_ actual: [CGPoint], _ expected: [CGPoint], tolerance: CGFloat) -> Bool {
    func near(_ a: CGPoint, _ b: CGPoint) -> Bool { abs(a.x - b.x) <= tolerance && abs(a.y - b.y) <= tolerance }
    return actual.count == expected.count && actual.allSatisfy { point in expected.contains { near(point, $0) } }
        && expected.allSatisfy { point in actual.contains { near(point, $0) } }
}
