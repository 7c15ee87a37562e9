import Foundation
import Viewfinder

/// viewfinder-bench: measures conversions and the capture pipeline; see `usage`.
let usage = """
    usage: viewfinder-bench [--quick | --allocations-only] [--filter SUBSTRING] [--json PATH] [--repeat N]
           viewfinder-bench capture --format yuyv|bgra|nv12 --frames N [--size WxH] [--device NAME]

      --quick             a smoke test of every group in well under a minute: 640x480 only, hot cache only,
                          2 runs of 0.03 s, paced latency at 1000 fps only (30 frames), recordings of 30
                          frames; figures are not for the results page
      --allocations-only  only the allocation checks (conversions, paced pipelines, processors at
                          640x480, a few frames each, no timing, no peers): seconds
      --filter SUBSTRING  run only benchmarks whose name contains SUBSTRING (case-insensitive; "a,b": a or
                          b, "a+b": a and b, e.g. convert/+1920x1080,pipeline/+1920x1080)
      --json PATH         also write the results as a JSON array to PATH
      --repeat N          timed runs per figure (default 5, or 2 with --quick)
      --help              show this help
    """

struct Arguments {
    var quick = false
    var allocationsOnly = false
    var filter: String?
    var jsonPath: String?
    var repeats: Int?
}

func parseArguments(_ arguments: [String]) -> Result<Arguments, BenchError> {
    var parsed = Arguments()
    var rest = arguments[...]
    while let argument = rest.popFirst() {
        switch argument {
        case "--quick":
            parsed.quick = true
        case "--allocations-only":
            parsed.allocationsOnly = true
        case "--filter", "--json", "--repeat":
            guard let value = rest.popFirst(), !value.hasPrefix("--") else {
                return .failure(BenchError("\(argument) needs a value"))
            }
            if argument == "--filter" { parsed.filter = value }
            if argument == "--json" { parsed.jsonPath = value }
            if argument == "--repeat" {
                guard let count = Int(value), count >= 1 else {
                    return .failure(BenchError("--repeat needs a whole number of at least 1, got '\(value)'"))
                }
                parsed.repeats = count
            }
        case "--help", "-h":
            print(usage)
            exit(0)
        default:
            return .failure(BenchError("unknown argument '\(argument)'"))
        }
    }
    return .success(parsed)
}

struct BenchError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// The settings of a mode: full (the results page), `--quick` (a smoke test) or
/// `--allocations-only` (the CI check).
func makeSettings(_ arguments: Arguments) -> MeasureSettings {
    if arguments.allocationsOnly {
        var settings = MeasureSettings(
            repeats: arguments.repeats ?? 1, runSeconds: 0.002, sizes: [(640, 480)], processorSizes: [(640, 480)],
            peerSeconds: 0, ffmpeg: nil)
        settings.regimes = [.hot]
        settings.latencyRates = [1000]
        settings.latencySeconds = 0.1
        settings.latencyMinimumFrames = 100
        settings.allocationsOnly = true
        return settings
    }
    let quick = arguments.quick
    var settings = MeasureSettings(
        repeats: arguments.repeats ?? (quick ? 2 : 5), runSeconds: quick ? 0.03 : 1.0,
        sizes: quick ? [(640, 480)] : [(640, 480), (1280, 720), (1920, 1080)],
        processorSizes: quick ? [(640, 480)] : [(640, 480), (1280, 720), (1920, 1080)],
        peerSeconds: quick ? 0.05 : 1, ffmpeg: FFmpegPeer.locate())
    settings.quick = quick
    // Quick: every group once, small and short (a smoke test of every path, in well under a minute).
    settings.regimes = quick ? [.hot] : [.cold(multiple: 6), .hot]
    settings.latencyRates = quick ? [1000] : settings.latencyRates
    settings.latencySeconds = quick ? 0.03 : 5
    settings.latencyMinimumFrames = quick ? 30 : 150
    settings.pipelineSizes = quick ? [(640, 480)] : [(1280, 720), (1920, 1080)]
    settings.groupSizes = quick ? [(640, 480)] : nil
    settings.minimumRunSeconds = quick ? settings.runSeconds : nil
    return settings
}

func main() -> Int32 {
    if CommandLine.arguments.dropFirst().first == "capture" {
        return CaptureCommand.main(Array(CommandLine.arguments.dropFirst(2)))
    }
    if CommandLine.arguments.dropFirst().first == "pipewire-produce" {
        return PipeWireProduceCommand.main(Array(CommandLine.arguments.dropFirst(2)))
    }
    if CommandLine.arguments.dropFirst().first == "capacity-worker" {
        return CapacityWorker.main(Array(CommandLine.arguments.dropFirst(2)))
    }
    let arguments: Arguments
    switch parseArguments(Array(CommandLine.arguments.dropFirst())) {
    case .success(let parsed): arguments = parsed
    case .failure(let error):
        FileHandle.standardError.write(Data("viewfinder-bench: \(error.message)\n\n\(usage)\n".utf8))
        return 2
    }
    let settings = makeSettings(arguments)
    let ffmpeg = settings.ffmpeg
    var cases = BenchmarkRegistry.all(settings: settings)
    if let filter = arguments.filter?.lowercased() {
        // "a,b": a or b; "a+b": a and b.
        let alternatives = filter.split(separator: ",").map { $0.split(separator: "+").map(String.init) }
        cases = cases.filter { benchmark in
            let name = benchmark.name.lowercased()
            return alternatives.contains { $0.allSatisfy { name.contains($0) } }
        }
    }
    if cases.isEmpty {
        FileHandle.standardError.write(
            Data("viewfinder-bench: no benchmark matches '\(arguments.filter ?? "")'\n".utf8))
        return 1
    }
    progress(
        "viewfinder-bench: \(cases.count) benchmarks, \(settings.repeats) runs of ≥ \(settings.runSeconds) s each, \(ProcessInfo.processInfo.activeProcessorCount) cores, converter threads \(PixelConverter.Options.defaultThreadCount), last-level cache \(CacheRegime.lastLevelCacheBytes >> 20) MiB, cold ring \(settings.regimes.first.map { "\($0.targetBytes >> 20) MiB" } ?? "–")\(settings.quick ? " (quick: hot only, no cold ring)" : ""), ffmpeg \(ffmpeg ?? "not used")"
    )
    var results: [BenchmarkResult] = []
    var failed = false
    for (index, benchmark) in cases.enumerated() {
        progress("[\(index + 1)/\(cases.count)] \(benchmark.name) …")
        do {
            let rows = try benchmark.run(settings)
            for row in rows {
                progress(
                    "    \(row.name): \(format(row.fpsMedian)) fps median, \(format(row.allocationsPerFrame, 2)) allocs/frame"
                        + (row.latencyP50Us.map {
                            ", latency p50 \(format($0)) µs (wake-up floor \(format(row.wakeUpP50Us)) µs)"
                        } ?? "")
                        + (row.floor > 0 ? " (\(format(row.ratioToFloor, 2))x memcpy floor)" : "")
                )
            }
            results += rows
        } catch {
            failed = true
            progress("    failed: \(error)")
        }
    }
    print(ReportTable.markdown(results))
    switch AllocationLimits.check(results) {
    case .success(let checked):
        progress("allocation limits (Benchmarks/allocation-limits.json): \(checked) results within their limits")
    case .failure(let error):
        progress("viewfinder-bench: \(error.message)")
        failed = true
    }
    if let path = arguments.jsonPath {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do {
            try encoder.encode(results).write(to: URL(fileURLWithPath: path))
            progress("wrote \(results.count) results to \(path)")
        } catch {
            progress("viewfinder-bench: cannot write \(path): \(error)")
            return 1
        }
    }
    return failed ? 1 : 0
}

exit(main())
