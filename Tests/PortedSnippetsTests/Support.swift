// What the snippets run against: a registry with only virtual cameras (or a simulated USB
// webcam), bound for the test's task. The only file here that reaches past the public API.
import Foundation
import Testing

@testable import Viewfinder
@testable import ViewfinderALSA
@testable import ViewfinderCore
@testable import ViewfinderMovie
@testable import ViewfinderPipeWire
@testable import ViewfinderPreviewWindow
@testable import ViewfinderSimulator
@testable import ViewfinderTesting
@testable import ViewfinderV4L2
@testable import ViewfinderWebPreview

/// Lists fixed backends.
private struct FixedProvider: DeviceProvider {
    let backends: [any DeviceBackend]
    var sortOrder: Int { 0 }
    func discoverBackends() -> [any DeviceBackend] { backends }
}

/// Runs `body` on a machine whose only cameras are fresh virtual ones (one per entry of
/// `formats`, each offering those formats).
func withOnlyVirtualCameras<T>(
    _ formats: [[CaptureDevice.Format]], _ body: () throws -> T
) rethrows -> T {
    let cameras = formats.enumerated().map { index, formats in
        VirtualCamera(configuration: .init(name: "Virtual Camera \(index)", formats: formats))
    }
    let registry = DeviceRegistry(providers: [FixedProvider(backends: cameras.map { $0.device.backend })])
    return try DeviceRegistry.$current.withValue(registry) { try body() }
}

/// Runs `body` on a machine whose only camera is one fresh virtual camera.
func withOnlyVirtualCameras<T>(_ body: () throws -> T) rethrows -> T {
    try withOnlyVirtualCameras([VirtualCamera.standardFormats], body)
}

/// Holds a value a callback sets (callbacks here are `@Sendable`, as AVFoundation's are).
final class Box<Value>: @unchecked Sendable {  // unchecked: tests read it after waiting for the writer.
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Runs `body` on a machine whose only camera is a simulated Logitech C920 (through the real
/// V4L2 backend), plus the virtual camera.
func withSimulatedWebcam<T>(_ body: () throws -> T) throws -> T {
    let bus = SimulatedV4L2Bus()
    bus.plug(try SimulatedUVCCamera(configuration: .init(listing: SimulatedUVCCamera.c920Listing)))
    return try bus.withDiscovery { try body() }
}

/// Runs `body` on a machine whose only camera is a simulated Logitech C920 as the USB bus shows
/// it (vendor 046d, product 082d, so its field of view is known) with its "Exposure, Dynamic
/// Framerate" control; `body` gets the simulated camera.
func withSimulatedC920<T>(_ body: (SimulatedUVCCamera) throws -> T) throws -> T {
    let bus = SimulatedV4L2Bus()
    let camera = try SimulatedUVCCamera(
        configuration: .init(
            listing: SimulatedUVCCamera.c920Listing, vendorID: "046d", productID: "082d", hasDynamicFramerate: true))
    bus.plug(camera, port: SimulatedUSBPort(bus: 1, port: "1"))
    return try bus.withDiscovery { try body(camera) }
}

/// The virtual camera's formats of one size.
func virtualFormats(width: Int) -> [CaptureDevice.Format] {
    VirtualCamera.standardFormats.filter { $0.dimensions.width == width }
}

/// Counts notifications named `name` from `object`.
final class NotificationCounter {
    private let lock = NSCondition()
    private var received: [Notification] = []
    private var token: NSObjectProtocol?

    init(_ name: Notification.Name, object: AnyObject? = nil) {
        token = NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) { [weak self] note in
            guard let self else { return }
            self.lock.lock()
            self.received.append(note)
            self.lock.broadcast()
            self.lock.unlock()
        }
    }

    deinit { if let token { NotificationCenter.default.removeObserver(token) } }

    /// Waits until `count` notifications came; returns them.
    func wait(for count: Int = 1, timeout: TimeInterval = 10) -> [Notification] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        lock.lock()
        defer { lock.unlock() }
        while received.count < count, lock.wait(until: deadline) {}
        return received
    }
}

/// Runs `body` on a machine whose only devices are one virtual camera and one virtual
/// microphone (as `microphone` configures it), both paced by `clock`.
func withVirtualCameraAndMicrophone<T>(
    clock: ManualClock, microphone configure: (inout VirtualMicrophone.Configuration) -> Void = { _ in },
    _ body: () throws -> T
) rethrows -> T {
    let camera = VirtualCamera(configuration: .init(clock: clock, formats: virtualFormats(width: 640)))
    var configuration = VirtualMicrophone.Configuration(clock: clock)
    configure(&configuration)
    let microphone = VirtualMicrophone(configuration: configuration)
    let registry = DeviceRegistry(providers: [
        FixedProvider(backends: [camera.device.backend, microphone.makeDevice().backend])
    ])
    return try DeviceRegistry.$current.withValue(registry) { try body() }
}
