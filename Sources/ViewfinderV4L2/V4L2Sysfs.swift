import Foundation
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// What the firmware says about the USB port a camera hangs off, as sysfs shows it: a USB
/// device's `removable` attribute reads `removable`, `fixed` or `unknown` (Linux's
/// `Documentation/ABI/testing/sysfs-bus-usb`; from ACPI `_PLD`/`_UPC`, so a laptop's internal
/// camera usually reads `fixed`).
package enum V4L2PortKind: Sendable, Hashable {
    /// An internal port: the camera is built in.
    case fixed
    /// A port a user can plug into.
    case removable
    /// Not USB, or the firmware does not say.
    case unknown
}

/// Reads camera facts from sysfs (`/sys` or a test's copy of its layout).
///
/// `/sys/class/video4linux/videoN/device` links to the USB interface the node belongs to; its
/// parent directory is the USB device, which carries `removable`.
///
/// Thread safety: immutable.
package struct V4L2Sysfs: Sendable {
    /// The sysfs mount point.
    package let root: String

    /// Sysfs at `root` (`/sys` by default).
    package init(root: String = "/sys") {
        self.root = root
    }

    /// The kind of port the camera at device node `path` (`/dev/video0`) is on.
    package func portKind(ofNode path: String) -> V4L2PortKind {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let interface = realpath("\(root)/class/video4linux/\(name)/device", nil) else { return .unknown }
        defer { free(interface) }
        var usbDevice = String(cString: interface)
        guard let slash = usbDevice.lastIndex(of: "/") else { return .unknown }
        usbDevice = String(usbDevice[..<slash])
        switch Self.readAttribute("\(usbDevice)/removable") {
        case "fixed": return .fixed
        case "removable": return .removable
        default: return .unknown
        }
    }

    /// The attribute file's first line, trimmed; `nil` if it cannot be read.
    package static func readAttribute(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 64)
        guard fgets(&line, Int32(line.count), file) != nil else { return nil }
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

extension V4L2PortKind {
    /// The AVFoundation device type and position of a camera with `busInfo` on this kind of port:
    /// a USB camera on a fixed port is a laptop's built-in camera, facing the user
    /// (`.builtInWideAngleCamera`, `.front`); other USB cameras are webcams (`.external`,
    /// `.unspecified`); a camera on another bus (platform, CSI) is built in, facing unknown.
    package func classify(busInfo: String) -> (CaptureDevice.DeviceType, CaptureDevice.Position) {
        if self == .fixed { return (.builtInWideAngleCamera, .front) }
        if busInfo.hasPrefix("usb-") || self == .removable { return (.external, .unspecified) }
        return (.builtInWideAngleCamera, .unspecified)
    }
}
