import CAllocCounter
import Foundation
import Viewfinder

/// Timing helpers: every figure is frames per second over `repeats` timed runs.
enum Measure {
    /// Seconds on the monotonic clock.
    static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// CPU seconds (user + system) of every thread of this process so far.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// Heap allocations so far in this process (see CAllocCounter).
    static func allocations() -> UInt64 { vf_allocation_count() }

    struct Figures {
        var fps: [Double]
        var allocationsPerFrame: Double
        /// CPU time over wall time of the timed runs, all threads of the process (1.0 = one core
        /// busy the whole time). Includes whatever else the process did meanwhile (nothing, in the
        /// conversion runs).
        var cpuPerWall: Double?
        /// Frames per CPU-second of the process, per run: on a shared machine, where other
        /// processes take the cores away at times, this is the steadier figure for one thread.
        var fpsPerCPUSecond: [Double] = []
        var min: Double { fps.min() ?? 0 }
        var median: Double { Measure.median(fps) }
    }

    /// How `a` compares with `b` measured in the same interleaved runs: the median over repeats of
    /// `a`'s figure over `b`'s in that repeat. The two ran seconds apart in every repeat, so a
    /// machine that slows down or speeds up between repeats (another tenant, the host's memory
    /// traffic) moves both sides of each ratio alike: steadier than the ratio of the medians,
    /// which pairs figures from different repeats.
    static func pairedRatio(_ a: [Double], _ b: [Double]) -> Double {
        guard !a.isEmpty, a.count == b.count else {
            return b.isEmpty || median(b) == 0 ? 0 : median(a) / median(b)
        }
        return median(pairedRatios(a, b))
    }

    /// The per-repeat ratios behind ``pairedRatio(_:_:)``: `a`'s figure over `b`'s in each
    /// repeat (empty when the two were not measured in the same repeats).
    static func pairedRatios(_ a: [Double], _ b: [Double]) -> [Double] {
        guard !a.isEmpty, a.count == b.count else { return [] }
        return zip(a, b).map { $1 > 0 ? $0 / $1 : 0 }
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    /// Calls `body(frameIndex)` in timed runs; see ``interleaved(_:_:preRollFrames:)``.
    static func frames(_ settings: MeasureSettings, _ body: (Int) throws -> Void) throws -> Figures {
        try withoutActuallyEscaping(body) { try interleaved(settings, [$0])[0] }
    }

    /// The order `count` contenders run in during repeat `repeatIndex`: starting with contender
    /// `repeatIndex` mod `count`, forwards on even repeats and backwards on odd ones. Rotating
    /// alone changes only who goes first: every contender would still run right after the same
    /// other one (its left neighbour) in every repeat but one, so whatever that neighbour leaves
    /// behind (caches, a slower host) would fall on it alone. Backwards, its right neighbour
    /// precedes it, so each contender follows both of its neighbours, in alternate repeats.
    static func order(repeat repeatIndex: Int, count: Int) -> [Int] {
        guard count > 0 else { return [] }
        let step = repeatIndex % 2 == 0 ? 1 : count - 1
        return (0..<count).map { (repeatIndex + $0 * step) % count }
    }

    /// Measures several contenders fairly. Every repeat runs all of them, in the order
    /// ``order(repeat:count:)`` gives (the first contender rotated, the direction reversed every
    /// other repeat), so none always follows the same other work. Right before each timed run the
    /// contender runs untimed (a pre-roll of at least `preRollFrames` frames and 50 ms, or a tenth
    /// of the run): whatever ran first after different work pays a warm-up of 10–20 frames
    /// (caches, branch predictors, page mappings, frequency), which the pre-roll absorbs. A timed
    /// run lasts at least `settings.runSeconds` (frames are counted until it has). Frame indices
    /// keep counting across pre-roll and runs, so a body cycling through a ring never restarts on
    /// frames still in cache.
    static func interleaved(
        _ settings: MeasureSettings, _ bodies: [(Int) throws -> Void], preRollFrames: Int = 20
    ) throws -> [Figures] {
        var fps = [[Double]](repeating: [], count: bodies.count)
        var cpuFps = [[Double]](repeating: [], count: bodies.count)
        var allocated = [UInt64](repeating: 0, count: bodies.count)
        var timedFrames = [Int](repeating: 0, count: bodies.count)
        var cpu = [Double](repeating: 0, count: bodies.count)
        var wall = [Double](repeating: 0, count: bodies.count)
        var index = [Int](repeating: 0, count: bodies.count)
        let preRollSeconds = max(0.05, settings.runSeconds / 10)
        for repeatIndex in 0..<settings.repeats {
            for contender in order(repeat: repeatIndex, count: bodies.count) {
                let body = bodies[contender]
                // Untimed pre-roll.
                var preRolled = 0
                let preRollStart = now()
                while preRolled < preRollFrames || now() - preRollStart < preRollSeconds {
                    try body(index[contender])
                    index[contender] += 1
                    preRolled += 1
                }
                // Timed run.
                var count = 0
                let before = allocations()
                let c0 = cpuSeconds()
                let t0 = now()
                var t1 = t0
                repeat {
                    try body(index[contender])
                    index[contender] += 1
                    count += 1
                    t1 = now()
                } while t1 - t0 < settings.runSeconds
                let c1 = cpuSeconds()
                allocated[contender] += allocations() - before
                timedFrames[contender] += count
                cpu[contender] += c1 - c0
                wall[contender] += t1 - t0
                fps[contender].append(Double(count) / (t1 - t0))
                if c1 > c0 { cpuFps[contender].append(Double(count) / (c1 - c0)) }
            }
        }
        return bodies.indices.map {
            Figures(
                fps: fps[$0], allocationsPerFrame: Double(allocated[$0]) / Double(max(1, timedFrames[$0])),
                cpuPerWall: wall[$0] > 0 ? cpu[$0] / wall[$0] : nil, fpsPerCPUSecond: cpuFps[$0])
        }
    }

    /// A memcpy moving `bytes` per frame (reads + writes): it copies half of them, between
    /// buffers rotated like the conversions' frames (`ring` pairs: choose it as the conversion's
    /// ring so the floor is measured in the same cache regime), on `threads` threads (each copies
    /// its share of every frame, as a converter's bands do; the extra threads are parked on
    /// semaphores between frames). The buffers and threads live as long as it.
    // unchecked: the frame index is written before the workers' semaphores are signalled and read
    // after their wait, which orders them.
    final class Copier: @unchecked Sendable {
        let count: Int
        let sources: [UnsafeMutableRawPointer]
        let targets: [UnsafeMutableRawPointer]
        let threads: Int
        private let start: [DispatchSemaphore]
        private let finished = DispatchSemaphore(value: 0)
        private var frame = 0
        private var stopping = false

        init(bytes: Int, ring: Int = 4, threads: Int = 1) {
            self.threads = max(1, threads)
            start = (1..<max(1, threads)).map { _ in DispatchSemaphore(value: 0) }
            count = max(64, bytes / 2)
            sources = (0..<max(1, ring)).map { _ in
                UnsafeMutableRawPointer.allocate(byteCount: max(64, bytes / 2), alignment: 64)
            }
            targets = (0..<max(1, ring)).map { _ in
                UnsafeMutableRawPointer.allocate(byteCount: max(64, bytes / 2), alignment: 64)
            }
            for pointer in sources + targets { memset(pointer, 1, count) }
            for worker in 1..<self.threads {
                Thread { [self] in
                    while true {
                        start[worker - 1].wait()
                        if stopping { return }
                        copyShare(worker, of: frame)
                        finished.signal()
                    }
                }.start()
            }
        }

        /// Ends the extra threads; call once, when done with the copier (they hold it until then).
        func stop() {
            stopping = true
            for semaphore in start { semaphore.signal() }
        }

        deinit { for pointer in sources + targets { pointer.deallocate() } }

        /// Copies frame `index`, every thread its share.
        func copy(_ index: Int) {
            guard threads > 1 else { return copyShare(0, of: index) }
            frame = index
            for semaphore in start { semaphore.signal() }
            copyShare(0, of: index)
            for _ in start { finished.wait() }
        }

        private func copyShare(_ share: Int, of index: Int) {
            let begin = count * share / threads / 64 * 64
            let end = share == threads - 1 ? count : count * (share + 1) / threads / 64 * 64
            memcpy(targets[index % targets.count] + begin, sources[index % sources.count] + begin, end - begin)
        }
    }

    /// Frames per second of a memcpy moving `bytes` per frame (reads + writes), hot (a ring of
    /// four copies, as the pipeline's camera ring).
    static func memcpyFloor(bytes: Int, settings: MeasureSettings) -> Double {
        let copier = Copier(bytes: bytes)
        return (try? frames(settings) { copier.copy($0) }.median) ?? 0
    }
}

/// The cache regime of a conversion benchmark: how many frames its ring holds.
///
/// "hot": the ring fits in half the last-level cache (at least one frame), so frames come from
/// cache, as when a conversion follows the step that wrote the frame. "cold": the ring is several
/// times the last-level cache, so every frame comes from memory, as a camera's DMA'd frame does.
struct CacheRegime: Sendable {
    var label: String
    /// Bytes the ring should span (source and destination frames together).
    var targetBytes: Int

    /// The largest cache of CPU 0 (sysfs `cache/index*/size`), or 32 MiB when unreadable.
    static let lastLevelCacheBytes: Int = {
        var largest = 0
        for index in 0..<8 {
            let path = "/sys/devices/system/cpu/cpu0/cache/index\(index)/size"
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            let multiplier: Int
            var digits = Substring(trimmed)
            switch trimmed.last {
            case "K": multiplier = 1 << 10
            case "M": multiplier = 1 << 20
            case "G": multiplier = 1 << 30
            default: multiplier = 1
            }
            if multiplier > 1 { digits = digits.dropLast() }
            if let value = Int(digits) { largest = max(largest, value * multiplier) }
        }
        return largest > 0 ? largest : 32 << 20
    }()

    /// Physical memory of the machine.
    static let physicalMemory = Int(ProcessInfo.processInfo.physicalMemory)

    /// The most a cold ring may span: an eighth of physical memory and at most 2 GiB (the machine
    /// is shared; the memcpy floor's ring doubles it).
    static let ringCeiling = min(2 << 30, physicalMemory / 8)

    static let hot = CacheRegime(label: "hot", targetBytes: lastLevelCacheBytes / 2)

    /// A ring of `multiple` × the last-level cache, bounded by ``ringCeiling``.
    static func cold(multiple: Int) -> CacheRegime {
        CacheRegime(label: "cold", targetBytes: min(ringCeiling, multiple * lastLevelCacheBytes))
    }

    /// Frames in the ring for `bytesPerFrame` (source + destination): at least 1 when hot and 2
    /// when cold.
    func frames(bytesPerFrame: Int) -> Int {
        let count = targetBytes / max(1, bytesPerFrame)
        return label == "hot" ? max(1, min(4, count)) : max(2, count + 1)
    }

    /// "cold 256 MiB" / "hot 12 MiB": the ring actually used.
    func describe(frames: Int, bytesPerFrame: Int) -> String {
        "\(label) \(frames * bytesPerFrame >> 20) MiB"
    }
}

/// Progress lines on stderr.
func progress(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
