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

/// The built-ins' fast paths against plain reference arithmetic: they must give the very same
/// numbers, not merely close ones.
@Suite("Built-in processors: fast paths match reference arithmetic")
struct ProcessorFastPathTests {
    @Test(
        "box-blur division rounds every possible sum exactly like (sum + area / 2) / area",
        arguments: [1, 2, 5, 17, 31, 48, 49, 64])
    func boxDivider(radius: Int) {
        let divider = BoxDivider(radius: radius)
        let area = UInt32((2 * radius + 1) * (2 * radius + 1))
        var sums = [UInt32](0...(255 * area))
        var quotients = [UInt8](repeating: 0, count: sums.count)
        sums.withUnsafeMutableBufferPointer { sums in
            quotients.withUnsafeMutableBufferPointer { quotients in
                divider.divide(sums.baseAddress!, into: quotients.baseAddress!, count: sums.count)
            }
        }
        var wrong = 0
        for (sum, quotient) in zip(sums, quotients) {
            let exact = UInt8((sum + area / 2) / area)
            if quotient != exact || divider.quotient(sum) != exact { wrong += 1 }
        }
        #expect(wrong == 0, "radius \(radius): \(wrong) sums rounded differently")
    }

    @Test(
        "the running-sum blur equals a direct mean over the clamped box, sample for sample",
        arguments: [PixelFormat.bgra, .nv12VideoRange, .i420], [1, 3, 6])
    func blurMatchesDirectMean(format: PixelFormat, radius: Int) throws {
        let source = try ProcessorHarness.pattern(format, width: 98, height: 62, sequenceNumber: 7)
        let blurred = try ProcessorHarness.output(BoxBlurProcessor(radius: radius), on: source)
        var wrong = 0
        for plane in 0..<source.planeCount {
            let channels = format == .bgra ? 4 : (format == .i420 || plane == 0 ? 1 : 2)
            let r = plane == 0 ? radius : (radius + 1) / 2
            let (positions, rows) = (source.width(ofPlane: plane), source.height(ofPlane: plane))
            let input = source.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self)
            let output = blurred.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self)
            let area = (2 * r + 1) * (2 * r + 1)
            for row in 0..<rows {
                for position in 0..<positions {
                    for channel in 0..<channels {
                        var sum = 0
                        for dy in -r...r {
                            let y = min(max(row + dy, 0), rows - 1)
                            for dx in -r...r {
                                let x = min(max(position + dx, 0), positions - 1)
                                sum += Int(input[y * source.bytesPerRow(ofPlane: plane) + x * channels + channel])
                            }
                        }
                        let got = output[row * blurred.bytesPerRow(ofPlane: plane) + position * channels + channel]
                        if Int(got) != (sum + area / 2) / area { wrong += 1 }
                    }
                }
            }
        }
        #expect(wrong == 0)
    }

    /// A buffer of pseudo-random bytes in every plane (no flat areas to hide a misplaced tile).
    static func noise(_ format: PixelFormat, width: Int, height: Int, seed: UInt64) throws -> PixelBuffer {
        let image = try ProcessorHarness.blank(format, width: width, height: height)
        var state = seed
        for plane in 0..<image.planeCount {
            let bytes = image.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self)
            for index in 0..<(image.bytesPerRow(ofPlane: plane) * image.height(ofPlane: plane)) {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes[index] = UInt8(truncatingIfNeeded: state >> 56)
            }
        }
        return image
    }

    @Test(
        "NV12 quarter turns move every luma byte and CbCr pair across tile boundaries",
        arguments: [90.0, 270])
    func rotateNV12Tiles(angle: Double) throws {
        let (w, h) = (600, 330)  // several tiles each way, partial ones at the edges
        let source = try Self.noise(.nv12VideoRange, width: w, height: h, seed: 3)
        let rotated = try ProcessorHarness.output(RotateProcessor(angle: angle), on: source)
        var mismatches = 0
        for plane in 0..<2 {
            let (width, height, size) = (source.width(ofPlane: plane), source.height(ofPlane: plane), plane + 1)
            let input = source.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self)
            let output = rotated.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self)
            for y in 0..<height {
                for x in 0..<width {
                    let (dx, dy) = angle == 90 ? (height - 1 - y, x) : (y, width - 1 - x)
                    for byte in 0..<size {
                        let a = input[y * source.bytesPerRow(ofPlane: plane) + x * size + byte]
                        let b = output[dy * rotated.bytesPerRow(ofPlane: plane) + dx * size + byte]
                        if a != b { mismatches += 1 }
                    }
                }
            }
        }
        #expect(mismatches == 0)
    }

    @Test(
        "motion counts and sums equal a per-pixel reference on noise (the last size runs in two bands)",
        arguments: [(1, 6), (15, 6), (17, 6), (333, 6), (4100, 6), (1280, 800)] as [(Int, Int)])
    func motionNoise(size: (Int, Int)) throws {
        let (width, height) = size
        let threshold = 24
        let detector = try MotionDetectionProcessor(pixelThreshold: threshold, minimumChangedFraction: 0.5)
        let first = try Self.noise(.nv12VideoRange, width: width + width % 2, height: height, seed: 1)
        let second = try Self.noise(.nv12VideoRange, width: width + width % 2, height: height, seed: 2)
        _ = try ProcessorHarness.run(detector, on: first)
        let report = try #require(
            try ProcessorHarness.run(detector, on: second).frame.attachments[.motionReport] as? MotionReport)
        var (changed, difference) = (0, 0)
        for y in 0..<first.height {
            for x in 0..<first.width {
                let a = Int(first.baseAddress.load(fromByteOffset: y * first.bytesPerRow + x, as: UInt8.self))
                let b = Int(second.baseAddress.load(fromByteOffset: y * second.bytesPerRow + x, as: UInt8.self))
                difference += abs(a - b)
                if abs(a - b) > threshold { changed += 1 }
            }
        }
        let pixels = Double(first.width * first.height)
        #expect(report.changedFraction == Double(changed) / pixels)
        #expect(report.meanAbsoluteDifference == Double(difference) / pixels)
    }

    @Test("luma histograms equal a per-pixel count on noise", arguments: [2, 6, 14, 642])
    func lumaNoise(width: Int) throws {
        let image = try Self.noise(.nv12VideoRange, width: width, height: 10, seed: 9)
        let stats = try LumaStatisticsProcessor().statistics(of: image)
        var expected = [Int](repeating: 0, count: 256)
        for y in 0..<image.height {
            for x in 0..<image.width {
                expected[Int(image.baseAddress.load(fromByteOffset: y * image.bytesPerRow + x, as: UInt8.self))] += 1
            }
        }
        #expect(stats.histogram == expected)
    }
}
