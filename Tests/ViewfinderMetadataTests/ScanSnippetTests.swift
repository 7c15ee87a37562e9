// The README's "Scanning a QR code" snippet, as written there (`import Viewfinder` only), run
// against a virtual camera instead of the default one.
import Dispatch
import Testing
import Viewfinder

/// Prints the QR codes it is told of (the README's delegate).
final class QRScanner: CaptureMetadataOutputObjectsDelegate {
    func metadataOutput(
        _ output: CaptureMetadataOutput, didOutput metadataObjects: [MetadataObject], from connection: CaptureConnection
    ) {
        for case let code as MetadataMachineReadableCodeObject in metadataObjects where code.type == .qr {
            print("QR code:", code.stringValue ?? "", "at", code.corners)
        }
    }
}

/// The README's snippet, with the camera passed in (the README takes
/// `CaptureDevice.default(for: .video)`).
func startScanning(with camera: CaptureDevice, scanner: QRScanner) throws -> (CaptureSession, CaptureMetadataOutput) {
    let session = CaptureSession()
    session.addInput(try CaptureDeviceInput(device: camera))
    let output = CaptureMetadataOutput()
    session.addOutput(output)
    output.setMetadataObjectsDelegate(scanner, queue: DispatchQueue(label: "scanner"))
    output.metadataObjectTypes = [.qr]
    session.startRunning()
    return (session, output)
}

@Suite("The README's scanning snippet")
struct ScanSnippetTests {
    @Test("it compiles with `import Viewfinder` only, connects the output and asks for QR codes")
    func snippet() throws {
        let camera = VirtualCamera(configuration: .init(isPaced: false, frameLimit: 6))
        let scanner = QRScanner()
        let (session, output) = try startScanning(with: camera.device, scanner: scanner)
        defer { session.stopRunning() }
        #expect(output.availableMetadataObjectTypes.contains(.qr))
        #expect(output.metadataObjectTypes == [.qr])
        #expect(session.isRunning)
        #expect(camera.waitUntilFinished(timeout: 30))
        #expect(output.waitUntilDelivered(timeout: 30))
        #expect(output.statistics.captured == 6)
    }
}
