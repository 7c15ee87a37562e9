import Dispatch
import Foundation
import Synchronization

/// A device's own capture thread: runs a loop until the loop returns or ``stop()`` asks it to end,
/// and lets ``stop()`` join it. Both backends (V4L2 and the virtual camera) capture on one.
///
/// Thread safety: ``stop()`` and ``isCancelled`` may be called from any thread, but ``stop()``
/// never from the capture thread itself (it would wait for itself).
package final class CaptureThread: Sendable {
    private let cancelled = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts a thread named `name` running `loop`, which should return soon after
    /// ``isCancelled`` turns true.
    package init(name: String, loop: @escaping @Sendable (CaptureThread) -> Void) {
        let thread = Thread { [self] in
            loop(self)
            finished.signal()
        }
        thread.name = name
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    /// Whether ``stop()`` has been asked for.
    package var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    /// Asks the loop to end and waits until it has. Later calls return at once.
    package func stop() {
        cancelled.store(true, ordering: .sequentiallyConsistent)
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
    }
}
