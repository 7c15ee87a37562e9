extension CaptureOutput {
    /// What happened to every sample (a video frame, an audio buffer) since the session started
    /// (GStreamer-style honest counters). Every output that composes the delivery engine keeps
    /// them.
    ///
    /// Every captured sample is accounted for:
    /// `delivered + dropped + rateGated + inFlight == captured`, where `inFlight` (samples still
    /// queued for the consumer) is zero once the session has stopped.
    public struct Statistics: Sendable, Hashable, CustomStringConvertible {
        /// Frames the device produced while the output was connected and had a delegate,
        /// including frames the device lost (sequence gaps).
        public var captured = 0
        /// Frames handed to `captureOutput(_:didOutput:from:)`.
        public var delivered = 0
        /// Frames replaced by a newer one while waiting (``DroppedFrameReason/frameWasLate``).
        public var droppedLate = 0
        /// Frames dropped because every buffer was in use (``DroppedFrameReason/outOfBuffers``).
        public var droppedOutOfBuffers = 0
        /// Frames the device lost (``DroppedFrameReason/discontinuity``).
        public var droppedDiscontinuity = 0
        /// Frames a processor or the converter dropped.
        public var droppedByProcessor = 0
        /// For audio: sample frames (one sample of every channel, as
        /// ``SampleBuffer/numSamples`` counts them) the device lost, which the
        /// ``droppedDiscontinuity`` buffers stood for (an overrun, or a source with no free
        /// buffer). Always 0 for video.
        public var audioSamplesLost = 0
        /// Frames not delivered because they came sooner than the output's minimum frame duration
        /// (``CaptureVideoProcessingOutput/minFrameDuration``).
        public var rateGated = 0

        /// All drops together.
        public var dropped: Int { droppedLate + droppedOutOfBuffers + droppedDiscontinuity + droppedByProcessor }

        /// Frames neither delivered, dropped nor gated yet: still on their way to the delegate.
        public var inFlight: Int { captured - delivered - dropped - rateGated }

        public var description: String {
            "captured \(captured), delivered \(delivered), dropped \(dropped) (late \(droppedLate), out of buffers \(droppedOutOfBuffers), discontinuity \(droppedDiscontinuity), processor \(droppedByProcessor)), rate-gated \(rateGated)"
                + (audioSamplesLost > 0 ? ", audio samples lost \(audioSamplesLost)" : "")
        }
    }
}

/// Capture-to-delegate latency figures, in microseconds.
public struct LatencyStatistics: Sendable, Hashable {
    /// Frames measured.
    public var count: Int
    /// Median.
    public var p50: Double
    /// 99th percentile.
    public var p99: Double
    /// Largest.
    public var max: Double
    /// Mean.
    public var mean: Double
}

/// The last 1,024 latencies, kept without allocating per frame.
package struct LatencyWindow {
    private var samples = [Double](repeating: 0, count: 1024)
    private var next = 0
    private var filled = 0

    package mutating func record(_ latency: MediaTime) {
        samples[next] = Double(latency.nanoseconds) / 1000
        next = (next + 1) % samples.count
        filled = Swift.min(filled + 1, samples.count)
    }

    package func summary() -> LatencyStatistics {
        guard filled > 0 else { return LatencyStatistics(count: 0, p50: 0, p99: 0, max: 0, mean: 0) }
        let sorted = samples[0..<filled].sorted()
        func percentile(_ p: Double) -> Double { sorted[Swift.min(filled - 1, Int(Double(filled - 1) * p + 0.5))] }
        return LatencyStatistics(
            count: filled, p50: percentile(0.5), p99: percentile(0.99), max: sorted[filled - 1],
            mean: sorted.reduce(0, +) / Double(filled))
    }
}
