// viewfinder-plugin: how to write your own frame processor, outside the Viewfinder library.
//
// Copy this file as a starting point. It defines `ExposureZonesProcessor`, which measures the
// mean brightness of a 3 x 3 grid of zones (what a camera's exposure meter looks at), adds it to
// an output next to a built-in processor, runs a short capture from the virtual test-pattern
// camera and prints what the processors computed for each frame.
//
//     swift run viewfinder-plugin
import Dispatch
import Foundation
import Synchronization
import Viewfinder

// MARK: - What the processor computes

/// The mean luma of each zone of a grid laid over the frame, row by row from the top left.
/// Attachments travel to the delegate with the frame, so they must be `Sendable`.
struct ExposureZones: Sendable, CustomStringConvertible {
    var columns: Int
    var rows: Int
    var means: [Double]

    /// The index of the brightest zone.
    var brightestZone: Int { means.indices.max { means[$0] < means[$1] } ?? 0 }

    var description: String {
        (0..<rows).map { row in
            means[(row * columns)..<((row + 1) * columns)].map { String(format: "%3.0f", $0) }.joined(separator: " ")
        }.joined(separator: " | ")
    }
}

// Give each attachment a key of its own; prefix it so it cannot clash with others' keys.
extension SampleBuffer.AttachmentKey {
    static let exposureZones: Self = "plugin.exposureZones"
}

// MARK: - The processor

/// Measures exposure zones on NV12 frames.
///
/// A processor is a class conforming to `FrameProcessor`. It must be `Sendable`: the output calls
/// it on its delivery queue, while configuration happens on your thread. Keep it immutable, or put
/// mutable state in a `Mutex`, as `framesMeasured` is here.
final class ExposureZonesProcessor: FrameProcessor {
    let columns: Int
    let rows: Int
    /// Measure every `step`-th pixel of every `step`-th row: plenty for an average, and fast.
    let step = 4
    private let framesMeasured = Mutex(0)

    init(columns: Int = 3, rows: Int = 3) {
        self.columns = columns
        self.rows = rows
    }

    /// The formats the processor reads. The chain converts frames in other formats to the first
    /// one listed before they reach `process`, so a camera delivering BGRA still works. Leave this
    /// out to accept every format.
    var acceptedPixelFormats: [PixelFormat] { [.nv12VideoRange, .nv12FullRange] }

    /// Called once when the chain is negotiated (when the session starts, or when processors
    /// change while it runs), never per frame. Check here that you can handle the input and say
    /// what you produce: this processor only reads, so it produces what it gets. Throwing refuses
    /// the configuration with a message for the user, instead of failing frame after frame.
    func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat {
        guard input.width >= columns * step, input.height >= rows * step else {
            throw CaptureError(
                .unsupportedFormat,
                "ExposureZonesProcessor needs frames of at least \(columns * step)x\(rows * step), got \(input): "
                    + "use fewer zones or a larger size")
        }
        return input
    }

    /// Called for every frame, on the output's delivery queue, one frame at a time. Time spent
    /// here counts towards the frame's lateness, so keep it short and allocate no pixel memory.
    ///
    /// - Read pixels through `frame.image` (plane 0 of NV12 is luma, one byte per pixel).
    /// - To change pixels in place, call `try frame.makeImageWritable()` first: the image may be
    ///   the camera's own buffer, shared with other outputs.
    /// - To produce a new image (another size or format), fill `frame.makeOutputBuffer()` and
    ///   assign it to `frame.image`; it has the format `outputFormat(for:)` returned.
    /// - Return `.drop` to drop the frame: the delegate hears of it through
    ///   `captureOutput(_:didDrop:from:)` with reason `.droppedByProcessor(name)`.
    func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
        let image = frame.image
        let luma = image.baseAddress(ofPlane: 0).assumingMemoryBound(to: UInt8.self)
        let bytesPerRow = image.bytesPerRow(ofPlane: 0)
        var sums = [Int](repeating: 0, count: columns * rows)
        var counts = [Int](repeating: 0, count: columns * rows)
        for y in stride(from: 0, to: image.height, by: step) {
            let zoneRow = y * rows / image.height
            let line = luma + y * bytesPerRow
            for x in stride(from: 0, to: image.width, by: step) {
                let zone = zoneRow * columns + x * columns / image.width
                sums[zone] += Int(line[x])
                counts[zone] += 1
            }
        }
        let means = zip(sums, counts).map { Double($0) / Double(max($1, 1)) }
        frame.setAttachment(ExposureZones(columns: columns, rows: rows, means: means), forKey: .exposureZones)
        framesMeasured.withLock { $0 += 1 }
        return .keep
    }

    /// How many frames were measured so far (safe to read from any thread).
    var measuredCount: Int { framesMeasured.withLock { $0 } }
}

// MARK: - Using it

/// Prints what the processors attached to each frame.
final class Printer: CaptureVideoDataOutputSampleBufferDelegate {
    func captureOutput(
        _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
    ) {
        let zones = sampleBuffer.attachment(forKey: .exposureZones) as? ExposureZones
        let motion = sampleBuffer.attachment(forKey: .motionReport) as? MotionReport
        let motionText =
            motion.map {
                $0.hasReference
                    ? String(format: "%@ %.2f %% changed", $0.isMotion ? "motion" : "still", $0.changedFraction * 100)
                    : "first frame"
            } ?? "-"
        print(
            "frame \(sampleBuffer.sequenceNumber):  zones [\(zones?.description ?? "-")]  "
                + "brightest zone \(zones?.brightestZone ?? -1)  \(motionText)")
    }

    func captureOutput(_ output: CaptureOutput, didDrop sampleBuffer: SampleBuffer, from connection: CaptureConnection)
    {
        print("frame \(sampleBuffer.sequenceNumber) dropped: \(sampleBuffer.droppedFrameReason?.description ?? "?")")
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("viewfinder-plugin: \(message)\n".utf8))
    exit(1)
}

// A virtual camera that stops after 24 frames, so the run is short and the same on any machine.
let camera = VirtualCamera(configuration: .init(frameLimit: 24))
let session = CaptureSession()
let output = CaptureVideoDataOutput()
let printer = Printer()  // outputs hold their delegate weakly: keep it alive
let zones = ExposureZonesProcessor()
do {
    session.beginConfiguration()
    session.sessionPreset = .vga640x480
    try session.tryAddInput(CaptureDeviceInput(device: camera.device))
    output.typedVideoSettings = try VideoSettings(pixelFormat: .nv12VideoRange)
    output.setSampleBufferDelegate(printer, queue: DispatchQueue(label: "plugin.frames"))
    // 15 frames a second: time enough for a debug build to analyse every frame. (At 60 fps a
    // debug build falls behind and the output drops the frames it cannot keep up with as late.)
    try output.setMinFrameDuration(MediaTime(value: 1, timescale: 15))
    try session.tryAddOutput(output)
    session.commitConfiguration()

    // Processors run in order, each under a unique name. Yours and the built-ins mix freely.
    try output.addProcessor(zones, named: "zones")
    try output.addProcessor(MotionDetectionProcessor(minimumChangedFraction: 0.002), named: "motion", at: .last)
} catch {
    fail(error.description)
}
print("processors: \(output.processors.map(\.name).joined(separator: " → "))")

session.startRunning()
guard session.isRunning else { fail("the session did not start") }
if let delivered = output.deliveredFormat { print("delivering \(delivered.pixelFormat.name) \(delivered.size)") }
guard camera.waitUntilFinished(timeout: 10) else { fail("the camera did not finish its frames in time") }
session.stopRunning()
print("measured \(zones.measuredCount) frames; \(output.statistics)")
withExtendedLifetime(printer) {}
