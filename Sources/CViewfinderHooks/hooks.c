#include "CViewfinderHooks.h"

#include <pthread.h>
#include <stddef.h>

void (*vf_load_hook)(void) = NULL;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void run(void) {
    if (vf_load_hook != NULL) vf_load_hook();
}

void vf_run_load_hook(void) { pthread_once(&once, run); }
