import Foundation

/// A session that runs several cameras at once (the counterpart of `AVCaptureMultiCamSession`).
///
/// Wire it by hand, as with AVFoundation: add each camera with
/// ``CaptureSession/addInputWithNoConnections(_:)``, each output with
/// ``CaptureSession/addOutputWithNoConnections(_:)``, and connect them with
/// ``CaptureConnection/init(inputPorts:output:)`` and ``CaptureSession/addConnection(_:)``:
///
/// ```swift
/// let session = CaptureMultiCamSession()
/// for camera in cameras {
///     let input = try CaptureDeviceInput(device: camera)
///     session.addInputWithNoConnections(input)
///     let output = CaptureVideoDataOutput()
///     session.addOutputWithNoConnections(output)
///     session.addConnection(CaptureConnection(inputPorts: input.ports(for: .video), output: output))
/// }
/// guard session.hardwareCost <= 1, session.systemPressureCost <= 1 else { … }
/// session.startRunning()
/// ```
///
/// Before any camera streams, the session prices what its cameras would run (each device's
/// negotiated format and rate):
///
/// - ``CaptureSession/hardwareCost``: the busiest USB bus's share of its isochronous bandwidth (see
///   ``DeviceBandwidth``, for V4L2 cameras its USB model: what each format needs, MJPEG vs raw, what Viewfinder's other streams on the bus
///   hold), so three raw 1080p cameras on one USB 2 bus are refused before `STREAMON`.
/// - ``systemPressureCost``: the estimated CPU share of decoding and converting every camera's
///   frames, over the machine's cores.
///
/// Above 1, ``CaptureSession/startRunning()`` does not start: it posts ``CaptureSession/runtimeErrorNotification``
/// with ``CaptureError/Code/multiCamCostExceeded`` naming the camera and the cause.
///
/// Thread safety: every member may be used from any thread.
open class CaptureMultiCamSession: CaptureSession, @unchecked Sendable {
    /// Whether this machine can run several cameras in one session: always on Linux (the costs
    /// say whether a given set fits).
    public static var isMultiCamSupported: Bool { true }

    /// The estimated share of the machine's CPU the session's cameras' decoding and conversion
    /// would take (an estimate from the converter's and decoder's cost model, see
    /// ``CostModel/millisecondsPerWorkUnit``). Above 1 the session refuses to start.
    public var systemPressureCost: Float { Float(costs().pressure.cost) }

    /// How the system pressure estimate turns negotiation's work units into time.
    public enum CostModel {
        /// Milliseconds of one core per work unit (a libyuv pass over a megabyte), on the
        /// project's VM: a 1080p Motion-JPEG frame (13 units a megapixel, 27 in all) took 4.44
        /// CPU-ms decoded to NV12 and delivered, as the capacity benchmark measured it with 12
        /// cameras. Only the work counts: the colour-change charge negotiation ranks formats by
        /// takes no time.
        public static let millisecondsPerWorkUnit = 0.165
        /// Milliseconds of one core per delivered frame beyond its conversions (capture thread,
        /// delivery queue, delegate hand-over).
        public static let millisecondsPerFrame = 0.05
    }

    package override func refusalToStart() -> CaptureError? {
        let costs = costs()
        if costs.hardware.cost > 1, let reason = costs.hardware.reason {
            return CaptureError(
                .multiCamCostExceeded,
                "the multi-camera session's hardwareCost is \((costs.hardware.cost * 100).rounded() / 100) (over 1): \(reason)"
            )
        }
        if costs.pressure.cost > 1, let reason = costs.pressure.reason {
            return CaptureError(
                .multiCamCostExceeded,
                "the multi-camera session's systemPressureCost is \((costs.pressure.cost * 100).rounded() / 100) (over 1): \(reason)"
            )
        }
        return nil
    }
}

extension CaptureError.Code {
    /// A ``CaptureMultiCamSession``'s ``CaptureSession/hardwareCost`` or
    /// ``CaptureMultiCamSession/systemPressureCost`` is above 1: it does not start.
    public static let multiCamCostExceeded = CaptureError.Code(rawValue: "multiCamCostExceeded")
}

extension CaptureInput {
    /// The input's ports carrying `mediaType` (AVFoundation's `ports(for:sourceDeviceType:sourceDevicePosition:)`
    /// for one device): what ``CaptureConnection/init(inputPorts:output:)`` takes.
    public func ports(for mediaType: MediaType) -> [Port] {
        ports.filter { $0.mediaType == mediaType }
    }
}
