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

@Suite("One plan per frame: the chain runs what negotiation priced")
struct ChainPlanTests {
    let jpeg1080 = FrameFormat(pixelFormat: .mjpeg, width: 1920, height: 1080)

    @Test("Motion-JPEG through a BGRA-only processor to NV12: decode to BGRA, process, convert once at the end")
    func decodeProcessConvert() throws {
        let processor = NamedProcessor(name: "bgra only", processor: BGRAOnly())
        let plan = try ChainPlan(
            device: jpeg1080, requestedFormat: .nv12VideoRange, requestedSize: nil,
            stages: [ChainPlan.Stage(processor)])
        let bgra = FrameFormat(pixelFormat: .bgra, width: 1920, height: 1080)
        let nv12 = FrameFormat(pixelFormat: .nv12VideoRange, width: 1920, height: 1080)
        #expect(
            plan.steps == [
                .decode(from: jpeg1080, to: bgra), .process(stage: 0, input: bgra, output: bgra),
                .convert(from: bgra, to: nv12),
            ])
        #expect(plan.output == nv12)
        // The chain built for the same request makes exactly those steps.
        let chain = try ProcessorChain(
            deviceFormat: jpeg1080, requestedFormat: .nv12VideoRange, requestedSize: nil, processors: [processor],
            budget: 2)
        #expect(chain.steps.map(Self.kind) == ["decode", "process", "convert"])
        #expect(chain.outputFormat == nv12)
        // Its cost is the decoder's and the converter's own estimates of those steps.
        let decode = MJPEGDecodeStep.estimatedCost(decoding: jpeg1080.size, to: .bgra)
        let convert = try #require(
            PixelConverter.estimatedDeliveryCost(from: .bgra, size: bgra.size, to: .nv12VideoRange, size: nv12.size))
        #expect(plan.cost == decode + convert)
    }

    @Test("negotiation prices a device format by the plan: scaled YUYV to BGRA costs what its one step costs")
    func negotiationUsesThePlan() throws {
        let yuyv = CaptureDevice.Format(
            pixelFormat: .yuyv, width: 1280, height: 720, frameRateRanges: [FrameRateRange(framesPerSecond: 30)])
        let request = OutputRequest(pixelFormat: .bgra, size: .init(width: 640, height: 360))
        let step = try #require(
            PixelConverter.estimatedDeliveryCost(
                from: .yuyv, size: .init(width: 1280, height: 720), to: .bgra, size: .init(width: 640, height: 360)))
        let cost = FormatNegotiator.conversionCost(from: yuyv, to: request)
        #expect(cost.work == step.work && cost.preference == step.preference && cost.work > 0)
        // What no chain can do is impossible, not cheap: Motion-JPEG asked from a raw camera.
        #expect(FormatNegotiator.conversionCost(from: yuyv, to: OutputRequest(pixelFormat: .mjpeg)).unservable == 1)
    }

    @Test("a processor that declares no frame format is refused while planning, naming it")
    func badProcessorOutput() throws {
        let error = try #require(throws: CaptureError.self) {
            try ChainPlan(
                device: FrameFormat(pixelFormat: .bgra, width: 64, height: 64), requestedFormat: nil,
                requestedSize: nil,
                stages: [ChainPlan.Stage(NamedProcessor(name: "empty", processor: EmptyOutput()))])
        }
        #expect(error.code == .unsupportedFormat)
        #expect(error.message.contains("'empty'"))
    }

    static func kind(_ step: ProcessorChain.Step) -> String {
        switch step {
        case .decode: "decode"
        case .convert: "convert"
        case .process: "process"
        }
    }
}

private final class BGRAOnly: FrameProcessor {
    var acceptedPixelFormats: [PixelFormat] { [.bgra] }
    func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision { .keep }
}

private final class EmptyOutput: FrameProcessor {
    var acceptedPixelFormats: [PixelFormat] { [] }
    func outputFormat(for input: FrameFormat) throws(CaptureError) -> FrameFormat {
        FrameFormat(pixelFormat: input.pixelFormat, width: 0, height: 0)
    }
    func process(_ frame: inout ProcessorFrame) throws(CaptureError) -> ProcessorDecision { .keep }
}
