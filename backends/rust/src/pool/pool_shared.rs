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
//!   exit hook (drain_at_exit) ──► every live pool: close_epochs, drop the
//!                                   rayon pool, wait (bounded) for its threads
//!                                   ──► exit flag
//! ```
//!
//! The wait lets jobs inside native code return before finalization (a thread
//! that takes the interpreter back during finalization is ended with
//! pthread_exit, which aborts through C++ frames). After the exit flag is set
//! no pool thread attaches again, not even to drop a reference (what it still
//! holds is leaked), and nothing waits for a thread: one still inside user
//! code past the bound may never come back. A consumer on a thread other than
//! the hook's whose pool was closed that way waits until the process
//! ends (`wait::wait_out_interpreter_exit`). In a forked child, which has none
//! of the pool's threads, closing touches nothing (`PoolShared::inherited`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::interp::attach;

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

// The contract's exceptions for a closed pool and an inherited one, as the
// Python backends raise them.
pyo3::import_exception!(dataloader_api.contract, PoolClosedError);
pyo3::import_exception!(dataloader_api.contract, ForkedPoolError);

/// What a consumer gets when the pool, not its own stream, was closed under it.
pub fn pool_closed_error() -> PyErr {
    PoolClosedError::new_err("the worker pool was closed while this epoch was running")
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
        Err(ForkedPoolError::new_err(format!(
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
            return Err(PoolClosedError::new_err("this worker pool is closed"));
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
/// the `Pool` pyclass, so that the stream modules do not depend on `rayon_pool.rs`.
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

/// Every pool whose threads may still run, with its rayon pool, for the exit hook.
type LivePool = (Weak<PoolShared>, Weak<Mutex<Option<rayon::ThreadPool>>>);
static LIVE_POOLS: Mutex<Vec<LivePool>> = Mutex::new(Vec::new());

/// Let the exit hook close `pool` and wait for its threads; both are held
/// weakly, so registering keeps nothing alive (a pool's threads hold `pool`).
pub fn register_live(pool: &Arc<PoolShared>, threads: &Threads) {
    let mut pools = lock(&LIVE_POOLS);
    pools.retain(|(p, _)| p.strong_count() > 0);
    pools.push((Arc::downgrade(pool), Arc::downgrade(threads)));
}

/// Instead of `Duration::MAX`, which no `Instant` can be added to.
const FOREVER: Duration = Duration::from_secs(365 * 24 * 3600);

/// The exit hook, before finalization (see the NOTE above and the kit's NOTE
/// [ Interpreter exit with jobs in flight ]): every pool is closed and its rayon
/// pool dropped, so idle threads leave; then wait, detached, up to `seconds` for
/// every pool thread to end, so that a job inside native code returns while the
/// interpreter can still take it back; then no pool thread attaches again.
/// True if every thread ended in time.
#[pyfunction]
pub fn drain_at_exit(py: Python<'_>, seconds: f64) -> bool {
    attach::begin_exit();
    let deadline = Duration::try_from_secs_f64(seconds)
        .ok()
        .and_then(|limit| Instant::now().checked_add(limit));
    let pools = std::mem::take(&mut *lock(&LIVE_POOLS));
    let mut running = Vec::new();
    for (shared, threads) in pools {
        let Some(shared) = shared.upgrade() else {
            continue;
        };
        if shared.inherited() {
            continue; // a forked child: none of these threads is here
        }
        shared.close_epochs();
        if let Some(threads) = threads.upgrade() {
            drop(lock(&threads).take()); // idle threads wake and leave
        }
        running.push(shared);
    }
    let ended = attach::detached(py, move || {
        running.iter().all(|pool| {
            let left = deadline.map_or(FOREVER, |d| d.saturating_duration_since(Instant::now()));
            pool.wait_threads(left) == 0
        })
    });
    attach::mark_exiting();
    ended
}
