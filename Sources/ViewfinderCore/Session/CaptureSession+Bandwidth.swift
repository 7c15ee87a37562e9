import Foundation

extension CaptureSession {
    /// Posted when a camera's USB bus had not enough bandwidth for the format negotiation chose
    /// (`ENOSPC` at stream start) and the session, its preset allowing it, started the camera in a
    /// format that fits instead. ``CaptureSessionErrorKey`` holds a ``CaptureError`` with
    /// ``CaptureError/Code/insufficientBandwidth`` saying what failed and what runs now;
    /// ``CaptureSessionFormatKey`` the format now running (also the device's `activeFormat`).
    ///
    /// With ``Preset/inputPriority``, or a format chosen with `setActiveFormat(_:)`, the session
    /// does not choose: the start fails with that error instead (``runtimeErrorNotification``).
    public static let didFallBackToFormatNotification = Notification.Name(
        "ViewfinderCaptureSessionDidFallBackToFormat")
}

/// The ``CaptureDevice/Format`` a ``CaptureSession/didFallBackToFormatNotification`` fell back to.
// swift-format-ignore: AlwaysUseLowerCamelCase
// Named like CaptureSessionErrorKey.
public let CaptureSessionFormatKey = "ViewfinderCaptureSessionFormatKey"

/// Choosing a format that fits a USB bus after `ENOSPC`: the negotiation again, over the formats
/// the device's bandwidth model (``DeviceBandwidth``) says fit what the bus has left.
package enum BandwidthFallback {
    /// What the bus of `device` has left for it, in Mbit/s (`nil`: not on a known USB bus).
    package static func bandwidthLeft(for device: CaptureDevice) -> Double? {
        guard let bandwidth = device.backend.bandwidth else { return nil }
        let others = bandwidth.reservations(excluding: [device.uniqueID])
        return bandwidth.capacityMbps - others.reduce(0) { $0 + $1.mbps }
    }

    /// The choice negotiation makes among the formats other than `failed` that fit, or `nil` when
    /// the session may not choose (``CaptureSession/Preset/inputPriority``, a format the user set)
    /// or nothing fits.
    package static func choice(
        device: CaptureDevice, preset: CaptureSession.Preset, requests: [OutputRequest],
        failed: FormatNegotiator.Choice
    ) -> FormatNegotiator.Choice? {
        guard preset != .inputPriority, !device.userChoseFormat, let bandwidth = device.backend.bandwidth,
            let left = bandwidthLeft(for: device)
        else {
            return nil
        }
        let rate = failed.frameDuration.isNumeric && failed.frameDuration > .zero ? failed.frameDuration : nil
        let choice = try? FormatNegotiator.negotiate(device: device, preset: preset, requests: requests) { format in
            let duration = rate.map { format.nearestSupportedDuration(atMost: $0) } ?? format.minFrameDuration
            return format != failed.format && bandwidth.requiredMbps(format, frameDuration: duration) <= left
        }
        return choice
    }

    /// The notice of a fallback: the bandwidth error, and what runs instead.
    package static func notice(_ error: CaptureError, device: CaptureDevice, to choice: FormatNegotiator.Choice)
        -> CaptureError
    {
        let needed = device.backend.bandwidth?.requiredMbps(choice.format, frameDuration: choice.frameDuration) ?? 0
        return CaptureError(
            .insufficientBandwidth,
            "\(error.message). The session fell back to \(choice.format) for '\(device.localizedName)' (\(formattedMbps(needed)) Mbit/s), which fits",
            errno: error.errno)
    }
}
