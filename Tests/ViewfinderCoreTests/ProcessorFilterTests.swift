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

@Suite("Built-in processors: grayscale, box blur")
struct ProcessorFilterTests {
    // MARK: Grayscale

    @Test(
        "grayscale BGRA has R = G = B within 1 of BT.601 luma, alpha kept; the input is untouched when shared",
        arguments: [true, false])
    func grayscaleBGRA(writable: Bool) throws {
        let source = try ProcessorHarness.pattern(.bgra, sequenceNumber: 12)
        let original = try ProcessorHarness.copy(source)
        let gray = try ProcessorHarness.output(GrayscaleProcessor(), on: source, writable: writable)
        #expect((gray === source) == writable, "in place only when the image may be written")
        if !writable { #expect(ProcessorHarness.samePixels(source, original), "a shared buffer stays as it was") }
        var bad = 0
        for y in 0..<gray.height {
            for x in 0..<gray.width {
                let (r, g, b) = Reference.sample(gray, x: x, y: y)
                let (r0, g0, b0) = Reference.sample(original, x: x, y: y)
                let alpha = gray.baseAddress.load(fromByteOffset: y * gray.bytesPerRow + x * 4 + 3, as: UInt8.self)
                if r != g || g != b || abs(Double(r) - ProcessorHarness.luma(r0, g0, b0)) > 1 || alpha != 255 {
                    bad += 1
                }
            }
        }
        #expect(bad == 0)
    }

    @Test(
        "grayscale NV12 and I420 keep luma and set chroma to 128",
        arguments: [PixelFormat.nv12VideoRange, .nv12FullRange, .i420], [true, false])
    func grayscaleYUV(format: PixelFormat, writable: Bool) throws {
        let source = try ProcessorHarness.pattern(format, sequenceNumber: 12)
        let original = try ProcessorHarness.copy(source)
        let gray = try ProcessorHarness.output(GrayscaleProcessor(), on: source, writable: writable)
        #expect((gray === source) == writable)
        if !writable { #expect(ProcessorHarness.samePixels(source, original)) }
        var bad = 0
        for y in 0..<gray.height {
            for x in 0..<gray.width {
                let (luma, cb, cr) = Reference.sample(gray, x: x, y: y)
                if luma != Reference.sample(original, x: x, y: y).0 || cb != 128 || cr != 128 { bad += 1 }
            }
        }
        #expect(bad == 0)
    }

    // MARK: Box blur

    static let blurFormats: [PixelFormat] = [.bgra, .nv12VideoRange, .i420]

    @Test("a blurred flat image is unchanged", arguments: blurFormats, [1, 2, 5, 12])
    func blurFlat(format: PixelFormat, radius: Int) throws {
        let source = try ProcessorHarness.flat(format, width: 96, height: 64, rgb: (90, 140, 200))
        let blurred = try ProcessorHarness.output(BoxBlurProcessor(radius: radius), on: source)
        #expect(blurred !== source)
        #expect(ProcessorHarness.samePixels(blurred, source))
    }

    @Test("a blurred step edge is a monotone ramp, bounded by the two levels", arguments: blurFormats, [1, 3, 6])
    func blurStep(format: PixelFormat, radius: Int) throws {
        let (w, h) = (96, 64)
        let source = try ProcessorHarness.flat(format, width: w, height: h, rgb: (40, 40, 40))
        Painter(source).fill(x: (w / 2)..<w, y: 0..<h, grey: 200)
        let (dark, light) = (Reference.sample(source, x: 0, y: 0).0, Reference.sample(source, x: w - 1, y: 0).0)
        let blurred = try ProcessorHarness.output(BoxBlurProcessor(radius: radius), on: source)
        for y in [0, h / 2, h - 1] {
            let row = (0..<w).map { Reference.sample(blurred, x: $0, y: y).0 }
            #expect(zip(row, row.dropFirst()).allSatisfy { $0 <= $1 }, "row \(y) rises monotonically: \(row)")
            #expect(row.allSatisfy { $0 >= dark && $0 <= light })
            // Far from the edge nothing changes; next to it the levels mix.
            #expect(row[..<(w / 2 - radius - 1)].allSatisfy { $0 == dark })
            #expect(row[(w / 2 + radius + 1)...].allSatisfy { $0 == light })
            #expect(row[w / 2 - 1] > dark && row[w / 2] < light)
        }
        if format != .bgra {
            // The running sums agree with a direct mean of the (2r + 1)² box in the interior.
            let (x, y) = (w / 2 - 1, h / 2)
            var sum = 0
            for dy in -radius...radius {
                for dx in -radius...radius { sum += Int(Reference.sample(source, x: x + dx, y: y + dy).0) }
            }
            let mean = Double(sum) / Double((2 * radius + 1) * (2 * radius + 1))
            #expect(abs(Double(Reference.sample(blurred, x: x, y: y).0) - mean) <= 0.5)
        }
    }

    @Test("blur radii outside 1…64, or wider than half the frame, are refused")
    func blurLimits() throws {
        #expect(throws: CaptureError.self) { try BoxBlurProcessor(radius: 0) }
        #expect(throws: CaptureError.self) { try BoxBlurProcessor(radius: 65) }
        let error = try #require(throws: CaptureError.self) {
            try BoxBlurProcessor(radius: 40).outputFormat(for: FrameFormat(pixelFormat: .bgra, width: 64, height: 48))
        }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("at most 23"))
    }
}

extension ProcessorFilterTests {
    @Test(
        "odd frame sizes blur without touching memory beyond the planes",
        arguments: [PixelFormat.bgra, .nv12VideoRange])
    func blurOddSize(format: PixelFormat) throws {
        let source = try ProcessorHarness.flat(format, width: 97, height: 61, rgb: (10, 200, 30))
        let blurred = try ProcessorHarness.output(BoxBlurProcessor(radius: 3), on: source)
        #expect(ProcessorHarness.samePixels(blurred, source))
    }
}
