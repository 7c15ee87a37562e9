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

/// A backend that lists one format and never streams.
private final class ListedBackend: DeviceBackend {
    let uniqueID: String
    var localizedName: String { "Listed \(uniqueID)" }
    var modelID: String { "listed" }
    var manufacturer: String { "Tests" }
    var deviceType: CaptureDevice.DeviceType { .external }
    let formats = [
        CaptureDevice.Format(pixelFormat: .bgra, width: 64, height: 48, frameRateRanges: [.init(framesPerSecond: 30)])
    ]
    var isConnected: Bool { true }

    init(uniqueID: String) { self.uniqueID = uniqueID }

    func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: DeviceStreamSink
    ) throws(CaptureError) -> MediaTime {
        try checkCanStream(format)
        throw CaptureError(.driverError, "'\(localizedName)' only lists")
    }

    func stopStreaming() {}
}

private struct ListedProvider: DeviceProvider {
    let backend: ListedBackend
    var sortOrder: Int { 500 }
    func discoverBackends() -> [any DeviceBackend] { [backend] }
}

@Suite("Provider registration")
struct ProviderRegistrationTests {
    @Test("CaptureDevice.registerProvider adds a provider to the registry lookups consult, in sort order")
    func registerProvider() throws {
        let registry = DeviceRegistry(providers: [VirtualCameraProvider()])
        try DeviceRegistry.$current.withValue(registry) {
            #expect(CaptureDevice.device(withUniqueID: "listed:1") == nil)
            CaptureDevice.registerProvider(ListedProvider(backend: ListedBackend(uniqueID: "listed:1")))
            let ids = CaptureDevice.devices(for: .video).map(\.uniqueID)
            #expect(ids == ["listed:1", VirtualCameraProvider.shared.device.uniqueID], "500 sorts before 1000")
            let device = try #require(CaptureDevice.device(withUniqueID: "listed:1"))
            #expect(device.localizedName == "Listed listed:1")
        }
        #expect(CaptureDevice.device(withUniqueID: "listed:1") == nil, "the process's registry is untouched")
    }

    @Test("the built-in providers come through the same registration as any other")
    func builtInsRegister() {
        let registry = DeviceRegistry(providers: [])
        BuiltInProviders.register(in: registry)
        let kinds = registry.providerList().map { String(describing: type(of: $0)) }
        #expect(kinds == BuiltInProviders.make().map { String(describing: type(of: $0)) })
        #expect(DeviceRegistry.shared.providerList().contains { $0 is VirtualCameraProvider })
    }
}
