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
@testable import ViewfinderSimulator
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

@Suite("Motion-JPEG in the video data output")
struct MJPEGDeliveryTests {
    static let formats: [PixelFormat] = [.nv12FullRange, .bgra, .i420, .nv12VideoRange]

    @Test(
        "JPEG frames decode to the asked format, match the pattern within ±3 and keep their sequence numbers",
        arguments: MJPEGDeliveryTests.cases)
    func decodes(format: PixelFormat, variant: JPEGVariant) throws {
        let checker = PatternChecker(width: 640, height: 480)
        let delegate = RecordingDelegate(inspect: { checker.check($0, number: $0.sequenceNumber) })
        let feed = try MJPEGFeed(
            width: 640, height: 480, settings: try VideoSettings(pixelFormat: format), delegate: delegate)
        #expect(feed.output.deliveredFormat?.pixelFormat == format)
        #expect(!feed.output.isZeroCopy)
        for sequence in 0..<3 as Range<UInt64> {
            feed.feed(try variant.frame(sequence, width: 640, height: 480), sequence: sequence)
        }
        #expect(feed.output.waitUntilDelivered(timeout: 20))
        #expect(delegate.frames.map(\.sequenceNumber) == [0, 1, 2])
        #expect(delegate.frames.map(\.patternNumber) == [0, 1, 2])
        #expect(delegate.frames.allSatisfy { $0.pixelFormat == format && $0.width == 640 && $0.height == 480 })
        #expect(checker.differences.count == 3 && checker.differences.allSatisfy { (0...3).contains($0) })
    }

    @Test("native settings on a Motion-JPEG camera deliver full-range NV12 (JFIF), decoded")
    func nativeIsFullRangeNV12() throws {
        let feed = try MJPEGFeed(width: 320, height: 240, settings: VideoSettings())
        #expect(feed.output.deliveredFormat?.pixelFormat == .nv12FullRange)
        #expect(feed.output.pipelineForTesting?.chain.decodeStep != nil)
    }

    @Test("asking for .mjpeg delivers the camera's JPEG bytes untouched, zero-copy")
    func passthrough() throws {
        let frames = try (0..<3).map { try JPEGVariant.all[1].frame(UInt64($0), width: 320, height: 240) }
        let mismatches = Atomic<Int>(0)
        let delegate = RecordingDelegate(
            readsPattern: false,
            inspect: { sample in
                let bytes = sample.imageBuffer.map { UnsafeRawBufferPointer(start: $0.baseAddress, count: $0.dataSize) }
                if bytes?.elementsEqual(frames[Int(sample.sequenceNumber)]) != true {
                    mismatches.add(1, ordering: .relaxed)
                }
            })
        let feed = try MJPEGFeed(
            width: 320, height: 240, settings: try VideoSettings(pixelFormat: .mjpeg), delegate: delegate)
        #expect(feed.output.isZeroCopy)
        #expect(feed.output.deliveredFormat?.pixelFormat == .mjpeg)
        for (sequence, frame) in frames.enumerated() { feed.feed(frame, sequence: UInt64(sequence)) }
        #expect(feed.output.waitUntilDelivered(timeout: 10))
        #expect(delegate.frames.map(\.sequenceNumber) == [0, 1, 2])
        #expect(delegate.frames.allSatisfy { $0.pixelFormat == .mjpeg })
        #expect(mismatches.load(ordering: .relaxed) == 0)
    }

    @Test("a raw camera refuses .mjpeg: the video data output does not encode; scaling JPEG is refused too")
    func mjpegOnRawCameraRefused() throws {
        let rig = try Rig(
            camera: .init(clock: ManualClock(), formats: virtualFormats(.nv12VideoRange)), delegate: RecordingDelegate()
        )
        rig.start()
        defer { rig.session.stopRunning() }
        let error = #expect(throws: CaptureError.self) {
            try rig.output.setVideoSettings(VideoSettings(pixelFormat: .mjpeg))
        }
        #expect(error?.code == .unsupportedPixelFormat)
        #expect(error?.message.contains("does not encode") == true)
        #expect(rig.output.typedVideoSettings.isEmpty, "the old settings stay")
        let scaled = #expect(throws: CaptureError.self) {
            _ = try ProcessorChain(
                deviceFormat: FrameFormat(pixelFormat: .mjpeg, width: 640, height: 480), requestedFormat: .mjpeg,
                requestedSize: .init(width: 320, height: 240), processors: [], budget: 2)
        }
        #expect(scaled?.code == .unsupportedFormat)
    }

    @Test("corrupt, truncated, empty and wrong-size JPEGs are counted drops, never delivered; accounting balances")
    func badFramesDrop() throws {
        let delegate = RecordingDelegate()
        let feed = try MJPEGFeed(width: 640, height: 480, settings: VideoSettings(), delegate: delegate)
        let good = try (0..<8).map { try JPEGVariant.all[$0 % 4].frame(UInt64($0), width: 640, height: 480) }
        let truncated = Array(good[1].prefix(good[1].count / 2))
        var corrupt = good[2]
        let scan = try #require(corrupt.withUnsafeBytes { JPEGFrame.layout($0) }).scanOffset + 40
        for index in stride(from: scan, to: min(corrupt.count - 2, scan + 400), by: 2) {
            corrupt[index] = 0xFF
            corrupt[index + 1] = 0x99
        }
        let wrongSize = try JPEGVariant.all[0].frame(5, width: 320, height: 240)
        let garbage = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        let stream: [[UInt8]] = [good[0], truncated, corrupt, [], good[4], wrongSize, garbage, good[7]]
        for (sequence, frame) in stream.enumerated() {
            feed.feed(frame, sequence: UInt64(sequence))
            #expect(feed.output.waitUntilDelivered(timeout: 10))
        }
        #expect(delegate.frames.map(\.sequenceNumber) == [0, 4, 7])
        #expect(delegate.frames.map(\.patternNumber) == [0, 4, 7])
        #expect(delegate.dropped(.droppedByProcessor(MJPEGDecodeStep.dropName)) == 5)
        let stats = feed.output.statistics
        #expect(stats.captured == 8 && stats.delivered == 3 && stats.droppedByProcessor == 5)
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
        #expect(feed.output.pipelineForTesting?.chain.decodeStep?.failures == 5)
    }

    @Test("two decoders share a backlog of 1080p frames (both lanes decode) and delivery keeps the order")
    func twoLanesKeepOrder() throws {
        let delegate = RecordingDelegate(readsPattern: true)
        let feed = try MJPEGFeed(
            width: 1920, height: 1080, settings: try VideoSettings(pixelFormat: .nv12VideoRange), bufferBudget: 8,
            delegate: delegate)
        let step = try #require(feed.output.pipelineForTesting?.chain.decodeStep)
        let frames = try (0..<4).map { try JPEGVariant.all[0].frame(UInt64($0), width: 1920, height: 1080) }
        var sequence: UInt64 = 0
        for _ in 0..<8 {
            for _ in 0..<6 {
                feed.feed(frames[Int(sequence % 4)], sequence: sequence)
                sequence += 1
            }
            #expect(feed.output.waitUntilDelivered(timeout: 20))
        }
        let delivered = delegate.frames
        #expect(delivered.map(\.sequenceNumber) == Array(0..<sequence))
        #expect(delivered.map(\.patternNumber) == (0..<sequence).map { $0 % 4 })
        #expect(!delegate.sawOverlappingCalls)
        let lanes = step.decodesPerLane
        #expect(lanes.reduce(0, +) == Int(sequence))
        if step.laneCount == 2 {
            #expect(lanes.allSatisfy { $0 > 0 }, "both decoders took frames: \(lanes)")
        }
        let stats = feed.output.statistics
        #expect(stats.delivered == Int(sequence) && stats.dropped == 0)
    }

    @Test("with a busy delegate a waiting MJPEG frame is still replaced as late, and only delivered frames decode")
    func lateFramesDoNotDecode() throws {
        let delegate = RecordingDelegate(blocksOnFirstFrame: true)
        let feed = try MJPEGFeed(
            width: 640, height: 480, settings: VideoSettings(), discardsLate: true, delegate: delegate)
        let step = try #require(feed.output.pipelineForTesting?.chain.decodeStep)
        let frames = try (0..<4).map { try JPEGVariant.all[0].frame(UInt64($0), width: 640, height: 480) }
        feed.feed(frames[0], sequence: 0)
        #expect(delegate.entered.wait(timeout: .now() + 10) == .success)
        for sequence in 1..<12 as Range<UInt64> { feed.feed(frames[Int(sequence % 4)], sequence: sequence) }
        delegate.openGate()
        #expect(feed.output.waitUntilDelivered(timeout: 10))
        #expect(delegate.frames.map(\.sequenceNumber) == [0, 11])
        #expect(delegate.dropped(.frameWasLate) == 10)
        #expect(step.decodesPerLane.reduce(0, +) == 2, "late frames were never decoded")
    }

    @Test("a seeded fuzz of mutated JPEG frames through the chain crashes nothing and every frame is accounted for")
    func fuzz() throws {
        let seconds = Double(ProcessInfo.processInfo.environment["VIEWFINDER_FUZZ_SECONDS"] ?? "") ?? 10
        let delegate = RecordingDelegate(readsPattern: false)
        let feed = try MJPEGFeed(
            width: 320, height: 240, settings: VideoSettings(), bufferBudget: 8, delegate: delegate)
        let seeds = try JPEGVariant.all.enumerated().map { try $1.frame(UInt64($0), width: 320, height: 240) }
        var random = SplitMix64(seed: 0x5EED_F00D)
        let deadline = Date(timeIntervalSinceNow: seconds)
        var fed: UInt64 = 0
        while Date() < deadline && fed < 2_000_000 {
            for _ in 0..<6 {
                feed.feed(Self.mutate(seeds[Int(random.next() % 4)], &random), sequence: fed)
                fed += 1
            }
            #expect(feed.output.waitUntilDelivered(timeout: 20))
        }
        let stats = feed.output.statistics
        #expect(stats.captured == Int(fed))
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
        #expect(stats.droppedByProcessor > 0 && stats.delivered > 0, "\(stats)")
    }

    /// One to three random mutations: bit flips, a cut, an inserted or deleted run, a damaged
    /// segment length, a stray marker, or garbage.
    static func mutate(_ frame: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = frame
        for _ in 0..<(1 + Int(random.next() % 3)) where !bytes.isEmpty {
            let at = Int(random.next() % UInt64(bytes.count))
            switch random.next() % 7 {
            case 0:
                for _ in 0..<(1 + Int(random.next() % 16)) {
                    bytes[Int(random.next() % UInt64(bytes.count))] ^= UInt8(1 << (random.next() % 8))
                }
            case 1: bytes = Array(bytes.prefix(at))
            case 2:
                let run = (0..<Int(random.next() % 64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                bytes.insert(contentsOf: run, at: at)
            case 3: bytes.removeSubrange(at..<min(bytes.count, at + Int(random.next() % 256)))
            case 4:
                // A segment length (the two bytes after a marker near the start) set to anything.
                let index = min(bytes.count - 1, 4 + Int(random.next() % 600))
                bytes[index] = UInt8(truncatingIfNeeded: random.next())
            case 5: bytes.insert(contentsOf: [0xFF, UInt8(truncatingIfNeeded: 0xC0 + random.next() % 64)], at: at)
            default: bytes = (0..<Int(random.next() % 4096)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            }
        }
        return bytes
    }
}

extension MJPEGDeliveryTests {
    static let cases: [(format: PixelFormat, variant: JPEGVariant)] = formats.flatMap { format in
        JPEGVariant.all.map { (format, $0) }
    }
}
