/* The pool's hooks for Python (dlpool_py.c): each pool thread attached to the
 * interpreter once for its life, or once per task; what dataloader_cffi._engine
 * exposes beside dlpool.h. */
#ifndef DLPOOL_PY_H
#define DLPOOL_PY_H

#include <stddef.h>

#include "dlpool.h"

/* noop: a Python callable, alive for the process, that idle workers call on
 * free-threaded builds (an object a worker made is freed when it runs Python). */
void dl_py_setup(void *noop);
/* dl_pool_new with the Python hooks: thread_init(worker_id) is a borrowed Python
 * callable, called on each new thread with the interpreter attached. */
dl_pool *dl_py_pool_new(int num_threads, size_t stack_size, void *thread_init, int attach_once,
                        int *status);

#endif
