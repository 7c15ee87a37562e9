#define _GNU_SOURCE
#include "CThreads.h"

#include <errno.h>
#include <sched.h>

int vf_current_cpu(void) { return sched_getcpu(); }

int vf_allowed_cpus(int *cpus, int capacity) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    int count = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &set)) continue;
        if (count < capacity) cpus[count] = cpu;
        count++;
    }
    return count;
}

int vf_set_thread_cpus(pthread_t thread, const int *cpus, int count) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < count; i++) {
        if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE) return EINVAL;
        CPU_SET(cpus[i], &set);
    }
    return pthread_setaffinity_np(thread, sizeof set, &set);
}
