#if VIEWFINDER_TSAN_LOCKS
    /// Built only for ThreadSanitizer runs (`-DVIEWFINDER_TSAN_LOCKS`): package code that touches
    /// memory without any lock, on purpose. `Scripts/sanitize.sh tsan` races it against a test's
    /// `Synchronization.Mutex` (`SanitizerSetupTests`) and requires TSan to report that race, which
    /// proves the run's Mutex suppressions hide no race whose other side is the package's own
    /// unlocked code. Other builds never compile this.
    package enum SanitizerProbe {
        /// Adds one to `cell` with no synchronisation at all (a deliberate data race when another
        /// thread touches `cell` at the same time).
        @inline(never)
        package static func unlockedIncrement(_ cell: UnsafeMutablePointer<Int>) {
            cell.pointee += 1
        }
    }
#endif
