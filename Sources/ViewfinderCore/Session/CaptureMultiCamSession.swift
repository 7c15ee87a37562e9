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
/// - ``hardwareCost``: the busiest USB bus's share of its isochronous bandwidth (see
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

    /// The share of the busiest USB bus's isochronous bandwidth the session's cameras would use
    /// (with what Viewfinder's other streams hold on those buses), 0 when no camera is on a known
    /// USB bus. Above 1 the session refuses to start.
    public var hardwareCost: Float { Float(costs().hardware.cost) }

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

    private struct Costs {
        var hardware: (cost: Double, reason: String?) = (0, nil)
        var pressure: (cost: Double, reason: String?) = (0, nil)
    }

    /// Each camera's negotiated choice and the requests of its outputs.
    private func plans() -> [(device: CaptureDevice, choice: FormatNegotiator.Choice, requests: [OutputRequest])] {
        let graph = connections
        return inputs.compactMap { $0 as? CaptureDeviceInput }.compactMap { input in
            let outputs = DeviceStream.outputs(
                of: graph.filter { connection in
                    connection.inputPorts.contains { $0.input === input } && connection.output != nil
                })
            guard input.device.hasMediaType(.video), !outputs.isEmpty else { return nil }
            let requests = outputs.map { $0.makeRequest() }
            guard
                let choice = try? FormatNegotiator.negotiate(
                    device: input.device, preset: sessionPreset, requests: requests)
            else { return nil }
            return (input.device, choice, requests)
        }
    }

    private func costs() -> Costs {
        var costs = Costs()
        let plans = plans()
        let ids = Set(plans.map(\.device.uniqueID))
        // Hardware: per shared link (a USB bus), what this session's cameras need plus what others hold there.
        var buses: [String: (bandwidth: any DeviceBandwidth, mine: [(String, Double)])] = [:]
        for plan in plans {
            guard let bandwidth = plan.device.backend.bandwidth else { continue }
            let needed = bandwidth.requiredMbps(plan.choice.format, frameDuration: plan.choice.frameDuration)
            buses[bandwidth.linkID, default: (bandwidth, [])].mine.append((plan.device.localizedName, needed))
        }
        for (_, bus) in buses.sorted(by: { $0.key < $1.key }) {
            let others = bus.bandwidth.reservations(excluding: ids)
            let capacity = bus.bandwidth.capacityMbps
            let total = bus.mine.reduce(0) { $0 + $1.1 } + others.reduce(0) { $0 + $1.mbps }
            let cost = total / capacity
            guard cost > costs.hardware.cost else { continue }
            let last = bus.mine.last!
            let shares =
                (bus.mine.map { "'\($0.0)' \(formattedMbps($0.1))" }
                + others.map { "'\($0.name)' \(formattedMbps($0.mbps)) (another session)" })
                .joined(separator: ", ")
            costs.hardware = (
                cost,
                "USB bandwidth: '\(last.0)' and the cameras sharing \(bus.bandwidth.linkDescription) need \(formattedMbps(total)) Mbit/s (\(shares)): choose MJPEG or smaller formats, or move a camera to another bus"
            )
        }
        // System pressure: every camera's decode and conversions at its rate, over the cores.
        let cores = Double(max(1, ProcessInfo.processInfo.activeProcessorCount))
        var total = 0.0
        var heaviest: (name: String, ms: Double, format: CaptureDevice.Format)?
        for plan in plans {
            let format = plan.choice.format
            let emulation = format.isEmulated ? FormatNegotiator.emulationCost(of: format, on: plan.device).work : 0
            // A Motion-JPEG camera's decode counts once: its outputs share it.
            let work = emulation + FormatNegotiator.conversionCost(from: format, to: plan.requests).work
            let duration = plan.choice.frameDuration
            let rate = duration.isNumeric && duration > .zero ? 1 / duration.seconds : plan.choice.format.maxFrameRate
            let msPerSecond =
                rate
                * (work * CostModel.millisecondsPerWorkUnit + Double(plan.requests.count)
                    * CostModel.millisecondsPerFrame)
            total += msPerSecond
            if heaviest == nil || msPerSecond > heaviest!.ms {
                heaviest = (plan.device.localizedName, msPerSecond, plan.choice.format)
            }
        }
        costs.pressure.cost = total / (cores * 1000)
        if let heaviest {
            costs.pressure.reason =
                "system pressure: the cameras' decoding and conversion would take \(Int((costs.pressure.cost * 100).rounded())) % of \(Int(cores)) cores, '\(heaviest.name)' (\(heaviest.format)) the most (\(Int(heaviest.ms.rounded())) ms of CPU a second): deliver the native format, choose smaller formats or lower frame rates, or run fewer cameras"
        }
        return costs
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
    /// A ``CaptureMultiCamSession``'s ``CaptureMultiCamSession/hardwareCost`` or
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
