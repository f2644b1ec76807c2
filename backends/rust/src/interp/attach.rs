//! How pool threads hold and re-activate their one Python thread state, and
//! how every call that may take the interpreter back is guarded against
//! CPython ending the thread during finalization (see csrc/guard.c).

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::thread::ThreadId;

use pyo3::ffi;
use pyo3::prelude::*;

extern "C" {
    fn dl_guarded_call1(f: *const c_void, a: *mut c_void) -> *mut c_void;
    fn dl_guarded_call3(
        f: *const c_void,
        a: *mut c_void,
        b: *mut c_void,
        c: *mut c_void,
    ) -> *mut c_void;
    fn dl_guarded_ensure(f: *const c_void) -> i32;
    fn dl_guarded_void1(f: *const c_void, a: *mut c_void);
}

/// Set by the interpreter's exit hook once running jobs returned (or the bound
/// passed): from then on no pool thread attaches.
static EXITING: AtomicBool = AtomicBool::new(false);
/// Set when the exit hook starts: a consumer on another thread whose pool the
/// hook closes parks instead of raising into user code.
static EXIT_STARTED: AtomicBool = AtomicBool::new(false);
/// The thread that runs the exit hook, the one that goes on to finalize.
static EXIT_THREAD: OnceLock<ThreadId> = OnceLock::new();

/// Called by the exit hook, on the thread that finalizes the interpreter.
pub fn begin_exit() {
    let _ = EXIT_THREAD.set(std::thread::current().id());
    EXIT_STARTED.store(true, Ordering::SeqCst);
}

pub fn exit_started() -> bool {
    EXIT_STARTED.load(Ordering::SeqCst) || exiting()
}

/// Exit began, and on a thread other than this one. Asks no Python code: a
/// thread that runs bytecode here can be ended mid-call once finalization
/// starts (see csrc/guard.c).
pub fn exit_started_elsewhere() -> bool {
    exit_started() && EXIT_THREAD.get() != Some(&std::thread::current().id())
}

pub fn mark_exiting() {
    EXITING.store(true, Ordering::SeqCst);
}

pub fn exiting() -> bool {
    EXITING.load(Ordering::SeqCst)
}

/// Pool threads attached right now, less those inside `detached`: on GIL builds,
/// whether one of them holds the GIL (user code that releases it is not seen).
static POOL_ATTACHED: AtomicUsize = AtomicUsize::new(0);

/// True when no pool thread is known to hold the GIL (always, without a GIL),
/// so that attaching now would not sleep in CPython's take_gil.
pub fn gil_looks_free() -> bool {
    cfg!(Py_GIL_DISABLED) || POOL_ATTACHED.load(Ordering::SeqCst) == 0
}

thread_local! {
    /// This pool thread's own state, kept from its start to its end (attach once).
    static OWN_STATE: Cell<Option<ffi::PyGILState_STATE>> = const { Cell::new(None) };
    /// Inside `with_python` on this thread (counted in POOL_ATTACHED).
    static IN_POOL_CALL: Cell<bool> = const { Cell::new(false) };
}

/// Counts this thread in POOL_ATTACHED while alive.
struct PoolAttached {
    outer: bool,
}

impl PoolAttached {
    fn enter() -> Self {
        POOL_ATTACHED.fetch_add(1, Ordering::SeqCst);
        PoolAttached {
            outer: IN_POOL_CALL.with(|c| c.replace(true)),
        }
    }
}

impl Drop for PoolAttached {
    fn drop(&mut self) {
        IN_POOL_CALL.with(|c| c.set(self.outer));
        POOL_ATTACHED.fetch_sub(1, Ordering::SeqCst);
    }
}

fn ensure_guarded() -> Ensured {
    // SAFETY: PyGILState_GetThisThreadState only reads this thread's gilstate slot.
    let created = unsafe { ffi::PyGILState_GetThisThreadState() }.is_null();
    // SAFETY: PyGILState_Ensure takes no argument and returns the C enum
    // PyGILState_STATE, an int; the shim calls it with that signature.
    let state = unsafe { dl_guarded_ensure(ffi::PyGILState_Ensure as *const c_void) };
    let state = if state == 0 {
        ffi::PyGILState_STATE::PyGILState_LOCKED
    } else {
        ffi::PyGILState_STATE::PyGILState_UNLOCKED
    };
    Ensured { state, created }
}

/// Release what `ensure_guarded` took, also when the closure in between panicked.
/// `created`: that call made this thread's state, so releasing it ends the state.
struct Ensured {
    state: ffi::PyGILState_STATE,
    created: bool,
}

impl Drop for Ensured {
    fn drop(&mut self) {
        if self.created {
            // SAFETY: attached, on the thread whose state ensure_guarded created.
            unsafe { end_thread_state() };
        } else {
            // SAFETY: pairs with the PyGILState_Ensure of ensure_guarded on this thread.
            unsafe { ffi::PyGILState_Release(self.state) };
        }
    }
}

/// Delete the calling thread's state, as `PyGILState_Release` does when its
/// counter falls to 0, but clearing it while the counter is still 1.
///
/// Clearing runs destructors (the values of a `threading.local()`, a frame's
/// locals). One that takes the interpreter again through the gilstate API
/// (ctypes callbacks, pybind11 and so torch, pyarrow) would move CPython's
/// counter 0 -> 1 -> 0 inside the release and free the state under it: a
/// SIGSEGV on CPython 3.11 and 3.12 before 3.12.5 (gh-119585), the interpreters
/// our users have. With the counter at 1 it goes 1 -> 2 -> 1 and nothing ends.
///
/// Clearing runs user code (a `__del__` that sleeps takes the interpreter back),
/// so it is guarded like a call.
///
/// # Safety
/// Attached, with the thread's own state, which no one else still uses.
unsafe fn end_thread_state() {
    let own = ffi::PyThreadState_Get();
    dl_guarded_void1(ffi::PyThreadState_Clear as *const c_void, own.cast());
    ffi::PyThreadState_DeleteCurrent();
}

/// Start of a pool thread: create its thread state and, when `keep` (attach
/// once), keep it for the thread's whole life, detached between tasks.
/// Runs `init` attached. None when the interpreter is exiting.
pub fn thread_start<R>(keep: bool, init: impl FnOnce(Python<'_>) -> R) -> Option<R> {
    if exiting() {
        return None;
    }
    let ensured = ensure_guarded();
    let result = Python::attach(init);
    if keep {
        OWN_STATE.with(|own| own.set(Some(ensured.state)));
        // thread_end releases it.
        std::mem::forget(ensured);
        // SAFETY: attached; the state stays alive (gilstate counter 1) while detached.
        unsafe { ffi::PyEval_SaveThread() };
    } else {
        drop(ensured);
    }
    Some(result)
}

/// End of a pool thread: delete the state kept by `thread_start`, unless the
/// interpreter is exiting (then the thread touches nothing of it).
pub fn thread_end() {
    let Some(state) = OWN_STATE.with(Cell::take) else {
        return;
    };
    if exiting() {
        return;
    }
    // Re-activate the kept state, then end it (it is the only reference).
    // SAFETY: this thread's own state, detached since thread_start.
    unsafe {
        let own = ffi::PyGILState_GetThisThreadState();
        dl_guarded_void1(ffi::PyEval_RestoreThread as *const c_void, own.cast());
    }
    drop(Ensured {
        state,
        created: true,
    });
}

/// Run `f` attached, on a pool thread that is detached. With attach once this
/// re-activates the thread's kept state; without it, CPython creates and
/// deletes a state around `f`. None when the interpreter is exiting.
pub fn with_python<R>(f: impl FnOnce(Python<'_>) -> R) -> Option<R> {
    if exiting() {
        return None;
    }
    let _ensured = ensure_guarded();
    Some(Python::attach(|py| {
        let _counted = PoolAttached::enter();
        f(py)
    }))
}

/// Like `Python::detach`, for the consumer: waits without the interpreter and
/// re-attaches through the guard (a daemon thread at exit parks, not aborts).
pub fn detached<R>(_py: Python<'_>, f: impl FnOnce() -> R) -> R {
    let pool_call = IN_POOL_CALL.with(Cell::get);
    if pool_call {
        POOL_ATTACHED.fetch_sub(1, Ordering::SeqCst);
    }
    // SAFETY: attached (we hold `_py`); `f` does not touch Python objects.
    let saved = unsafe { ffi::PyEval_SaveThread() };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    // SAFETY: re-activates the state saved above, on the same thread.
    unsafe { dl_guarded_void1(ffi::PyEval_RestoreThread as *const c_void, saved.cast()) };
    if pool_call {
        POOL_ATTACHED.fetch_add(1, Ordering::SeqCst);
    }
    match result {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Drop `object`'s reference through the guard: freeing it runs user code
/// (`__del__`, a generator's `finally`) that may take the interpreter back.
pub fn release(_py: Python<'_>, object: Py<PyAny>) {
    // SAFETY: attached (we hold `_py`); Py_DecRef takes the one owned reference.
    unsafe { dl_guarded_void1(ffi::Py_DecRef as *const c_void, object.into_ptr().cast()) }
}

/// `callable(*args)` through the guard.
pub fn call<'py>(
    py: Python<'py>,
    callable: &Bound<'py, PyAny>,
    args: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: PyObject_Call(callable, args, NULL) with valid, attached objects.
    unsafe {
        let result = dl_guarded_call3(
            ffi::PyObject_Call as *const c_void,
            callable.as_ptr().cast(),
            args.as_ptr().cast(),
            std::ptr::null_mut(),
        );
        Bound::from_owned_ptr_or_err(py, result.cast())
    }
}

/// `iter(iterable)` through the guard.
pub fn iter<'py>(py: Python<'py>, iterable: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: PyObject_GetIter on an attached object.
    unsafe {
        let result = dl_guarded_call1(
            ffi::PyObject_GetIter as *const c_void,
            iterable.as_ptr().cast(),
        );
        Bound::from_owned_ptr_or_err(py, result.cast())
    }
}

/// `next(iterator)` through the guard (`iterator` came from `iter`): Ok(None) at the end.
pub fn next<'py>(
    py: Python<'py>,
    iterator: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    // SAFETY: PyIter_Next on an attached object; NULL without error is the end.
    unsafe {
        let result = dl_guarded_call1(ffi::PyIter_Next as *const c_void, iterator.as_ptr().cast());
        match Bound::from_owned_ptr_or_opt(py, result.cast()) {
            Some(item) => Ok(Some(item)),
            None => match PyErr::take(py) {
                Some(error) => Err(error),
                None => Ok(None),
            },
        }
    }
}
