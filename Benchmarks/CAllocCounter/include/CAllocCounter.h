#ifndef VIEWFINDER_CALLOCCOUNTER_H
#define VIEWFINDER_CALLOCCOUNTER_H
#include <stdint.h>

/// Heap allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) made by
/// any thread of this process since it started. Linked only into viewfinder-bench: the target
/// replaces glibc's allocation entry points with counting wrappers around glibc's own
/// `__libc_*` implementations (glibc supports replacing malloc this way).
uint64_t vf_allocation_count(void);

#endif
