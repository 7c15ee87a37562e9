#ifndef VIEWFINDER_CTHREADS_H
#define VIEWFINDER_CTHREADS_H
// glibc's CPU-affinity calls (sched_getcpu, pthread_setaffinity_np and the CPU_SET macros) are
// GNU extensions that Swift's Glibc module does not import: a few plain functions over them.
#include <pthread.h>

/// The CPU the calling thread runs on now, or -1.
int vf_current_cpu(void);
/// Writes up to `capacity` CPU numbers the calling thread may run on (its affinity mask) into
/// `cpus`, in increasing order; returns how many it may run on (which can exceed `capacity`),
/// or -1 with errno set.
int vf_allowed_cpus(int *cpus, int capacity);
/// Restricts `thread` to the `count` CPUs in `cpus`: 0, or an errno value.
int vf_set_thread_cpus(pthread_t thread, const int *cpus, int count);

#endif
