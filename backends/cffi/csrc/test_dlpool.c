/* Exercises csrc/dlpool.c from several threads without Python, for
 * ThreadSanitizer (nox -s cffi_tsan). Exit status 0 when every check holds. */
#include "dlpool.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(cond)                                                   \
    do {                                                              \
        if (!(cond)) {                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                  \
        }                                                             \
    } while (0)

typedef struct {
    dl_ring *ring;
    long position;
} job;

static atomic_int started_threads, ended_threads, ran, idled;

static void *on_start(void *ctx, int worker_id, int *ok) {
    (void)ctx;
    (void)worker_id;
    atomic_fetch_add(&started_threads, 1);
    *ok = 1;
    return NULL;
}

static void on_run(void *ctx, void *raw) {
    (void)ctx;
    job *j = raw;
    struct timespec pause = {0, (long)(rand_r(&(unsigned){(unsigned)j->position}) % 200) * 1000L};
    nanosleep(&pause, NULL);
    dl_ring_finish(j->ring, j->position);
    atomic_fetch_add(&ran, 1);
}

static void on_idle(void *ctx) {
    (void)ctx;
    atomic_fetch_add(&idled, 1);
}

static void on_end(void *ctx, void *token) {
    (void)ctx;
    (void)token;
    atomic_fetch_add(&ended_threads, 1);
}

static void run_epoch(dl_pool *pool, int window, int in_order, long batches) {
    dl_ring *ring = dl_ring_new(window, in_order);
    CHECK(ring != NULL);
    job *jobs = calloc((size_t)batches, sizeof *jobs);
    char *seen = calloc((size_t)batches, 1);
    CHECK(jobs != NULL && seen != NULL);
    long submitted = 0, taken = 0;
    while (taken < batches) {
        while (submitted < batches && dl_ring_has_room(ring)) {
            jobs[submitted].ring = ring;
            jobs[submitted].position = submitted;
            dl_ring_start(ring);
            CHECK(dl_pool_submit(pool, &jobs[submitted]) == DL_OK);
            submitted += 1;
        }
        CHECK(dl_ring_occupancy(ring) <= window);
        long position;
        int got = dl_ring_wait(ring, 1000, &position);
        CHECK(got == 1);
        if (in_order) CHECK(position == taken);
        CHECK(!seen[position]);
        seen[position] = 1;
        taken += 1;
    }
    CHECK(dl_ring_idle(ring));
    dl_ring_close(ring);
    long position;
    CHECK(dl_ring_wait(ring, 10, &position) == -1);
    dl_ring_release(ring);
    free(jobs);
    free(seen);
}

int main(void) {
    dl_hooks hooks = {on_start, on_run, on_idle, on_end, NULL, 5};
    int status;
    dl_pool *pool = dl_pool_new(4, 0, hooks, &status);
    CHECK(pool != NULL && status == DL_OK);
    CHECK(atomic_load(&started_threads) == 4);
    run_epoch(pool, 8, 1, 2000);
    run_epoch(pool, 3, 0, 2000);
    run_epoch(pool, 1, 1, 200);
    /* Idle long enough for the idle hook (every 5 ms) to run on each thread. */
    struct timespec rest = {0, 50 * 1000000L};
    nanosleep(&rest, NULL);
    CHECK(atomic_load(&idled) >= 4);

    /* Close with tasks still queued: each one either ran or comes back as dropped.
     * Count runs from before the first submit; threads take tasks at once. */
    dl_ring *ring = dl_ring_new(64, 1);
    CHECK(ring != NULL);
    job jobs[64];
    int before = atomic_load(&ran);
    for (int i = 0; i < 64; i++) {
        jobs[i].ring = ring;
        jobs[i].position = i;
        dl_ring_start(ring);
        CHECK(dl_pool_submit(pool, &jobs[i]) == DL_OK);
    }
    CHECK(dl_pool_wait(pool, 1) == 4); /* waiting does not close: the threads stay */
    CHECK(!dl_pool_closed(pool));
    CHECK(dl_pool_close(pool, 5000) == 0);
    CHECK(dl_pool_closed(pool));
    int after = atomic_load(&ran);
    void *dropped[64];
    int count = dl_pool_take_dropped(pool, dropped, 64);
    CHECK(after - before + count == 64);
    CHECK(dl_pool_submit(pool, &jobs[0]) == DL_CLOSED);
    CHECK(dl_pool_close(pool, 0) == 0); /* idempotent */
    CHECK(dl_pool_wait(pool, 0) == 0);
    CHECK(atomic_load(&ended_threads) == 4);
    dl_pool_release(pool);
    dl_ring_release(ring);
    printf("dlpool: ok (%d tasks run, %d idle wake-ups)\n", atomic_load(&ran), atomic_load(&idled));
    return 0;
}
