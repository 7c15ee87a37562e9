// An output written the way an application or another library writes one: `import Viewfinder`
// only, never @testable. It is the README's "Writing an output" example.
import Dispatch
import Viewfinder

/// What the output hands over: one line per frame.
struct FrameLogEntry: Sendable, Equatable {
    var sequenceNumber: UInt64
    var presentationTime: MediaTime
    var width: Int
    var height: Int
}

/// Hears the output's entries and drops, on the queue it was set with.
protocol FrameLogDelegate: AnyObject {
    func frameLog(_ output: CaptureOutput, didOutput entry: FrameLogEntry)
    func frameLog(_ output: CaptureOutput, didDrop count: Int, reason: DroppedFrameReason)
}

/// Logs each frame's number, time and size: an output whose file holds its job, the core the rest.
final class FrameLogOutput: CaptureOutput, @unchecked Sendable {  // unchecked: state is in the core.
    /// The job: ask for `pixelFormat` (or what the camera has), turn a frame into an entry.
    struct Body: OutputBody {
        var label: String { "frame-log" }
        var acceptedMediaTypes: [MediaType] { [.video] }
        var initialSettings: PixelFormat? { nil }

        func request(for pixelFormat: PixelFormat?) -> OutputRequest { OutputRequest(pixelFormat: pixelFormat) }

        func makeContext(
            format: CaptureDevice.Format, frameDuration: MediaTime, settings: PixelFormat?
        ) throws(CaptureError) -> CaptureDevice.Format {
            if let settings, settings != format.pixelFormat {
                throw CaptureError(.unsupportedFormat, "the frame log wants \(settings), the camera gives \(format)")
            }
            return format
        }

        func prepare(
            _ sample: CapturedSample, context: CaptureDevice.Format, budget: FrameBudget, connection: CaptureConnection
        ) -> DeliveryEngine<CaptureDevice.Format, FrameLogEntry>.Preparation {
            guard let image = sample.image else { return .dropped(.droppedByProcessor("frame log: not video")) }
            let entry = FrameLogEntry(
                sequenceNumber: sample.sequenceNumber, presentationTime: sample.presentationTime, width: image.width,
                height: image.height)
            return .ready(entry, holdsSlot: false)
        }

        func consume(
            _ entry: FrameLogEntry, from connection: CaptureConnection, output: CaptureOutput,
            delegate: any FrameLogDelegate
        ) {
            delegate.frameLog(output, didOutput: entry)
        }

        func reportDrop(
            _ drop: DeliveryEngine<CaptureDevice.Format, FrameLogEntry>.DropReport, output: CaptureOutput,
            delegate: any FrameLogDelegate
        ) {
            delegate.frameLog(output, didDrop: drop.count, reason: drop.reason)
        }
    }

    private let core = EngineOutputCore(Body(), budgetLimit: 4)

    override init() {
        super.init()
        adopt(core)
    }

    /// Sets the delegate (held weakly) and the queue it is called on.
    func setDelegate(_ delegate: (any FrameLogDelegate)?, queue: DispatchQueue?) {
        core.setDelegate(delegate.map { delegate in { [weak delegate] in delegate } }, queue: queue)
    }

    /// The format to ask for; `nil` for whatever the camera captures. Applies by the one rule.
    func setPixelFormat(_ pixelFormat: PixelFormat?) throws(CaptureError) {
        try core.applyChange { settings, _ in settings = pixelFormat }
    }

    /// The format the running stream negotiated.
    var streamFormat: CaptureDevice.Format? { core.context }
}
