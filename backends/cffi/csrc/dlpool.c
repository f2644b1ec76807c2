/* See dlpool.h: the pool. Every shared field is read and written under its
 * object's mutex. The batch rings are in dlring.c. */
#include "dlpool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "dlwait.h"

static atomic_int exiting_flag;

void dl_set_exiting(void) { atomic_store(&exiting_flag, 1); }
int dl_exiting(void) { return atomic_load(&exiting_flag); }

/* ---- pool ---------------------------------------------------------------- */

typedef struct task_node {
    void *task;
    struct task_node *next;
} task_node;

struct dl_pool {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    dl_hooks hooks;
    task_node *head, *tail;
    int closed;
    int live;       /* threads not yet left */
    int starting;   /* threads that have not finished thread_start */
    int init_failed;
    int refs;       /* the caller's + one per live thread */
};

typedef struct {
    dl_pool *pool;
    int worker_id;
} worker_arg;

static void pool_unref_locked(dl_pool *pool, int *free_it) {
    pool->refs -= 1;
    *free_it = pool->refs == 0;
}

static void pool_free(dl_pool *pool) {
    task_node *node = pool->head;
    while (node != NULL) {
        task_node *next = node->next;
        free(node);
        node = next;
    }
    pthread_cond_destroy(&pool->changed);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

static void *worker_main(void *raw) {
    worker_arg arg = *(worker_arg *)raw;
    free(raw);
    dl_pool *pool = arg.pool;
    dl_hooks hooks = pool->hooks;
    int ok = 1;
    void *token = hooks.thread_start(hooks.ctx, arg.worker_id, &ok);

    pthread_mutex_lock(&pool->lock);
    pool->starting -= 1;
    if (!ok) pool->init_failed = 1;
    pthread_cond_broadcast(&pool->changed);
    for (;;) {
        while (ok && pool->head == NULL && !pool->closed) {
            if (hooks.idle == NULL) {
                pthread_cond_wait(&pool->changed, &pool->lock);
                continue;
            }
            struct timespec until;
            deadline_in(&until, hooks.idle_ms);
            if (pthread_cond_timedwait(&pool->changed, &pool->lock, &until) == ETIMEDOUT &&
                pool->head == NULL && !pool->closed && !dl_exiting()) {
                pthread_mutex_unlock(&pool->lock);
                hooks.idle(hooks.ctx);
                pthread_mutex_lock(&pool->lock);
            }
        }
        if (!ok || pool->closed || dl_exiting()) break;
        task_node *node = pool->head;
        pool->head = node->next;
        if (pool->head == NULL) pool->tail = NULL;
        pthread_mutex_unlock(&pool->lock);
        void *task = node->task;
        free(node);
        if (!dl_exiting()) hooks.run(hooks.ctx, task);
        pthread_mutex_lock(&pool->lock);
    }
    pthread_mutex_unlock(&pool->lock);

    if (!dl_exiting()) hooks.thread_end(hooks.ctx, token);
    int free_it;
    pthread_mutex_lock(&pool->lock);
    pool->live -= 1;
    pthread_cond_broadcast(&pool->changed);
    pool_unref_locked(pool, &free_it);
    pthread_mutex_unlock(&pool->lock);
    if (free_it) pool_free(pool);
    return NULL;
}

dl_pool *dl_pool_new(int num_threads, size_t stack_size, dl_hooks hooks, int *status) {
    *status = DL_OK;
    dl_pool *pool = calloc(1, sizeof *pool);
    if (pool == NULL) {
        *status = DL_NOMEM;
        return NULL;
    }
    if (pthread_mutex_init(&pool->lock, NULL) != 0) {
        free(pool);
        *status = DL_NOMEM;
        return NULL;
    }
    if (cond_init_monotonic(&pool->changed) != 0) {
        pthread_mutex_destroy(&pool->lock);
        free(pool);
        *status = DL_NOMEM;
        return NULL;
    }
    pool->hooks = hooks;
    pool->refs = 1;

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (stack_size > 0 && pthread_attr_setstacksize(&attr, stack_size) != 0) {
        pthread_attr_destroy(&attr);
        pthread_cond_destroy(&pool->changed);
        pthread_mutex_destroy(&pool->lock);
        free(pool);
        *status = DL_NOTHREAD;
        return NULL;
    }
    pthread_mutex_lock(&pool->lock);
    for (int i = 0; i < num_threads; i++) {
        worker_arg *arg = malloc(sizeof *arg);
        if (arg == NULL) {
            *status = DL_NOMEM;
            break;
        }
        arg->pool = pool;
        arg->worker_id = i;
        pthread_t thread;
        pool->live += 1;
        pool->starting += 1;
        pool->refs += 1;
        if (pthread_create(&thread, &attr, worker_main, arg) != 0) {
            pool->live -= 1;
            pool->starting -= 1;
            pool->refs -= 1;
            free(arg);
            *status = DL_NOTHREAD;
            break;
        }
    }
    pthread_attr_destroy(&attr);
    while (pool->starting > 0) pthread_cond_wait(&pool->changed, &pool->lock);
    if (*status == DL_OK && pool->init_failed) *status = DL_INIT_FAILED;
    pthread_mutex_unlock(&pool->lock);
    if (*status != DL_OK) {
        dl_pool_close(pool, 2000);
        dl_pool_release(pool);
        return NULL;
    }
    return pool;
}

int dl_pool_submit(dl_pool *pool, void *task) {
    task_node *node = malloc(sizeof *node);
    if (node == NULL) return DL_NOMEM;
    node->task = task;
    node->next = NULL;
    pthread_mutex_lock(&pool->lock);
    if (pool->closed) {
        pthread_mutex_unlock(&pool->lock);
        free(node);
        return DL_CLOSED;
    }
    if (pool->tail != NULL) pool->tail->next = node;
    else pool->head = node;
    pool->tail = node;
    pthread_cond_signal(&pool->changed);
    pthread_mutex_unlock(&pool->lock);
    return DL_OK;
}

/* Waits (holding the lock) up to wait_ms for every thread to leave, unless exiting. */
static int wait_threads_locked(dl_pool *pool, int wait_ms) {
    if (!dl_exiting() && wait_ms > 0) {
        struct timespec until;
        deadline_in(&until, wait_ms);
        while (pool->live > 0) {
            if (pthread_cond_timedwait(&pool->changed, &pool->lock, &until) == ETIMEDOUT) break;
        }
    }
    return pool->live;
}

int dl_pool_close(dl_pool *pool, int wait_ms) {
    pthread_mutex_lock(&pool->lock);
    pool->closed = 1;
    pthread_cond_broadcast(&pool->changed);
    int busy = wait_threads_locked(pool, wait_ms);
    pthread_mutex_unlock(&pool->lock);
    return busy;
}

int dl_pool_wait(dl_pool *pool, int wait_ms) {
    pthread_mutex_lock(&pool->lock);
    int live = wait_threads_locked(pool, wait_ms);
    pthread_mutex_unlock(&pool->lock);
    return live;
}

int dl_pool_take_dropped(dl_pool *pool, void **out, int max) {
    int taken = 0;
    pthread_mutex_lock(&pool->lock);
    if (pool->closed) {
        while (taken < max && pool->head != NULL) {
            task_node *node = pool->head;
            pool->head = node->next;
            out[taken++] = node->task;
            free(node);
        }
        if (pool->head == NULL) pool->tail = NULL;
    }
    pthread_mutex_unlock(&pool->lock);
    return taken;
}

int dl_pool_closed(dl_pool *pool) {
    pthread_mutex_lock(&pool->lock);
    int closed = pool->closed;
    pthread_mutex_unlock(&pool->lock);
    return closed;
}

void dl_pool_release(dl_pool *pool) {
    int free_it;
    pthread_mutex_lock(&pool->lock);
    pool_unref_locked(pool, &free_it);
    pthread_mutex_unlock(&pool->lock);
    if (free_it) pool_free(pool);
}
