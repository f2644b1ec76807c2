/* Internal to the engine (dlpool.c, dlring.c): waits on CLOCK_MONOTONIC, which
 * a change of the wall clock cannot stretch or cut short. */
#ifndef DLWAIT_H
#define DLWAIT_H

#include <pthread.h>
#include <time.h>

static inline void deadline_in(struct timespec *ts, int ms) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec += 1;
        ts->tv_nsec -= 1000000000L;
    }
}

static inline int cond_init_monotonic(pthread_cond_t *cond) {
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0) return -1;
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

#endif
