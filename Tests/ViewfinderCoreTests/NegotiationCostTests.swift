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

@Suite("Negotiation asks the converter")
struct NegotiationCostTests {
    let rates = [FrameRateRange(framesPerSecond: 30)]

    func device(_ formats: [PixelFormat]) -> CaptureDevice {
        let list = formats.map {
            CaptureDevice.Format(pixelFormat: $0, width: 640, height: 480, frameRateRanges: rates)
        }
        return VirtualCamera(configuration: .init(clock: ManualClock(), formats: list)).device
    }

    @Test("a processor that takes only NV12 makes an NV12 camera format cheaper than a zero-copy BGRA one")
    func processorForcesConversion() throws {
        let camera = device([.bgra, .nv12VideoRange])
        func pick(_ processorFormats: [PixelFormat]) throws -> PixelFormat {
            try FormatNegotiator.negotiate(
                device: camera, preset: .vga640x480,
                requests: [OutputRequest(pixelFormat: .bgra, processorFormats: processorFormats)]
            ).format.pixelFormat
        }
        #expect(try pick([]) == .bgra, "zero-copy without processors")
        #expect(try pick([.nv12VideoRange]) == .nv12VideoRange, "BGRA would convert twice: to NV12 and back")
        #expect(try pick([.bgra, .nv12VideoRange]) == .bgra)
    }

    @Test("conversion costs follow the converter's plan: fused halving, libyuv passes, libswscale scaling")
    func costsFollowPlans() throws {
        let full = CaptureDevice.Dimensions(width: 1920, height: 1080)
        let half = CaptureDevice.Dimensions(width: 960, height: 540)
        let third = CaptureDevice.Dimensions(width: 640, height: 360)
        func cost(_ from: PixelFormat, _ to: PixelFormat, _ size: CaptureDevice.Dimensions) throws -> Double {
            try #require(PixelConverter.estimatedCost(from: from, size: full, to: to, size: size))
        }
        #expect(try cost(.nv12VideoRange, .nv12VideoRange, full) == 0)
        #expect(
            try cost(.yuyv, .nv12VideoRange, half) <= cost(.yuyv, .nv12VideoRange, full), "halving fuses into the pass")
        #expect(try cost(.yuyv, .nv12VideoRange, half) < cost(.yuyv, .nv12VideoRange, third), "libswscale costs more")
        #expect(try cost(.yuyv, .bgra, full) > cost(.yuyv, .nv12VideoRange, full), "through RGB costs more")
        #expect(try cost(.nv12VideoRange, .nv12VideoRange, third) > cost(.nv12VideoRange, .nv12VideoRange, half))
        #expect(PixelConverter.estimatedCost(from: .mjpeg, size: full, to: .bgra, size: full) == nil)
    }

    /// Takes only NV12, and records what it was given.
    final class NV12Only: FrameProcessor {
        let seen = Mutex<[PixelFormat]>([])
        var acceptedPixelFormats: [PixelFormat] { [.nv12VideoRange] }
        func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision {
            let format = frame.image.pixelFormat
            seen.withLock { $0.append(format) }
            return .keep
        }
    }

    @Test("a processor added to a running output renegotiates the camera through the session")
    func processorChangeRenegotiates() throws {
        let clock = ManualClock()
        let delegate = RecordingDelegate()
        let formats = [PixelFormat.bgra, .nv12VideoRange].map {
            CaptureDevice.Format(
                pixelFormat: $0, width: 640, height: 480, frameRateRanges: [FrameRateRange(framesPerSecond: 60)])
        }
        let rig = try Rig(
            camera: .init(clock: clock, formats: formats), settings: try VideoSettings(pixelFormat: .bgra),
            delegate: delegate)
        rig.start()
        rig.step(clock, by: .fps(60), times: 1)
        #expect(rig.camera.device.activeFormat.pixelFormat == .bgra && rig.output.isZeroCopy)
        let spy = NV12Only()
        try rig.output.addProcessor(spy, named: "spy")
        #expect(rig.camera.device.activeFormat.pixelFormat == .nv12VideoRange, "NV12 now saves a conversion")
        rig.step(clock, by: .fps(60), times: 2)
        rig.session.stopRunning()
        #expect(delegate.frames.count >= 3)
        #expect(delegate.frames.allSatisfy { $0.pixelFormat == .bgra })
        #expect(!spy.seen.withLock { $0 }.isEmpty && spy.seen.withLock { $0 }.allSatisfy { $0 == .nv12VideoRange })
        let stats = rig.output.statistics
        #expect(stats.delivered + stats.dropped + stats.rateGated == stats.captured)
    }
}
