#if VIEWFINDER_TSAN_LOCKS
    import Dispatch
    import Foundation
    import Synchronization
    import Testing

    @testable import Viewfinder
    @testable import ViewfinderALSA
    @testable import ViewfinderCore
    @testable import ViewfinderMovie
    @testable import ViewfinderPipeWire
    @testable import ViewfinderPreviewWindow
    @testable import ViewfinderTesting
    @testable import ViewfinderV4L2
    @testable import ViewfinderWebPreview

    /// Tests of the ThreadSanitizer setup, not of Viewfinder: `Scripts/sanitize.sh tsan` runs them
    /// on their own (`VIEWFINDER_TSAN_PROBE=1`) before the suite, and fails unless TSan's report of
    /// the one-sided race is kept and that of the two-sided one is excused. Compiled only into TSan
    /// builds; skipped in the suite run.
    @Suite("Sanitizer setup", .enabled(if: ProcessInfo.processInfo.environment["VIEWFINDER_TSAN_PROBE"] == "1"))
    struct SanitizerSetupTests {
        /// A cell written under a real `Synchronization.Mutex` (the kind the suppressions are for)
        /// and by other code, from two threads of their own (a queue could run both on one thread,
        /// one after the other, which is no race), neither synchronising with the other.
        private final class Shared: @unchecked Sendable {  // unchecked: racy on purpose.
            let mutex = Synchronization.Mutex(0)
            let cell = UnsafeMutablePointer<Int>.allocate(capacity: 1)
            init() { cell.initialize(to: 0) }
            deinit { cell.deallocate() }

            /// Writes the cell inside the Mutex, through a frame named like the Mutex's own. This
            /// build inlines `withLock` and prints no frame for it, but a report from code outside
            /// the package shows it, and Scripts/tsan-suppressions.txt lists it: the frame puts
            /// this side of the race where the suppressions look.
            func writeLocked() {
                mutex.withLock { count in
                    sanitizerProbeMutexFrame(cell)
                    count += 1
                }
            }
        }

        /// Runs `first` and `second` 1000 times each on two threads at once.
        private static func race(_ first: @escaping @Sendable () -> Void, _ second: @escaping @Sendable () -> Void) {
            let finished = DispatchSemaphore(value: 0)
            let threads = [first, second].map { body in
                Thread {
                    for _ in 0..<1000 { body() }
                    finished.signal()
                }
            }
            for thread in threads { thread.start() }
            finished.wait()
            finished.wait()
        }

        @Test("an unlocked write in package code racing a test's Mutex-guarded write is reported by TSan")
        func unlockedPackageRaceIsReported() {
            let shared = Shared()
            Self.race({ shared.writeLocked() }, { SanitizerProbe.unlockedIncrement(shared.cell) })
            #expect(shared.mutex.withLock { $0 } == 1000)
        }

        @Test("a race whose two sides both run through the Mutex's frame (the futex blindness) is excused")
        func bothSidesInTheMutexAreExcused() {
            let shared = Shared()
            // The second side skips the lock itself, so TSan reports the race whatever it sees of
            // the Mutex; both stacks then carry the listed frame, as the futex blindness's do.
            Self.race({ shared.writeLocked() }, { sanitizerProbeMutexFrame(shared.cell) })
            #expect(shared.mutex.withLock { $0 } == 1000)
        }
    }

    /// Adds one to `cell` (the Mutex holder's write). Its symbol carries the mangled prefix of
    /// `Synchronization.Mutex.withLock`, as a frame of the real Mutex would.
    @_silgen_name("$s15Synchronization5MutexV8withLock_viewfinderSanitizerProbe")
    @inline(never)
    func sanitizerProbeMutexFrame(_ cell: UnsafeMutablePointer<Int>) {
        cell.pointee += 1
    }
#endif
