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

@Suite("Media types")
struct MediaTests {
    @Test("MediaTime compares and adds across timescales exactly")
    func mediaTime() {
        let third = MediaTime(value: 1, timescale: 3)
        let sixth = MediaTime(value: 1, timescale: 6)
        #expect(sixth + sixth == third)
        #expect(third - sixth == sixth)
        #expect(sixth < third && !(third < sixth))
        #expect(MediaTime(value: 2, timescale: 6).hashValue == third.hashValue)
        #expect(MediaTime(value: 1, timescale: 30) * 30 == MediaTime(value: 1, timescale: 1))
        #expect(MediaTime(seconds: 0.5).seconds == 0.5)
        #expect(MediaTime(value: 3, timescale: 2).nanoseconds == 1_500_000_000)
        #expect(MediaTime(value: -1, timescale: 3).nanoseconds == -333_333_334, "rounds toward negative infinity")
        #expect(!MediaTime.invalid.isValid && MediaTime.invalid.seconds.isNaN)
        #expect((MediaTime.invalid + third).isValid == false)
        #expect(MediaTime.invalid > MediaTime(value: 100, timescale: 1), "Core Media's order: invalid sorts last")
        #expect(MediaTime(value: 1, timescale: 0) == .invalid)
        #expect(third.converted(toTimescale: 90_000) == MediaTime(value: 30_000, timescale: 90_000))
    }

    @Test(
        "pixel formats know their planes",
        arguments: [
            (PixelFormat.bgra, 1, 640 * 480 * 4), (.nv12VideoRange, 2, 640 * 480 * 3 / 2),
            (.nv12FullRange, 2, 640 * 480 * 3 / 2),
            (.yuyv, 1, 640 * 480 * 2), (.i420, 3, 640 * 480 * 3 / 2),
        ])
    func planes(format: PixelFormat, planes: Int, bytes: Int) {
        #expect(format.planeCount == planes)
        #expect(format.frameSize(width: 640, height: 480) == bytes)
        #expect(PixelFormat(fourCC: format.fourCC) == format)
    }

    @Test("a pool is bounded, reuses memory and takes buffers back when they go")
    func pool() throws {
        let pool = try PixelBufferPool(pixelFormat: .nv12VideoRange, width: 64, height: 48, capacity: 3)
        var held = (0..<3).compactMap { _ in pool.makePixelBuffer() }
        #expect(held.count == 3)
        #expect(pool.makePixelBuffer() == nil, "exhausted")
        #expect(pool.buffersInUse == 3)
        let address = held[0].baseAddress
        held.removeFirst()
        #expect(pool.buffersInUse == 2)
        let again = try #require(pool.makePixelBuffer())
        #expect(again.baseAddress == address, "the same memory comes back")
        #expect(pool.allocatedBufferCount == 3)
        #expect(again.bytesPerRow(ofPlane: 1) == 64 && again.height(ofPlane: 1) == 24)
        #expect(Int(bitPattern: again.baseAddress(ofPlane: 1)) % 64 == 0, "planes are 64-byte aligned")
    }

    @Test("the test pattern's sequence number reads back from every format", arguments: PixelConverter.convertible)
    func pattern(format: PixelFormat) throws {
        let pool = try PixelBufferPool(pixelFormat: format, width: 320, height: 240, capacity: 1)
        let buffer = try #require(pool.makePixelBuffer())
        TestPattern.render(sequenceNumber: 0xDEAD_BEEF, into: buffer)
        #expect(TestPattern.readSequenceNumber(from: buffer) == 0xDEAD_BEEF)
        TestPattern.stamp(sequenceNumber: 12345, previous: 0xDEAD_BEEF, into: buffer)
        #expect(TestPattern.readSequenceNumber(from: buffer) == 12345)
    }
}
