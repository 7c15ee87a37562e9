#if VIEWFINDER_TSAN_LOCKS
    import ViewfinderCore

    // ThreadSanitizer builds only: this module's Mutex is one TSan can see (see TSanVisibleMutex).
    typealias Mutex = TSanVisibleMutex
#endif
