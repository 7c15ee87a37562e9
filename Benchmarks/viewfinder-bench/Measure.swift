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

    /// Heap allocations so far in this process (see CAllocCounter).
    static func allocations() -> UInt64 { vf_allocation_count() }

    struct Figures {
        var fps: [Double]
        var allocationsPerFrame: Double
        var min: Double { fps.min() ?? 0 }
        var median: Double {
            let sorted = fps.sorted()
            guard !sorted.isEmpty else { return 0 }
            return sorted.count % 2 == 1
                ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
    }

    /// Calls `body(frameIndex)` repeatedly: a warm-up, then `settings.repeats` runs of about
    /// `settings.runSeconds` each. Reports frames per second per run and heap allocations per
    /// call over all timed runs.
    static func frames(_ settings: MeasureSettings, _ body: (Int) throws -> Void) rethrows -> Figures {
        // Warm-up, which also sizes the runs.
        var index = 0
        let start = now()
        repeat {
            try body(index)
            index += 1
        } while now() - start < min(0.05, settings.runSeconds / 2) || index < 2
        let perFrame = (now() - start) / Double(index)
        let framesPerRun = max(1, Int(settings.runSeconds / max(perFrame, 1e-7)))
        var fps: [Double] = []
        var allocated: UInt64 = 0
        for _ in 0..<settings.repeats {
            let before = allocations()
            let t0 = now()
            for _ in 0..<framesPerRun {
                try body(index)
                index += 1
            }
            let t1 = now()
            allocated += allocations() - before
            fps.append(Double(framesPerRun) / (t1 - t0))
        }
        return Figures(
            fps: fps, allocationsPerFrame: Double(allocated) / Double(framesPerRun * settings.repeats))
    }

    /// Measures several contenders fairly: each is warmed up and its run length sized alone,
    /// then the timed runs take turns (contender 1, 2, …, 1, 2, …), so load from other
    /// processes and thermal drift fall on all of them alike.
    static func interleaved(_ settings: MeasureSettings, _ bodies: [(Int) throws -> Void]) throws -> [Figures] {
        var framesPerRun: [Int] = []
        for body in bodies {
            var index = 0
            let start = now()
            repeat {
                try body(index)
                index += 1
            } while now() - start < min(0.05, settings.runSeconds / 2) || index < 2
            framesPerRun.append(max(1, Int(settings.runSeconds / max((now() - start) / Double(index), 1e-7))))
        }
        var fps = [[Double]](repeating: [], count: bodies.count)
        var allocated = [UInt64](repeating: 0, count: bodies.count)
        for _ in 0..<settings.repeats {
            for (contender, body) in bodies.enumerated() {
                let before = allocations()
                let t0 = now()
                for index in 0..<framesPerRun[contender] { try body(index) }
                let t1 = now()
                allocated[contender] += allocations() - before
                fps[contender].append(Double(framesPerRun[contender]) / (t1 - t0))
            }
        }
        return bodies.indices.map {
            Figures(
                fps: fps[$0],
                allocationsPerFrame: Double(allocated[$0]) / Double(framesPerRun[$0] * settings.repeats))
        }
    }

    /// A memcpy moving `bytes` per frame (reads + writes): it copies half of them, between
    /// buffers rotated like the conversions' frames. The buffers live as long as the result.
    final class Copier {
        let count: Int
        let sources: [UnsafeMutableRawPointer]
        let targets: [UnsafeMutableRawPointer]

        init(bytes: Int, ring: Int = 4) {
            count = max(64, bytes / 2)
            sources = (0..<ring).map { _ in
                UnsafeMutableRawPointer.allocate(byteCount: max(64, bytes / 2), alignment: 64)
            }
            targets = (0..<ring).map { _ in
                UnsafeMutableRawPointer.allocate(byteCount: max(64, bytes / 2), alignment: 64)
            }
            for pointer in sources + targets { memset(pointer, 1, count) }
        }

        deinit { for pointer in sources + targets { pointer.deallocate() } }

        func copy(_ index: Int) { memcpy(targets[index % targets.count], sources[index % sources.count], count) }
    }

    /// Frames per second of a memcpy moving `bytes` per frame (reads + writes): it copies half
    /// of them, between buffers rotated like the conversions' frames.
    static func memcpyFloor(bytes: Int, settings: MeasureSettings) -> Double {
        let count = max(64, bytes / 2)
        let ring = 4
        let sources = (0..<ring).map { _ in UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 64) }
        let targets = (0..<ring).map { _ in UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 64) }
        defer {
            for pointer in sources + targets { pointer.deallocate() }
        }
        for pointer in sources + targets { memset(pointer, 1, count) }
        return frames(settings) { memcpy(targets[$0 % ring], sources[$0 % ring], count) }.median
    }
}

/// Progress lines on stderr.
func progress(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
