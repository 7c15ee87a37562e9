import Foundation

func format(_ value: Double?, _ digits: Int = 1) -> String {
    guard let value, value.isFinite else { return "–" }
    return String(format: "%.\(digits)f", value)
}

func format(_ value: Int?) -> String { value.map(String.init) ?? "–" }

/// "0.97–1.04": the smallest and largest of a set of ratios.
func ratioRange(_ low: Double?, _ high: Double?) -> String {
    guard let low, let high else { return "–" }
    return "\(format(low, 2))–\(format(high, 2))"
}

/// A Markdown table for one group of results: its columns, each a header and how to print a row.
/// Groups without a table are printed in ``generic``.
struct ReportTable: Sendable {
    var group: String
    var columns: [(header: String, alignRight: Bool, value: @Sendable (BenchmarkResult) -> String)]
    /// For a table that prints one line per case with its contenders side by side (``mjpeg``):
    /// the cells of each line, in `columns`' order, from the group's results; `columns` then give
    /// the headers and alignment only.
    var pivot: (@Sendable ([BenchmarkResult]) -> [[String]])? = nil

    func render(_ rows: [BenchmarkResult]) -> [String] {
        guard !rows.isEmpty else { return [] }
        var lines = ["| " + columns.map(\.header).joined(separator: " | ") + " |"]
        lines.append("|" + columns.map { $0.alignRight ? "---:" : "---" }.joined(separator: "|") + "|")
        let cells = pivot?(rows) ?? rows.map { row in columns.map { $0.value(row) } }
        for line in cells { lines.append("| " + line.joined(separator: " | ") + " |") }
        return lines
    }

    static func size(_ r: BenchmarkResult) -> String {
        "\(r.width)x\(r.height) → \(r.destinationWidth ?? r.width)x\(r.destinationHeight ?? r.height)"
    }

    /// The name's components after the group prefix, without the size and later components.
    static func label(_ r: BenchmarkResult, drop prefix: Int = 1) -> String {
        let parts = r.name.split(separator: "/").dropFirst(prefix)
        return parts.prefix { !$0.contains("x") || !$0.first!.isNumber }.joined(separator: "/")
    }

    static let conversion = ReportTable(
        group: "conversion",
        columns: [
            ("conversion", false, { label($0) }), ("source → destination", false, size),
            ("ring", false, { $0.regime ?? "–" }), ("bands", true, { format($0.threads) }),
            ("fps min", true, { format($0.fpsMin) }), ("fps median", true, { format($0.fpsMedian) }),
            ("CPU/wall", true, { format($0.cpuPerWall, 2) }), ("GB/s", true, { format($0.gbPerS, 2) }),
            ("allocs/frame", true, { format($0.allocationsPerFrame, 2) }),
            ("floor fps (memcpy, same ring, one thread per band)", true, { format($0.floor) }),
            ("×floor", true, { format($0.ratioToFloor, 2) }),
            ("libyuv 1-core fps", true, { "\(format($0.libyuvFps)) (\($0.libyuvPath ?? "–"))" }),
            ("×libyuv", true, { format($0.ratioToLibyuv, 2) }),
            ("×libyuv per repeat", true, { ratioRange($0.ratioToLibyuvMin, $0.ratioToLibyuvMax) }),
            ("A/A: libyuv ×libyuv", true, { format($0.libyuvAA, 2) }),
            ("A/A per repeat", true, { ratioRange($0.libyuvAAMin, $0.libyuvAAMax) }),
            ("fps per CPU-s", true, { format($0.fpsPerCPUSecond) }),
            ("libyuv fps per CPU-s", true, { format($0.libyuvFpsPerCPUSecond) }),
            ("×libyuv per CPU-s", true, { format($0.ratioToLibyuvCPU, 2) }),
            ("swscale fps", true, { format($0.swscaleFps) }),
            ("×swscale", true, { format($0.ratioToSwscale, 1) }), ("ffmpeg fps", true, { format($0.peerFps) }),
            ("×peer", true, { format($0.ratioToPeer, 2) }),
        ])

    static let pipeline = ReportTable(
        group: "pipeline",
        columns: [
            (
                "pipeline (unpaced camera, throughput)", false,
                { label($0, drop: $0.name.hasPrefix("pipeline/throughput") ? 2 : 1) }
            ),
            ("camera → delivered", false, size), ("engine", false, { $0.engine ?? "–" }),
            ("fps min", true, { format($0.fpsMin) }), ("fps median", true, { format($0.fpsMedian) }),
            ("µs/frame", true, { format($0.usPerFrame) }), ("CPU µs/frame", true, { format($0.cpuUsPerFrame) }),
            ("CPU/wall", true, { format($0.cpuPerWall, 2) }),
            ("allocs/frame", true, { format($0.allocationsPerFrame, 2) }),
            ("dropped", true, { format($0.dropped) }), ("floor fps (memcpy, hot)", true, { format($0.floor) }),
            ("×floor", true, { format($0.ratioToFloor, 2) }),
        ])

    static let paced = ReportTable(
        group: "pipeline-paced",
        columns: [
            ("pipeline (paced camera)", false, { label($0, drop: 2) }), ("camera → delivered", false, size),
            ("engine", false, { $0.engine ?? "–" }), ("rate", true, { format($0.pacedFps, 0) }),
            ("latency p50 µs", true, { format($0.latencyP50Us) }),
            ("latency p99 µs", true, { format($0.latencyP99Us) }),
            ("wake-up floor p50 µs", true, { format($0.wakeUpP50Us) }),
            ("wake-up floor p99 µs", true, { format($0.wakeUpP99Us) }),
            (
                "p50 − floor µs", true,
                {
                    guard let a = $0.latencyP50Us, let b = $0.wakeUpP50Us else { return "–" }
                    return format(a - b)
                }
            ),
            ("CPU µs/frame", true, { format($0.cpuUsPerFrame) }),
            ("allocs/frame", true, { format($0.allocationsPerFrame, 2) }), ("frames", true, { format($0.frames) }),
            ("dropped", true, { format($0.dropped) }), ("drop reports", true, { format($0.dropReports) }),
        ])

    static let processor = ReportTable(
        group: "processor",
        columns: [
            ("processor", false, { label($0) }), ("format", false, { $0.pixelFormat ?? "–" }),
            ("size → output", false, size), ("fps min", true, { format($0.fpsMin) }),
            ("fps median", true, { format($0.fpsMedian) }), ("GB/s", true, { format($0.gbPerS, 2) }),
            ("allocs/frame", true, { format($0.allocationsPerFrame, 2) }),
            ("floor fps (memcpy)", true, { format($0.floor) }), ("×floor", true, { format($0.ratioToFloor, 2) }),
            (
                "ffmpeg peer", false,
                { r in r.peer.map { "`" + ($0.components(separatedBy: " (").first ?? $0) + "`" } ?? "–" }
            ),
            ("ffmpeg fps", true, { format($0.peerFps) }), ("×peer", true, { format($0.ratioToPeer, 2) }),
            ("ffmpeg filter-only fps", true, { format($0.peerFilterOnlyFps) }),
            ("×filter-only", true, { format($0.ratioToPeerFilterOnly, 2) }),
        ])

    /// MJPEG decoding: one line per size and format with every contender's median fps and CPU-ms
    /// per frame; ratios of Viewfinder's CPU per delivered frame over the TurboJPEG floor's (paired
    /// within each repeat: their median, and the smallest and largest), of two lanes' fps over one
    /// core's, and of libv4lconvert's CPU per frame over Viewfinder's.
    static let mjpeg = ReportTable(
        group: "mjpeg",
        columns: [
            "frames", "→ format", "Viewfinder 1 core fps", "CPU-ms", "Viewfinder 2 lanes fps", "CPU-ms",
            "2 lanes CPU/wall", "2 lanes ×1 core (fps)", "TurboJPEG floor fps", "CPU-ms", "Viewfinder CPU ×floor",
            "×floor per repeat", "ffmpeg -threads 1 fps", "CPU-ms", "ffmpeg -threads 2 fps", "libv4lconvert fps",
            "CPU-ms", "libv4lconvert CPU ×Viewfinder", "libv4lconvert emulates",
        ].enumerated().map { index, header in (header, index >= 2 && index != 18, { _ in "" }) },
        pivot: { results in
            var cases: [String] = []
            for result in results {
                let name = result.name.split(separator: "/").prefix(2).joined(separator: "/")
                if !cases.contains(name) { cases.append(name) }
            }
            return cases.map { name in
                let rows = results.filter { $0.name.hasPrefix(name + "/") }
                func row(_ engine: String) -> BenchmarkResult? {
                    rows.first { ($0.engine ?? "").hasPrefix(engine) && $0.fpsMedian > 0 }
                }
                let (one, two, floor) = (row("viewfinder 1 core"), row("viewfinder 2 lanes"), row("turbojpeg"))
                let (ffmpeg1, ffmpeg2, v4l) = (row("ffmpeg -threads 1"), row("ffmpeg -threads 2"), row("libv4lconvert"))
                func ratio(_ a: Double?, _ b: Double?) -> String {
                    guard let a, let b, b > 0 else { return "–" }
                    return format(a / b, 2)
                }
                /// The smallest and largest same-repeat ratio.
                func spread(_ row: BenchmarkResult?) -> String {
                    ratioRange(row?.cpuRatioToFloorMin, row?.cpuRatioToFloorMax)
                }
                let first = rows.first
                let emulated: String
                if let v4l {
                    emulated = (v4l.engine ?? "").components(separatedBy: "→ ").last ?? "–"
                } else {
                    // Not run: its row's note says why.
                    let note = rows.first { ($0.engine ?? "").hasPrefix("libv4lconvert") }?.note ?? ""
                    emulated = note.components(separatedBy: "; ").last { $0.hasPrefix("not run") } ?? "not run"
                }
                return [
                    "\(first.map { "\($0.width)x\($0.height)" } ?? "–") \(first?.note?.components(separatedBy: ";").first ?? "")",
                    first?.pixelFormat ?? "–", format(one?.fpsMedian), format(one?.cpuMsPerFrame, 2),
                    format(two?.fpsMedian), format(two?.cpuMsPerFrame, 2), format(two?.cpuPerWall, 2),
                    ratio(two?.fpsMedian, one?.fpsMedian),
                    format(floor?.fpsMedian), format(floor?.cpuMsPerFrame, 2),
                    format(one?.cpuRatioToFloor, 2), spread(one), format(ffmpeg1?.fpsMedian),
                    format(ffmpeg1?.cpuMsPerFrame, 2), format(ffmpeg2?.fpsMedian), format(v4l?.fpsMedian),
                    format(v4l?.cpuMsPerFrame, 2), ratio(v4l?.cpuMsPerFrame, one?.cpuMsPerFrame), emulated,
                ]
            }
        })

    static let recording = ReportTable(
        group: "recording",
        columns: [
            ("recording", false, { label($0) }), ("size", false, { "\($0.width)x\($0.height)" }),
            ("engine", false, { $0.engine ?? "–" }), ("fps min", true, { format($0.fpsMin) }),
            ("fps median", true, { format($0.fpsMedian) }), ("CPU ms/frame", true, { format($0.cpuMsPerFrame, 2) }),
            (
                "floor fps", true,
                { "\(format($0.floor)) (\($0.engine == "passthrough" ? "write(2)" : "memcpy"))" }
            ),
            ("×floor", true, { format($0.ratioToFloor, 2) }),
            ("peer", false, { r in r.peer.map { "`\($0)`" } ?? "–" }), ("peer fps", true, { format($0.peerFps) }),
            ("×peer", true, { format($0.ratioToPeer, 2) }),
            ("peer CPU ms/frame", true, { format($0.peerCpuMsPerFrame, 2) }), ("note", false, { $0.note ?? "" }),
        ])

    static let photo = ReportTable(
        group: "photo",
        columns: [
            ("photo", false, { label($0) }), ("size", false, { "\($0.width)x\($0.height)" }),
            ("format", false, { $0.pixelFormat ?? "–" }), ("fps min", true, { format($0.fpsMin) }),
            ("fps median", true, { format($0.fpsMedian) }), ("µs/photo", true, { format($0.usPerFrame) }),
            ("latency p50 µs", true, { format($0.latencyP50Us) }),
            ("latency p99 µs", true, { format($0.latencyP99Us) }),
            ("allocs/frame", true, { format($0.allocationsPerFrame, 2) }),
            ("floor fps", true, { format($0.floor) }), ("×floor", true, { format($0.ratioToFloor, 2) }),
            ("ffmpeg fps", true, { format($0.peerFps) }), ("×peer", true, { format($0.ratioToPeer, 2) }),
            ("note", false, { $0.note ?? "" }),
        ])

    /// Capacity: one line per size and camera count with every contender side by side (frames per
    /// second per camera, CPU-ms per frame, CPU/wall, frames dropped), then the headline line.
    static let capacity = ReportTable(
        group: "capacity",
        columns: [
            "cameras", "size", "Viewfinder fps/camera", "CPU-ms/frame", "CPU/wall", "dropped", "GStreamer fps/camera",
            "CPU-ms/frame", "CPU/wall", "dropped", "FFmpeg fps/camera", "CPU-ms/frame", "CPU/wall", "dropped",
        ].enumerated().map { index, header in (header, index >= 2, { _ in "" }) },
        pivot: { results in
            var lines: [[String]] = []
            var keys: [String] = []
            for result in results {
                let key = result.name.split(separator: "/").dropLast().joined(separator: "/")
                if !keys.contains(key) { keys.append(key) }
            }
            for key in keys {
                let rows = results.filter { $0.name.split(separator: "/").dropLast().joined(separator: "/") == key }
                if let summary = rows.first(where: { $0.engine == "summary" }) {
                    lines.append(
                        ["**carries**", "\(summary.width)x\(summary.height)", summary.note ?? ""]
                            + Array(repeating: "", count: 11))
                    continue
                }
                guard let first = rows.first else { continue }
                var line = ["\(first.cameras ?? 0)", "\(first.width)x\(first.height)"]
                for engine in ["viewfinder", "gstreamer", "ffmpeg"] {
                    guard let row = rows.first(where: { $0.engine == engine }), row.frames != nil else {
                        line += ["–", "–", "–", "–"]
                        continue
                    }
                    line += [
                        format(row.fpsMedian), format(row.cpuMsPerFrame, 2), format(row.cpuPerWall, 2),
                        format(row.dropped),
                    ]
                }
                lines.append(line)
            }
            return lines
        })

    static let capacityRecording = ReportTable(
        group: "capacity-recording",
        columns: [
            ("two cameras recorded at once", false, { String($0.name.split(separator: "/").last ?? "") }),
            ("size", false, { "\($0.width)x\($0.height)" }), ("codec", false, { $0.pixelFormat ?? "–" }),
            ("recorded fps (slower, median)", true, { "\(format($0.fpsMin)), \(format($0.fpsMedian))" }),
            ("CPU-ms/frame", true, { format($0.cpuMsPerFrame, 2) }), ("CPU/wall", true, { format($0.cpuPerWall, 2) }),
            ("dropped", true, { format($0.dropped) }), ("note", false, { $0.note ?? "" }),
        ])

    static let generic = ReportTable(
        group: "",
        columns: [
            ("benchmark", false, { $0.name }), ("size → output", false, size),
            ("fps min", true, { format($0.fpsMin) }), ("fps median", true, { format($0.fpsMedian) }),
            ("CPU/wall", true, { format($0.cpuPerWall, 2) }),
            ("allocs/frame", true, { format($0.allocationsPerFrame, 2) }), ("note", false, { $0.note ?? "" }),
        ])

    /// The tables, in print order. Add one here for a new group.
    static let all: [ReportTable] = [
        conversion, pipeline, paced, processor, mjpeg, recording, photo, pipewire, capacity, capacityRecording,
    ]

    /// Every result, one table per group (in ``all``'s order, then the others' in the generic table).
    static func markdown(_ results: [BenchmarkResult]) -> String {
        var sections: [[String]] = []
        for table in all {
            let rows = results.filter { $0.group == table.group }
            if !rows.isEmpty { sections.append(table.render(rows)) }
        }
        let known = Set(all.map(\.group))
        var others: [String] = []
        for result in results where !known.contains(result.group) && !others.contains(result.group) {
            others.append(result.group)
        }
        for group in others {
            sections.append(["**\(group)**", ""] + generic.render(results.filter { $0.group == group }))
        }
        return sections.map { $0.joined(separator: "\n") }.joined(separator: "\n\n")
    }
}
