import Foundation
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

/// The row-group path (libjpeg's raw-data API, each iMCU row finished in cache) against
/// TurboJPEG's whole-frame planes (`tjDecompressToYUVPlanes` + libyuv), the path it replaced for
/// 4:2:2, 4:2:0 and greyscale frames.
@Suite("JPEG codec: row-group decoding")
struct JPEGRowDecodeTests {
    static let sizes = [(640, 480), (333, 241), (334, 242), (1920, 1080)]

    /// A webcam-like frame (gradients and noise) as JPEG.
    static func sceneJPEG(_ width: Int, _ height: Int, _ subsampling: JPEGChromaSubsampling) throws -> [UInt8] {
        let encoder = try JPEGEncoder(quality: 0.85, chromaSubsampling: subsampling)
        return try encoder.encode(try JPEGTestSupport.scene(width: width, height: height, seed: 5))
    }

    /// The largest difference between two buffers' visible samples, per plane.
    static func planeDifferences(_ a: PixelBuffer, _ b: PixelBuffer) -> [Int] {
        (0..<a.pixelFormat.planeCount).map { plane in
            let geometry = a.pixelFormat.planeGeometry(plane, width: a.width, height: a.height)
            let rowBytes = geometry.bytesPerRow  // the packed row: visible samples only
            let (pa, pb) = (a.bytes(ofPlane: plane), b.bytes(ofPlane: plane))
            let (sa, sb) = (a.bytesPerRow(ofPlane: plane), b.bytesPerRow(ofPlane: plane))
            var worst = 0
            for row in 0..<geometry.height {
                for column in 0..<rowBytes {
                    worst = max(worst, abs(Int(pa[row * sa + column]) - Int(pb[row * sb + column])))
                }
            }
            return worst
        }
    }

    @Test("rows decode to the same pixels as TurboJPEG's planes", arguments: sizes)
    func matchesTurboJPEGPlanes(size: (Int, Int)) throws {
        let (width, height) = size
        for subsampling in [JPEGChromaSubsampling.yuv422, .yuv420, .gray] {
            let jpeg = try Self.sceneJPEG(width, height, subsampling)
            for frame in [jpeg, try JPEGTestSupport.strippingHuffmanTables(jpeg)] {
                for format in JPEGCodecTests.decodedFormats {
                    let byRows = try JPEGDecoder(width: width, height: height, pixelFormat: format)
                    let whole = try JPEGDecoder(width: width, height: height, pixelFormat: format)
                    whole.decodesByRows = false
                    let a = try JPEGTestSupport.buffer(format, width, height)
                    let b = try JPEGTestSupport.buffer(format, width, height)
                    try byRows.decode(frame, into: a)
                    try whole.decode(frame, into: b)
                    #expect(byRows.framesDecodedByRows == 1)
                    #expect(whole.framesDecodedByRows == 0)
                    // The same IDCT and the same libyuv kernels: identical samples (BGRA too; its
                    // agreement with tjDecompress2 is JPEGCodecTests.bgraRoutesAgree). One
                    // exception: 4:2:2 → 4:2:0 at an odd height, where the rows average exact row
                    // pairs (the last row alone) and ScalePlane's bilinear 241 → 121 rows samples
                    // slightly drifting positions: chroma within 2.
                    let differences = Self.planeDifferences(a, b)
                    let oddHalving = subsampling == .yuv422 && height % 2 == 1 && format != .bgra
                    #expect(differences[0] == 0, "\(width)x\(height) \(subsampling) → \(format): luma \(differences)")
                    #expect(
                        differences.dropFirst().allSatisfy { $0 <= (oddHalving ? 2 : 0) },
                        "\(width)x\(height) \(subsampling) → \(format): per-plane differences \(differences)")
                }
            }
        }
    }

    @Test(
        "scaled decodes of 4:2:2 (1/2, 1/4) and greyscale (1/2, 1/4, 1/8) go through rows, to TurboJPEG's scaled pixels; 4:2:0 scaled and 4:2:2 at 1/8 fall back to TurboJPEG",
        arguments: [2, 4, 8])
    func scaledRows(scale: Int) throws {
        let (width, height) = (1920, 1080)
        for subsampling in [JPEGChromaSubsampling.yuv422, .yuv420, .gray] {
            let jpeg = try Self.sceneJPEG(width, height, subsampling)
            let byRowsExpected = subsampling == .gray || (subsampling == .yuv422 && scale < 8)
            for format in JPEGCodecTests.decodedFormats {
                let byRows = try JPEGDecoder(width: width, height: height, pixelFormat: format, scaleDenominator: scale)
                let turbo = try JPEGDecoder(width: width, height: height, pixelFormat: format, scaleDenominator: scale)
                turbo.decodesByRows = false
                let (w, h) = (byRows.outputWidth, byRows.outputHeight)
                let a = try JPEGTestSupport.buffer(format, w, h)
                let b = try JPEGTestSupport.buffer(format, w, h)
                try byRows.decode(jpeg, into: a)
                try turbo.decode(jpeg, into: b)
                #expect(
                    byRows.framesDecodedByRows == (byRowsExpected ? 1 : 0),
                    "\(subsampling) at 1/\(scale) → \(format): \(byRows.framesDecodedByRows) frames by rows")
                // The same scaled IDCT: the same luma; chroma through the same kernels (4:2:2 → 4:2:0
                // averages row pairs either way; an odd height's last row alone: within 2).
                let differences = Self.planeDifferences(a, b)
                #expect(
                    format == .bgra ? differences[0] <= 2 : differences[0] == 0,
                    "\(subsampling) at 1/\(scale) → \(format): per-plane differences \(differences)")
                #expect(
                    differences.dropFirst().allSatisfy { $0 <= 2 },
                    "\(subsampling) at 1/\(scale) → \(format): per-plane differences \(differences)")
            }
        }
    }

    @Test func otherLayoutsFallBackToTurboJPEG() throws {
        let jpeg = try Self.sceneJPEG(640, 480, .yuv444)
        for format in JPEGCodecTests.decodedFormats {
            let decoder = try JPEGDecoder(width: 640, height: 480, pixelFormat: format)
            let decoded = try JPEGTestSupport.buffer(format, 640, 480)
            try decoder.decode(jpeg, into: decoded)
            #expect(decoder.framesDecodedByRows == 0, "4:4:4 → \(format) went through rows")
        }
    }

    @Test("a damaged frame leaves nothing behind: the next good frame decodes exactly")
    func recoversAfterDamagedFrames() throws {
        let good = try Self.sceneJPEG(640, 480, .yuv422)
        let scan = try #require(good.withUnsafeBytes { JPEGFrame.layout($0) }).scanOffset + 40
        var corrupt = good
        for index in stride(from: scan, to: scan + 400, by: 2) {
            corrupt[index] = 0xFF
            corrupt[index + 1] = 0x99
        }
        let truncated = Array(good.prefix(good.count / 2)) + [0xFF, 0xD9]
        for format in JPEGCodecTests.decodedFormats {
            let decoder = try JPEGDecoder(width: 640, height: 480, pixelFormat: format)
            let reference = try JPEGTestSupport.buffer(format, 640, 480)
            try decoder.decode(good, into: reference)
            for bad in [corrupt, truncated] {
                let scratch = try JPEGTestSupport.buffer(format, 640, 480)
                #expect(throws: CaptureError.self) { try decoder.decode(bad, into: scratch) }
                // Frames without tables after the failure still get the standard ones.
                let again = try JPEGTestSupport.buffer(format, 640, 480)
                try decoder.decode(try JPEGTestSupport.strippingHuffmanTables(good), into: again)
                #expect(Self.planeDifferences(again, reference).allSatisfy { $0 == 0 }, "\(format)")
            }
            #expect(decoder.framesDecodedByRows == 3)
        }
    }
}
