import Foundation

// What a session's cameras would cost the machine (`AVCaptureSession.hardwareCost`,
// `AVCaptureMultiCamSession.hardwareCost` and `systemPressureCost`), priced before any camera
// streams from each device's negotiated format and rate.

extension CaptureSession {
    /// The share of the busiest USB bus's isochronous bandwidth the session's cameras would use
    /// (with what Viewfinder's other streams hold on those buses), 0 when no camera is on a known
    /// USB bus (`AVCaptureSession.hardwareCost`). Priced from each camera's negotiated format and
    /// frame rate (see ``DeviceBandwidth``). A ``CaptureMultiCamSession`` above 1 refuses to
    /// start; a plain session above 1 starts and, when the bus then refuses the format, falls
    /// back to formats that fit, as its preset allows (AVFoundation's session fails with
    /// ``CaptureError/Code/sessionHardwareCostOverage`` instead).
    public var hardwareCost: Float { Float(costs().hardware.cost) }

    package struct Costs {
        var hardware: (cost: Double, reason: String?) = (0, nil)
        var pressure: (cost: Double, reason: String?) = (0, nil)
    }

    /// Each camera's negotiated choice and the requests of its outputs.
    private func costPlans() -> [(device: CaptureDevice, choice: FormatNegotiator.Choice, requests: [OutputRequest])] {
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

    package func costs() -> Costs {
        var costs = Costs()
        let plans = costPlans()
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
                * (work * CaptureMultiCamSession.CostModel.millisecondsPerWorkUnit + Double(plan.requests.count)
                    * CaptureMultiCamSession.CostModel.millisecondsPerFrame)
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
}
