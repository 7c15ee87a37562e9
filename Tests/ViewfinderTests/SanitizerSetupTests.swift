#if VIEWFINDER_TSAN_LOCKS
    import Dispatch
    import Foundation
    import Synchronization
    import Testing

    @testable import Viewfinder

    /// A test of the ThreadSanitizer setup, not of Viewfinder: `Scripts/sanitize.sh tsan` runs it
    /// on its own (`VIEWFINDER_TSAN_PROBE=1`) and fails unless TSan reports the race it makes, and
    /// skips it in the suite run. Compiled only into TSan builds.
    @Suite("Sanitizer setup")
    struct SanitizerSetupTests {
        /// A cell written under a real `Synchronization.Mutex` (the kind the suppressions name, as
        /// code outside the package uses) on one thread and by unlocked package code on another.
        private final class Shared: @unchecked Sendable {  // unchecked: racy on purpose.
            let mutex = Synchronization.Mutex(0)
            let cell = UnsafeMutablePointer<Int>.allocate(capacity: 1)
            init() { cell.initialize(to: 0) }
            deinit { cell.deallocate() }
        }

        @Test(
            "an unlocked write in package code racing a test's Mutex-guarded write is reported by TSan",
            .enabled(if: ProcessInfo.processInfo.environment["VIEWFINDER_TSAN_PROBE"] == "1"))
        func unlockedPackageRaceIsReported() {
            let shared = Shared()
            let start = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            DispatchQueue.global().async(group: done) {
                start.wait()
                for _ in 0..<1000 {
                    shared.mutex.withLock { count in
                        shared.cell.pointee += 1
                        count += 1
                    }
                }
            }
            DispatchQueue.global().async(group: done) {
                start.wait()
                for _ in 0..<1000 { SanitizerProbe.unlockedIncrement(shared.cell) }
            }
            start.signal()
            start.signal()
            done.wait()
            #expect(shared.mutex.withLock { $0 } == 1000)
        }
    }
#endif
