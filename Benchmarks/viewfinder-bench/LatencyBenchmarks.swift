import Dispatch
import Foundation
import Synchronization
import Viewfinder

#if canImport(Glibc)
    import Glibc
#endif

/// Glass-to-glass latency (`latency/…`): a paced virtual camera → session → what shows it → a
/// headless Chromium painting it, from the frame's capture stamp to the page's paint.
///
/// Contenders, each in the same run on the same camera frames (BGRA, JPEG at quality 0.8, 4:2:0):
/// - `viewfinder-page`: ``CaptureVideoPreviewLayer`` + ``PreviewWebPresenter``'s page (WebSocket,
///   canvas), 1 and 8 viewers (windows), and a second 1-viewer contender as the A/A control;
/// - `viewfinder-mjpeg`: the presenter's `multipart/x-mixed-replace` stream opened as a page;
/// - `ffmpeg`: `-f mpjpeg -c copy` served by ffmpeg's HTTP server (one client);
/// - `gstreamer`: `multipartdemux ! multipartmux ! tcpserversink` (the HTTP head as the stream
///   header).
/// The peers get each frame from a video data output beside nothing else, encoded there with the
/// same ``JPEGEncoder`` settings as the presenter; the Viewfinder contenders have the same data
/// output (it records the capture stamps), so every contender carries it.
///
/// Every page is read back the same way: a script put in the page polls the shown element (the
/// canvas, or the stream's `<img>`) at every animation frame, draws the sequence-number strip's
/// middle row into a 1-row canvas, decodes the number like ``TestPattern/readSequenceNumber(from:)``
/// and notes `performance.timeOrigin + performance.now()` the first time it sees each number.
/// That time is on the CLOCK_REALTIME scale (Chromium pins its monotonic clock to wall time once
/// per renderer); the bench maps it to CLOCK_MONOTONIC, the capture stamps' clock, with an offset
/// from bracketed (monotonic, realtime, monotonic) samples, and checks the page's own
/// `Date.now()` against it.
enum LatencyBenchmarks {
    enum Contender: Hashable {
        case page(viewers: Int, control: Bool)
        case stream
        case peer(LatencyPeer.Kind)

        var label: String {
            switch self {
            case .page(let viewers, let control):
                "viewfinder-page\(control ? "-aa" : "")/\(viewers)-viewer\(viewers == 1 ? "" : "s")"
            case .stream: "viewfinder-mjpeg/1-viewer"
            case .peer(let kind): "\(kind.rawValue)/1-viewer"
            }
        }

        var viewers: Int {
            if case .page(let viewers, _) = self { return viewers }
            return 1
        }
    }

    static let rate = 30

    /// `VIEWFINDER_BENCH_TRACE=1`: every step of a run on stderr.
    static let tracing = ProcessInfo.processInfo.environment["VIEWFINDER_BENCH_TRACE"] == "1"
    static func trace(_ line: @autoclosure () -> String) { if tracing { progress("      · \(line())") } }

    static func cases(settings: MeasureSettings) -> [BenchmarkCase] {
        guard !settings.allocationsOnly else { return [] }
        let sizes = settings.quick ? [(1280, 720)] : [(1280, 720), (1920, 1080)]
        return sizes.map { size in
            let dimensions = CaptureDevice.Dimensions(width: size.0, height: size.1)
            return BenchmarkCase(name: "latency/\(dimensions)@\(rate)", group: "latency") { settings in
                try measure(dimensions, settings)
            }
        }
    }

    /// Every contender at `size`, interleaved over the rounds.
    static func measure(_ size: CaptureDevice.Dimensions, _ settings: MeasureSettings) throws -> [BenchmarkResult] {
        // --quick: the page and the peers, one short round (a smoke test of the plumbing).
        var contenders: [Contender] = [.page(viewers: 1, control: false)]
        if !settings.quick {
            contenders += [.stream, .page(viewers: 8, control: false), .page(viewers: 1, control: true)]
        }
        var missing: [String] = []
        for kind in [LatencyPeer.Kind.ffmpeg, .gstreamer] {
            if kind.executable != nil { contenders.append(.peer(kind)) } else { missing.append(kind.rawValue) }
        }
        let rounds = settings.quick ? 1 : 2
        let preRoll = settings.quick ? 0.3 : 1.0
        let window = settings.quick ? 1.0 : 4.0
        trace("starting Chromium")
        let browser = try LatencyBrowser(width: 1280, height: 800)
        trace("Chromium started")
        var runs: [Contender: [Run]] = [:]
        var failures: [Contender: String] = [:]
        for round in 0..<rounds {
            for index in Measure.order(repeat: round, count: contenders.count) {
                let contender = contenders[index]
                if failures[contender] != nil { continue }
                do {
                    let run = try Run.measure(contender, size, browser, preRoll: preRoll, window: window)
                    progress("    round \(round + 1) \(contender.label): \(run.summary)")
                    runs[contender, default: []].append(run)
                } catch {
                    failures[contender] = "\(error)"
                    progress("    \(contender.label): cannot run: \(error)")
                }
            }
        }
        var results: [BenchmarkResult] = []
        for contender in contenders {
            let name = "latency/\(contender.label.replacingOccurrences(of: "/", with: "/\(size)@\(rate)/"))"
            var result = BenchmarkResult(
                name: name, group: "latency", width: size.pixelWidth, height: size.pixelHeight, fpsMin: 0, fpsMedian: 0,
                gbPerS: 0, floor: 0, ratioToFloor: 0)
            result.pacedFps = Double(rate)
            result.peer = contender.label.components(separatedBy: "/").first
            guard let list = runs[contender], !list.isEmpty else {
                result.note = "not measured: \(failures[contender] ?? "?")"
                results.append(result)
                continue
            }
            let latencies = list.flatMap(\.latenciesMs).sorted()
            let painted = list.map(\.painted).reduce(0, +)
            let sent = list.map(\.sent).reduce(0, +)
            let cpu = list.map(\.cpuSeconds).reduce(0, +)
            let wall = list.map(\.wallSeconds).reduce(0, +)
            let frames = list.map(\.framesInWindow).reduce(0, +)
            result.latencyP50Us = percentile(latencies, 0.50) * 1000
            result.latencyP95Us = percentile(latencies, 0.95) * 1000
            result.latencyP99Us = percentile(latencies, 0.99) * 1000
            result.fpsMedian = Measure.median(list.map { Double($0.painted) / Double($0.viewers) / $0.wallSeconds })
            result.fpsMin = list.map { Double($0.painted) / Double($0.viewers) / $0.wallSeconds }.min() ?? 0
            result.frames = painted
            result.dropped = sent - painted
            result.cpuMsPerFrame = frames > 0 ? cpu * 1000 / Double(frames) : nil
            result.cpuPerWall = wall > 0 ? cpu / wall : nil
            let goal = 1000 / Double(rate) + 15
            let p95 = percentile(latencies, 0.95)
            result.note =
                "painted \(painted)/\(sent) viewer-frames over \(list.count) runs; p95 \(format(p95)) ms vs goal \(format(goal)) ms (\(p95 <= goal ? "met" : "missed")); "
                + "clock map error ≤ \(format(list.map(\.clockErrorMs).max() ?? 0, 3)) ms, page Date.now() − mapped clock ≤ \(format(list.map(\.pageSkewMs).max() ?? 0, 2)) ms; "
                + "server CPU = bench process\(contender.isPeer ? " + peer process" : "") (camera, data output, encode, serve); "
                + list.map(\.detail).joined(separator: "; ")
            results.append(result)
        }
        if !missing.isEmpty { progress("    peers not installed: \(missing.joined(separator: ", "))") }
        progress(table(results, size: size))
        return results
    }

    /// The group's Markdown table (printed to stderr while it runs, for RESULTS.md).
    static func table(_ results: [BenchmarkResult], size: CaptureDevice.Dimensions) -> String {
        var lines = [
            "| \(size)@\(rate) | viewers | p50 ms | p95 ms | p99 ms | painted/sent | server CPU-ms/frame | CPU/wall |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in results {
            let parts = r.name.split(separator: "/")
            let viewers = parts.last.map { String($0.prefix { $0.isNumber }) } ?? "?"
            let sent = (r.frames ?? 0) + (r.dropped ?? 0)
            lines.append(
                "| \(parts.dropFirst().first ?? "?") | \(viewers) | \(format(r.latencyP50Us.map { $0 / 1000 })) | \(format(r.latencyP95Us.map { $0 / 1000 })) | \(format(r.latencyP99Us.map { $0 / 1000 })) | \(format(r.frames))/\(sent) | \(format(r.cpuMsPerFrame, 2)) | \(format(r.cpuPerWall, 2)) |"
            )
        }
        return lines.joined(separator: "\n")
    }

    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let index = min(sorted.count - 1, max(0, Int((fraction * Double(sorted.count)).rounded(.up)) - 1))
        return sorted[index]
    }

    /// The capture stamps of a session's frames, by sequence number, noted by a video data
    /// output's delegate (which also hands each frame to a peer, when there is one).
    final class Stamps: CaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
        // unchecked: `stamps` is written on the delegate's serial queue only, and read after
        // `newest` (an atomic) says the entry was written.
        static let capacity = 1 << 14
        private let stamps = UnsafeMutablePointer<Double>.allocate(capacity: capacity)
        let newest = Atomic<Int>(-1)
        let encodeFailures = Atomic<Int>(0)
        var peer: LatencyPeer?
        var encoder: JPEGEncoder?

        init() { stamps.initialize(repeating: .nan, count: Self.capacity) }
        deinit { stamps.deallocate() }

        func stamp(_ sequence: Int) -> Double? {
            guard sequence >= 0, sequence < Self.capacity, sequence <= newest.load(ordering: .acquiring) else {
                return nil
            }
            let value = stamps[sequence]
            return value.isNaN ? nil : value
        }

        func captureOutput(
            _ output: CaptureOutput, didOutput sampleBuffer: SampleBuffer, from connection: CaptureConnection
        ) {
            let sequence = Int(sampleBuffer.sequenceNumber)
            guard sequence < Self.capacity else { return }
            stamps[sequence] = sampleBuffer.presentationTimeStamp.seconds
            newest.store(sequence, ordering: .releasing)
            if let peer, let encoder, let image = sampleBuffer.imageBuffer {
                if let jpeg = try? encoder.encode(image) {
                    peer.hand(jpeg)
                } else {
                    encodeFailures.add(1, ordering: .relaxed)
                }
            }
        }
    }

    /// CLOCK_REALTIME − CLOCK_MONOTONIC in seconds, from the tightest of 50 bracketed samples, and
    /// half that bracket (the offset's error bound).
    static func realtimeOffset() -> (offset: Double, error: Double) {
        var best = (offset: 0.0, error: Double.infinity)
        for _ in 0..<50 {
            var a = timespec()
            var r = timespec()
            var b = timespec()
            clock_gettime(CLOCK_MONOTONIC, &a)
            clock_gettime(CLOCK_REALTIME, &r)
            clock_gettime(CLOCK_MONOTONIC, &b)
            let before = Double(a.tv_sec) + Double(a.tv_nsec) / 1e9
            let after = Double(b.tv_sec) + Double(b.tv_nsec) / 1e9
            let real = Double(r.tv_sec) + Double(r.tv_nsec) / 1e9
            let error = (after - before) / 2
            if error < best.error { best = (real - (before + after) / 2, error) }
        }
        return best
    }

    /// The probe put in each page: see the type's comment.
    static let probe = """
        const [selector, limit] = arguments;
        const element = document.querySelector(selector);
        if (!element) return false;
        const strip = document.createElement('canvas');
        const context = strip.getContext('2d', { willReadFrequently: true });
        const state = { reports: [], last: -1, polls: 0 };
        window.viewfinderLatency = state;
        const decode = () => {
          const width = element.naturalWidth || element.width, height = element.naturalHeight || element.height;
          if (!width || !height) return -1;
          if (strip.width !== width) { strip.width = width; strip.height = 1; }
          const rows = Math.max(2, Math.floor(height / 16) & ~1);
          context.drawImage(element, 0, Math.floor(rows / 2), width, 1, 0, 0, width, 1);
          const pixels = context.getImageData(0, 0, width, 1).data;
          let value = 0;
          for (let bit = 0; bit < 32; bit++) {
            const low = Math.floor(bit * width / 32) & ~1, high = Math.floor((bit + 1) * width / 32) & ~1;
            const x = (low + Math.floor((high - low) / 2)) * 4;
            if ((pixels[x] + pixels[x + 1] + pixels[x + 2]) / 3 > 128) value += 2 ** bit;
          }
          return value;
        };
        const tick = () => {
          const time = performance.timeOrigin + performance.now();
          state.polls += 1;
          let value = -1;
          try { value = decode(); } catch (error) { state.error = String(error); }
          if (value >= 0 && value !== state.last) {
            state.last = value;
            if (state.reports.length < limit) state.reports.push([value, time]);
          }
          requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
        return true;
        """

    /// One timed run of one contender.
    struct Run {
        var viewers: Int
        var latenciesMs: [Double]
        /// Viewer-frames painted and sent (frames in the window × viewers).
        var painted: Int
        var sent: Int
        var framesInWindow: Int
        var cpuSeconds: Double
        var wallSeconds: Double
        var clockErrorMs: Double
        var pageSkewMs: Double
        var detail: String

        var summary: String {
            let sorted = latenciesMs.sorted()
            return
                "p50 \(format(percentile(sorted, 0.5))) ms, p95 \(format(percentile(sorted, 0.95))) ms, painted \(painted)/\(sent), CPU \(format(cpuSeconds * 1000 / Double(max(1, framesInWindow)), 2)) ms/frame; \(detail)"
        }

        static func measure(
            _ contender: Contender, _ size: CaptureDevice.Dimensions, _ browser: LatencyBrowser, preRoll: Double,
            window: Double
        ) throws -> Run {
            let cameraFormat = CaptureDevice.Format(
                pixelFormat: .bgra, width: size.pixelWidth, height: size.pixelHeight,
                frameRateRanges: [FrameRateRange(framesPerSecond: Int32(rate))])
            let camera = VirtualCamera(
                configuration: .init(name: "Latency Camera", clock: HostClock(), isPaced: true, formats: [cameraFormat])
            )
            let session = CaptureSession(notificationCenter: NotificationCenter())
            let stamps = Stamps()
            let output = CaptureVideoDataOutput()
            output.setSampleBufferDelegate(stamps, queue: DispatchQueue(label: "bench.latency.stamps"))
            session.beginConfiguration()
            try session.tryAddInput(try CaptureDeviceInput(device: camera.device))
            try session.tryAddOutput(output)
            session.commitConfiguration()

            var layer: CaptureVideoPreviewLayer?
            var presenter: PreviewWebPresenter?
            var peer: LatencyPeer?
            var url: URL
            var selector = "img"
            switch contender {
            case .page, .stream:
                let previewLayer = CaptureVideoPreviewLayer(session: session)
                previewLayer.frame = CGRect(x: 0, y: 0, width: size.pixelWidth, height: size.pixelHeight)
                let page = try PreviewWebPresenter(layer: previewLayer)
                layer = previewLayer
                presenter = page
                if case .stream = contender {
                    url = page.streamURL
                } else {
                    // measure=1: the page keeps its stages (`timeline`) for the breakdown.
                    url = URL(string: page.url.absoluteString + "&measure=1")!
                    selector = "#picture"
                }
            case .peer(let kind):
                let started = try LatencyPeer(kind)
                stamps.peer = started
                stamps.encoder = try JPEGEncoder(quality: 0.8)
                peer = started
                url = started.url
            }
            defer {
                session.stopRunning()
                presenter?.close()
                peer?.stop()
                _ = layer
            }
            trace("\(contender.label): starting the session; \(url)")
            session.startRunning()
            guard session.isRunning else { throw BenchError("the session did not start") }
            if let peer {
                let deadline = Date().addingTimeInterval(10)
                while !peer.isListening {
                    guard peer.process.isRunning, Date() < deadline else {
                        throw BenchError("\(peer.kind.rawValue) did not listen; it printed: \(peer.printed)")
                    }
                    usleep(10000)
                }
            }
            let viewers = contender.viewers
            trace("opening \(viewers) windows")
            try browser.ensureWindows(viewers)
            for index in 0..<viewers {
                try browser.select(index)
                try browser.open(url)
            }
            for index in 0..<viewers {
                try browser.select(index)
                try browser.waitUntil(
                    "document.querySelector('\(selector)') && (document.querySelector('\(selector)').naturalWidth || window.viewfinderPreview?.drawn > 0)",
                    timeout: 15)
                guard try browser.run(probe, [selector, 4096]) as? Bool == true else {
                    throw BenchError("no \(selector) in the page at \(url)")
                }
            }
            trace("probes in place")
            // Untimed pre-roll, then the window: the frames the camera stamps in it.
            usleep(UInt32(preRoll * 1e6))
            let first = stamps.newest.load(ordering: .acquiring) + 1
            let cpu0 = Measure.cpuSeconds() + (peer?.cpuSeconds ?? 0)
            let wall0 = Measure.now()
            let replaced0 = peer?.replaced ?? 0
            let browser0 = browser.cpuSeconds
            usleep(UInt32(window * 1e6))
            let last = stamps.newest.load(ordering: .acquiring)
            let cpu1 = Measure.cpuSeconds() + (peer?.cpuSeconds ?? 0)
            let wall1 = Measure.now()
            let replaced = (peer?.replaced ?? 0) - replaced0
            let browserCPU = browser.cpuSeconds - browser0
            // Frames of the window still on their way get time to be painted.
            usleep(400_000)
            let clock = realtimeOffset()
            var latencies: [Double] = []
            var painted = 0
            var skew = 0.0
            var undecodable = 0
            var inWindow = 0
            var polls: [Int] = []
            var stages: [[Double]] = Array(repeating: [], count: 5)
            var agreeing = 0
            for sequence in first...max(first, last) where stamps.stamp(sequence) != nil { inWindow += 1 }
            for index in 0..<viewers {
                try browser.select(index)
                let reply =
                    try browser.run(
                        "const s = window.viewfinderLatency; const skews = []; for (let i = 0; i < 20; i++) skews.push(Date.now() - (performance.timeOrigin + performance.now())); const p = window.viewfinderPreview; return { reports: s.reports, polls: s.polls, error: s.error || null, skews, timeline: p ? p.timeline : [] };"
                    ) as? [String: Any]
                let reports = reply?["reports"] as? [[NSNumber]] ?? []
                let skews = (reply?["skews"] as? [NSNumber] ?? []).map(\.doubleValue)
                // Date.now() is whole milliseconds: the mean of 20 readings against the mapped clock.
                if !skews.isEmpty { skew = max(skew, abs(skews.reduce(0, +) / Double(skews.count) + 0.5)) }
                var seen = Set<Int>()
                for report in reports where report.count == 2 {
                    let sequence = report[0].intValue
                    guard let captured = stamps.stamp(sequence) else {
                        undecodable += 1
                        continue
                    }
                    guard sequence >= first, sequence <= last, seen.insert(sequence).inserted else { continue }
                    let paintedAt = report[1].doubleValue / 1000 - clock.offset
                    latencies.append((paintedAt - captured) * 1000)
                }
                painted += seen.count
                polls.append((reply?["polls"] as? NSNumber)?.intValue ?? 0)
                // The page's own stages (its header's sequence number), for frames the probe saw.
                for entry in reply?["timeline"] as? [[NSNumber]] ?? [] where entry.count == 6 {
                    let sequence = entry[0].intValue
                    guard seen.contains(sequence), let captured = stamps.stamp(sequence) else { continue }
                    agreeing += 1
                    let times = entry.dropFirst().map { $0.doubleValue / 1000 - clock.offset }
                    let points = [captured] + times
                    for stage in 0..<5 where points[stage].isFinite && points[stage + 1].isFinite {
                        stages[stage].append((points[stage + 1] - points[stage]) * 1000)
                    }
                }
            }
            for index in 0..<viewers {
                try browser.select(index)
                try browser.open(URL(string: "about:blank")!)
            }
            try browser.select(0)
            var detail =
                "Chromium CPU/wall \(format(browserCPU / (wall1 - wall0), 2)), undecodable reports \(undecodable), animation frames per window \(polls.min() ?? 0)–\(polls.max() ?? 0)"
            if case .page = contender {
                let names = ["capture→publish", "publish→receive", "receive→decoded", "decoded→drawn", "drawn→paint"]
                detail +=
                    ", page stages (median ms) "
                    + zip(names, stages).map { "\($0) \(format(Measure.median($1)))" }.joined(
                        separator: ", ") + " over the \(agreeing) painted frames the page's own report names too"
            }
            if let peer { detail += ", replaced before \(peer.kind.rawValue) took them \(replaced)" }
            if let presenter {
                detail += ", presenter \(presenter.statistics)"
            }
            detail += ", camera \(session.isRunning ? "running" : "stopped")"
            return Run(
                viewers: viewers, latenciesMs: latencies, painted: painted, sent: inWindow * viewers,
                framesInWindow: inWindow, cpuSeconds: cpu1 - cpu0, wallSeconds: wall1 - wall0,
                clockErrorMs: clock.error * 1000 + 0.1, pageSkewMs: skew, detail: detail)
        }
    }
}

extension LatencyBenchmarks.Contender {
    var isPeer: Bool {
        if case .peer = self { return true }
        return false
    }
}
