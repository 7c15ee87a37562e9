import Foundation
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// Where a USB camera is plugged in: its bus (a host controller's root hub), its position on it and
/// the speed it runs at — what the USB bandwidth model needs (the multi-camera session's
/// ``CaptureSession/hardwareCost`` and the fallback on a full bus).
///
/// Thread safety: a value type.
public struct USBLocation: Sendable, Hashable {
    /// The bus, unique on the machine (sysfs `usbN`; a simulated bus adds its own prefix).
    public var busID: String
    /// The bus number (`busnum`).
    public var busNumber: Int
    /// The port path on the bus (sysfs `devpath`, `2.1`: port 1 of the hub on port 2).
    public var port: String
    /// The speed the device runs at, in Mbit/s (sysfs `speed`: 1.5, 12, 480, 5000, 10000, …).
    public var speedMbps: Double

    /// A location; every field is as sysfs names it.
    public init(busID: String, busNumber: Int, port: String, speedMbps: Double) {
        self.busID = busID
        self.busNumber = busNumber
        self.port = port
        self.speedMbps = speedMbps
    }
}

/// What names a camera beyond its node number: the USB serial number and vendor/product IDs
/// (sysfs), its udev names (`/dev/v4l/by-id`, `/dev/v4l/by-path`) and its USB location.
///
/// ``uniqueID(busInfo:card:path:byIDIsShared:)`` turns it into the camera's ``CaptureDevice/uniqueID``.
///
/// Thread safety: a value type.
package struct V4L2NodeIdentity: Sendable, Hashable {
    /// The USB serial number (`iSerial`), if the camera has one.
    package var serialNumber: String?
    /// The USB vendor and product IDs, four hex digits each (`046d`, `082d`).
    package var vendorID: String?
    package var productID: String?
    /// The node's entry in `/dev/v4l/by-id` (`usb-046d_HD_Pro_Webcam_C920_ABC123-video-index0`).
    package var byIDName: String?
    /// The node's entry in `/dev/v4l/by-path` (`pci-0000:00:14.0-usb-0:2:1.0-video-index0`).
    package var byPathName: String?
    /// Where the camera is plugged in, when it is a USB camera.
    package var usb: USBLocation?

    /// An identity; every field may be unknown.
    package init(
        serialNumber: String? = nil, vendorID: String? = nil, productID: String? = nil, byIDName: String? = nil,
        byPathName: String? = nil, usb: USBLocation? = nil
    ) {
        self.serialNumber = serialNumber
        self.vendorID = vendorID
        self.productID = productID
        self.byIDName = byIDName
        self.byPathName = byPathName
        self.usb = usb
    }

    /// The unique ID, from what survives a reboot and a move to another port first:
    ///
    /// 1. the USB serial number, with vendor and product: `v4l2:usb-046d:082d:ABC123` (survives
    ///    reboots, other ports, other node numbers);
    /// 2. else the `/dev/v4l/by-id` name, when no other camera present has the same one (udev
    ///    builds it from vendor, product and serial; without a serial, two identical cameras share
    ///    it): `v4l2:by-id:usb-046d_Webcam-video-index0` (survives reboots and other ports);
    /// 3. else the bus info from `VIDIOC_QUERYCAP`, which names the port as `/dev/v4l/by-path`
    ///    does: `v4l2:usb-0000:00:14.0-2` (survives reboots and other node numbers, not another port);
    /// 4. else the by-path name, else the card name and node.
    package func uniqueID(busInfo: String, card: String, path: String, byIDIsShared: Bool) -> String {
        if let serial = serialNumber, !serial.isEmpty {
            return "v4l2:usb-\(vendorID ?? "????"):\(productID ?? "????"):\(serial)"
        }
        if let byID = byIDName, !byIDIsShared { return "v4l2:by-id:\(byID)" }
        if !busInfo.isEmpty { return "v4l2:\(busInfo)" }
        if let byPath = byPathName { return "v4l2:by-path:\(byPath)" }
        return "v4l2:\(card):\(path)"
    }
}

extension V4L2Sysfs {
    /// The USB device directory of node `path` (`/sys/devices/…/usb1/1-2`), if it is a USB camera:
    /// the parent of the interface `/sys/class/video4linux/videoN/device` links to.
    package func usbDeviceDirectory(ofNode path: String) -> String? {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let interface = realpath("\(root)/class/video4linux/\(name)/device", nil) else { return nil }
        defer { free(interface) }
        let resolved = String(cString: interface)
        guard let slash = resolved.lastIndex(of: "/") else { return nil }
        let device = String(resolved[..<slash])
        return Self.readAttribute("\(device)/busnum") == nil ? nil : device
    }

    /// What sysfs says about node `path`'s USB device: serial, vendor, product, bus and speed.
    package func identity(ofNode path: String) -> V4L2NodeIdentity {
        guard let device = usbDeviceDirectory(ofNode: path) else { return V4L2NodeIdentity() }
        var identity = V4L2NodeIdentity(
            serialNumber: Self.readAttribute("\(device)/serial"), vendorID: Self.readAttribute("\(device)/idVendor"),
            productID: Self.readAttribute("\(device)/idProduct"))
        if let bus = Self.readAttribute("\(device)/busnum").flatMap(Int.init) {
            identity.usb = USBLocation(
                busID: "usb\(bus)", busNumber: bus, port: Self.readAttribute("\(device)/devpath") ?? "",
                speedMbps: Self.readAttribute("\(device)/speed").flatMap(Double.init) ?? 480)
        }
        return identity
    }
}

extension V4L2DevDirectory {
    /// The entry in `directory` (`/dev/v4l/by-id`) whose link resolves to `node`, if any.
    package static func udevName(in directory: String, resolvingTo node: String) -> String? {
        guard let target = realpath(node, nil) else { return nil }
        defer { free(target) }
        let resolvedNode = String(cString: target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names.sorted() {
            guard let link = realpath("\(directory)/\(name)", nil) else { continue }
            defer { free(link) }
            if String(cString: link) == resolvedNode { return name }
        }
        return nil
    }
}
