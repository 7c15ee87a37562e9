import Foundation

/// Checked-in heap allocations per frame (`Benchmarks/allocation-limits.json`), in the manner of
/// swift-nio's allocation-counting benchmarks: a change that starts allocating on the per-frame
/// path fails the benchmark run instead of slipping in, and so does one that stops allocating
/// (lower the figure then).
///
/// Each key is a pattern over benchmark names (`fnmatch`, `*` matches across `/`), with an implied
/// `*` at its end, so a plain key is a prefix; the longest matching key applies. The figure must
/// equal the measured one exactly: the counts are deterministic (conversions count whole runs; the
/// pipelines take the most common count of the intervals between deliveries without a drop
/// report, see `PipelineBenchmarks.CountingDelegate`). Rows matching no key are not checked.
enum AllocationLimits {
    private struct File: Decodable {
        var limits: [String: Double]
    }

    /// The limits file, found next to this source file's folder.
    static let path = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("allocation-limits.json")

    static func matches(_ pattern: String, _ name: String) -> Bool {
        fnmatch(pattern + "*", name, 0) == 0
    }

    /// Compares every result that counted allocations with the figure of its longest matching
    /// key. Returns how many were checked, or a message naming each result that differs.
    static func check(_ results: [BenchmarkResult]) -> Result<Int, BenchError> {
        let limits: [String: Double]
        do {
            limits = try JSONDecoder().decode(File.self, from: Data(contentsOf: path)).limits
        } catch {
            return .failure(BenchError("cannot read allocation limits at \(path.path): \(error)"))
        }
        var checked = 0
        var wrong: [String] = []
        for result in results {
            guard let measured = result.allocationsPerFrame,
                let key = limits.keys.filter({ matches($0, result.name) }).max(by: { $0.count < $1.count }),
                let expected = limits[key]
            else { continue }
            checked += 1
            if abs(measured - expected) > 0.005 {
                wrong.append(
                    "\(result.name): \(String(format: "%.2f", measured)) allocations per frame, expected \(expected) (key '\(key)')"
                )
            }
        }
        guard wrong.isEmpty else {
            return .failure(
                BenchError(
                    "allocations per frame differ from Benchmarks/allocation-limits.json (more: find what allocates on "
                        + "the per-frame path; fewer: lower the figure):\n  " + wrong.joined(separator: "\n  ")))
        }
        return .success(checked)
    }
}
