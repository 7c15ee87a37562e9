import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// Helpers for the JPEG codec tests: pattern frames, UVC-style frames and fair comparisons.
package enum JPEGTestSupport {
    /// A buffer of `format` from a one-buffer pool (the buffer keeps its pool alive).
    package static func buffer(_ format: PixelFormat, _ width: Int, _ height: Int) throws -> PixelBuffer {
        let pool = try PixelBufferPool(pixelFormat: format, width: width, height: height, capacity: 1)
        return try #require(pool.makePixelBuffer())
    }

    /// Test-pattern frame `sequence` in `format`.
    package static func pattern(_ sequence: UInt64, _ format: PixelFormat, _ width: Int, _ height: Int) throws
        -> PixelBuffer
    {
        let frame = try buffer(format, width, height)
        TestPattern.render(sequenceNumber: sequence, into: frame)
        return frame
    }

    /// A JPEG of the test pattern rendered in `source`, at `quality` and `subsampling`.
    package static func jpeg(
        _ sequence: UInt64, source: PixelFormat = .bgra, width: Int = 640, height: Int = 480,
        subsampling: JPEGChromaSubsampling = .yuv422, quality: Double = 0.95
    ) throws -> [UInt8] {
        let encoder = try JPEGEncoder(quality: quality, chromaSubsampling: subsampling)
        return try encoder.encode(try pattern(sequence, source, width, height))
    }

    /// The frame with its DHT segments removed, as many UVC cameras send MJPEG.
    package static func strippingHuffmanTables(_ frame: [UInt8]) throws -> [UInt8] {
        let layout = try #require(frame.withUnsafeBytes { JPEGFrame.layout($0) })
        var result: [UInt8] = []
        var index = 0
        for segment in layout.segments where segment.marker == 0xC4 {
            result += frame[index..<segment.offset]
            index = segment.offset + segment.count
        }
        result += frame[index...]
        return result
    }

    /// Pixels of a `width` × `height` frame of the pattern whose whole neighbourhood of
    /// `radius` pixels has one colour (away from every edge of the pattern): there JPEG's
    /// blocks, chroma subsampling and upsampling cannot blur anything.
    package static func flatMask(sequence: UInt64, width: Int, height: Int, radius: Int = 18) throws -> [Bool] {
        let reference = try pattern(sequence, .bgra, width, height)
        let pixels = reference.baseAddress.assumingMemoryBound(to: UInt32.self)
        let stride = reference.bytesPerRow / 4
        // Integral image of "differs from its right or lower neighbour".
        var sum = [Int](repeating: 0, count: (width + 1) * (height + 1))
        for y in 0..<height {
            var row = 0
            for x in 0..<width {
                let p = pixels[y * stride + x]
                let edge =
                    (x + 1 < width && pixels[y * stride + x + 1] != p)
                    || (y + 1 < height && pixels[(y + 1) * stride + x] != p)
                row += edge ? 1 : 0
                sum[(y + 1) * (width + 1) + x + 1] = sum[y * (width + 1) + x + 1] + row
            }
        }
        var mask = [Bool](repeating: false, count: width * height)
        for y in radius..<max(radius, height - radius) {
            for x in radius..<max(radius, width - radius) {
                let (x0, y0, x1, y1) = (x - radius, y - radius, x + radius, y + radius)
                let edges =
                    sum[y1 * (width + 1) + x1] - sum[y0 * (width + 1) + x1] - sum[y1 * (width + 1) + x0]
                    + sum[y0 * (width + 1) + x0]
                mask[y * width + x] = edges == 0
            }
        }
        return mask
    }

    /// The largest difference between `decoded` and `original` (same format and size) over the
    /// samples of the flat pixels in `mask`, and how many samples were compared.
    package static func maximumDifference(_ decoded: PixelBuffer, _ original: PixelBuffer, mask: [Bool]) -> (Int, Int) {
        var worst = 0
        var compared = 0
        let width = original.width
        for plane in 0..<original.planeCount {
            let a = decoded.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self)
            let b = original.baseAddress(ofPlane: plane).assumingMemoryBound(to: UInt8.self)
            let (sa, sb) = (decoded.bytesPerRow(ofPlane: plane), original.bytesPerRow(ofPlane: plane))
            let rows = original.height(ofPlane: plane)
            let samples = original.width(ofPlane: plane)
            let subsample = plane == 0 ? 1 : 2
            let bytesPerSample: Int
            let channels: Int
            switch (original.pixelFormat, plane) {
            case (.bgra, _): (bytesPerSample, channels) = (4, 3)
            case (.nv12FullRange, 1), (.nv12VideoRange, 1): (bytesPerSample, channels) = (2, 2)
            default: (bytesPerSample, channels) = (1, 1)
            }
            for y in 0..<rows {
                for x in 0..<samples where mask[(y * subsample) * width + x * subsample] {
                    for channel in 0..<channels {
                        let offset = x * bytesPerSample + channel
                        worst = max(worst, abs(Int(a[y * sa + offset]) - Int(b[y * sb + offset])))
                        compared += 1
                    }
                }
            }
        }
        return (worst, compared)
    }

    /// A webcam-like BGRA scene: smooth gradients with seeded noise (not colour bars).
    package static func scene(width: Int, height: Int, seed: UInt64 = 1) throws -> PixelBuffer {
        let frame = try buffer(.bgra, width, height)
        var random = SplitMix64(seed: seed)
        let p = frame.baseAddress.assumingMemoryBound(to: UInt8.self)
        for y in 0..<height {
            for x in 0..<width {
                let noise = Int(random.next() % 13) - 6
                let o = y * frame.bytesPerRow + x * 4
                p[o] = UInt8(clamping: x * 255 / width + noise)
                p[o + 1] = UInt8(clamping: y * 255 / height + noise)
                p[o + 2] = UInt8(clamping: 128 + Int(60 * sin(Double(x + y) / 40)) + noise)
                p[o + 3] = 255
            }
        }
        return frame
    }
}

/// A small seeded generator (SplitMix64), so fuzz runs repeat exactly.
package struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    package init(seed: UInt64) { state = seed }
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A JPEG variant a camera may send.
package struct JPEGVariant: Sendable, CustomTestStringConvertible {
    package var subsampling: JPEGChromaSubsampling
    package var huffmanTables: Bool
    package var testDescription: String { "\(subsampling)\(huffmanTables ? "" : " without Huffman tables")" }

    package static let all = [
        JPEGVariant(subsampling: .yuv422, huffmanTables: true), JPEGVariant(subsampling: .yuv422, huffmanTables: false),
        JPEGVariant(subsampling: .yuv420, huffmanTables: true), JPEGVariant(subsampling: .yuv420, huffmanTables: false),
    ]

    /// Test-pattern frame `sequence` as this variant (encoded from the full-range NV12 pattern, as
    /// a camera's JFIF frames are).
    package func frame(_ sequence: UInt64, width: Int, height: Int, quality: Double = 0.9) throws -> [UInt8] {
        let encoder = try JPEGEncoder(quality: quality, chromaSubsampling: subsampling)
        let bytes = try encoder.encode(try JPEGTestSupport.pattern(sequence, .nv12FullRange, width, height))
        return huffmanTables ? bytes : try JPEGTestSupport.strippingHuffmanTables(bytes)
    }
}
