//! What a pool shares with its threads and its epochs, and the interpreter's
//! exit hook: nothing here refers to a user-facing object, so worker threads
//! holding it keep no `Pool` or stream alive.
//!
//! NOTE [ Shutdown and interpreter exit ]
//!
//! ```text
//!   Pool.close() / Drop ──► close_epochs ──► every Epoch::close (no job starts,
//!                              │              buffered batches dropped)
//!                              └──► drop the rayon pool ──► threads end once
//!                                   their running job returns; close() waits
//!                                   for none of them (Pool.join(timeout) does)
//!   exit hook (mark_exiting) ──► exit flag ──► every live pool: close_epochs
//!                                   only (no drop, no wait, no wake-up)
//! ```
//!
//! After the exit flag is set no pool thread attaches again, not even to drop
//! a reference (what it still holds is leaked), and nothing waits for a
//! thread: a thread inside user code may never come back. A consumer on a
//! non-main thread whose pool was closed that way waits until the process
//! ends (`wait::wait_out_interpreter_exit`). In a forked child, which has none
//! of the pool's threads, closing touches nothing (`PoolShared::inherited`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::attach;

/// What a job leaves for the consumer: its batch or its exception.
pub type Outcome = PyResult<Py<PyAny>>;

/// The rayon pool, shared by `Pool` and its idle ticker; `None` once closed.
pub type Threads = Arc<Mutex<Option<rayon::ThreadPool>>>;

/// A lock that a panic elsewhere does not make unusable: the data it guards
/// is plain bookkeeping, consistent between statements.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The text of a caught Rust panic, for the RuntimeError that replaces it.
pub fn panic_error(panic: &(dyn std::any::Any + Send)) -> PyErr {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    PyRuntimeError::new_err(format!(
        "dataloader_rust internal error (Rust panic): {text}"
    ))
}

/// What a consumer gets when the pool, not its own stream, was closed under it.
pub fn pool_closed_error() -> PyErr {
    PyRuntimeError::new_err("the worker pool was closed while this epoch was running")
}

/// Raise `error` (or return the batch) to the consumer.
pub fn deliver(outcome: Outcome) -> PyResult<Option<Py<PyAny>>> {
    outcome.map(Some)
}

/// An epoch a pool closes when it is closed itself.
pub trait Epoch: Send + Sync {
    /// Stop starting its jobs and drop its buffered batches; called attached.
    fn close(&self);
}

struct InitState {
    pending: usize,
    error: Option<PyErr>,
}

/// What the pool threads share; nothing in it refers to a user-facing object.
pub struct PoolShared {
    closed: AtomicBool,
    /// The process whose threads these are: a forked child inherits none of them.
    pid: u32,
    epochs: Mutex<Vec<Weak<dyn Epoch>>>,
    live_threads: Mutex<usize>,
    threads_changed: Condvar,
    init: Mutex<InitState>,
    init_changed: Condvar,
}

impl PoolShared {
    /// A pool whose `num_threads` threads have yet to run `thread_init`.
    pub fn new(num_threads: usize) -> Self {
        PoolShared {
            closed: AtomicBool::new(false),
            pid: std::process::id(),
            epochs: Mutex::new(Vec::new()),
            live_threads: Mutex::new(0),
            threads_changed: Condvar::new(),
            init: Mutex::new(InitState {
                pending: num_threads,
                error: None,
            }),
            init_changed: Condvar::new(),
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Mark closed without closing anything; true if it was open.
    pub fn mark_closed(&self) -> bool {
        !self.closed.swap(true, Ordering::SeqCst)
    }

    /// Inherited through `fork()`: this process has none of the pool's threads.
    pub fn inherited(&self) -> bool {
        std::process::id() != self.pid
    }

    /// The error for using an inherited pool, which would wait forever.
    pub fn check_process(&self) -> PyResult<()> {
        if !self.inherited() {
            return Ok(());
        }
        Err(PyRuntimeError::new_err(format!(
            "this worker pool's threads belong to process {}, and a forked child has none: \
             create the DataLoader in the process that iterates it, or use \
             persistent_workers=False so that each epoch starts its own threads",
            self.pid
        )))
    }

    /// Close `epoch` with the pool (weakly held: a dropped stream is forgotten);
    /// refused on a closed or inherited pool, whose epoch would wait for ever.
    pub fn track(&self, epoch: Weak<dyn Epoch>) -> PyResult<()> {
        self.check_process()?;
        if self.is_closed() {
            return Err(PyRuntimeError::new_err("this worker pool is closed"));
        }
        let mut epochs = lock(&self.epochs);
        epochs.retain(|e| e.strong_count() > 0);
        epochs.push(epoch);
        Ok(())
    }

    /// Mark closed and close its epochs; true if it was open.
    pub fn close_epochs(&self) -> bool {
        if !self.mark_closed() {
            return false;
        }
        // Wake the idle ticker, which waits on this condition variable.
        self.threads_changed.notify_all();
        let epochs = std::mem::take(&mut *lock(&self.epochs));
        for epoch in epochs.iter().filter_map(Weak::upgrade) {
            epoch.close();
        }
        true
    }

    /// A thread of this pool (worker or idle ticker) is about to start.
    pub fn thread_started(&self) {
        *lock(&self.live_threads) += 1;
    }

    pub fn thread_exited(&self) {
        let mut live = lock(&self.live_threads);
        *live = live.saturating_sub(1);
        self.threads_changed.notify_all();
    }

    /// A worker ran its `thread_init`; the first error is kept for `create_pool`.
    pub fn init_finished(&self, error: Option<PyErr>) {
        let mut init = lock(&self.init);
        init.pending = init.pending.saturating_sub(1);
        if init.error.is_none() {
            init.error = error;
        }
        self.init_changed.notify_all();
    }

    /// Wait until every thread ran `thread_init`; the first error. Call detached:
    /// the threads need the interpreter.
    pub fn wait_init(&self) -> Option<PyErr> {
        let mut init = lock(&self.init);
        while init.pending > 0 {
            init = self
                .init_changed
                .wait(init)
                .unwrap_or_else(PoisonError::into_inner);
        }
        init.error.take()
    }

    /// Sleep up to `limit`, or until a thread exits or the pool closes.
    pub fn idle_wait(&self, limit: Duration) {
        let live = lock(&self.live_threads);
        drop(
            self.threads_changed
                .wait_timeout(live, limit)
                .unwrap_or_else(PoisonError::into_inner),
        );
    }

    /// Wait until every thread ended or `limit` passed; the number still alive.
    pub fn wait_threads(&self, limit: Duration) -> usize {
        let deadline = Instant::now() + limit;
        let mut live = lock(&self.live_threads);
        while *live > 0 {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            live = self
                .threads_changed
                .wait_timeout(live, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        *live
    }
}

/// What an epoch holds of its pool to start jobs on it. Epochs get this, not
/// the `Pool` pyclass, so that the stream modules do not depend on `pool.rs`.
#[derive(Clone)]
pub struct Workers {
    pub shared: Arc<PoolShared>,
    pub threads: Threads,
    pub num_threads: usize,
    /// Jobs of one epoch may run one after another under one attach.
    pub attach_once: bool,
}

impl Workers {
    /// Queue `job` on the rayon pool; refused once the pool is closed, when its
    /// threads are gone or going.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) -> PyResult<()> {
        match lock(&self.threads).as_ref() {
            Some(threads) if !self.shared.is_closed() => {
                threads.spawn(job);
                Ok(())
            }
            _ => Err(pool_closed_error()),
        }
    }
}

/// Every pool not yet closed, for the interpreter's exit hook.
static LIVE_POOLS: Mutex<Vec<Weak<PoolShared>>> = Mutex::new(Vec::new());

/// Let the exit hook close `pool`; it is held weakly, so registering keeps nothing alive.
pub fn register_live(pool: &Arc<PoolShared>) {
    let mut pools = lock(&LIVE_POOLS);
    pools.retain(|p| p.strong_count() > 0);
    pools.push(Arc::downgrade(pool));
}

/// The exit hook: no pool thread attaches from now on, every pool is closed,
/// nothing waits for a thread (see the NOTE above).
#[pyfunction]
pub fn mark_exiting() {
    attach::mark_exiting();
    let pools = std::mem::take(&mut *lock(&LIVE_POOLS));
    for pool in pools.iter().filter_map(Weak::upgrade) {
        if !pool.inherited() {
            pool.close_epochs();
        }
    }
}
