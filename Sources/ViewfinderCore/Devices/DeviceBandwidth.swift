/// A link that several devices' streams share and that can run out — a USB bus — as the backend
/// that knows it models it. The session uses it to choose a format that fits after the link
/// refused one (``CaptureError/Code/insufficientBandwidth``, then
/// ``CaptureSession/didFallBackToFormatNotification``), and ``CaptureMultiCamSession`` for its
/// ``CaptureSession/hardwareCost``.
///
/// A model, not a measurement: the host controller decides. The V4L2 backend provides one for
/// every camera whose USB bus it knows.
///
/// Thread safety: implementations must be callable from any thread.
public protocol DeviceBandwidth: Sendable {
    /// Identifies the link: devices whose links have the same ID share it.
    var linkID: String { get }
    /// The link for people, with what it carries: "USB bus 3 (USB 2 high speed, 384 Mbit/s
    /// isochronous)".
    var linkDescription: String { get }
    /// What streams may use of the link, in Mbit/s.
    var capacityMbps: Double { get }
    /// What `format` needs of the link with frames `frameDuration` apart, in Mbit/s.
    func requiredMbps(_ format: CaptureDevice.Format, frameDuration: MediaTime) -> Double
    /// The streams of other devices running on the link now, leaving out `deviceIDs`: each
    /// device's name and what it uses, in Mbit/s.
    func reservations(excluding deviceIDs: Set<String>) -> [(name: String, mbps: Double)]
}

/// Bandwidth figures as messages print them: whole Mbit/s from 100 up, one decimal below.
package func formattedMbps(_ value: Double) -> String {
    value >= 100 ? "\(Int(value.rounded()))" : "\((value * 10).rounded() / 10)"
}

extension CaptureError.Code {
    /// A USB bus has not enough isochronous bandwidth left for the format (`ENOSPC` at stream start).
    public static let insufficientBandwidth = CaptureError.Code(rawValue: "insufficientBandwidth")
}
