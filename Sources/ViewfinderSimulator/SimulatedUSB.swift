import Synchronization
import Viewfinder

#if canImport(Glibc)
    import Glibc
#endif

/// A USB port a ``SimulatedUVCCamera`` is plugged into on a ``SimulatedV4L2Bus``: which bus (host
/// controller), which port on it, and the speed the camera runs at there. A camera plugged at a
/// port has the sysfs view a USB camera has (bus number, port path, speed, serial, vendor and
/// product; `/dev/v4l/by-id` and `/dev/v4l/by-path` names), and its bus's isochronous bandwidth
/// is shared: `VIDIOC_STREAMON` fails with `ENOSPC` when the streams on the bus would need more
/// than it has (Viewfinder's `USBBandwidth` model, as a host controller refuses a reservation).
///
/// Thread safety: a value type.
public struct SimulatedUSBPort: Sendable, Hashable {
    /// The bus number (`busnum`: one per host controller).
    public var bus: Int
    /// The port path on the bus (`devpath`: `2`, or `2.1` behind a hub).
    public var port: String
    /// The speed, in Mbit/s (480: USB 2 high speed).
    public var speedMbps: Double

    /// A port on bus `bus` at `port`, running at `speedMbps` (default USB 2 high speed).
    public init(bus: Int, port: String, speedMbps: Double = 480) {
        self.bus = bus
        self.port = port
        self.speedMbps = speedMbps
    }
}

/// The isochronous reservations of one simulated machine's USB buses (the host controllers'
/// view): a leaf lock, taken under a camera's lock and never calling out.
final class SimulatedUSBReservations: Sendable {
    private let reserved = Mutex<[String: [ObjectIdentifier: Double]]>([:])

    /// Reserves `mbps` on `busID` for `camera`; `false` (nothing changed) when the bus's periodic
    /// capacity at `speedMbps` would be exceeded.
    func reserve(_ camera: ObjectIdentifier, busID: String, mbps: Double, speedMbps: Double) -> Bool {
        reserved.withLock { all in
            var bus = all[busID] ?? [:]
            bus[camera] = nil
            let used = bus.values.reduce(0, +)
            guard used + mbps <= USBBandwidth.periodicCapacityMbps(speedMbps: speedMbps) + 1e-9 else { return false }
            bus[camera] = mbps
            all[busID] = bus
            return true
        }
    }

    /// Gives back `camera`'s reservation, if it holds one.
    func release(_ camera: ObjectIdentifier) {
        reserved.withLock { all in
            for key in all.keys { all[key]?[camera] = nil }
        }
    }
}

/// Where a plugged camera sits, as its driver state knows it.
struct SimulatedUSBAttachment {
    var reservations: SimulatedUSBReservations
    var location: USBLocation
    var busInfo: String
}

extension SimulatedUVCCamera {
    /// Called by the bus after plugging in: the camera is at this USB port.
    func attach(_ attachment: SimulatedUSBAttachment) {
        state.withLock { $0.usb = attachment }
    }

    /// At `STREAMON`: reserves the bandwidth of the current format on the camera's bus, or throws
    /// `ENOSPC` as uvcvideo does when the host controller cannot.
    func reserveBandwidth(_ state: State) throws(V4L2Errno) {
        guard let usb = state.usb, let format = V4L2FourCC.pixelFormat(state.fourCC) else { return }
        let rate = Double(state.interval.denominator) / Double(max(1, state.interval.numerator))
        let needed = USBBandwidth.requiredMbps(
            pixelFormat: format, width: Int(state.width), height: Int(state.height), framesPerSecond: rate)
        guard
            usb.reservations.reserve(
                ObjectIdentifier(self), busID: usb.location.busID, mbps: needed, speedMbps: usb.location.speedMbps)
        else { throw V4L2Errno(ENOSPC) }
    }

    /// When the stream stops (`STREAMOFF`, the owner closing, unplugging).
    func releaseBandwidth(_ state: State) {
        state.usb?.reservations.release(ObjectIdentifier(self))
    }

    /// The sysfs and udev view of the camera when it is plugged at a USB port.
    func identity(busID: String) -> V4L2NodeIdentity {
        state.withLock { state in
            guard let usb = state.usb else { return V4L2NodeIdentity() }
            let serial = configuration.serialNumber
            let vendor = configuration.vendorID ?? "1d6b"
            let product = configuration.productID ?? "0104"
            let model = card.map { $0 == " " ? "_" : $0 }
            let byID = "usb-\(vendor)_\(String(model))\(serial.map { "_\($0)" } ?? "")-video-index0"
            let byPath = "platform-\(busID)-usb-0:\(usb.location.port):1.0-video-index0"
            return V4L2NodeIdentity(
                serialNumber: serial, vendorID: vendor, productID: product, byIDName: byID, byPathName: byPath,
                usb: usb.location)
        }
    }
}
