//! The worker pool: a rayon thread pool whose threads each attach to the
//! interpreter once, when they start, and run rayon's loop detached.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::contract;
use crate::interp::attach;
use crate::pool::iter_stream::IterStream;
use crate::pool::map_job::MapJobs;
use crate::pool::map_stream::MapStream;
use crate::pool::pool_shared::{lock, panic_error, register_live, PoolShared, Threads, Workers};
use crate::pool::wait;

/// Free-threaded builds: how often idle workers run a little Python (see `idle_ticker`).
#[cfg(Py_GIL_DISABLED)]
const IDLE_TICK: std::time::Duration = std::time::Duration::from_millis(200);

fn worker_main(
    thread: rayon::ThreadBuilder,
    shared: Arc<PoolShared>,
    thread_init: Arc<Py<PyAny>>,
    attach_once: bool,
) {
    let index = thread.index();
    let started = catch_unwind(AssertUnwindSafe(|| {
        attach::thread_start(attach_once, |py| -> PyResult<()> {
            let args = PyTuple::new(py, [index])?;
            attach::call(py, thread_init.bind(py), args.as_any())?;
            Ok(())
        })
    }));
    let error = match started {
        Ok(Some(Ok(()))) => None,
        Ok(Some(Err(error))) => Some(error),
        Ok(None) => Some(PyRuntimeError::new_err("the interpreter is exiting")),
        Err(panic) => Some(panic_error(&*panic)),
    };
    shared.init_finished(error);
    // The last reference may go here, detached: pyo3 then defers the decref.
    drop(thread_init);
    // rayon's loop; it returns once the pool is dropped and its jobs are done.
    thread.run();
    if catch_unwind(attach::thread_end).is_err() {
        eprintln!("dataloader_rust: a worker thread failed to release its thread state");
    }
    shared.thread_exited();
}

/// Free-threaded builds free an object made on a worker (an exception it raised)
/// on that worker, when it next runs Python code: a rayon thread idle in its
/// sleep never would, and a failed epoch would stay alive. So every
/// `IDLE_TICK` each worker briefly runs a Python no-op.
#[cfg(Py_GIL_DISABLED)]
fn idle_ticker(shared: Arc<PoolShared>, threads: Threads, tick: Arc<Py<PyAny>>) {
    use std::sync::atomic::Ordering::SeqCst;
    let pending = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    loop {
        shared.idle_wait(IDLE_TICK);
        if shared.is_closed() || attach::exiting() {
            break;
        }
        if pending.load(SeqCst) > 0 {
            continue; // the last tick has not run everywhere yet: workers are busy anyway
        }
        if let Some(pool) = lock(&threads).as_ref() {
            pending.fetch_add(pool.current_num_threads(), SeqCst);
            let (tick, pending) = (Arc::clone(&tick), Arc::clone(&pending));
            pool.spawn_broadcast(move |_| {
                attach::with_python(|py| {
                    if let Ok(args) = PyTuple::new(py, Vec::<Py<PyAny>>::new()) {
                        let _ = attach::call(py, tick.bind(py), args.as_any());
                    }
                });
                pending.fetch_sub(1, SeqCst);
            });
        }
    }
    if !attach::exiting() {
        attach::with_python(|_| drop(tick));
    } else {
        std::mem::forget(tick);
    }
    shared.thread_exited();
}

/// ``num_threads`` rayon threads, each attached to the interpreter once.
#[pyclass(frozen, module = "dataloader_rust._native")]
pub struct Pool {
    workers: Workers,
    #[pyo3(get)]
    items_in_parallel: usize,
}

impl Pool {
    /// Close without waiting for anything: a thread busy in user code ends on
    /// its own once that call returns (see `join`).
    fn close_inner(&self) {
        let Workers {
            shared, threads, ..
        } = &self.workers;
        if shared.inherited() {
            // A forked child: no thread to stop or wait for, and a lock of the pool
            // may have been held by a parent thread at the fork. Touch nothing.
            if shared.mark_closed() {
                if let Ok(mut threads) = threads.try_lock() {
                    std::mem::forget(threads.take());
                }
            }
            return;
        }
        if !shared.close_epochs() {
            return;
        }
        let threads = lock(threads).take();
        if attach::exiting() {
            // Dropping would wake every thread; at exit none may run again.
            std::mem::forget(threads);
            return;
        }
        // Threads end once their running job returns; queued jobs see `closed`.
        drop(threads);
    }
}

#[pymethods]
impl Pool {
    /// A pool as `spec` (a `PoolSpec`) says; `attach_once=False` only to measure
    /// what attaching once buys (`DATALOADER_RUST_ATTACH=per-task`).
    #[new]
    #[pyo3(signature = (spec, *, attach_once = true))]
    fn new(py: Python<'_>, spec: &Bound<'_, PyAny>, attach_once: bool) -> PyResult<Self> {
        let contract::PoolSpec {
            num_threads,
            thread_init,
            name,
            items_in_parallel,
            stack_size,
        } = contract::PoolSpec::read(spec)?;
        // rayon quietly runs fewer; every thread_init must run before this returns.
        if num_threads > rayon::max_num_threads() {
            return Err(PyValueError::new_err(format!(
                "PoolSpec.num_threads={num_threads} is more than rayon runs in one pool ({})",
                rayon::max_num_threads()
            )));
        }
        // std refuses (panics on) a thread name with a NUL byte.
        let name = name.replace('\0', "");
        let shared = Arc::new(PoolShared::new(num_threads));
        let thread_init = Arc::new(thread_init);
        let spawn_shared = Arc::clone(&shared);
        let prefix = format!("{name}-rust");
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(num_threads)
            .spawn_handler(move |thread| {
                let shared = Arc::clone(&spawn_shared);
                let init = Arc::clone(&thread_init);
                shared.thread_started();
                // std's default is 2 MiB; OpenBLAS's parallel LU alone needs more.
                let spawned = std::thread::Builder::new()
                    .name(format!("{prefix}-{}", thread.index()))
                    .stack_size(stack_size)
                    .spawn(move || worker_main(thread, shared, init, attach_once));
                if spawned.is_err() {
                    spawn_shared.thread_exited();
                }
                spawned.map(drop)
            })
            .build();
        let threads = match built {
            Ok(threads) => threads,
            Err(error) => {
                shared.mark_closed();
                return Err(PyRuntimeError::new_err(format!(
                    "could not start {num_threads} worker threads: {error}"
                )));
            }
        };
        let threads: Threads = Arc::new(Mutex::new(Some(threads)));
        #[cfg(Py_GIL_DISABLED)]
        {
            let tick = py.eval(c"lambda: None", None, None)?.unbind();
            let (ticker_shared, ticker_threads) = (Arc::clone(&shared), Arc::clone(&threads));
            shared.thread_started();
            let started = std::thread::Builder::new()
                .name(format!("{name}-rust-idle"))
                .spawn(move || idle_ticker(ticker_shared, ticker_threads, Arc::new(tick)));
            if started.is_err() {
                shared.thread_exited();
            }
        }
        let pool = Pool {
            workers: Workers {
                shared: Arc::clone(&shared),
                threads,
                num_threads,
                attach_once,
            },
            items_in_parallel,
        };
        register_live(&shared, &pool.workers.threads);
        // Wait for every thread's thread_init, detached: they need the interpreter.
        let error = attach::detached(py, move || shared.wait_init());
        if let Some(error) = error {
            pool.close_inner();
            return Err(error);
        }
        Ok(pool)
    }

    #[getter]
    fn num_threads(&self) -> usize {
        self.workers.num_threads
    }

    #[getter]
    fn attach_once(&self) -> bool {
        self.workers.attach_once
    }

    #[getter]
    fn closed(&self) -> bool {
        self.workers.shared.is_closed()
    }

    /// The batches of `work` (a `MapWork`), as `stream` (a `StreamSpec`) says.
    fn map_batches(
        slf: &Bound<'_, Self>,
        work: &Bound<'_, PyAny>,
        stream: &Bound<'_, PyAny>,
    ) -> PyResult<MapStream> {
        let this = slf.get();
        let work = contract::MapWork::read(work)?;
        let stream = contract::StreamSpec::read(stream)?;
        let fns = MapJobs::new(slf.py(), &work, this.items_in_parallel)?;
        let pool = slf.clone().into_any().unbind();
        MapStream::new(pool, this.workers.clone(), &work.jobs, fns, stream)
    }

    /// The batches of `work`'s streams (an `IterWork`), as `stream` says.
    fn stream_batches(
        &self,
        work: &Bound<'_, PyAny>,
        stream: &Bound<'_, PyAny>,
    ) -> PyResult<IterStream> {
        let work = contract::IterWork::read(work)?;
        let stream = contract::StreamSpec::read(stream)?;
        IterStream::new(&self.workers, work, stream)
    }

    /// Start no job any more; prompt, never waiting for a busy thread.
    fn close(&self) {
        // Dropped by the interpreter (attached): epochs drop Python objects.
        Python::attach(|_py| self.close_inner());
    }

    /// Wait until every thread of the pool has ended, `timeout` seconds at most
    /// (`None`: no limit); true if none is left. Waits detached, in slices
    /// between which signals are raised.
    #[pyo3(signature = (timeout = None))]
    fn join(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let shared = &self.workers.shared;
        if shared.inherited() {
            return Ok(true); // none of the pool's threads runs in a forked child
        }
        let deadline = wait::deadline_after(timeout)?;
        loop {
            let slice = wait::slice_until(deadline);
            let waited = Arc::clone(shared);
            if attach::detached(py, move || waited.wait_threads(slice)) == 0 {
                return Ok(true);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(false);
            }
            py.check_signals()?;
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Dropped by the interpreter (attached); closing must not wait here.
        // Dropped by the interpreter (attached): epochs drop Python objects.
        Python::attach(|_py| self.close_inner());
    }
}
