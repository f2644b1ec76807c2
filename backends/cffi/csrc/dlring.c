/* See dlpool.h: the batch rings of map-style epochs (at most `window` batches
 * started and not yet taken). Every field is read and written under the ring's
 * mutex. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "dlpool.h"
#include "dlwait.h"

struct dl_ring {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int window, in_order, closed, refs;
    long started, taken;
    unsigned char *done; /* in order: slot position % window is finished */
    long *finished;      /* completion order: a queue of positions */
    int head, count;
};

dl_ring *dl_ring_new(int window, int in_order) {
    if (window < 1) return NULL;
    dl_ring *ring = calloc(1, sizeof *ring);
    if (ring == NULL) return NULL;
    ring->done = calloc((size_t)window, 1);
    ring->finished = calloc((size_t)window, sizeof(long));
    if (ring->done == NULL || ring->finished == NULL ||
        pthread_mutex_init(&ring->lock, NULL) != 0) {
        free(ring->done);
        free(ring->finished);
        free(ring);
        return NULL;
    }
    if (cond_init_monotonic(&ring->changed) != 0) {
        pthread_mutex_destroy(&ring->lock);
        free(ring->done);
        free(ring->finished);
        free(ring);
        return NULL;
    }
    ring->window = window;
    ring->in_order = in_order;
    ring->refs = 1;
    return ring;
}

int dl_ring_has_room(dl_ring *ring) {
    pthread_mutex_lock(&ring->lock);
    int room = !ring->closed && ring->started - ring->taken < ring->window;
    pthread_mutex_unlock(&ring->lock);
    return room;
}

void dl_ring_start(dl_ring *ring) {
    pthread_mutex_lock(&ring->lock);
    ring->started += 1;
    pthread_mutex_unlock(&ring->lock);
}

int dl_ring_idle(dl_ring *ring) {
    pthread_mutex_lock(&ring->lock);
    int idle = ring->started == ring->taken;
    pthread_mutex_unlock(&ring->lock);
    return idle;
}

void dl_ring_finish(dl_ring *ring, long position) {
    pthread_mutex_lock(&ring->lock);
    if (!ring->closed) {
        if (ring->in_order) {
            ring->done[position % ring->window] = 1;
        } else if (ring->count < ring->window) {
            ring->finished[(ring->head + ring->count) % ring->window] = position;
            ring->count += 1;
        }
        pthread_cond_broadcast(&ring->changed);
    }
    pthread_mutex_unlock(&ring->lock);
}

static int ring_take_locked(dl_ring *ring, long *position) {
    if (ring->in_order) {
        int slot = (int)(ring->taken % ring->window);
        if (!ring->done[slot]) return 0;
        ring->done[slot] = 0;
        *position = ring->taken;
    } else {
        if (ring->count == 0) return 0;
        *position = ring->finished[ring->head];
        ring->head = (ring->head + 1) % ring->window;
        ring->count -= 1;
    }
    ring->taken += 1;
    return 1;
}

int dl_ring_wait(dl_ring *ring, int wait_ms, long *position) {
    struct timespec until;
    deadline_in(&until, wait_ms);
    pthread_mutex_lock(&ring->lock);
    int result = 0;
    for (;;) {
        if (ring->closed) {
            result = -1;
            break;
        }
        if (ring_take_locked(ring, position)) {
            result = 1;
            break;
        }
        if (pthread_cond_timedwait(&ring->changed, &ring->lock, &until) == ETIMEDOUT) {
            if (!ring->closed && ring_take_locked(ring, position)) result = 1;
            else result = ring->closed ? -1 : 0;
            break;
        }
    }
    pthread_mutex_unlock(&ring->lock);
    return result;
}

long dl_ring_waiting_for(dl_ring *ring) {
    pthread_mutex_lock(&ring->lock);
    long position = ring->taken;
    pthread_mutex_unlock(&ring->lock);
    return position;
}

long dl_ring_occupancy(dl_ring *ring) {
    pthread_mutex_lock(&ring->lock);
    long occupancy = ring->started - ring->taken;
    pthread_mutex_unlock(&ring->lock);
    return occupancy;
}

void dl_ring_close(dl_ring *ring) {
    pthread_mutex_lock(&ring->lock);
    ring->closed = 1;
    pthread_cond_broadcast(&ring->changed);
    pthread_mutex_unlock(&ring->lock);
}

int dl_ring_closed(dl_ring *ring) {
    pthread_mutex_lock(&ring->lock);
    int closed = ring->closed;
    pthread_mutex_unlock(&ring->lock);
    return closed;
}

void dl_ring_retain(dl_ring *ring) {
    pthread_mutex_lock(&ring->lock);
    ring->refs += 1;
    pthread_mutex_unlock(&ring->lock);
}

void dl_ring_release(dl_ring *ring) {
    pthread_mutex_lock(&ring->lock);
    int free_it = --ring->refs == 0;
    pthread_mutex_unlock(&ring->lock);
    if (free_it) {
        pthread_cond_destroy(&ring->changed);
        pthread_mutex_destroy(&ring->lock);
        free(ring->done);
        free(ring->finished);
        free(ring);
    }
}
