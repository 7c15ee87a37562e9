import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Viewfinder
@testable import ViewfinderCore
@testable import ViewfinderTestSupport

/// The device's one Motion-JPEG decode: each frame decoded once for every output, only as large as
/// the largest output needs (TurboJPEG's 1/2, 1/4, 1/8 scales), and not at all when every output
/// drops it.
@Suite("Shared Motion-JPEG decode")
struct SharedDecodeTests {
    /// The stated quality of a scaled decode: against a box-filtered reference of the whole
    /// decode, the scaled decode (then scaled the rest of the way) is at least this many dB
    /// (luma)...
    static let minimumPSNR = 35.0
    /// ...and at most this many dB below the whole decode scaled by the converter, counting that
    /// one as at most ``ceilingPSNR`` (a 2:1 halving of the whole decode *is* the box reference,
    /// an infinite PSNR; beyond 45 dB no 8-bit difference is visible).
    static let allowedLoss = 3.0
    static let ceilingPSNR = 45.0

    /// Whether `quality` meets the statement above.
    static func meets(_ quality: (scaled: Double, whole: Double)) -> Bool {
        quality.scaled >= minimumPSNR && quality.scaled >= min(quality.whole, ceilingPSNR) - allowedLoss
    }

    /// A session on `camera` with `outputs`, running.
    static func run(_ camera: JPEGFrameCamera, outputs: [CaptureOutput]) throws -> (CaptureSession, CaptureDevice) {
        let device = CaptureDevice(backend: camera)
        let session = CaptureSession(notificationCenter: NotificationCenter())
        session.sessionPreset = .inputPriority
        try session.tryAddInput(try CaptureDeviceInput(device: device))
        for output in outputs { try session.tryAddOutput(output) }
        session.startRunning()
        return (session, device)
    }

    @Test("a data output and a photo output on one Motion-JPEG camera decode each frame once")
    func dataAndPhotoShareOneDecode() throws {
        let camera = JPEGFrameCamera()
        let data = CaptureVideoDataOutput()
        data.typedVideoSettings = try VideoSettings(pixelFormat: .bgra)
        let delegate = RecordingDelegate()
        data.setSampleBufferDelegate(delegate, queue: delegate.queue)
        let photos = CapturePhotoOutput()
        let (session, device) = try Self.run(camera, outputs: [data, photos])
        #expect(session.isRunning)
        defer { session.stopRunning() }
        let plan = try #require(device.sharedDecodePlan)
        #expect(plan.decoded.size == CaptureDevice.Dimensions(width: 640, height: 480))
        #expect(plan.scaleDenominator == 1)
        let recorder = PhotoRecorder()
        let bgra = CapturePhotoSettings(format: [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA])
        let frames = 6
        for sequence in 0..<frames {
            if sequence == 3 { photos.capturePhoto(with: bgra, delegate: recorder) }
            #expect(camera.push(try JPEGTestSupport.jpeg(UInt64(sequence)), sequence: UInt64(sequence)))
            #expect(delegate.waitForFrames(sequence + 1))
            if sequence == 3 { #expect(recorder.waitForFinished(1)) }
        }
        #expect(data.waitUntilDelivered(timeout: 20))
        let statistics = try #require(device.sharedDecodeStatistics)
        #expect(statistics.decodes == frames, "\(statistics)")
        #expect(statistics.shared >= 1, "the photo took the data output's image: \(statistics)")
        #expect(delegate.frames.map(\.patternNumber) == (0..<UInt64(frames)).map { $0 })
        let pixels = try #require(recorder.results(bgra.uniqueID).first?.photo.pixelBuffer)
        #expect(TestPattern.readSequenceNumber(from: pixels) == 3)
        let counts = data.statistics
        #expect(counts.captured == counts.delivered + counts.dropped + counts.rateGated, "\(counts)")
    }

    @Test("a frame every output drops is never decoded")
    func droppedFramesAreNotDecoded() throws {
        let camera = JPEGFrameCamera()
        let data = CaptureVideoDataOutput()
        data.typedVideoSettings = try VideoSettings(pixelFormat: .nv12VideoRange)
        // Every other frame of the 30 fps camera is gated by the output's 15 fps limit.
        data.minFrameDuration = MediaTime(value: 1, timescale: 15)
        let delegate = RecordingDelegate()
        data.setSampleBufferDelegate(delegate, queue: delegate.queue)
        let (session, device) = try Self.run(camera, outputs: [data])
        #expect(session.isRunning)
        defer { session.stopRunning() }
        let frames = 8
        for sequence in 0..<frames {
            #expect(camera.push(try JPEGTestSupport.jpeg(UInt64(sequence)), sequence: UInt64(sequence)))
            if sequence % 2 == 0 { #expect(delegate.waitForFrames(sequence / 2 + 1)) }
        }
        #expect(data.waitUntilDelivered(timeout: 20))
        let counts = data.statistics
        #expect(counts.delivered == frames / 2 && counts.rateGated == frames / 2, "\(counts)")
        let statistics = try #require(device.sharedDecodeStatistics)
        #expect(statistics.decodes == counts.delivered, "only delivered frames decode: \(statistics)")
    }

    @Test("a 960x540 request from a 1080p Motion-JPEG camera is served by a 1/2-scale decode")
    func halfScaleDecode() throws {
        let camera = JPEGFrameCamera(width: 1920, height: 1080)
        let data = CaptureVideoDataOutput()
        data.typedVideoSettings = try VideoSettings(pixelFormat: .nv12FullRange, width: 960, height: 540)
        let delivered = Mutex<[UInt8]>([])
        let delegate = RecordingDelegate(
            readsPattern: false,
            inspect: { sample in
                guard let image = sample.imageBuffer, sample.sequenceNumber == 0 else { return }
                delivered.withLock { $0 = SharedDecodeTests.luma(image) }
            })
        data.setSampleBufferDelegate(delegate, queue: delegate.queue)
        let (session, device) = try Self.run(camera, outputs: [data])
        #expect(session.isRunning)
        defer { session.stopRunning() }
        let plan = try #require(device.sharedDecodePlan)
        #expect(plan.scaleDenominator == 2 && plan.decoded.size == CaptureDevice.Dimensions(width: 960, height: 540))
        let step = try #require(data.pipelineForTesting?.chain.decodeStep)
        #expect(step.scaleDenominator == 2)
        #expect(data.pipelineForTesting?.chain.steps.count == 1, "decoded straight to the asked size: no scaling pass")
        let jpeg = try JPEGTestSupport.jpeg(0, width: 1920, height: 1080, quality: 0.85)
        #expect(camera.push(jpeg, sequence: 0))
        #expect(delegate.waitForFrames(1))
        #expect(data.waitUntilDelivered(timeout: 20))
        let statistics = try #require(device.sharedDecodeStatistics)
        #expect(statistics.decodes == 1 && statistics.scaledDecodes == 1, "\(statistics)")
        let frame = try #require(delegate.frames.first)
        #expect(frame.width == 960 && frame.height == 540 && frame.pixelFormat == .nv12FullRange)

        let quality = try Self.compare(jpeg, camera: (1920, 1080), to: (960, 540), scaled: delivered.withLock { $0 })
        #expect(Self.meets(quality), "\(quality)")
    }

    @Test("640x360 from 1080p: a 1/2-scale decode scaled the rest of the way stays within the stated PSNR")
    func scaledDecodeThenScale() throws {
        let jpeg = try JPEGTestSupport.jpeg(5, width: 1920, height: 1080, quality: 0.85)
        // The chain a 640x360 request plans: a 1/2 decode (960x540), then the converter's scaling.
        let chain = try ProcessorChain(
            deviceFormat: FrameFormat(pixelFormat: .mjpeg, width: 1920, height: 1080), requestedFormat: .nv12FullRange,
            requestedSize: CaptureDevice.Dimensions(width: 640, height: 360), processors: [], budget: 2,
            sharedDecode: nil)
        #expect(chain.decodeStep?.scaleDenominator == 2)
        let source = JPEGBytes.pixelBuffer(holding: Data(jpeg), width: 1920, height: 1080)
        let sample = CapturedFrame(
            buffer: source, presentationTime: .zero, duration: MediaTime(value: 1, timescale: 30), sequenceNumber: 0,
            hostArrivalTime: .zero)
        guard case .image(let image, _) = chain.run(source, of: sample) else {
            Issue.record("the chain dropped the frame")
            return
        }
        #expect(image.width == 640 && image.height == 360)
        let quality = try Self.compare(jpeg, camera: (1920, 1080), to: (640, 360), scaled: Self.luma(image))
        #expect(Self.meets(quality), "\(quality)")
    }

    @Test("the negotiator prices a shared decode once, and a scaled decode below a whole one")
    func pricing() throws {
        let format = CaptureDevice.Format(
            pixelFormat: .mjpeg, width: 1920, height: 1080, frameRateRanges: [FrameRateRange(framesPerSecond: 30)])
        let nv12 = OutputRequest(pixelFormat: .nv12VideoRange)
        let one = FormatNegotiator.conversionCost(from: format, to: [nv12])
        let three = FormatNegotiator.conversionCost(from: format, to: [nv12, nv12, nv12])
        #expect(three.work == one.work, "three outputs of the same format share one decode")
        let half = OutputRequest(pixelFormat: .nv12VideoRange, size: CaptureDevice.Dimensions(width: 960, height: 540))
        let scaled = FormatNegotiator.conversionCost(from: format, to: [half])
        #expect(scaled.work < one.work, "1/2-scale decode: \(scaled) vs \(one)")
        #expect(
            SharedDecodePlan(
                camera: FrameFormat(pixelFormat: .mjpeg, width: 1920, height: 1080), format: .nv12FullRange,
                scaleDenominator: 2
            ).cost.work
                < MJPEGDecodeStep.estimatedCost(
                    decoding: CaptureDevice.Dimensions(width: 1920, height: 1080), to: .nv12FullRange
                ).work)
    }

    @Test(
        "scaled decodes of 4:2:2, 4:2:0 and greyscale frames at 1/2, 1/4, 1/8 match a box-scaled whole decode",
        arguments: [JPEGChromaSubsampling.yuv422, .yuv420, .gray], [2, 4, 8])
    func scaledLayouts(subsampling: JPEGChromaSubsampling, scale: Int) throws {
        // 1080 / 8 = 135: an odd height, whose last chroma row pairs with itself.
        let (width, height) = (1920, 1080)
        let jpeg = try JPEGTestSupport.jpeg(7, width: width, height: height, subsampling: subsampling, quality: 0.9)
        let whole = try JPEGDecoder(width: width, height: height, pixelFormat: .nv12FullRange)
        let full = try JPEGTestSupport.buffer(.nv12FullRange, width, height)
        try whole.decode(jpeg, into: full)
        let (w, h) = (width / scale, height / scale)
        let reference = Self.boxScale(Self.luma(full), from: (width, height), to: (w, h))
        for format in [PixelFormat.nv12FullRange, .i420, .nv12VideoRange, .bgra] {
            let decoder = try JPEGDecoder(width: width, height: height, pixelFormat: format, scaleDenominator: scale)
            #expect(decoder.outputWidth == w && decoder.outputHeight == h)
            let scaled = try JPEGTestSupport.buffer(format, w, h)
            try decoder.decode(jpeg, into: scaled)
            // Compared in full-range NV12 (the converter maps the others back).
            let conversion = try FrameConversion(
                from: format, size: CaptureDevice.Dimensions(width: w, height: h), to: .nv12FullRange,
                size: CaptureDevice.Dimensions(width: w, height: h), capacity: 1)
            let comparable = format == .nv12FullRange ? scaled : try #require(try conversion.convert(scaled))
            let psnr = Self.psnr(Self.luma(comparable), reference)
            #expect(psnr >= 30, "\(subsampling) 1/\(scale) \(format): \(psnr) dB")
            if subsampling != .gray, format != .bgra {
                // Chroma is decoded, not grey: the pattern's colours survive.
                let uv = comparable.baseAddress(ofPlane: 1).assumingMemoryBound(to: UInt8.self)
                let span = UnsafeBufferPointer(start: uv, count: comparable.bytesPerRow(ofPlane: 1) * (h / 2))
                #expect(span.contains { $0 < 100 || $0 > 156 }, "\(subsampling) 1/\(scale) \(format)")
            }
        }
    }

    // MARK: Helpers

    /// Plane 0 of `image`, rows packed.
    static func luma(_ image: PixelBuffer) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(image.width * image.height)
        let base = image.baseAddress(ofPlane: 0).assumingMemoryBound(to: UInt8.self)
        for row in 0..<image.height {
            bytes.append(
                contentsOf: UnsafeBufferPointer(start: base + row * image.bytesPerRow(ofPlane: 0), count: image.width))
        }
        return bytes
    }

    /// The PSNR (luma) against a box-filtered reference of the whole decode: of `scaled` (the
    /// scaled decode's result) and of the whole decode scaled by the converter.
    static func compare(
        _ jpeg: [UInt8], camera: (Int, Int), to size: (Int, Int), scaled: [UInt8]
    ) throws -> (scaled: Double, whole: Double) {
        let decoder = try JPEGDecoder(width: camera.0, height: camera.1, pixelFormat: .nv12FullRange)
        let full = try JPEGTestSupport.buffer(.nv12FullRange, camera.0, camera.1)
        try decoder.decode(jpeg, into: full)
        let conversion = try FrameConversion(
            from: .nv12FullRange, size: CaptureDevice.Dimensions(width: camera.0, height: camera.1), to: .nv12FullRange,
            size: CaptureDevice.Dimensions(width: size.0, height: size.1), capacity: 1)
        let converted = try #require(try conversion.convert(full))
        let reference = boxScale(luma(full), from: camera, to: size)
        return (psnr(scaled, reference), psnr(luma(converted), reference))
    }

    /// An area average of `plane` from `from` to `to` (integer ratios only).
    static func boxScale(_ plane: [UInt8], from: (Int, Int), to: (Int, Int)) -> [UInt8] {
        let (fx, fy) = (from.0 / to.0, from.1 / to.1)
        var out = [UInt8](repeating: 0, count: to.0 * to.1)
        plane.withUnsafeBufferPointer { source in
            for y in 0..<to.1 {
                for x in 0..<to.0 {
                    var sum = 0
                    for dy in 0..<fy {
                        let row = (y * fy + dy) * from.0 + x * fx
                        for dx in 0..<fx { sum += Int(source[row + dx]) }
                    }
                    out[y * to.0 + x] = UInt8((sum + fx * fy / 2) / (fx * fy))
                }
            }
        }
        return out
    }

    /// Peak signal-to-noise ratio of `a` against `b` in dB (8-bit samples).
    static func psnr(_ a: [UInt8], _ b: [UInt8]) -> Double {
        guard a.count == b.count, !a.isEmpty else { return 0 }
        var squared = 0.0
        for index in a.indices {
            let difference = Double(Int(a[index]) - Int(b[index]))
            squared += difference * difference
        }
        let mse = squared / Double(a.count)
        return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
    }
}
