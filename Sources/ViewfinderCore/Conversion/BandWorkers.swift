import CThreads
import Dispatch
import Foundation
import Synchronization

/// Threads that convert bands 1..<n of a frame while the calling thread converts band 0.
///
/// A converter's own threads, started once and parked on semaphores between frames, instead of
/// `DispatchQueue.concurrentPerform`: handing a Swift closure to libdispatch copies it into a
/// heap block on every call, and the steady state must not allocate.
///
/// **Placement.** Linux wakes a parked thread onto the waker's CPU when it judges the other CPUs
/// unavailable, and on a virtual machine a vCPU that idled (halted) long enough is judged so:
/// there a band thread woken after a camera's frame gap would queue behind band 0 on the
/// caller's CPU and start only when band 0 is done, so the bands ran one after the other (a
/// scratch C program on the project VM: 148 of 150 wake-ups at 30 fps landed on the waker's CPU,
/// and two 500 µs halves took 1,021 µs; with the woken thread kept off the waker's CPU, 638 µs).
/// So before waking the band threads, ``run(_:_:)`` restricts them to the CPUs this process may
/// use other than the caller's current one — a system call only when the caller is on another
/// CPU than at the last frame. With one usable CPU, or if the system refuses, nothing is pinned.
///
/// Thread safety: ``run(_:_:)`` is called by one thread at a time (the converter's user). The
/// frame's views and the per-band statuses are written before a semaphore signal and read after
/// the matching wait, which orders them.
package final class BandWorkers: @unchecked Sendable {  // unchecked: job state handed over through semaphores.
    package typealias Work = (_ band: Int, _ source: ImageView, _ destination: ImageView) -> Int32

    private let workerCount: Int
    private let start: [DispatchSemaphore]
    private let finished = DispatchSemaphore(value: 0)
    private let statuses: UnsafeMutableBufferPointer<Int32>
    private let stopping = Atomic<Bool>(false)
    private var source: ImageView?
    private var destination: ImageView?
    /// Set once, before the first frame.
    package var work: Work?

    /// The worker threads, as each registered itself before its first wait.
    private let threads: UnsafeMutableBufferPointer<pthread_t>
    /// The CPUs the creating thread may run on, and scratch for those the workers may use.
    private let allowedCPUs: [Int32]
    private let workerCPUs: UnsafeMutableBufferPointer<Int32>
    /// The caller's CPU when the workers were last placed (-1: not yet), and whether placement
    /// is off (one usable CPU, or the system refused it once).
    private var placedFor: Int32 = -1
    private var placementOff = false
    /// The CPU each band started on in the last frame (band 0: the caller's).
    private let bandCPUs: UnsafeMutableBufferPointer<Int32>

    /// Workers for `bands` bands (`bands - 1` threads).
    package init(bands: Int) {
        workerCount = bands - 1
        start = (0..<workerCount).map { _ in DispatchSemaphore(value: 0) }
        statuses = .allocate(capacity: bands)
        statuses.initialize(repeating: 0)
        bandCPUs = .allocate(capacity: bands)
        bandCPUs.initialize(repeating: -1)
        threads = .allocate(capacity: max(1, workerCount))
        threads.initialize(repeating: pthread_t())
        let capacity = Self.usableCPUCount
        allowedCPUs = Array(unsafeUninitializedCapacity: capacity) { buffer, count in
            count = Int(max(0, min(Int32(capacity), vf_allowed_cpus(buffer.baseAddress, Int32(capacity)))))
        }
        workerCPUs = .allocate(capacity: max(1, allowedCPUs.count))
        workerCPUs.initialize(repeating: -1)
        placementOff = allowedCPUs.count < 2
        let registered = DispatchSemaphore(value: 0)
        for index in 0..<workerCount {
            let thread = Thread { [self] in
                threads[index] = pthread_self()
                registered.signal()
                loop(worker: index)
            }
            thread.name = "viewfinder.convert.band\(index + 1)"
            thread.qualityOfService = .userInteractive
            thread.start()
        }
        for _ in 0..<workerCount { registered.wait() }
    }

    deinit {
        statuses.deallocate()
        bandCPUs.deallocate()
        threads.deallocate()
        workerCPUs.deallocate()
    }

    /// Converts every band, band 0 on this thread; returns the first failing status or 0.
    package func run(_ source: ImageView, _ destination: ImageView) -> Int32 {
        guard let work else { return -1 }
        self.source = source
        self.destination = destination
        let cpu = vf_current_cpu()
        placeWorkers(awayFrom: cpu)
        bandCPUs[0] = cpu
        for semaphore in start { semaphore.signal() }
        statuses[0] = work(0, source, destination)
        for _ in 0..<workerCount { finished.wait() }
        return statuses.first { $0 != 0 } ?? 0
    }

    /// How many CPUs the calling thread may run on.
    package static var usableCPUCount: Int { Int(max(0, vf_allowed_cpus(nil, 0))) }

    /// The CPU each band started on in the last frame, band 0 (the caller's) first; -1 where
    /// unknown.
    package var lastBandCPUs: [Int32] { Array(bandCPUs) }

    /// Whether the band threads are kept off the caller's CPU (more than one usable CPU, and the
    /// system let them be placed).
    package var placesWorkers: Bool { !placementOff }

    /// Restricts the workers to every usable CPU but `cpu` (see the type's summary), unless they
    /// already are.
    private func placeWorkers(awayFrom cpu: Int32) {
        guard !placementOff, cpu >= 0, cpu != placedFor else { return }
        var count = 0
        for candidate in allowedCPUs where candidate != cpu {
            workerCPUs[count] = candidate
            count += 1
        }
        guard count > 0 else { return }
        for index in 0..<workerCount {
            guard vf_set_thread_cpus(threads[index], workerCPUs.baseAddress, Int32(count)) == 0 else {
                // Refused (the process's CPUs changed under it): give the workers back every CPU
                // they had and leave placement to the scheduler from now on.
                placementOff = true
                for other in 0..<workerCount {
                    _ = vf_set_thread_cpus(threads[other], allowedCPUs, Int32(allowedCPUs.count))
                }
                return
            }
        }
        placedFor = cpu
    }

    /// Ends the threads (they hold this object until they see the flag).
    package func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        for semaphore in start { semaphore.signal() }
    }

    private func loop(worker index: Int) {
        while true {
            start[index].wait()
            if stopping.load(ordering: .sequentiallyConsistent) { return }
            bandCPUs[index + 1] = vf_current_cpu()
            if let work, let source, let destination {
                statuses[index + 1] = work(index + 1, source, destination)
            } else {
                statuses[index + 1] = -1
            }
            finished.signal()
        }
    }
}
