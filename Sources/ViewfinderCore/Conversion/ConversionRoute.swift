/// The cheapest chain of kernels from one format to another, optionally starting with an exact
/// 2x downscale: for example YUYV to full-range NV12 is YUYV -> NV12 (libyuv) -> full range
/// (range tables), and full-range NV12 to I420 is a range table then libyuv's NV12ToI420.
///
/// Chains run strip by strip through scratch memory, so the intermediates stay in cache.
/// Costs (``YUVKernel/cost``) favour fewer passes and avoid round trips through RGB, which
/// round and clip; every route keeps within ±2 of an exact BT.601 conversion.
package struct ConversionRoute: Sendable {
    /// The first step, when the route halves the frame.
    package var halving: HalvingKernel?
    /// The conversions after it.
    package var kernels: [YUVKernel]
    /// The formats between steps, one fewer than the steps.
    package var intermediates: [PixelFormat]
    /// The sum of the steps' costs.
    package var cost: Double

    /// Whether the route runs strip by strip through scratch (it halves or has several steps);
    /// otherwise each band is one kernel call.
    package var runsInStrips: Bool { halving != nil || kernels.count > 1 }

    /// Whether a kernel of the route needs row scratch (``YUVKernel/needsScratch``).
    package var needsKernelScratch: Bool { kernels.contains(where: \.needsScratch) }

    /// The steps in the route.
    package var stepCount: Int { kernels.count + (halving == nil ? 0 : 1) }

    /// The cheapest route, or `nil` if none exists. With `halving`, the destination is half the
    /// source's width and height; `sourceWidth` and `stripRows` size the halving's scratch.
    package static func find(
        from source: PixelFormat, to destination: PixelFormat, halving: Bool, sourceWidth: Int, stripRows: Int
    ) -> ConversionRoute? {
        guard halving else {
            if source == destination {
                return YUVKernel.find(from: source, to: destination).map {
                    ConversionRoute(halving: nil, kernels: [$0], intermediates: [], cost: $0.cost)
                }
            }
            return path(from: source, to: destination)
        }
        var best: ConversionRoute?
        for middle in YUVKernel.formats {
            guard
                let first = HalvingKernel.find(
                    from: source, to: middle, sourceWidth: sourceWidth, stripRows: stripRows)
            else { continue }
            let rest =
                middle == destination
                ? ConversionRoute(halving: nil, kernels: [], intermediates: [], cost: 0)
                : path(from: middle, to: destination)
            guard let rest else { continue }
            let cost = first.cost + rest.cost
            if best == nil || cost < best!.cost {
                let intermediates = middle == destination ? [] : [middle] + rest.intermediates
                best = ConversionRoute(halving: first, kernels: rest.kernels, intermediates: intermediates, cost: cost)
            }
        }
        return best
    }

    /// Dijkstra over the handful of formats, edges being single kernels.
    private static func path(from source: PixelFormat, to destination: PixelFormat) -> ConversionRoute? {
        let nodes = YUVKernel.formats
        var cost = [PixelFormat: Double]()
        var previous = [PixelFormat: PixelFormat]()
        var done = Set<PixelFormat>()
        cost[source] = 0
        while let current = nodes.filter({ !done.contains($0) && cost[$0] != nil }).min(by: { cost[$0]! < cost[$1]! }) {
            if current == destination { break }
            done.insert(current)
            for next in nodes where next != current && !done.contains(next) {
                guard let kernel = YUVKernel.find(from: current, to: next) else { continue }
                let through = cost[current]! + kernel.cost
                if cost[next] == nil || through < cost[next]! {
                    cost[next] = through
                    previous[next] = current
                }
            }
        }
        guard let total = cost[destination], source != destination else { return nil }
        var formats = [destination]
        while let back = previous[formats[0]] { formats.insert(back, at: 0) }
        let kernels = zip(formats, formats.dropFirst()).map { YUVKernel.find(from: $0, to: $1)! }
        return ConversionRoute(
            halving: nil, kernels: kernels, intermediates: Array(formats.dropFirst().dropLast()), cost: total)
    }
}
