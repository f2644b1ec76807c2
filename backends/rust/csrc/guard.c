/* Calls into CPython that may end the calling thread.
 *
 * CPython <= 3.13 ends a thread that takes the interpreter back during
 * finalization with pthread_exit(). That forced unwind would reach Rust frames
 * with catch handlers (rayon's, std's), which abort the process. Each call here
 * runs in a C frame whose cleanup, run only by such an unwind, parks the thread
 * for good instead: the process is exiting, so nothing waits for it (CPython
 * 3.14 hangs such threads itself).
 */
#include <unistd.h>

static void dl_park_if_unwinding(volatile int *armed) {
#ifdef DL_NO_PARK
    /* Only to show that tests/test_exit.py catches the abort without the guard. */
    (void)armed;
    return;
#endif
    if (*armed) {
        for (;;) {
            pause();
        }
    }
}

#define DL_GUARD volatile int dl_armed __attribute__((cleanup(dl_park_if_unwinding))) = 1
#define DL_DISARM dl_armed = 0

void *dl_guarded_call1(void *(*fn)(void *), void *a) {
    DL_GUARD;
    void *result = fn(a);
    DL_DISARM;
    return result;
}

void *dl_guarded_call3(void *(*fn)(void *, void *, void *), void *a, void *b, void *c) {
    DL_GUARD;
    void *result = fn(a, b, c);
    DL_DISARM;
    return result;
}

int dl_guarded_ensure(int (*fn)(void)) {
    DL_GUARD;
    int state = fn();
    DL_DISARM;
    return state;
}

void dl_guarded_void1(void (*fn)(void *), void *a) {
    DL_GUARD;
    fn(a);
    DL_DISARM;
}
