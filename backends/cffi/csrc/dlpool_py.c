/* The hooks that attach each pool thread to the interpreter (see dlpool_py.h). */
#include <Python.h>

#include "dlpool_py.h"

/* Python objects are passed in as borrowed pointers (id()); the Python side keeps
 * each alive until C is done with it. Calls go through the C API, not cffi's
 * extern "Python" (which keeps its own state per foreign thread), so the two
 * attach modes below are exactly what they say. */

static PyObject *dl_noop; /* a module-level Python no-op, alive for the process */

void dl_py_setup(void *noop) { dl_noop = noop; }

/* Attach once: this thread's state, made at its start and kept, detached, for its life. */
static __thread int dl_attach_once;
static __thread PyThreadState *dl_own_state;

/* End this thread's own state (made by PyGILState_Ensure on a new thread) as
 * PyGILState_Release does when its counter falls to 0, but clearing it while the
 * counter is still 1: a destructor run by the clear (a threading.local()'s value)
 * that takes the GIL again through the gilstate API (ctypes callbacks, pybind11,
 * pyarrow) would otherwise free the state under the clear on CPython 3.11 and
 * 3.12 < 3.12.5 (gh-119585), a SIGSEGV. */
static void dl_end_own_state(void) {
    PyThreadState_Clear(PyThreadState_Get());
    PyThreadState_DeleteCurrent();
}

static void dl_call(PyObject *callable) {
    Py_INCREF(callable);
    PyObject *result = PyObject_CallNoArgs(callable);
    if (result == NULL) PyErr_WriteUnraisable(callable); /* tasks catch their own errors */
    Py_XDECREF(result);
    Py_DECREF(callable);
}

typedef struct {
    int attach_once;
    PyObject *thread_init; /* borrowed; used only while the threads start */
} dl_py_ctx;

static void *dl_py_thread_start(void *ctx, int worker_id, int *ok) {
    const dl_py_ctx *start = ctx;
    dl_attach_once = start->attach_once;
    PyGILState_STATE state = PyGILState_Ensure();
    PyObject *result = PyObject_CallFunction(start->thread_init, "i", worker_id);
    if (result == NULL) {
        PyErr_WriteUnraisable(start->thread_init);
        *ok = 0;
    } else {
        *ok = PyObject_IsTrue(result) == 1;
        Py_DECREF(result);
    }
    if (dl_attach_once) {
        dl_own_state = PyEval_SaveThread();
    } else {
        dl_end_own_state(); /* each task makes its own */
    }
    (void)state; /* made by this call: dl_end_own_state ends it, not PyGILState_Release */
    return NULL;
}

static void dl_py_run(void *ctx, void *task) {
    (void)ctx;
    PyThreadState *temporary = NULL;
    if (dl_attach_once) {
        PyEval_RestoreThread(dl_own_state);
    } else {
        temporary = PyThreadState_New(PyInterpreterState_Main());
        if (temporary == NULL) return;
        PyEval_RestoreThread(temporary);
    }
    dl_call(task);
    if (dl_attach_once) {
        dl_own_state = PyEval_SaveThread();
    } else {
        PyThreadState_Clear(temporary);
        PyThreadState_DeleteCurrent();
    }
}

static void dl_py_idle(void *ctx) {
    (void)ctx;
    if (!dl_attach_once || dl_noop == NULL) return;
    PyEval_RestoreThread(dl_own_state);
    dl_call(dl_noop);
    dl_own_state = PyEval_SaveThread();
}

static void dl_py_thread_end(void *ctx, void *token) {
    (void)ctx;
    (void)token;
    if (!dl_attach_once) return;
    PyEval_RestoreThread(dl_own_state);
    dl_end_own_state();
}

dl_pool *dl_py_pool_new(int num_threads, size_t stack_size, void *thread_init, int attach_once,
                        int *status) {
    dl_py_ctx start = {attach_once, thread_init};
    dl_hooks hooks = {dl_py_thread_start, dl_py_run, NULL, dl_py_thread_end, &start, 0};
#ifdef Py_GIL_DISABLED
    /* Free-threaded: an object a worker made is freed by that worker when it runs
     * Python code; idle workers must do so now and then. */
    hooks.idle = dl_py_idle;
    hooks.idle_ms = 200;
#else
    (void)dl_py_idle;
#endif
    /* cffi calls C functions without the GIL, so the starting threads can attach. */
    return dl_pool_new(num_threads, stack_size, hooks, status);
}
