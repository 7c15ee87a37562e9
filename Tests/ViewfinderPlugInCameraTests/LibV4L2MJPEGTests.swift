import Foundation
import Synchronization
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderSimulator
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// Native Motion-JPEG decoding on the production path: real libv4l2 under ``LibV4L2Interface``
/// streaming the fake-camera plugin's JPEG frames. Part of the plugin's serialized suite (skipped,
/// saying why, without the plugin). The pattern checks run in the delegate, which may make the
/// camera lose frames on a busy machine: sequence numbers are checked to increase and to match the
/// pattern each frame shows, not to be consecutive.
extension LibV4L2PluginTests {
    static let listing640 = """
        \t[0]: 'MJPG' (Motion-JPEG, compressed)
        \t\tSize: Discrete 640x480
        \t\t\tInterval: Discrete 0.033s (30.000 fps)
        """

    @Test(
        "the plugin's JPEG frames decode to NV12, BGRA and I420 within ±3 of the pattern, sequence numbers read back",
        arguments: [PixelFormat.nv12FullRange, .bgra, .i420], JPEGVariant.all)
    func decodesPluginFrames(format: PixelFormat, variant: JPEGVariant) throws {
        let rig = try FakeCameraRig()
        var camera = FakeCameraFile()
        camera.card = "Fake MJPEG Camera"
        camera.listing = Self.listing640
        camera.addJPEGPatternFrames(
            width: 640, height: 480, count: 3,
            .init(
                subsampling: variant.subsampling == .yuv422 ? 422 : 420, quality: 85,
                omitsHuffmanTables: !variant.huffmanTables))
        try rig.plug(camera)
        let checker = PatternChecker(width: 640, height: 480)
        let delegate = RecordingDelegate(inspect: { checker.check($0, number: $0.sequenceNumber % 3) })
        let (session, output) = try makeSession(
            device: try rig.device(camera), delegate: delegate, settings: try VideoSettings(pixelFormat: format),
            preset: .vga640x480)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(try rig.device(camera).activeFormat.pixelFormat == .mjpeg)
        #expect(output.deliveredFormat?.pixelFormat == format)
        #expect(delegate.waitForFrames(6))
        let frames = delegate.frames.prefix(6)
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.sequenceNumber < $1.sequenceNumber })
        #expect(frames.allSatisfy { $0.patternNumber == $0.sequenceNumber % 3 })
        #expect(frames.allSatisfy { $0.pixelFormat == format })
        let differences = checker.differences.prefix(6)
        #expect(differences.count == 6 && differences.allSatisfy { (0...3).contains($0) }, "\(differences)")
    }

    @Test("corrupt, truncated and zero-length JPEGs from the camera are counted drops; accounting balances")
    func badFrames() throws {
        let rig = try FakeCameraRig()
        var camera = FakeCameraFile()
        camera.card = "Fake Damaged MJPEG Camera"
        camera.listing = Self.listing640
        let good = try (0..<3).map { try JPEGVariant.all[$0].frame(UInt64($0), width: 640, height: 480) }
        var corrupt = good[1]
        let scan = try #require(corrupt.withUnsafeBytes { JPEGFrame.layout($0) }).scanOffset + 40
        for index in stride(from: scan, to: min(corrupt.count - 2, scan + 400), by: 2) {
            corrupt[index] = 0xFF
            corrupt[index + 1] = 0x99
        }
        let truncated = Array(good[2].prefix(good[2].count / 3))
        // Cycle of 6: good 0, corrupt, good 2, truncated, empty, good 1.
        for bytes in [good[0], corrupt, good[2], truncated, [], good[1]] {
            camera.frames.append(("MJPG", 640, 480, bytes, nil))
        }
        try rig.plug(camera)
        let delegate = RecordingDelegate()
        let (session, output) = try makeSession(
            device: try rig.device(camera), delegate: delegate, preset: .vga640x480, discardsLate: false)
        session.startRunning()
        #expect(delegate.waitForFrames(9))
        session.stopRunning()
        let frames = delegate.frames
        #expect(frames.allSatisfy { [0, 2, 5].contains($0.sequenceNumber % 6) }, "only whole frames are delivered")
        #expect(frames.allSatisfy { $0.patternNumber == [0: 0, 2: 2, 5: 1][$0.sequenceNumber % 6] })
        let stats = output.statistics
        #expect(stats.droppedByProcessor >= 4, "corrupt and truncated frames: \(stats)")
        #expect(delegate.dropped(.droppedByProcessor(MJPEGDecodeStep.dropName)) == stats.droppedByProcessor)
        #expect(stats.droppedDiscontinuity >= 2, "empty buffers never reach the output: a sequence gap")
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
    }

    @Test(".high on a C920-shaped camera through libv4l2: MJPEG 1920x1080 at 30 fps, decoded natively")
    func c920High() throws {
        let rig = try FakeCameraRig()
        var camera = FakeCameraFile()
        camera.addJPEGPatternFrames(width: 1920, height: 1080, count: 2)
        try rig.plug(camera)
        let checker = PatternChecker(width: 1920, height: 1080)
        let delegate = RecordingDelegate(inspect: { checker.check($0, number: $0.sequenceNumber % 2) })
        let device = try rig.device(camera)
        let (session, output) = try makeSession(device: device, delegate: delegate, preset: .high)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(device.activeFormat.pixelFormat == .mjpeg && !device.activeFormat.isEmulated)
        #expect(device.activeFormat.dimensions == .init(width: 1920, height: 1080))
        #expect(device.activeVideoMinFrameDuration == MediaTime(value: 1, timescale: 30))
        #expect(output.deliveredFormat?.pixelFormat == .nv12FullRange)
        #expect(output.pipelineForTesting?.chain.decodeStep != nil, "Viewfinder's decoder, not libv4lconvert")
        #expect(delegate.waitForFrames(4))
        let frames = delegate.frames.prefix(4)
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.sequenceNumber < $1.sequenceNumber })
        #expect(frames.allSatisfy { $0.patternNumber == $0.sequenceNumber % 2 })
        #expect(checker.differences.prefix(4).allSatisfy { (0...3).contains($0) }, "\(checker.differences)")
    }

    @Test("asking for .mjpeg hands over the camera's JPEG bytes untouched, in libv4l2's buffers")
    func passthrough() throws {
        let rig = try FakeCameraRig()
        var camera = FakeCameraFile()
        camera.listing = Self.listing640
        let frames = try (0..<3).map { try JPEGVariant.all[1].frame(UInt64($0), width: 640, height: 480) }
        for bytes in frames { camera.frames.append(("MJPG", 640, 480, bytes, nil)) }
        try rig.plug(camera)
        let mismatches = Atomic<Int>(0)
        let delegate = RecordingDelegate(
            readsPattern: false,
            inspect: { sample in
                let bytes = sample.imageBuffer.map { UnsafeRawBufferPointer(start: $0.baseAddress, count: $0.dataSize) }
                if bytes?.elementsEqual(frames[Int(sample.sequenceNumber % 3)]) != true {
                    mismatches.add(1, ordering: .relaxed)
                }
            })
        let (session, output) = try makeSession(
            device: try rig.device(camera), delegate: delegate, settings: try VideoSettings(pixelFormat: .mjpeg),
            preset: .vga640x480)
        session.startRunning()
        defer { session.stopRunning() }
        #expect(output.isZeroCopy)
        #expect(delegate.waitForFrames(6))
        let delivered = delegate.frames.prefix(6)
        #expect(zip(delivered, delivered.dropFirst()).allSatisfy { $0.sequenceNumber < $1.sequenceNumber })
        #expect(mismatches.load(ordering: .relaxed) == 0)
    }
}
