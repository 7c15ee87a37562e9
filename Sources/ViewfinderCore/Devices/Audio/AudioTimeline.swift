/// Stamps a stream of audio chunks: presentation times on the host's monotonic clock that are
/// smooth (one sample apart per sample) while the device's timestamps agree with the sample
/// count, follow the device when they drift apart by more than ``tolerance``, and never go
/// backwards; and a running sample index that jumps over frames that were lost.
///
/// Input per chunk: the time the device says the chunk's first frame was captured ("measured",
/// for ALSA the `snd_pcm_htimestamp` time minus the frames still waiting before it).
///
/// Thread safety: a value type used by one capture thread.
package struct AudioTimeline: Sendable {
    /// Frames per second.
    package let sampleRate: Int
    /// How far the measured time may stray from the sample count before the timeline follows it.
    package let toleranceNanoseconds: Int64

    /// The index the next chunk starts at.
    package private(set) var nextIndex: UInt64 = 0
    private var anchor: (nanoseconds: Int64, index: UInt64)?
    private var lastStart: Int64?

    /// A timeline at `sampleRate`, following the device when it strays by more than
    /// `toleranceNanoseconds` (default 5 ms).
    package init(sampleRate: Int, toleranceNanoseconds: Int64 = 5_000_000) {
        self.sampleRate = max(1, sampleRate)
        self.toleranceNanoseconds = toleranceNanoseconds
    }

    /// Where the sample count alone puts frame `index`, or `nil` before the first chunk.
    package func predictedNanoseconds(ofIndex index: UInt64) -> Int64? {
        guard let anchor else { return nil }
        let frames = Int64(truncatingIfNeeded: index &- anchor.index)
        let (high, low) = frames.multipliedFullWidth(by: 1_000_000_000)
        return anchor.nanoseconds + Int64(sampleRate).dividingFullWidth((high, low)).quotient
    }

    /// Places a chunk of `frames` frames whose first frame was measured at `measured` ns
    /// (`nil`: no device time; the sample count decides). `afterOverrun`: the device lost frames
    /// just before it; their count is estimated from how late the measured time is.
    /// Returns the chunk's presentation time, sample index and the frames counted as lost.
    package mutating func place(frames: Int, measured: Int64?, afterOverrun: Bool = false) -> (
        nanoseconds: Int64, sampleIndex: UInt64, framesLost: Int
    ) {
        var lost = 0
        var start: Int64
        if let predicted = predictedNanoseconds(ofIndex: nextIndex) {
            start = predicted
            if let measured {
                if afterOverrun, measured > predicted {
                    let gap = measured - predicted
                    lost = Int((Double(gap) * Double(sampleRate) / 1e9).rounded())
                }
                if afterOverrun || abs(measured - predicted) > toleranceNanoseconds { start = measured }
            }
        } else {
            start = measured ?? 0
        }
        if let lastStart, start <= lastStart { start = lastStart + 1 }
        let index = nextIndex &+ UInt64(lost)
        anchor = (start, index)
        lastStart = start
        nextIndex = index &+ UInt64(max(0, frames))
        return (start, index, lost)
    }

    /// Counts `frames` frames that were read but not delivered (no free buffer): the index and
    /// the predicted time move on as if they had been.
    package mutating func skip(frames: Int, measured: Int64?) {
        _ = place(frames: frames, measured: measured)
    }
}
