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

@Suite("Capture error codes")
struct CaptureErrorCodeTests {
    @Test("codes are an open set: compared by name, matched in a switch with a default, extensible")
    func openCodes() {
        let error = CaptureError(.noOutputs, "startRunning() found no outputs: add an output first")
        #expect(error.code == .noOutputs)
        #expect(error.code != .noInputs, "no outputs is not reported as no inputs")
        #expect(error.code.rawValue == "noOutputs")
        #expect(CaptureError.Code(rawValue: "deviceBusy") == .deviceBusy)
        // A code a later version (or a client) adds compiles and compares without breaking anyone.
        let future = CaptureError.Code(rawValue: "recordingFailed")
        #expect(!CaptureError.Code.knownCodes.contains(future))
        func kind(_ code: CaptureError.Code) -> String {
            switch code {
            case .deviceBusy, .deviceDisconnected: return "device"
            case .invalidArgument: return "argument"
            default: return "other"
            }
        }
        #expect(kind(.deviceBusy) == "device")
        #expect(kind(.invalidArgument) == "argument")
        #expect(kind(future) == "other")
        #expect("\(CaptureError.Code.permissionDenied)" == "permissionDenied")
    }

    @Test("every known code has its own name")
    func uniqueNames() {
        let names = CaptureError.Code.knownCodes.map(\.rawValue)
        #expect(Set(names).count == names.count)
        #expect(names.contains("noOutputs"))
        #expect(names.count == 28)
    }
}
