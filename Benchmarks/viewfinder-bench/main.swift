import Foundation
import Viewfinder

/// viewfinder-bench: measures conversions and the capture pipeline; see `usage`.
let usage = """
    usage: viewfinder-bench [--quick] [--filter SUBSTRING] [--json PATH] [--repeat N]

      --quick             640x480 and 1920x1080 only (processors: 1920x1080 only), 3 short runs each
                          (under a minute); no recording benchmarks unless --filter names them
      --filter SUBSTRING  run only benchmarks whose name contains SUBSTRING (case-insensitive)
      --json PATH         also write the results as a JSON array to PATH
      --repeat N          timed runs per figure (default 7, or 3 with --quick)
      --help              show this help
    """

struct Arguments {
    var quick = false
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

func format(_ value: Double?, _ digits: Int = 1) -> String {
    guard let value, value.isFinite else { return "–" }
    return String(format: "%.\(digits)f", value)
}

func markdown(_ results: [BenchmarkResult]) -> String {
    var lines: [String] = []
    let conversions = results.filter { $0.group == "conversion" }
    if !conversions.isEmpty {
        lines.append(
            "| conversion | source → destination | bands | fps min | fps median | GB/s | allocs/frame | floor fps (memcpy) | ×floor | libyuv 1-core fps | ×libyuv | swscale fps | ×swscale | ffmpeg fps | ×peer |"
        )
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in conversions {
            let name = r.name.split(separator: "/").dropFirst().first.map(String.init) ?? r.name
            lines.append(
                "| \(name) | \(r.width)x\(r.height) → \(r.destinationWidth ?? r.width)x\(r.destinationHeight ?? r.height) | \(r.threads ?? 1) | \(format(r.fpsMin)) | \(format(r.fpsMedian)) | \(format(r.gbPerS, 2)) | \(format(r.allocationsPerFrame, 2)) | \(format(r.floor)) | \(format(r.ratioToFloor, 2)) | \(format(r.libyuvFps)) (\(r.libyuvPath ?? "–")) | \(format(r.ratioToLibyuv, 2)) | \(format(r.swscaleFps)) | \(format(r.ratioToSwscale, 1)) | \(format(r.peerFps)) | \(format(r.ratioToPeer, 2)) |"
            )
        }
    }
    let pipelines = results.filter { $0.group == "pipeline" }
    if !pipelines.isEmpty {
        if !lines.isEmpty { lines.append("") }
        lines.append(
            "| pipeline | camera → delivered | engine | fps min | fps median | µs/frame | allocs/frame | latency p50 µs | latency p99 µs | floor fps (memcpy) | ×floor |"
        )
        lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in pipelines {
            let name = r.name.split(separator: "/").dropFirst().dropLast().joined(separator: "/")
            lines.append(
                "| \(name) | \(r.width)x\(r.height) → \(r.destinationWidth ?? r.width)x\(r.destinationHeight ?? r.height) | \(r.engine ?? "–") | \(format(r.fpsMin)) | \(format(r.fpsMedian)) | \(format(r.usPerFrame)) | \(format(r.allocationsPerFrame, 2)) | \(format(r.latencyP50Us)) | \(format(r.latencyP99Us)) | \(format(r.floor)) | \(format(r.ratioToFloor, 2)) |"
            )
        }
    }
    let processors = results.filter { $0.group == "processor" }
    if !processors.isEmpty {
        if !lines.isEmpty { lines.append("") }
        lines.append(
            "| processor | format | size → output | fps min | fps median | GB/s | allocs/frame | floor fps (memcpy) | ×floor | ffmpeg peer | ffmpeg fps | ×peer | ffmpeg filter-only fps | ×filter-only |"
        )
        lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|")
        for r in processors {
            let name = r.name.split(separator: "/").dropFirst().first.map(String.init) ?? r.name
            let peer = r.peer.map { "`" + ($0.components(separatedBy: " (").first ?? $0) + "`" } ?? "–"
            lines.append(
                "| \(name) | \(r.pixelFormat ?? "–") | \(r.width)x\(r.height) → \(r.destinationWidth ?? r.width)x\(r.destinationHeight ?? r.height) | \(format(r.fpsMin)) | \(format(r.fpsMedian)) | \(format(r.gbPerS, 2)) | \(format(r.allocationsPerFrame, 2)) | \(format(r.floor)) | \(format(r.ratioToFloor, 2)) | \(peer) | \(format(r.peerFps)) | \(format(r.ratioToPeer, 2)) | \(format(r.peerFilterOnlyFps)) | \(format(r.ratioToPeerFilterOnly, 2)) |"
            )
        }
    }
    let recordings = results.filter { $0.group == "recording" }
    if !recordings.isEmpty {
        if !lines.isEmpty { lines.append("") }
        lines.append(
            "| recording | size | fps | CPU-ms/frame | ffmpeg fps | ffmpeg CPU-ms/frame | ×peer fps | note |")
        lines.append("|---|---|---:|---:|---:|---:|---:|---|")
        for r in recordings {
            let name = r.name.split(separator: "/").dropFirst().first.map(String.init) ?? r.name
            lines.append(
                "| \(name) | \(r.width)x\(r.height) | \(format(r.fpsMedian)) | \(format(r.cpuMsPerFrame, 2)) | \(format(r.peerFps)) | \(format(r.peerCpuMsPerFrame, 2)) | \(format(r.ratioToPeer, 2)) | \(r.note ?? "") |"
            )
        }
    }
    let photos = results.filter { $0.group == "photo" }
    if !photos.isEmpty {
        if !lines.isEmpty { lines.append("") }
        lines.append(
            "| photo | format | size | fps median | µs median | latency p50 µs | latency p99 µs | ffmpeg fps | ×peer | ffmpeg encode-only fps | ×encode-only | note |"
        )
        lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in photos {
            let name = r.name.split(separator: "/").dropFirst().first.map(String.init) ?? r.name
            lines.append(
                "| \(name) | \(r.pixelFormat ?? "–") | \(r.width)x\(r.height) | \(format(r.fpsMedian)) | \(format(r.usPerFrame)) | \(format(r.latencyP50Us)) | \(format(r.latencyP99Us)) | \(format(r.peerFps)) | \(format(r.ratioToPeer, 2)) | \(format(r.peerFilterOnlyFps)) | \(format(r.ratioToPeerFilterOnly, 2)) | \(r.note ?? "") |"
            )
        }
    }
    let decoders = results.filter { $0.group == "mjpeg" }
    if !decoders.isEmpty {
        if !lines.isEmpty { lines.append("") }
        lines.append(
            "| MJPEG decode | size → format | contender | threads | fps min | fps median | CPU-ms/frame | ×TurboJPEG alone (fps) | ×1 core | frames |"
        )
        lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
        for r in decoders {
            lines.append(
                "| \(r.name.split(separator: "/").dropFirst().first.map(String.init) ?? r.name) | \(r.width)x\(r.height) → \(r.pixelFormat ?? "–") | \(r.engine ?? "–") | \(r.threads ?? 1) | \(format(r.fpsMin)) | \(format(r.fpsMedian)) | \(format(r.cpuMsPerFrame, 2)) | \(format(r.ratioToFloor, 2)) | \(format(r.ratioToPeer, 2)) | \(r.note ?? "") |"
            )
        }
    }
    return lines.joined(separator: "\n")
}

func main() -> Int32 {
    let arguments: Arguments
    switch parseArguments(Array(CommandLine.arguments.dropFirst())) {
    case .success(let parsed): arguments = parsed
    case .failure(let error):
        FileHandle.standardError.write(Data("viewfinder-bench: \(error.message)\n\n\(usage)\n".utf8))
        return 2
    }
    let ffmpeg = FFmpegPeer.locate()
    let settings = MeasureSettings(
        repeats: arguments.repeats ?? (arguments.quick ? 3 : 7), runSeconds: arguments.quick ? 0.04 : 0.2,
        sizes: arguments.quick ? [(640, 480), (1920, 1080)] : [(640, 480), (1280, 720), (1920, 1080)],
        processorSizes: arguments.quick ? [(1920, 1080)] : [(640, 480), (1280, 720), (1920, 1080)],
        peerSeconds: arguments.quick ? 0.25 : 1, ffmpeg: ffmpeg,
        includesRecording: !arguments.quick || (arguments.filter?.lowercased().contains("recording") ?? false))
    var cases = BenchmarkRegistry.all(settings: settings)
    if let filter = arguments.filter?.lowercased() {
        cases = cases.filter { $0.name.lowercased().contains(filter) }
    }
    if cases.isEmpty {
        FileHandle.standardError.write(
            Data("viewfinder-bench: no benchmark matches '\(arguments.filter ?? "")'\n".utf8))
        return 1
    }
    progress(
        "viewfinder-bench: \(cases.count) benchmarks, \(settings.repeats) runs each, \(ProcessInfo.processInfo.activeProcessorCount) cores, converter threads \(PixelConverter.Options.defaultThreadCount), ffmpeg \(ffmpeg ?? "not installed (no peer)")"
    )
    var results: [BenchmarkResult] = []
    var failed = false
    for (index, benchmark) in cases.enumerated() {
        progress("[\(index + 1)/\(cases.count)] \(benchmark.name) …")
        do {
            let rows = try benchmark.run(settings)
            for row in rows {
                progress(
                    "    \(row.name): \(format(row.fpsMedian)) fps median (\(format(row.ratioToFloor, 2))x memcpy floor)"
                )
            }
            results += rows
        } catch {
            failed = true
            progress("    failed: \(error)")
        }
    }
    print(markdown(results))
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
