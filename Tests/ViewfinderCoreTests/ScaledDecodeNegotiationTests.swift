import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderCore
@testable import ViewfinderTestSupport

/// Whether the negotiator, pricing each candidate by its plan (the shared decode at its scale, the
/// conversions from it), chooses a Motion-JPEG format over a raw one where that costs less, and
/// keeps the raw one where it does not.
///
/// What the plan's estimates say (1080p camera, work on the converter's scale, one output each):
/// a 1/2-scale decode costs 21.9 (3/4 of a decode is entropy decoding, which no scale saves),
/// while a YUYV 1080p frame converts to NV12 at 960x540 for 5.0 (a fused halving) and at 640x360
/// for 13.3 (libswscale over the YUYV frame). So for one output a raw format of the camera's size
/// that keeps the rate always costs less than decoding (the preset fixes the size, so the
/// negotiator compares formats of one size only); Motion-JPEG wins by price only where one decode
/// replaces several conversions, and otherwise where the raw format cannot keep the rate (a USB 2
/// webcam's YUYV 1080p at 5 fps: a penalty, not a price).
@Suite("Negotiation prices the scaled Motion-JPEG decode")
struct ScaledDecodeNegotiationTests {
    static func format(_ pixelFormat: PixelFormat, _ width: Int = 1920, _ height: Int = 1080, fps: Int32 = 30)
        -> CaptureDevice.Format
    {
        CaptureDevice.Format(
            pixelFormat: pixelFormat, width: width, height: height, frameRateRanges: [.init(framesPerSecond: fps)])
    }

    static func device(_ formats: [CaptureDevice.Format]) -> CaptureDevice {
        VirtualCamera(configuration: .init(clock: ManualClock(), formats: formats)).device
    }

    static func request(_ format: PixelFormat, _ width: Int, _ height: Int) -> OutputRequest {
        OutputRequest(pixelFormat: format, size: CaptureDevice.Dimensions(width: Int32(width), height: Int32(height)))
    }

    /// A USB 3 webcam: YUYV and Motion-JPEG, both 1080p at 30 fps.
    static let usb3 = [format(.yuyv), format(.mjpeg)]

    @Test(
        "three 640x360 outputs on a 1080p30 camera offering YUYV and Motion-JPEG: one 1/2-scale decode costs less than three scaling passes over YUYV, so Motion-JPEG is chosen"
    )
    func severalScaledOutputsChooseMJPEG() throws {
        let requests = Array(repeating: Self.request(.nv12FullRange, 640, 360), count: 3)
        let choice = try FormatNegotiator.negotiate(
            device: Self.device(Self.usb3), preset: .hd1920x1080, requests: requests)
        #expect(choice.format.pixelFormat == .mjpeg && choice.format.dimensions == .init(width: 1920, height: 1080))
        #expect(choice.frameDuration == MediaTime(value: 1, timescale: 30))
        let mjpeg = FormatNegotiator.conversionCost(from: Self.format(.mjpeg), to: requests)
        let yuyv = FormatNegotiator.conversionCost(from: Self.format(.yuyv), to: requests)
        #expect(mjpeg.work < yuyv.work && mjpeg < yuyv, "MJPEG \(mjpeg) vs YUYV \(yuyv)")
        // The plan: one decode at 1/2 (960x540, the smallest scale covering 640x360), then each
        // output scales from it; the decode is priced once.
        let plan = try #require(SharedDecodePlan(format: choice.format, requests: requests))
        #expect(
            plan.scaleDenominator == 2
                && plan.decoded == FrameFormat(pixelFormat: .nv12FullRange, width: 960, height: 540))
        let chain = try ChainPlan(
            device: FrameFormat(pixelFormat: .mjpeg, width: 1920, height: 1080), requestedFormat: .nv12FullRange,
            requestedSize: CaptureDevice.Dimensions(width: 640, height: 360), stages: [], sharedDecode: plan)
        #expect(chain.sharedDecode == plan)
        #expect(
            chain.steps == [
                .decode(
                    from: FrameFormat(pixelFormat: .mjpeg, width: 1920, height: 1080),
                    to: FrameFormat(pixelFormat: .nv12FullRange, width: 960, height: 540)),
                .convert(
                    from: FrameFormat(pixelFormat: .nv12FullRange, width: 960, height: 540),
                    to: FrameFormat(pixelFormat: .nv12FullRange, width: 640, height: 360)),
            ])
        let perOutput = try #require(chain.cost)
        #expect(
            abs(mjpeg.work - (plan.cost.work + 3 * perOutput.work)) < 1e-9, "\(mjpeg) = decode once + 3 × \(perOutput)")
    }

    @Test(
        "the same camera, one 640x360 output (or 960x540 + 640x360): YUYV's conversions cost less than a decode, so YUYV is kept",
        arguments: [
            [(PixelFormat.nv12FullRange, 640, 360)],
            [(PixelFormat.nv12FullRange, 960, 540)],
            [(PixelFormat.nv12FullRange, 960, 540), (PixelFormat.nv12FullRange, 640, 360)],
            [(PixelFormat.bgra, 640, 360), (PixelFormat.bgra, 640, 360)],
        ])
    func rawWinsWhenItCostsLess(outputs: [(PixelFormat, Int, Int)]) throws {
        let requests = outputs.map { Self.request($0.0, $0.1, $0.2) }
        let choice = try FormatNegotiator.negotiate(
            device: Self.device(Self.usb3), preset: .hd1920x1080, requests: requests)
        let mjpeg = FormatNegotiator.conversionCost(from: Self.format(.mjpeg), to: requests)
        let yuyv = FormatNegotiator.conversionCost(from: Self.format(.yuyv), to: requests)
        #expect(choice.format.pixelFormat == .yuyv, "MJPEG \(mjpeg) vs YUYV \(yuyv)")
        #expect(yuyv.work < mjpeg.work, "MJPEG \(mjpeg) vs YUYV \(yuyv)")
    }

    @Test(
        "the shared decode's quality charge counts once per output taking it: two outputs that would save no work do not tip the choice to Motion-JPEG"
    )
    func qualityChargePerOutput() throws {
        let requests = [Self.request(.nv12FullRange, 960, 540), Self.request(.nv12FullRange, 640, 360)]
        let mjpeg = FormatNegotiator.conversionCost(from: Self.format(.mjpeg), to: requests)
        let plan = try #require(SharedDecodePlan(format: Self.format(.mjpeg), requests: requests))
        #expect(mjpeg.preference == 2 * plan.cost.preference, "\(mjpeg), decode \(plan.cost)")
        #expect(mjpeg.work > FormatNegotiator.conversionCost(from: Self.format(.yuyv), to: requests).work)
    }

    @Test(
        "a USB 2 webcam (YUYV 1080p at 5 fps, Motion-JPEG 1080p at 30): a 960x540 request runs on Motion-JPEG with a 1/2-scale decode, and at 5 fps asked, on YUYV"
    )
    func usb2WebcamChoosesScaledMJPEG() throws {
        let device = Self.device([Self.format(.yuyv, fps: 5), Self.format(.yuyv, 640, 480), Self.format(.mjpeg)])
        let request = Self.request(.nv12FullRange, 960, 540)
        for preset in [CaptureSession.Preset.high, .hd1920x1080] {
            let choice = try FormatNegotiator.negotiate(device: device, preset: preset, requests: [request])
            #expect(choice.format.pixelFormat == .mjpeg && choice.format.dimensions.width == 1920, "\(preset)")
            let plan = try #require(SharedDecodePlan(format: choice.format, requests: [request]))
            #expect(plan.scaleDenominator == 2 && plan.decoded.size == .init(width: 960, height: 540))
        }
        var slow = request
        slow.minFrameDuration = MediaTime(value: 1, timescale: 5)
        let choice = try FormatNegotiator.negotiate(device: device, preset: .hd1920x1080, requests: [slow])
        #expect(choice.format.pixelFormat == .yuyv, "at 5 fps the raw mode keeps the rate and costs less")
    }
}
