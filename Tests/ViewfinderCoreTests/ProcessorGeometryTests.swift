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

@Suite("Built-in processors: rotate, mirror, crop, convert")
struct ProcessorGeometryTests {
    static let planarAndPacked: [PixelFormat] = [.bgra, .nv12VideoRange, .nv12FullRange, .i420]

    // MARK: Rotate

    @Test("rotating by an angle and back is the identity", arguments: planarAndPacked, [90.0, 180, 270])
    func rotateAndBack(format: PixelFormat, angle: Double) throws {
        let source = try ProcessorHarness.pattern(format, sequenceNumber: 0x5A5)
        let turned = try ProcessorHarness.output(RotateProcessor(angle: angle), on: source)
        let back = try ProcessorHarness.output(RotateProcessor(angle: angle == 180 ? 180 : 360 - angle), on: turned)
        #expect(ProcessorHarness.samePixels(back, source))
    }

    @Test("every pixel lands where a clockwise rotation puts it", arguments: planarAndPacked, [90.0, 180, 270])
    func rotateMovesPixels(format: PixelFormat, angle: Double) throws {
        // An asymmetric frame: the code strip on top, bars in the middle, the box at the bottom left.
        let (w, h) = (160, 120)
        let source = try ProcessorHarness.pattern(format, width: w, height: h, sequenceNumber: 0x5A5)
        let rotated = try ProcessorHarness.output(RotateProcessor(angle: angle), on: source)
        let quarter = angle != 180
        #expect(rotated.width == (quarter ? h : w) && rotated.height == (quarter ? w : h))
        #expect(rotated.pixelFormat == format)
        var mismatches = 0
        for y in 0..<h {
            for x in 0..<w {
                let (dx, dy): (Int, Int)
                switch angle {
                case 90: (dx, dy) = (h - 1 - y, x)
                case 180: (dx, dy) = (w - 1 - x, h - 1 - y)
                default: (dx, dy) = (y, w - 1 - x)
                }
                if Reference.sample(rotated, x: dx, y: dy) != Reference.sample(source, x: x, y: y) { mismatches += 1 }
            }
        }
        #expect(mismatches == 0)
        // Spot check with the pattern's own geometry: bar 0 (top left of the bars) after a
        // quarter turn clockwise sits at the top right.
        if angle == 90 {
            let bar = TestPattern.barColumns(0, width: w)
            let row = TestPattern.barRows(height: h).lowerBound
            #expect(
                Reference.sample(rotated, x: h - 1 - row, y: bar.lowerBound) == Reference.sample(source, x: 0, y: row))
        }
    }

    @Test(
        "large frames turned in two bands put every pixel where a single band would",
        arguments: [PixelFormat.bgra, .nv12VideoRange, .i420], [90.0, 180, 270])
    func rotateInBands(format: PixelFormat, angle: Double) throws {
        let (w, h) = (1280, 800)  // over RowBands.minimumPixels
        #expect(w * h >= RowBands.minimumPixels)
        let source = try ProcessorHarness.pattern(format, width: w, height: h, sequenceNumber: 0x5A5)
        let rotated = try ProcessorHarness.output(RotateProcessor(angle: angle), on: source)
        var mismatches = 0
        // Every row (so both bands and the seam between them), every 7th column.
        for y in 0..<h {
            for x in stride(from: y % 7, to: w, by: 7) {
                let (dx, dy) =
                    switch angle {
                    case 90: (h - 1 - y, x)
                    case 180: (w - 1 - x, h - 1 - y)
                    default: (y, w - 1 - x)
                    }
                if Reference.sample(rotated, x: dx, y: dy) != Reference.sample(source, x: x, y: y) { mismatches += 1 }
            }
        }
        #expect(mismatches == 0)
    }

    @Test(
        "large frames mirrored in two bands match the mirror image",
        arguments: [PixelFormat.bgra, .nv12VideoRange, .i420])
    func mirrorInBands(format: PixelFormat) throws {
        let (w, h) = (1280, 800)
        let source = try ProcessorHarness.pattern(format, width: w, height: h, sequenceNumber: 0x5A5)
        let mirrored = try ProcessorHarness.output(MirrorProcessor(), on: source)
        var mismatches = 0
        for y in 0..<h {
            for x in stride(from: y % 7, to: w, by: 7)
            where Reference.sample(mirrored, x: w - 1 - x, y: y) != Reference.sample(source, x: x, y: y) {
                mismatches += 1
            }
        }
        #expect(mismatches == 0)
    }

    @Test("angles other than 0, 90, 180 and 270 are refused; 0 passes frames through", arguments: [45.0, -90, 360, 91])
    func rotateAngles(angle: Double) throws {
        #expect(throws: CaptureError.self) { try RotateProcessor(angle: angle) }
        do {
            _ = try RotateProcessor(angle: angle)
        } catch {
            #expect(error.code == .invalidArgument)
        }
        let source = try ProcessorHarness.pattern(.bgra)
        #expect(try ProcessorHarness.output(RotateProcessor(angle: 0), on: source) === source)
    }

    // MARK: Mirror

    @Test("mirroring twice is the identity; bar 0 moves to the right edge", arguments: planarAndPacked)
    func mirror(format: PixelFormat) throws {
        let (w, h) = (160, 120)
        let source = try ProcessorHarness.pattern(format, width: w, height: h, sequenceNumber: 77)
        let mirrored = try ProcessorHarness.output(MirrorProcessor(), on: source)
        let twice = try ProcessorHarness.output(MirrorProcessor(), on: mirrored)
        #expect(ProcessorHarness.samePixels(twice, source))

        let row = TestPattern.barRows(height: h).lowerBound + 2
        let bar0 = TestPattern.barColors[0]
        let expected = BT601.ycbcr(r: bar0.r, g: bar0.g, b: bar0.b, fullRange: format.isFullRange)
        let right = Reference.sample(mirrored, x: w - 1, y: row)
        if format == .bgra {
            #expect(right == (bar0.r, bar0.g, bar0.b))
        } else {
            #expect(right == (expected.y, expected.cb, expected.cr))
        }
        #expect(Reference.sample(mirrored, x: 0, y: row) == Reference.sample(source, x: w - 1, y: row))
        var mismatches = 0
        for y in 0..<h {
            for x in 0..<w where Reference.sample(mirrored, x: w - 1 - x, y: y) != Reference.sample(source, x: x, y: y)
            {
                mismatches += 1
            }
        }
        #expect(mismatches == 0)
    }

    // MARK: Crop

    @Test("a crop equals the source region", arguments: [PixelFormat.bgra, .nv12VideoRange, .i420, .yuyv])
    func crop(format: PixelFormat) throws {
        let source = try ProcessorHarness.pattern(format, sequenceNumber: 3)
        let crop = try CropProcessor(x: 18, y: 10, width: 100, height: 64)
        let output = try ProcessorHarness.output(crop, on: source)
        #expect(output.width == 100 && output.height == 64 && output.pixelFormat == format)
        var mismatches = 0
        for y in 0..<64 {
            for x in 0..<100
            where Reference.sample(output, x: x, y: y) != Reference.sample(source, x: x + 18, y: y + 10) {
                mismatches += 1
            }
        }
        #expect(mismatches == 0)
    }

    @Test("odd edges are refused for 4:2:0 but fine for BGRA; a rectangle outside the frame is refused")
    func cropValidation() throws {
        let odd = try CropProcessor(x: 3, y: 5, width: 31, height: 21)
        let nv12 = FrameFormat(pixelFormat: .nv12VideoRange, width: 160, height: 120)
        let bgra = FrameFormat(pixelFormat: .bgra, width: 160, height: 120)
        let error = try #require(throws: CaptureError.self) { try odd.outputFormat(for: nv12) }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("even"))
        #expect(try odd.outputFormat(for: bgra) == FrameFormat(pixelFormat: .bgra, width: 31, height: 21))
        let output = try ProcessorHarness.output(odd, on: try ProcessorHarness.pattern(.bgra))
        #expect(output.width == 31 && output.height == 21)

        let outside = try CropProcessor(x: 100, y: 0, width: 100, height: 20)
        let tooBig = try #require(throws: CaptureError.self) { try outside.outputFormat(for: bgra) }
        #expect(tooBig.code == .invalidArgument)
        #expect(tooBig.message.contains("does not fit"))
        #expect(throws: CaptureError.self) { try CropProcessor(x: -2, y: 0, width: 10, height: 10) }
        #expect(throws: CaptureError.self) { try CropProcessor(x: 0, y: 0, width: 0, height: 10) }
    }

    // MARK: Convert

    @Test(
        "conversion and scaling keep the bars' colours",
        arguments: [(PixelFormat.bgra, PixelFormat.nv12VideoRange), (.nv12VideoRange, .bgra), (.yuyv, .i420)],
        [nil, CaptureDevice.Dimensions(width: 80, height: 60)])
    func convert(pair: (PixelFormat, PixelFormat), size: CaptureDevice.Dimensions?) throws {
        let source = try ProcessorHarness.pattern(pair.0, width: 160, height: 120)
        let output = try ProcessorHarness.output(ConvertProcessor(pixelFormat: pair.1, size: size), on: source)
        let (w, h) = (size?.pixelWidth ?? 160, size?.pixelHeight ?? 120)
        #expect(output.pixelFormat == pair.1 && output.width == w && output.height == h)
        let rows = TestPattern.barRows(height: h)
        let y = (rows.lowerBound + rows.upperBound) / 2
        for (index, color) in TestPattern.barColors.enumerated() {
            let columns = TestPattern.barColumns(index, width: w)
            let (r, g, b) = Reference.pixelRGB(output, x: (columns.lowerBound + columns.upperBound) / 2, y: y)
            #expect(abs(r - Double(color.r)) <= 3 && abs(g - Double(color.g)) <= 3 && abs(b - Double(color.b)) <= 3)
        }
    }

    @Test("a conversion to what the frame already is passes it through; bad settings are refused")
    func convertPassThroughAndErrors() throws {
        let source = try ProcessorHarness.pattern(.nv12VideoRange)
        #expect(try ProcessorHarness.output(ConvertProcessor(pixelFormat: .nv12VideoRange), on: source) === source)
        let format = try #require(throws: CaptureError.self) { try ConvertProcessor(pixelFormat: .mjpeg) }
        #expect(format.code == .unsupportedPixelFormat)
        let size = try #require(throws: CaptureError.self) {
            try ConvertProcessor(size: CaptureDevice.Dimensions(width: 0, height: 10))
        }
        #expect(size.code == .invalidArgument)
    }
}
