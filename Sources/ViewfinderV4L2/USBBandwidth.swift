import Synchronization
import ViewfinderCore

#if canImport(Glibc)
    import Glibc
#endif

/// A model of the isochronous bandwidth USB video needs and a bus has, so a session can tell
/// before `VIDIOC_STREAMON` that a set of cameras will not fit one bus (uvcvideo answers
/// `ENOSPC` there, "No space left on device", when the host controller cannot reserve it).
///
/// - A bus's periodic (isochronous + interrupt) share: 90 % of a full-speed (12 Mbit/s) frame,
///   80 % of a high-speed (480 Mbit/s) microframe (USB 2.0 §5.6.4), 90 % of SuperSpeed and up.
/// - A raw format needs its frame size times the frame rate. Motion-JPEG needs what the camera
///   asks for (`dwMaxPayloadTransferSize`), which userspace cannot read before streaming; the
///   model takes 2 bits per pixel (a 1080p30 camera JPEG at quality ≈ 85 is about 1/8 of its
///   4:2:2 raw size).
///
/// Figures are estimates for choosing formats and explaining refusals; the host controller has
/// the last word (its `ENOSPC` is reported as ``CaptureError/Code/insufficientBandwidth``).
package enum USBBandwidth {
    /// Bits per pixel the model takes for a Motion-JPEG frame.
    package static let jpegBitsPerPixel = 2.0

    /// The bandwidth a bus at `speedMbps` can reserve for isochronous transfers, in Mbit/s.
    package static func periodicCapacityMbps(speedMbps: Double) -> Double {
        if speedMbps <= 12 { return speedMbps * 0.9 }
        if speedMbps <= 480 { return speedMbps * 0.8 }
        return speedMbps * 0.9
    }

    /// The bandwidth `pixelFormat` at `width` x `height` and `framesPerSecond` needs, in Mbit/s.
    package static func requiredMbps(pixelFormat: PixelFormat, width: Int, height: Int, framesPerSecond: Double)
        -> Double
    {
        let bitsPerFrame =
            pixelFormat.isCompressed
            ? Double(width * height) * jpegBitsPerPixel
            : Double(pixelFormat.frameSize(width: width, height: height)) * 8
        return bitsPerFrame * framesPerSecond / 1e6
    }

    /// The bandwidth `format` needs at one frame per `frameDuration` (invalid: its fastest rate).
    package static func requiredMbps(_ format: CaptureDevice.Format, frameDuration: MediaTime) -> Double {
        let rate =
            frameDuration.isNumeric && frameDuration > .zero ? 1 / frameDuration.seconds : format.maxFrameRate
        return requiredMbps(
            pixelFormat: format.pixelFormat, width: format.dimensions.pixelWidth, height: format.dimensions.pixelHeight,
            framesPerSecond: rate)
    }

    /// How people name a bus at `speedMbps` ("USB 2 high speed").
    package static func speedName(_ speedMbps: Double) -> String {
        switch speedMbps {
        case ..<2: return "USB 1 low speed"
        case ..<13: return "USB 1 full speed"
        case ..<481: return "USB 2 high speed"
        case ..<5001: return "USB 3 SuperSpeed"
        default: return "USB 3 SuperSpeed+"
        }
    }

    /// `value` in Mbit/s, rounded for messages.
    package static func mbps(_ value: Double) -> String { formattedMbps(value) }
}

/// The bandwidth Viewfinder's own streams hold on each USB bus, so an error or a cost can say what
/// is left (other programs' streams are not known).
///
/// Thread safety: all members may be used from any thread.
package final class USBBandwidthLedger: Sendable {
    /// One stream's reservation.
    package struct Reservation: Sendable, Hashable {
        /// The device's unique ID and name.
        package var deviceID: String
        package var name: String
        /// What its format needs, in Mbit/s.
        package var mbps: Double
    }

    /// The process's ledger.
    package static let shared = USBBandwidthLedger()

    private let reservations = Mutex<[String: [Reservation]]>([:])

    /// Records that `deviceID` streams on `busID` needing `mbps` (replacing its earlier record).
    package func reserve(busID: String, deviceID: String, name: String, mbps: Double) {
        reservations.withLock { all in
            for key in all.keys { all[key]?.removeAll { $0.deviceID == deviceID } }
            all[busID, default: []].append(Reservation(deviceID: deviceID, name: name, mbps: mbps))
        }
    }

    /// Forgets `deviceID`'s stream.
    package func release(deviceID: String) {
        reservations.withLock { all in
            for key in all.keys { all[key]?.removeAll { $0.deviceID == deviceID } }
        }
    }

    /// The streams on `busID`, but `excluding` those devices.
    package func reservations(onBus busID: String, excluding: Set<String> = []) -> [Reservation] {
        reservations.withLock { $0[busID] ?? [] }.filter { !excluding.contains($0.deviceID) }
    }
}

/// A V4L2 camera's USB bus as ``DeviceBandwidth`` models it: the bus's periodic share
/// (`USBBandwidth.periodicCapacityMbps(speedMbps:)`), what a format needs
/// (`USBBandwidth.requiredMbps(_:frameDuration:)`), and the streams this process runs there
/// (`USBBandwidthLedger`).
///
/// Thread safety: a value type over the thread-safe ledger.
public struct USBBusBandwidth: DeviceBandwidth {
    /// Where the camera is plugged in.
    public let location: USBLocation

    /// The model of `location`'s bus.
    public init(location: USBLocation) { self.location = location }

    public var linkID: String { location.busID }

    public var linkDescription: String {
        "USB bus \(location.busNumber) (\(USBBandwidth.speedName(location.speedMbps)), \(USBBandwidth.mbps(capacityMbps)) Mbit/s isochronous)"
    }

    public var capacityMbps: Double { USBBandwidth.periodicCapacityMbps(speedMbps: location.speedMbps) }

    public func requiredMbps(_ format: CaptureDevice.Format, frameDuration: MediaTime) -> Double {
        USBBandwidth.requiredMbps(format, frameDuration: frameDuration)
    }

    public func reservations(excluding deviceIDs: Set<String>) -> [(name: String, mbps: Double)] {
        USBBandwidthLedger.shared.reservations(onBus: location.busID, excluding: deviceIDs).map { ($0.name, $0.mbps) }
    }
}

extension DeviceBackend {
    /// Where the device is plugged in, for devices on a USB bus whose location the backend knows
    /// (``USBBusBandwidth``); `nil` otherwise.
    public var usbLocation: USBLocation? { (bandwidth as? USBBusBandwidth)?.location }
}

extension CaptureError {
    /// The error for `ENOSPC` at stream start of `format` on a camera at `location`: what the
    /// format needs, what the bus has left, and which of the camera's formats would fit.
    package static func usbBandwidth(
        camera: String, format: CaptureDevice.Format, frameDuration: MediaTime, location: USBLocation,
        deviceID: String, formats: [CaptureDevice.Format]
    ) -> CaptureError {
        let needed = USBBandwidth.requiredMbps(format, frameDuration: frameDuration)
        let others = USBBandwidthLedger.shared.reservations(onBus: location.busID, excluding: [deviceID])
        let capacity = USBBandwidth.periodicCapacityMbps(speedMbps: location.speedMbps)
        let left = max(0, capacity - others.reduce(0) { $0 + $1.mbps })
        let rate =
            1 / (frameDuration.isNumeric && frameDuration > .zero ? frameDuration.seconds : 1 / format.maxFrameRate)
        let fitting = formats.filter { candidate in
            !candidate.isEmulated && candidate != format
                && USBBandwidth.requiredMbps(candidate, frameDuration: frameDuration) <= left
                && candidate.maxFrameRate >= rate * 0.99
        }
        let mjpegFits = fitting.contains { $0.pixelFormat.isCompressed && $0.dimensions == format.dimensions }
        let hint: String
        if mjpegFits {
            hint = "MJPEG at \(format.dimensions) or a smaller size would fit"
        } else if let largest = fitting.max(by: {
            $0.dimensions.width * $0.dimensions.height < $1.dimensions.width * $1.dimensions.height
        }) {
            hint = "a smaller size (up to \(largest.dimensions) \(largest.pixelFormat.name)) would fit"
        } else {
            hint = "no format of this camera fits at this rate: lower the frame rate or stop the other cameras"
        }
        let sharing =
            others.isEmpty
            ? "no other Viewfinder stream is on it (another program may be)"
            : "shared with \(others.map { "'\($0.name)' (\(USBBandwidth.mbps($0.mbps)) Mbit/s)" }.joined(separator: ", "))"
        return CaptureError(
            .insufficientBandwidth,
            "USB bandwidth: '\(camera)' \(format) at \(Int(rate.rounded())) fps needs \(USBBandwidth.mbps(needed)) Mbit/s; the bus has \(USBBandwidth.mbps(left)) Mbit/s left (bus \(location.busNumber), \(USBBandwidth.speedName(location.speedMbps)), \(USBBandwidth.mbps(capacity)) Mbit/s isochronous, \(sharing)); \(hint), or move a camera to another bus",
            errno: ENOSPC)
    }
}
