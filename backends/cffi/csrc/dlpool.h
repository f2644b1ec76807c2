/* A pthread pool and the batch rings of map-style epochs, without Python.
 *
 * The embedder supplies hooks: thread_start runs once on each new thread
 * (the Python build attaches the thread to the interpreter there, once),
 * run executes one task, thread_end runs when the thread leaves. After
 * dl_set_exiting() no hook is called again. */
#ifndef DLPOOL_H
#define DLPOOL_H

#include <stddef.h>

typedef struct dl_hooks {
    /* Returns a token for thread_end; sets *ok to 0 if the thread must not run tasks. */
    void *(*thread_start)(void *ctx, int worker_id, int *ok);
    void (*run)(void *ctx, void *task);
    /* Called every idle_ms while the thread has no task (may be NULL). */
    void (*idle)(void *ctx);
    void (*thread_end)(void *ctx, void *token);
    void *ctx; /* only used by thread_start and idle */
    int idle_ms;
} dl_hooks;

typedef struct dl_pool dl_pool;
typedef struct dl_ring dl_ring;

/* Exit codes of the functions that can fail. */
enum { DL_OK = 0, DL_NOMEM = 1, DL_NOTHREAD = 2, DL_CLOSED = 3, DL_INIT_FAILED = 4 };

void dl_set_exiting(void);
int dl_exiting(void);

/* Starts num_threads threads (each with stack_size bytes of stack, 0: the
 * platform default) and waits until each ran thread_start. */
dl_pool *dl_pool_new(int num_threads, size_t stack_size, dl_hooks hooks, int *status);
int dl_pool_submit(dl_pool *pool, void *task);
/* Starts no queued task any more, ends the threads; waits up to wait_ms for them
 * unless exiting. Returns how many are still running (busy in a task). Idempotent. */
int dl_pool_close(dl_pool *pool, int wait_ms);
/* Waits up to wait_ms (none when exiting) for every thread to leave, without
 * closing the pool. Returns how many are still running. */
int dl_pool_wait(dl_pool *pool, int wait_ms);
/* After close: up to max of the tasks that never started, for their owner to free. */
int dl_pool_take_dropped(dl_pool *pool, void **out, int max);
int dl_pool_closed(dl_pool *pool);
/* The caller's reference; the pool is freed once its threads have left too. */
void dl_pool_release(dl_pool *pool);

/* At most `window` batches started and not yet taken; in_order takes positions
 * 0, 1, 2, ...; otherwise in the order they finish. */
dl_ring *dl_ring_new(int window, int in_order);
int dl_ring_has_room(dl_ring *ring);
void dl_ring_start(dl_ring *ring);
int dl_ring_idle(dl_ring *ring);
void dl_ring_finish(dl_ring *ring, long position);
/* 1: *position is the next batch (taken); 0: not within wait_ms; -1: closed. */
int dl_ring_wait(dl_ring *ring, int wait_ms, long *position);
long dl_ring_waiting_for(dl_ring *ring);
long dl_ring_occupancy(dl_ring *ring);
void dl_ring_close(dl_ring *ring);
int dl_ring_closed(dl_ring *ring);
void dl_ring_retain(dl_ring *ring);
void dl_ring_release(dl_ring *ring);

#endif
