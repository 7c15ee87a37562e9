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

@Suite("Built-in processors: luma statistics, motion detection")
struct ProcessorAnalysisTests {
    static let lumaFormats: [PixelFormat] = [.nv12VideoRange, .nv12FullRange, .i420, .yuyv]

    /// The statistics a processor attached in one run.
    func statistics(_ image: PixelBuffer, stride: Int = 1) throws -> LumaStatistics {
        let frame = try ProcessorHarness.run(LumaStatisticsProcessor(sampleStride: stride), on: image).frame
        #expect(frame.image === image, "statistics leave the image alone")
        return try #require(frame.attachments[.lumaStatistics] as? LumaStatistics)
    }

    @Test("Y'CbCr statistics equal a direct count of the luma samples", arguments: lumaFormats, [1, 3])
    func lumaYUV(format: PixelFormat, stride: Int) throws {
        let image = try ProcessorHarness.pattern(format, width: 160, height: 120, sequenceNumber: 9)
        let stats = try statistics(image, stride: stride)
        var expected = [Int](repeating: 0, count: 256)
        for y in Swift.stride(from: 0, to: 120, by: stride) {
            for x in Swift.stride(from: 0, to: 160, by: stride) {
                expected[Int(Reference.sample(image, x: x, y: y).0)] += 1
            }
        }
        let count = expected.reduce(0, +)
        let mean = Double(expected.enumerated().reduce(0) { $0 + $1.offset * $1.element }) / Double(count)
        #expect(stats.histogram == expected)
        #expect(stats.sampleCount == count)
        #expect(count == ((160 + stride - 1) / stride) * ((120 + stride - 1) / stride))
        #expect(abs(stats.mean - mean) < 1e-9)
        #expect(stats.isFullRange == format.isFullRange)
        #expect(stats.maximum == expected.lastIndex { $0 > 0 })
    }

    @Test("BGRA statistics match BT.601 luma computed directly (each pixel within one level)")
    func lumaBGRA() throws {
        let image = try ProcessorHarness.pattern(.bgra, width: 160, height: 120, sequenceNumber: 9)
        let stats = try statistics(image)
        var expected = [Int](repeating: 0, count: 256)
        var total = 0.0
        for y in 0..<120 {
            for x in 0..<160 {
                let (r, g, b) = Reference.sample(image, x: x, y: y)
                let luma = ProcessorHarness.luma(r, g, b)
                expected[Int(luma.rounded())] += 1
                total += luma
            }
        }
        #expect(stats.sampleCount == 160 * 120 && stats.isFullRange)
        #expect(abs(stats.mean - total / Double(160 * 120)) <= 0.5)
        // The pattern's lumas are more than two levels apart, so each lands in its bin or a neighbour.
        for (bin, count) in expected.enumerated() where count > 0 {
            let near = (max(0, bin - 1)...min(255, bin + 1)).reduce(0) { $0 + stats.histogram[$1] }
            #expect(near == count, "luma \(bin)")
        }
    }

    // MARK: Motion

    static let motionFormats: [PixelFormat] = [.nv12VideoRange, .bgra, .yuyv]

    func report(_ detector: MotionDetectionProcessor, _ image: PixelBuffer) throws -> MotionReport {
        let frame = try ProcessorHarness.run(detector, on: image).frame
        #expect(frame.image === image)
        return try #require(frame.attachments[.motionReport] as? MotionReport)
    }

    @Test("the first frame and identical frames show no motion", arguments: motionFormats)
    func motionStill(format: PixelFormat) throws {
        let detector = try MotionDetectionProcessor()
        let image = try ProcessorHarness.pattern(format, sequenceNumber: 4)
        let first = try report(detector, image)
        #expect(!first.hasReference && !first.isMotion && first.changedFraction == 0)
        let second = try report(detector, try ProcessorHarness.pattern(format, sequenceNumber: 4))
        #expect(second.hasReference && !second.isMotion)
        #expect(second.changedFraction == 0 && second.meanAbsoluteDifference == 0)
        detector.reset()
        #expect(try !report(detector, image).hasReference)
    }

    @Test("a moving box is motion, with the changed fraction of the box's old and new places", arguments: motionFormats)
    func motionBox(format: PixelFormat) throws {
        let (w, h) = (160, 120)
        let detector = try MotionDetectionProcessor(pixelThreshold: 24, minimumChangedFraction: 0.02)
        _ = try report(detector, try ProcessorHarness.pattern(format, width: w, height: h, sequenceNumber: 0))
        let moved = try report(detector, try ProcessorHarness.pattern(format, width: w, height: h, sequenceNumber: 5))
        // Frames 0 and 5: the box moved clear of its old place, and code cells 0 and 2 flipped.
        let before = TestPattern.boxRect(sequenceNumber: 0, width: w, height: h)
        let after = TestPattern.boxRect(sequenceNumber: 5, width: w, height: h)
        try #require(!before.x.overlaps(after.x))
        let boxArea = before.x.count * before.y.count
        let strip = TestPattern.codeStripHeight(height: h)
        let cells = (TestPattern.cellColumns(0, width: w).count + TestPattern.cellColumns(2, width: w).count) * strip
        let expected = Double(2 * boxArea + cells) / Double(w * h)
        #expect(moved.hasReference && moved.isMotion)
        #expect(abs(moved.changedFraction - expected) < 0.002, "\(moved.changedFraction) vs \(expected)")
        #expect(moved.meanAbsoluteDifference > 0 && moved.meanAbsoluteDifference <= 255 * moved.changedFraction)

        // The same change under a stricter fraction is not motion.
        let strict = try MotionDetectionProcessor(minimumChangedFraction: 0.5)
        _ = try report(strict, try ProcessorHarness.pattern(format, width: w, height: h, sequenceNumber: 0))
        #expect(
            try !report(strict, try ProcessorHarness.pattern(format, width: w, height: h, sequenceNumber: 5)).isMotion)
    }

    @Test("a new frame size starts over without a reference")
    func motionSizeChange() throws {
        let detector = try MotionDetectionProcessor()
        _ = try report(detector, try ProcessorHarness.pattern(.nv12VideoRange, width: 160, height: 120))
        let resized = try report(detector, try ProcessorHarness.pattern(.nv12VideoRange, width: 128, height: 96))
        #expect(!resized.hasReference && !resized.isMotion)
    }

    @Test("out-of-range settings are refused")
    func settings() throws {
        #expect(throws: CaptureError.self) { try MotionDetectionProcessor(pixelThreshold: 255) }
        #expect(throws: CaptureError.self) { try MotionDetectionProcessor(minimumChangedFraction: 1.5) }
        #expect(throws: CaptureError.self) { try LumaStatisticsProcessor(sampleStride: 0) }
    }
}
