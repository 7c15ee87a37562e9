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
package struct MultiCameraRig {
    package let clock: ManualClock
    package let bus: SimulatedV4L2Bus
    package var cameras: [SimulatedUVCCamera] = []

    /// A rig of cameras already plugged into `bus`.
    package init(bus: SimulatedV4L2Bus, cameras: [SimulatedUVCCamera], clock: ManualClock) {
        self.bus = bus
        self.cameras = cameras
        self.clock = clock
    }

    /// Plugs one C920-like camera per port; serial numbers `serials[i]` (nil: none); card names
    /// `card` plus the camera's number (`numbered`) or all the same.
    package init(
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

    package func device(_ index: Int) throws -> CaptureDevice {
        try #require(bus.device(for: cameras[index]))
    }

    package func format(_ index: Int, _ pixelFormat: PixelFormat, _ width: Int, _ height: Int) throws
        -> CaptureDevice.Format
    {
        try #require(
            try device(index).formats.first {
                $0.pixelFormat == pixelFormat && $0.dimensions == .init(width: width, height: height)
            })
    }

    /// Locks `index`'s device and sets its format and 30 fps.
    package func choose(_ index: Int, _ pixelFormat: PixelFormat, _ width: Int, _ height: Int) throws {
        let device = try device(index)
        try device.lockForConfiguration()
        defer { device.unlockForConfiguration() }
        try device.setActiveFormat(try format(index, pixelFormat, width, height))
        try device.setActiveVideoMinFrameDuration(MediaTime(value: 1, timescale: 30))
    }
}

/// Collects the notifications of one name posted to a private centre; waits for them on a condition.
package final class NotificationCollector: @unchecked Sendable {  // unchecked: state under `condition`.
    package let center = NotificationCenter()
    private let condition = NSCondition()
    private var received: [Notification] = []
    private var observers: [any NSObjectProtocol] = []

    package init(_ names: [Notification.Name]) {
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
    package func notes(_ name: Notification.Name) -> [Notification] {
        condition.lock()
        defer { condition.unlock() }
        return received.filter { $0.name == name }
    }

    /// Waits (at most `timeout` s of real time) until one named `name` arrived.
    package func wait(for name: Notification.Name, timeout: Double = 10) -> Notification? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !received.contains(where: { $0.name == name }) {
            if !condition.wait(until: deadline) { break }
        }
        return received.first { $0.name == name }
    }

    /// The error of the first notification named `name`, waiting for it.
    package func error(_ name: Notification.Name) -> CaptureError? {
        wait(for: name)?.userInfo?[CaptureSessionErrorKey] as? CaptureError
    }
}

/// A clock `offset` ahead of `base`: a camera whose frames are stamped that much later.
package struct OffsetClock: CaptureClock {
    package let base: ManualClock
    package let offset: MediaTime
    package func now() -> MediaTime { base.now() + offset }
    package func wait(until deadline: MediaTime, isCancelled: () -> Bool) -> Bool {
        base.wait(until: deadline - offset, isCancelled: isCancelled)
    }
}

extension MultiCameraRig {
    /// A multi-cam session with one video data output per camera of `rig`, wired by hand.
    package static func wire(
        _ rig: MultiCameraRig, collector: NotificationCollector
    ) throws -> (CaptureMultiCamSession, [CaptureVideoDataOutput], [RecordingDelegate]) {
        let session = CaptureMultiCamSession(notificationCenter: collector.center)
        session.sessionPreset = .inputPriority
        var outputs: [CaptureVideoDataOutput] = []
        var delegates: [RecordingDelegate] = []
        for index in rig.cameras.indices {
            let input = try CaptureDeviceInput(device: try rig.device(index))
            try session.tryAddInputWithNoConnections(input)
            let output = CaptureVideoDataOutput()
            let delegate = RecordingDelegate()
            output.setSampleBufferDelegate(delegate, queue: delegate.queue)
            try session.tryAddOutputWithNoConnections(output)
            #expect(session.connections.count == index, "nothing is connected automatically")
            let connection = CaptureConnection(inputPorts: input.ports(for: .video), output: output)
            #expect(session.canAddConnection(connection))
            try session.tryAddConnection(connection)
            outputs.append(output)
            delegates.append(delegate)
        }
        return (session, outputs, delegates)
    }
}
