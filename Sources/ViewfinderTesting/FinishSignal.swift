import Foundation
import ViewfinderCore

/// Whether a virtual device's finite stream (one with a frame limit) has produced its last
/// sample, and a wait for that: reset when a stream starts, set by the capture thread as it ends.
/// The virtual camera and microphone share it.
///
/// Thread safety: all members may be used from any thread.
// unchecked: `finished` is only touched with `condition` locked.
package final class FinishSignal: @unchecked Sendable {
    private let condition = NSCondition()
    private var finished = false

    /// A new stream starts: not finished.
    package func reset() { condition.withLock { finished = false } }

    /// The stream produced its last sample (or stopped): wakes every waiter.
    package func markFinished() {
        condition.withLock { finished = true }
        condition.broadcast()
    }

    /// Waits until the stream has finished; `false` when `timeout` seconds pass first.
    package func wait(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return condition.withLock {
            while !finished {
                if !condition.wait(until: deadline) { return finished }
            }
            return true
        }
    }
}
