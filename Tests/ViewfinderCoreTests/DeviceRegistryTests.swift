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

/// A backend of a kind the library does not know: it lists one format and never streams.
private final class StubBackend: DeviceBackend {
    let uniqueID: String
    let localizedName: String
    var modelID: String { "stub" }
    var manufacturer: String { "Tests" }
    var deviceType: CaptureDevice.DeviceType { .external }
    let formats = [
        CaptureDevice.Format(
            pixelFormat: .nv12VideoRange, width: 320, height: 240, frameRateRanges: [.init(framesPerSecond: 30)])
    ]
    var isConnected: Bool { true }

    init(uniqueID: String, name: String) {
        self.uniqueID = uniqueID
        self.localizedName = name
    }

    func startStreaming(
        format: CaptureDevice.Format, frameDuration: MediaTime, sink: DeviceStreamSink
    ) throws(CaptureError) -> MediaTime {
        throw CaptureError(.driverError, "'\(localizedName)' is a stub and does not stream")
    }

    func stopStreaming() {}
}

/// A third provider, registered from outside the library.
private struct StubProvider: DeviceProvider {
    let backends: [StubBackend]
    let sortOrder: Int
    func discoverBackends() -> [any DeviceBackend] { backends }
}

@Suite("Device registry")
struct DeviceRegistryTests {
    @Test("a provider registered from outside the library has its devices listed, in sort order")
    func thirdProvider() throws {
        let early = StubProvider(backends: [StubBackend(uniqueID: "stub:early", name: "Early")], sortOrder: -10)
        let late = StubProvider(
            backends: [
                StubBackend(uniqueID: "stub:late.1", name: "Late 1"),
                StubBackend(uniqueID: "stub:late.2", name: "Late 2"),
            ],
            sortOrder: 2000)
        let registry = DeviceRegistry(providers: [VirtualCameraProvider()])
        registry.register(late)
        registry.register(early)
        try DeviceRegistry.$current.withValue(registry) {
            let ids = CaptureDevice.devices(for: .video).map(\.uniqueID)
            #expect(ids == ["stub:early", VirtualCameraProvider.shared.device.uniqueID, "stub:late.1", "stub:late.2"])
            let early = try #require(CaptureDevice.device(withUniqueID: "stub:early"))
            #expect(early.localizedName == "Early")
            #expect(early === CaptureDevice.default(for: .video), "the lowest sort order comes first")
            #expect(early.formats.first?.pixelFormat == .nv12VideoRange)
            let external = CaptureDevice.DiscoverySession(
                deviceTypes: [.external], mediaType: .video, position: .unspecified)
            #expect(external.devices.map(\.uniqueID) == ["stub:early", "stub:late.1", "stub:late.2"])
        }
        registry.unregister { $0 is StubProvider }
        DeviceRegistry.$current.withValue(registry) {
            #expect(
                CaptureDevice.devices(for: .video).map(\.uniqueID) == [VirtualCameraProvider.shared.device.uniqueID])
            #expect(CaptureDevice.device(withUniqueID: "stub:early") == nil)
        }
    }

    @Test("the built-in providers are the ones the shared registry starts with")
    func builtIns() {
        let orders = BuiltInProviders.make().map(\.sortOrder)
        #expect(orders == orders.sorted(), "real cameras before the virtual camera")
        #expect(BuiltInProviders.make().contains { $0 is VirtualCameraProvider })
    }

    @Test(
        "the virtual devices are opt-in: without VIEWFINDER_VIRTUAL_DEVICES=1 a machine without a camera lists no video device and has no default; with it, the test pattern comes last"
    )
    func virtualDevicesAreOptIn() {
        let plain = DeviceRegistry(providers: BuiltInProviders.make(environment: [:]))
        let optedIn = DeviceRegistry(
            providers: BuiltInProviders.make(environment: [VirtualDevices.environmentVariable: "1"]))
        let listed = DeviceRegistry.$current.withValue(plain) { CaptureDevice.devices(for: .video) }
        let fallback = DeviceRegistry.$current.withValue(plain) { CaptureDevice.default(for: .video) }
        #expect(!listed.contains { $0.uniqueID.hasPrefix("viewfinder.virtual.") })
        // The machine's own cameras, as the built-in V4L2 provider finds them in /dev (none in CI).
        if V4L2DeviceProvider().discoverBackends().isEmpty {
            #expect(listed.isEmpty, "\(listed.map(\.localizedName))")
            #expect(fallback == nil)
        } else {
            #expect(fallback.map { !$0.uniqueID.hasPrefix("viewfinder.virtual.") } == true)
        }
        let withVirtual = DeviceRegistry.$current.withValue(optedIn) { CaptureDevice.devices(for: .video) }
        #expect(withVirtual.last?.localizedName == "Test Pattern Camera")
        #expect(
            DeviceRegistry.$current.withValue(optedIn) { CaptureDevice.devices(for: .audio) }.last?.uniqueID
                == "viewfinder.virtual.microphone.0")
    }
}
