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

/// Drives processors directly, outside a session: images from fresh pools, frames built the
/// way the chain builds them.
package enum ProcessorHarness {
    /// A `width` × `height` buffer of `format` showing test-pattern frame `sequenceNumber`.
    package static func pattern(
        _ format: PixelFormat, width: Int = 160, height: Int = 120, sequenceNumber: UInt64 = 0
    ) throws -> PixelBuffer {
        let image = try blank(format, width: width, height: height)
        TestPattern.render(sequenceNumber: sequenceNumber, into: image)
        return image
    }

    /// A buffer with undefined contents.
    package static func blank(_ format: PixelFormat, width: Int, height: Int) throws -> PixelBuffer {
        let pool = try PixelBufferPool(pixelFormat: format, width: width, height: height, capacity: 1)
        return try #require(pool.makePixelBuffer())
    }

    /// A buffer filled with one colour.
    package static func flat(_ format: PixelFormat, width: Int, height: Int, rgb: (UInt8, UInt8, UInt8)) throws
        -> PixelBuffer
    {
        let image = try blank(format, width: width, height: height)
        Painter(image).fill(x: 0..<width, y: 0..<height, rgb: rgb)
        return image
    }

    /// Negotiates `processor` for `image`'s format and runs it on `image` once. `writable: false`
    /// hands the image over as the chain hands over a camera's shared buffer.
    package static func run(
        _ processor: any FrameProcessor, on image: PixelBuffer, writable: Bool = true
    ) throws -> (decision: ProcessorDecision, frame: ProcessorFrame) {
        let input = FrameFormat(pixelFormat: image.pixelFormat, width: image.width, height: image.height)
        let output = try processor.outputFormat(for: input)
        let outputPool = try PixelBufferPool(
            pixelFormat: output.pixelFormat, width: output.width, height: output.height, capacity: 2)
        let copyPool = try PixelBufferPool(
            pixelFormat: input.pixelFormat, width: input.width, height: input.height, capacity: 2)
        var frame = ProcessorFrame(
            image: image, imageIsWritable: writable, presentationTimeStamp: .zero, duration: .invalid,
            sequenceNumber: 0, attachments: [:], outputFormat: output, outputPool: outputPool, copyPool: copyPool)
        let decision = try processor.process(&frame)
        return (decision, frame)
    }

    /// The processed image of one run.
    package static func output(_ processor: any FrameProcessor, on image: PixelBuffer, writable: Bool = true) throws
        -> PixelBuffer
    {
        let (decision, frame) = try run(processor, on: image, writable: writable)
        #expect(decision == .keep)
        return frame.image
    }

    /// Whether two buffers hold the same format, size and pixels (row padding ignored).
    package static func samePixels(_ a: PixelBuffer, _ b: PixelBuffer) -> Bool {
        guard a.pixelFormat == b.pixelFormat, a.width == b.width, a.height == b.height else { return false }
        for plane in 0..<a.planeCount {
            let geometry = a.pixelFormat.planeGeometry(plane, width: a.width, height: a.height)
            for row in 0..<geometry.height {
                let left = a.baseAddress(ofPlane: plane) + row * a.bytesPerRow(ofPlane: plane)
                let right = b.baseAddress(ofPlane: plane) + row * b.bytesPerRow(ofPlane: plane)
                if memcmp(left, right, geometry.bytesPerRow) != 0 { return false }
            }
        }
        return true
    }

    /// An independent copy of `image` (to check a processor left its input alone).
    package static func copy(_ image: PixelBuffer) throws -> PixelBuffer {
        let copy = try blank(image.pixelFormat, width: image.width, height: image.height)
        PixelCopy.copy(image, into: copy)
        return copy
    }

    /// BT.601 full-range luma of 8-bit R, G, B.
    package static func luma(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> Double {
        0.299 * Double(r) + 0.587 * Double(g) + 0.114 * Double(b)
    }
}
