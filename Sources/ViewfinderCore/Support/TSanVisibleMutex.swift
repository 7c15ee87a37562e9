#if VIEWFINDER_TSAN_LOCKS
    import Glibc

    /// Built only for ThreadSanitizer runs (`Scripts/sanitize.sh tsan` passes
    /// `-DVIEWFINDER_TSAN_LOCKS`): a stand-in for `Synchronization.Mutex` on a pthread mutex, which
    /// TSan sees. `Synchronization.Mutex` hands a contended lock over with raw futex calls, so TSan
    /// misses the happens-before and reports the critical sections of every contended Mutex as races.
    /// Each module of the package that uses `Mutex` declares `typealias Mutex = TSanVisibleMutex`
    /// under the same flag, which shadows the imported one; other builds never compile this.
    ///
    /// Thread safety: the value is only touched with the pthread mutex held.
    // unchecked: the value is only reached inside withLock, under the pthread mutex.
    package final class TSanVisibleMutex<Value>: @unchecked Sendable {
        private var value: Value
        private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

        /// A mutex guarding `value`.
        package init(_ value: consuming Value) {
            self.value = value
            pthread_mutex_init(lock, nil)
        }

        deinit {
            pthread_mutex_destroy(lock)
            lock.deallocate()
        }

        /// Runs `body` with the value, the mutex held.
        package func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
            pthread_mutex_lock(lock)
            defer { pthread_mutex_unlock(lock) }
            return try body(&value)
        }
    }

    typealias Mutex = TSanVisibleMutex
#endif
