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
@testable import ViewfinderTestSupport
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// An independent BT.601 reference (video range for video-range formats, full range for
/// full-range ones), written from the standard's equations.
enum Reference {
    static func rgb(y: UInt8, cb: UInt8, cr: UInt8, fullRange: Bool) -> (Double, Double, Double) {
        let (yf, u, v) = (Double(y), Double(cb) - 128, Double(cr) - 128)
        let r: Double
        let g: Double
        let b: Double
        if fullRange {
            r = yf + 1.402 * v
            g = yf - 0.344136 * u - 0.714136 * v
            b = yf + 1.772 * u
        } else {
            let scaled = 255.0 / 219.0 * (yf - 16)
            r = scaled + 255.0 / 224.0 * 1.402 * v
            g = scaled - 255.0 / 224.0 * (0.344136 * u + 0.714136 * v)
            b = scaled + 255.0 / 224.0 * 1.772 * u
        }
        func clip(_ x: Double) -> Double { min(255, max(0, x)) }
        return (clip(r), clip(g), clip(b))
    }

    static func ycbcr(r: Double, g: Double, b: Double, fullRange: Bool) -> (Double, Double, Double) {
        let y = 0.299 * r + 0.587 * g + 0.114 * b
        let cb = (b - y) / 1.772
        let cr = (r - y) / 1.402
        if fullRange { return (y, 128 + cb, 128 + cr) }
        return (16 + 219.0 / 255.0 * y, 128 + 224.0 / 255.0 * cb, 128 + 224.0 / 255.0 * cr)
    }

    /// The colour of pixel (x, y) of `buffer` as R, G, B (converted with this reference for
    /// Y'CbCr buffers).
    static func pixelRGB(_ buffer: PixelBuffer, x: Int, y: Int) -> (Double, Double, Double) {
        let s = sample(buffer, x: x, y: y)
        if buffer.pixelFormat == .bgra { return (Double(s.0), Double(s.1), Double(s.2)) }
        return rgb(y: s.0, cb: s.1, cr: s.2, fullRange: buffer.pixelFormat.isFullRange)
    }

    /// Raw channel values at (x, y): (R, G, B) for BGRA, (Y, Cb, Cr) otherwise.
    static func sample(_ buffer: PixelBuffer, x: Int, y: Int) -> (UInt8, UInt8, UInt8) {
        func byte(_ plane: Int, _ offset: Int, row: Int) -> UInt8 {
            buffer.baseAddress(ofPlane: plane).load(
                fromByteOffset: row * buffer.bytesPerRow(ofPlane: plane) + offset, as: UInt8.self)
        }
        switch buffer.pixelFormat {
        case .bgra:
            return (byte(0, x * 4 + 2, row: y), byte(0, x * 4 + 1, row: y), byte(0, x * 4, row: y))
        case .yuyv:
            let pair = (x / 2) * 4
            return (byte(0, x * 2, row: y), byte(0, pair + 1, row: y), byte(0, pair + 3, row: y))
        case .i420:
            return (byte(0, x, row: y), byte(1, x / 2, row: y / 2), byte(2, x / 2, row: y / 2))
        default:
            return (byte(0, x, row: y), byte(1, (x / 2) * 2, row: y / 2), byte(1, (x / 2) * 2 + 1, row: y / 2))
        }
    }
}

@Suite("Conversion through the pipeline")
struct ConversionPipelineTests {
    static let sources: [PixelFormat] = [.yuyv, .nv12VideoRange, .bgra]
    static let targets: [PixelFormat] = [.bgra, .nv12VideoRange]

    @Test(
        "sources delivered as BGRA and NV12 match the BT.601 reference within ±2 on the colour bars",
        arguments: sources, targets)
    func matchesReference(source: PixelFormat, target: PixelFormat) throws {
        try check(source: source, target: target, size: nil)
    }

    @Test("sizes from videoSettings are honoured", arguments: sources, [(320, 240), (1280, 720), (800, 448)])
    func scaled(source: PixelFormat, size: (Int, Int)) throws {
        try check(source: source, target: .bgra, size: CaptureDevice.Dimensions(width: size.0, height: size.1))
        try check(
            source: source, target: .nv12VideoRange, size: CaptureDevice.Dimensions(width: size.0, height: size.1))
    }

    @Test("the matching device format is delivered zero-copy")
    func zeroCopyWhenNative() throws {
        let delegate = RecordingDelegate()
        let rig = try Rig(
            camera: .init(clock: ManualClock()), settings: try VideoSettings(pixelFormat: .nv12VideoRange),
            delegate: delegate)
        rig.start()
        #expect(rig.camera.device.activeFormat.pixelFormat == .nv12VideoRange, "negotiation picked the native format")
        #expect(rig.output.isZeroCopy)
        rig.session.stopRunning()
    }

    private func check(source: PixelFormat, target: PixelFormat, size: CaptureDevice.Dimensions?) throws {
        let captured = Mutex<SampleBuffer?>(nil)
        let delegate = RecordingDelegate(readsPattern: true) { buffer in
            captured.withLock { if $0 == nil { $0 = buffer } }
        }
        let settings = try VideoSettings(pixelFormat: target, width: size?.pixelWidth, height: size?.pixelHeight)
        let rig = try Rig(
            camera: .init(clock: ManualClock(), formats: virtualFormats(source)), settings: settings, delegate: delegate
        )
        rig.start()
        #expect(delegate.waitForFrames(1))
        rig.session.stopRunning()
        let sample = try #require(captured.withLock { $0 })
        let image = try #require(sample.imageBuffer)
        let expectedSize = size ?? CaptureDevice.Dimensions(width: 640, height: 480)
        #expect(image.pixelFormat == target)
        #expect(image.width == expectedSize.width && image.height == expectedSize.height)
        #expect(rig.output.isZeroCopy == (source == target && size == nil))
        #expect(delegate.frames.first?.patternNumber == 0, "the sequence number survives conversion")

        // The source frame as the camera drew it.
        let pool = try PixelBufferPool(pixelFormat: source, width: 640, height: 480, capacity: 1)
        let original = try #require(pool.makePixelBuffer())
        TestPattern.render(sequenceNumber: 0, into: original)

        let rows = TestPattern.barRows(height: 480)
        let sourceY = (rows.lowerBound + rows.upperBound) / 2
        for bar in 0..<8 {
            let columns = TestPattern.barColumns(bar, width: 640)
            let sourceX = (columns.lowerBound + columns.upperBound) / 2
            let rgb = Reference.pixelRGB(original, x: sourceX, y: sourceY)
            let x = sourceX * image.width / 640
            let y = sourceY * image.height / 480
            let delivered = Reference.sample(image, x: x, y: y)
            let expected: (Double, Double, Double)
            if target == .bgra {
                expected = rgb
            } else if source.isYUV {
                // Y'CbCr to Y'CbCr of the same range: the values themselves carry over.
                let s = Reference.sample(original, x: sourceX, y: sourceY)
                expected = (Double(s.0), Double(s.1), Double(s.2))
            } else {
                expected = Reference.ycbcr(r: rgb.0, g: rgb.1, b: rgb.2, fullRange: target.isFullRange)
            }
            let channels = [
                (Double(delivered.0), expected.0), (Double(delivered.1), expected.1), (Double(delivered.2), expected.2),
            ]
            for (got, want) in channels {
                #expect(
                    abs(got - want) <= 2,
                    "\(source.name)→\(target.name) \(image.width)x\(image.height) bar \(bar): got \(delivered), want \(expected)"
                )
            }
        }
    }
}
