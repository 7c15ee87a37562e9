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

/// The Core Video and Core Media function forms answer what the Swift API answers, with Core
/// Video's values for non-planar buffers.
@Suite("Core Video and Core Media function forms")
struct CoreVideoFunctionTests {
    @Test("pixel format constants are Core Video's FourCC numbers and map to PixelFormat")
    func constants() {
        #expect(kCVPixelFormatType_32BGRA == 0x4247_5241)  // 'BGRA'
        #expect(kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange == 0x3432_3076)  // '420v'
        #expect(kCVPixelFormatType_420YpCbCr8BiPlanarFullRange == 0x3432_3066)  // '420f'
        #expect(PixelFormat(osType: kCVPixelFormatType_32BGRA) == .bgra)
        #expect(PixelFormat(osType: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange) == .nv12VideoRange)
        #expect(PixelFormat(osType: kCVPixelFormatType_420YpCbCr8BiPlanarFullRange) == .nv12FullRange)
        #expect(PixelFormat(osType: kCVPixelFormatType_422YpCbCr8_yuvs) == .yuyv)
        #expect(PixelFormat(osType: 0x3276_7579) == nil, "'2vuy' has no layout here")
        #expect(PixelFormat.nv12FullRange.osType == kCVPixelFormatType_420YpCbCr8BiPlanarFullRange)
        #expect(kCVPixelBufferPixelFormatTypeKey == "PixelFormatType")
    }

    @Test("a planar buffer from a pool: every function returns what its method returns")
    func planar() throws {
        let pool = try PixelBufferPool(pixelFormat: .nv12VideoRange, width: 320, height: 240, capacity: 2)
        let buffer = try #require(pool.makePixelBuffer())
        #expect(PixelBufferLockBaseAddress(buffer, .readOnly) == kCVReturnSuccess)
        defer { PixelBufferUnlockBaseAddress(buffer, .readOnly) }
        #expect(PixelBufferGetWidth(buffer) == buffer.width && PixelBufferGetWidth(buffer) == 320)
        #expect(PixelBufferGetHeight(buffer) == buffer.height && PixelBufferGetHeight(buffer) == 240)
        #expect(PixelBufferGetBytesPerRow(buffer) == buffer.bytesPerRow)
        #expect(PixelBufferGetBaseAddress(buffer) == buffer.baseAddress)
        #expect(PixelBufferGetPixelFormatType(buffer) == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
        #expect(PixelBufferIsPlanar(buffer) && PixelBufferGetPlaneCount(buffer) == 2)
        for plane in 0..<2 {
            #expect(PixelBufferGetBaseAddressOfPlane(buffer, plane) == buffer.baseAddress(ofPlane: plane))
            #expect(PixelBufferGetWidthOfPlane(buffer, plane) == buffer.width(ofPlane: plane))
            #expect(PixelBufferGetHeightOfPlane(buffer, plane) == buffer.height(ofPlane: plane))
            #expect(PixelBufferGetBytesPerRowOfPlane(buffer, plane) == buffer.bytesPerRow(ofPlane: plane))
        }
        #expect(PixelBufferGetWidthOfPlane(buffer, 1) == 160 && PixelBufferGetHeightOfPlane(buffer, 1) == 120)
        // A plane that does not exist answers nil / 0 instead of trapping.
        #expect(PixelBufferGetBaseAddressOfPlane(buffer, 2) == nil)
        #expect(PixelBufferGetBaseAddressOfPlane(buffer, -1) == nil)
        #expect(PixelBufferGetBytesPerRowOfPlane(buffer, 5) == 0)
    }

    @Test("a non-planar buffer: Core Video's plane count of 0 and no plane addresses")
    func nonPlanar() throws {
        let pool = try PixelBufferPool(pixelFormat: .bgra, width: 64, height: 48, capacity: 1)
        let buffer = try #require(pool.makePixelBuffer())
        #expect(PixelBufferLockBaseAddress(buffer, []) == kCVReturnSuccess)
        #expect(PixelBufferGetBaseAddress(buffer) == buffer.baseAddress)
        #expect(PixelBufferGetBytesPerRow(buffer) == buffer.bytesPerRow && buffer.bytesPerRow == 64 * 4)
        #expect(PixelBufferGetPixelFormatType(buffer) == kCVPixelFormatType_32BGRA)
        #expect(!PixelBufferIsPlanar(buffer) && PixelBufferGetPlaneCount(buffer) == 0 && buffer.planeCount == 1)
        #expect(PixelBufferGetBaseAddressOfPlane(buffer, 0) == nil)
        #expect(PixelBufferGetWidthOfPlane(buffer, 0) == 0 && PixelBufferGetHeightOfPlane(buffer, 0) == 0)
        #expect(PixelBufferGetBytesPerRowOfPlane(buffer, 0) == 0)
        #expect(PixelBufferUnlockBaseAddress(buffer, []) == kCVReturnSuccess)
    }

    @Test("sample buffer functions return the buffer's image and timing")
    func sampleBuffer() throws {
        let pool = try PixelBufferPool(pixelFormat: .bgra, width: 16, height: 16, capacity: 1)
        let image = try #require(pool.makePixelBuffer())
        let sample = SampleBuffer(
            imageBuffer: image, presentationTimeStamp: MediaTimeMake(value: 7, timescale: 30),
            duration: MediaTimeMake(value: 1, timescale: 30))
        #expect(SampleBufferGetImageBuffer(sample) === image)
        #expect(SampleBufferGetPresentationTimeStamp(sample) == sample.presentationTimeStamp)
        #expect(SampleBufferGetPresentationTimeStamp(sample) == MediaTime(value: 7, timescale: 30))
        #expect(SampleBufferGetDuration(sample) == MediaTime(value: 1, timescale: 30))
        let untimed = SampleBuffer(imageBuffer: image, presentationTimeStamp: .zero)
        #expect(!SampleBufferGetDuration(untimed).isValid)
    }
}
