import Dispatch
import Foundation
import Synchronization

/// A source of time for pacing cameras and measuring latency, injectable so timing logic can be
/// tested exactly with a ``ManualClock``.
///
/// Thread safety: implementations must be safe to call from any thread.
public protocol CaptureClock: Sendable {
    /// The current time on this clock.
    func now() -> MediaTime
    /// Blocks the calling thread until the clock reaches `deadline` or `isCancelled()` turns true
    /// (checked at least every few milliseconds). Returns `false` if cancelled.
    func wait(until deadline: MediaTime, isCancelled: () -> Bool) -> Bool
}

/// The system's monotonic clock (`CLOCK_MONOTONIC`, the clock V4L2 timestamps use).
public struct HostClock: CaptureClock {
    /// The host's monotonic clock.
    public init() {}

    /// `CLOCK_MONOTONIC` now, in nanoseconds.
    public func now() -> MediaTime {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MediaTime(value: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec), timescale: 1_000_000_000)
    }

    /// Sleeps in slices of at most 5 ms until `deadline`, checking `isCancelled` between them.
    public func wait(until deadline: MediaTime, isCancelled: () -> Bool) -> Bool {
        while true {
            if isCancelled() { return false }
            let remaining = (deadline - now()).nanoseconds
            if remaining <= 0 { return true }
            // Sleep in slices so a stop request is honoured promptly.
            var request = timespec(tv_sec: 0, tv_nsec: Int(min(remaining, 5_000_000)))
            nanosleep(&request, nil)
        }
    }
}

/// A clock that moves only when told to: tests advance it and the cameras paced by it produce
/// exactly the frames whose time has come.
///
/// Thread safety: all methods may be called from any thread.
public final class ManualClock: CaptureClock {
    private struct State {
        var now: MediaTime
        /// Deadlines of the threads blocked in `wait(until:isCancelled:)`.
        var sleepers: [MediaTime] = []
        var futureSleepers: Int { sleepers.count { $0 > now } }
    }
    private let state: Mutex<State>
    private let condition = NSCondition()

    /// A clock that reads `start` until advanced.
    public init(start: MediaTime = .zero) {
        state = Mutex(State(now: start))
    }

    /// The time the clock was last advanced to.
    public func now() -> MediaTime { state.withLock { $0.now } }

    /// Moves the clock forward by `interval` and wakes everything waiting on it.
    public func advance(by interval: MediaTime) {
        condition.lock()
        state.withLock { $0.now = $0.now + interval }
        condition.broadcast()
        condition.unlock()
    }

    /// Sets the clock to `time` (ignored if earlier than now or not numeric) and wakes everything
    /// waiting on it.
    public func advance(to time: MediaTime) {
        condition.lock()
        // Invalid and indefinite sort after every time: only a numeric time moves the clock.
        state.withLock { if time.isNumeric, time > $0.now { $0.now = time } }
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `count` threads are blocked in ``wait(until:isCancelled:)`` on deadlines still
    /// in the future: for a camera paced by this clock, the moment it has produced every frame
    /// whose time has come. Returns `false` on timeout.
    public func waitUntilSleeping(count: Int = 1, timeout seconds: Double = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while state.withLock({ $0.futureSleepers }) < count {
            if !condition.wait(until: deadline) { return state.withLock { $0.futureSleepers } >= count }
        }
        return true
    }

    /// Waits until no thread is blocked in ``wait(until:isCancelled:)`` on a deadline still in the
    /// future: for a camera paced by this clock, the moment it has stopped waiting for its next
    /// frame (it was cancelled, or its time came). Returns `false` on timeout.
    public func waitUntilAwake(timeout seconds: Double = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while state.withLock({ $0.futureSleepers }) > 0 {
            if !condition.wait(until: deadline) { return state.withLock { $0.futureSleepers } == 0 }
        }
        return true
    }

    /// Blocks until the clock is advanced to `deadline` or `isCancelled` turns true.
    public func wait(until deadline: MediaTime, isCancelled: () -> Bool) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        var sleeping = false
        defer {
            if sleeping {
                state.withLock { state in
                    if let index = state.sleepers.firstIndex(of: deadline) { state.sleepers.remove(at: index) }
                }
                // Tell ``waitUntilAwake(timeout:)`` a sleeper left.
                condition.broadcast()
            }
        }
        while true {
            if isCancelled() { return false }
            // An invalid or indefinite deadline has passed already, as for HostClock (whose
            // remaining time is then 0), though both sort after every numeric time.
            if !deadline.isValid || deadline.isIndefinite || now() >= deadline { return true }
            if !sleeping {
                sleeping = true
                state.withLock { $0.sleepers.append(deadline) }
                condition.broadcast()
            }
            // Wake periodically to notice cancellation; advancing wakes at once.
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.005))
        }
    }
}
