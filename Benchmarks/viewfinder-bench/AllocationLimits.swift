import Foundation

/// Checked-in limits on heap allocations per frame (`Benchmarks/allocation-limits.json`), in the
/// manner of swift-nio's allocation-counting benchmarks: a change that starts allocating on the
/// per-frame path fails the benchmark run instead of slipping in.
enum AllocationLimits {
    private struct File: Decodable {
        var limits: [String: Double]
    }

    /// The limits file, found next to this source file's folder.
    static let path = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("allocation-limits.json")

    /// Compares every result that counted allocations with the limit of its longest matching
    /// prefix. Returns how many were checked, or a message naming each result over its limit.
    static func check(_ results: [BenchmarkResult]) -> Result<Int, BenchError> {
        let limits: [String: Double]
        do {
            limits = try JSONDecoder().decode(File.self, from: Data(contentsOf: path)).limits
        } catch {
            return .failure(BenchError("cannot read allocation limits at \(path.path): \(error)"))
        }
        var checked = 0
        var over: [String] = []
        for result in results {
            guard let measured = result.allocationsPerFrame,
                let prefix = limits.keys.filter({ result.name.hasPrefix($0) }).max(by: { $0.count < $1.count }),
                let limit = limits[prefix]
            else { continue }
            checked += 1
            if measured > limit {
                over.append("\(result.name): \(String(format: "%.2f", measured)) allocations per frame, limit \(limit)")
            }
        }
        guard over.isEmpty else {
            return .failure(
                BenchError(
                    "over the checked-in allocation limits (find what allocates on the per-frame path, or raise the "
                        + "limit in Benchmarks/allocation-limits.json with a reason):\n  "
                        + over.joined(separator: "\n  ")))
        }
        return .success(checked)
    }
}
