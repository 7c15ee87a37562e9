import Dispatch
import Foundation
import Synchronization

/// Threads that convert bands 1..<n of a frame while the calling thread converts band 0.
///
/// A converter's own threads, started once and parked on semaphores between frames, instead of
/// `DispatchQueue.concurrentPerform`: handing a Swift closure to libdispatch copies it into a
/// heap block on every call, and the steady state must not allocate.
///
/// Thread safety: ``run(_:_:)`` is called by one thread at a time (the converter's user). The
/// frame's views and the per-band statuses are written before a semaphore signal and read after
/// the matching wait, which orders them.
final class BandWorkers: @unchecked Sendable {  // unchecked: job state handed over through semaphores.
    typealias Work = (_ band: Int, _ source: ImageView, _ destination: ImageView) -> Int32

    private let workerCount: Int
    private let start: [DispatchSemaphore]
    private let finished = DispatchSemaphore(value: 0)
    private let statuses: UnsafeMutableBufferPointer<Int32>
    private let stopping = Atomic<Bool>(false)
    private var source: ImageView?
    private var destination: ImageView?
    /// Set once, before the first frame.
    var work: Work?

    /// Workers for `bands` bands (`bands - 1` threads).
    init(bands: Int) {
        workerCount = bands - 1
        start = (0..<workerCount).map { _ in DispatchSemaphore(value: 0) }
        statuses = .allocate(capacity: bands)
        statuses.initialize(repeating: 0)
        for index in 0..<workerCount {
            let thread = Thread { [self] in loop(worker: index) }
            thread.name = "viewfinder.convert.band\(index + 1)"
            thread.qualityOfService = .userInteractive
            thread.start()
        }
    }

    deinit { statuses.deallocate() }

    /// Converts every band, band 0 on this thread; returns the first failing status or 0.
    func run(_ source: ImageView, _ destination: ImageView) -> Int32 {
        guard let work else { return -1 }
        self.source = source
        self.destination = destination
        for semaphore in start { semaphore.signal() }
        statuses[0] = work(0, source, destination)
        for _ in 0..<workerCount { finished.wait() }
        return statuses.first { $0 != 0 } ?? 0
    }

    /// Ends the threads (they hold this object until they see the flag).
    func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        for semaphore in start { semaphore.signal() }
    }

    private func loop(worker index: Int) {
        while true {
            start[index].wait()
            if stopping.load(ordering: .sequentiallyConsistent) { return }
            if let work, let source, let destination {
                statuses[index + 1] = work(index + 1, source, destination)
            } else {
                statuses[index + 1] = -1
            }
            finished.signal()
        }
    }
}
