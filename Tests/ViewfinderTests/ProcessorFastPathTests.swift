import Testing

@testable import Viewfinder

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
}
