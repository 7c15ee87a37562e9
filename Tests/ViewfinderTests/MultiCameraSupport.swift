import Foundation
import Synchronization
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

/// Several simulated USB cameras on one simulated machine, each at its own USB port (bus, port,
/// speed) with its own serial number, sharing one manual clock.
struct MultiCameraRig {
    let clock: ManualClock
    let bus: SimulatedV4L2Bus
    var cameras: [SimulatedUVCCamera] = []

    /// A rig of cameras already plugged into `bus`.
    init(bus: SimulatedV4L2Bus, cameras: [SimulatedUVCCamera], clock: ManualClock) {
        self.bus = bus
        self.cameras = cameras
        self.clock = clock
    }

    /// Plugs one C920-like camera per port; serial numbers `serials[i]` (nil: none); card names
    /// `card` plus the camera's number (`numbered`) or all the same.
    init(
        ports: [SimulatedUSBPort], serials: [String?]? = nil, card: String = "HD Pro Webcam C920", numbered: Bool = true
    ) throws {
        clock = ManualClock()
        bus = SimulatedV4L2Bus()
        // Serial numbers unique in the process: the USB bandwidth ledger is the process's, keyed by
        // unique ID, so two rigs of parallel tests with the same serials released each other's
        // reservations (an ENOSPC test failed 1 run in 3).
        let rigNumber = Self.rigs.add(1, ordering: .relaxed).newValue
        for (index, port) in ports.enumerated() {
            let camera = try SimulatedUVCCamera(
                configuration: .init(
                    listing: SimulatedUVCCamera.c920Listing, card: numbered ? "\(card) \(index + 1)" : card,
                    clock: clock,
                    serialNumber: serials.map { $0[index] } ?? "SN\(rigNumber)-\(index + 1)", vendorID: "046d",
                    productID: "082d"))
            bus.plug(camera, port: port)
            cameras.append(camera)
        }
    }

    private static let rigs = Atomic<Int>(0)

    func device(_ index: Int) throws -> CaptureDevice {
        try #require(bus.device(for: cameras[index]))
    }

    func format(_ index: Int, _ pixelFormat: PixelFormat, _ width: Int, _ height: Int) throws -> CaptureDevice.Format {
        try #require(
            try device(index).formats.first {
                $0.pixelFormat == pixelFormat && $0.dimensions == .init(width: width, height: height)
            })
    }

    /// Locks `index`'s device and sets its format and 30 fps.
    func choose(_ index: Int, _ pixelFormat: PixelFormat, _ width: Int, _ height: Int) throws {
        let device = try device(index)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setActiveFormat(try format(index, pixelFormat, width, height))
        try device.setActiveVideoMinFrameDuration(MediaTime(value: 1, timescale: 30))
    }
}

/// Collects the notifications of one name posted to a private centre; waits for them on a condition.
final class NotificationCollector: @unchecked Sendable {  // unchecked: state under `condition`.
    let center = NotificationCenter()
    private let condition = NSCondition()
    private var received: [Notification] = []
    private var observers: [any NSObjectProtocol] = []

    init(_ names: [Notification.Name]) {
        for name in names {
            observers.append(
                center.addObserver(forName: name, object: nil, queue: nil) { [weak self] note in
                    guard let self else { return }
                    condition.lock()
                    received.append(note)
                    condition.broadcast()
                    condition.unlock()
                })
        }
    }

    deinit {
        for observer in observers { center.removeObserver(observer) }
    }

    /// The notifications named `name` received so far.
    func notes(_ name: Notification.Name) -> [Notification] {
        condition.lock()
        defer { condition.unlock() }
        return received.filter { $0.name == name }
    }

    /// Waits (at most `timeout` s of real time) until one named `name` arrived.
    func wait(for name: Notification.Name, timeout: Double = 10) -> Notification? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !received.contains(where: { $0.name == name }) {
            if !condition.wait(until: deadline) { break }
        }
        return received.first { $0.name == name }
    }

    /// The error of the first notification named `name`, waiting for it.
    func error(_ name: Notification.Name) -> CaptureError? {
        wait(for: name)?.userInfo?[CaptureSessionErrorKey] as? CaptureError
    }
}
