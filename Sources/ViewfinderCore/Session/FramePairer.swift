import Foundation

/// Pairs frames from several cameras by time: hands out tuples of the frames nearest in time (one
/// per stream), with each tuple's skew, and a drift figure per stream; a frame that finds no
/// partner within half a frame interval is counted, not silently dropped.
///
/// Every camera's samples are stamped on the same monotonic host clock (`presentationTimeStamp`),
/// so pairing is a comparison of those stamps. Feed each stream's frames in order, from any
/// number of delegate queues, with ``add(_:at:stream:)``; each call returns the tuples it
/// completed:
///
/// ```swift
/// let pairer = FramePairer<SampleBuffer>(streamCount: 2, frameDuration: MediaTime(value: 1, timescale: 30))
/// // in camera k's delegate:
/// for tuple in pairer.add(sampleBuffer, at: sampleBuffer.presentationTimeStamp, stream: k) {
///     use(tuple.frames, skew: tuple.skew)
/// }
/// ```
///
/// Tuples: while every stream has a frame waiting, the earliest waiting frames form a tuple when
/// they lie within half a frame interval of each other; otherwise the earliest of them can have
/// no partner (every later frame of the others is later still) and is counted in
/// ``unpartnered``. Drift is the least-squares slope of each stream's offset from stream 0 over
/// the tuples (seconds per second; 100 ppm = 0.0001).
///
/// UVC hardware clocks: the stamps are the host's arrival times. A UVC camera's own clock
/// (the PTS/SCR of its metadata node, `V4L2_META_FMT_UVC`) is not read: Viewfinder skips the
/// metadata node, so USB scheduling jitter (typically under 1 ms per frame on USB 2) stays in the
/// skew figures.
///
/// Thread safety: all members may be used from any thread (one lock).
public final class FramePairer<Frame>: @unchecked Sendable {  // unchecked: state under `lock`.
    /// One frame from each stream, nearest in time.
    public struct Tuple {
        /// The frames, in stream order.
        public var frames: [Frame]
        /// Their timestamps, in stream order.
        public var times: [MediaTime]
        /// The latest timestamp minus the earliest.
        public var skew: MediaTime
    }

    /// How many streams are paired.
    public let streamCount: Int
    /// The frame interval; frames further apart than half of it do not pair.
    public let frameDuration: MediaTime

    private let lock = NSLock()
    private var waiting: [[(frame: Frame, time: MediaTime)]]
    private var unpartneredCounts: [Int]
    private var tupleCount = 0
    private var largestSkew = MediaTime.zero
    /// Per stream k ≥ 1: sums for the least-squares fit of (t_k − t_0) against t_0.
    private var fits: [LinearFit]

    /// A pairer of `streamCount` streams (at least 2) of frames `frameDuration` apart.
    public init(streamCount: Int, frameDuration: MediaTime) {
        self.streamCount = max(2, streamCount)
        self.frameDuration = frameDuration
        waiting = Array(repeating: [], count: max(2, streamCount))
        unpartneredCounts = Array(repeating: 0, count: max(2, streamCount))
        fits = Array(repeating: LinearFit(), count: max(2, streamCount))
    }

    /// Adds stream `stream`'s next frame, stamped `time`; returns the tuples it completed (usually
    /// none or one). Frames of one stream must come in time order; an out-of-range stream or a
    /// frame stamped before its stream's last is counted as unpartnered.
    @discardableResult
    public func add(_ frame: Frame, at time: MediaTime, stream: Int) -> [Tuple] {
        locked {
            guard waiting.indices.contains(stream), time.isNumeric else {
                if unpartneredCounts.indices.contains(stream) { unpartneredCounts[stream] += 1 }
                return []
            }
            if let last = waiting[stream].last, time < last.time {
                unpartneredCounts[stream] += 1
                return []
            }
            waiting[stream].append((frame, time))
            return drain()
        }
    }

    /// Ends pairing: every frame still waiting is counted as unpartnered.
    public func finish() {
        locked {
            for index in waiting.indices {
                unpartneredCounts[index] += waiting[index].count
                waiting[index].removeAll()
            }
        }
    }

    /// Frames per stream that found no partner within half a frame interval.
    public var unpartnered: [Int] { locked { unpartneredCounts } }

    /// Tuples handed out so far.
    public var tuples: Int { locked { tupleCount } }

    /// The largest skew of any tuple so far.
    public var maximumSkew: MediaTime { locked { largestSkew } }

    /// Stream `stream`'s mean offset from stream 0 over the tuples (positive: later), in seconds.
    public func offset(ofStream stream: Int) -> Double? {
        locked { fits.indices.contains(stream) ? fits[stream].meanY : nil }
    }

    /// Stream `stream`'s drift against stream 0, in seconds per second (`nil` before two tuples
    /// spread over time).
    public func drift(ofStream stream: Int) -> Double? {
        locked { fits.indices.contains(stream) ? fits[stream].slope : nil }
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    private func drain() -> [Tuple] {
        var made: [Tuple] = []
        let half = frameDuration.seconds / 2
        while waiting.allSatisfy({ !$0.isEmpty }) {
            let heads = waiting.map { $0[0].time }
            let earliest = heads.indices.min { heads[$0] < heads[$1] }!
            let latest = heads.max()!
            let skew = latest - heads[earliest]
            if skew.seconds > half {
                waiting[earliest].removeFirst()
                unpartneredCounts[earliest] += 1
                continue
            }
            made.append(Tuple(frames: waiting.map { $0[0].frame }, times: heads, skew: skew))
            for index in waiting.indices { waiting[index].removeFirst() }
            tupleCount += 1
            largestSkew = max(largestSkew, skew)
            let base = heads[0].seconds
            for index in 1..<heads.count { fits[index].add(x: base, y: heads[index].seconds - base) }
        }
        return made
    }
}

/// A running least-squares line fit (x centred on its first value, for precision).
package struct LinearFit {
    private var origin: Double?
    private var n = 0.0
    private var sx = 0.0
    private var sy = 0.0
    private var sxx = 0.0
    private var sxy = 0.0

    package mutating func add(x: Double, y: Double) {
        let origin = self.origin ?? x
        self.origin = origin
        let dx = x - origin
        n += 1
        sx += dx
        sy += y
        sxx += dx * dx
        sxy += dx * y
    }

    package var meanY: Double? { n > 0 ? sy / n : nil }

    package var slope: Double? {
        let denominator = n * sxx - sx * sx
        guard n >= 2, denominator > 1e-12 else { return nil }
        return (n * sxy - sx * sy) / denominator
    }
}
