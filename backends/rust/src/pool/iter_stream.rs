//! The batches of one iterable-dataset epoch: each stream is drained by one
//! pool job into its own bounded buffer.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use dataloader_core::{StreamBuffers, Take};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::contract::{IterWork, StreamSpec};
use crate::interp::attach;
use crate::pool::pool_shared::{
    deliver, lock, panic_error, pool_closed_error, Epoch, Outcome, PoolShared, Workers,
};
use crate::pool::wait::{deadline, wait_for, wait_out_interpreter_exit};

/// A worker waiting for room wakes this often, to notice exit and closing.
const IDLE_WAKE: Duration = Duration::from_millis(200);

struct IterShared {
    buffers: Mutex<StreamBuffers<Outcome>>,
    changed: Condvar,
    closed: AtomicBool,
}

impl IterShared {
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

impl Epoch for IterShared {
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let dropped = lock(&self.buffers).drain();
        self.changed.notify_all();
        drop(dropped);
    }
}

enum Step {
    Batch(Py<PyAny>),
    End,
    Failed(PyErr),
}

/// Advance stream `stream` on this pool thread until it ends or the epoch closes.
fn drain(shared: Arc<IterShared>, stream: usize, open_stream: Arc<Py<PyAny>>) {
    let mut items: Option<Py<PyAny>> = None;
    loop {
        {
            let mut buffers = lock(&shared.buffers);
            while !buffers.has_room(stream) && !shared.is_closed() && !attach::exiting() {
                buffers = shared
                    .changed
                    .wait_timeout(buffers, IDLE_WAKE)
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .0;
            }
        }
        if shared.is_closed() || attach::exiting() {
            break;
        }
        let stepped = catch_unwind(AssertUnwindSafe(|| {
            attach::with_python(|py| {
                let iterator = match &items {
                    Some(iterator) => iterator.bind(py).clone(),
                    None => {
                        let opened = PyTuple::new(py, [stream])
                            .and_then(|args| attach::call(py, open_stream.bind(py), args.as_any()))
                            .and_then(|stream| attach::iter(py, &stream));
                        match opened {
                            Ok(iterator) => {
                                items = Some(iterator.clone().unbind());
                                iterator
                            }
                            Err(error) => return Step::Failed(error),
                        }
                    }
                };
                match attach::next(py, &iterator) {
                    Ok(Some(batch)) => Step::Batch(batch.unbind()),
                    Ok(None) => Step::End,
                    Err(error) => Step::Failed(error),
                }
            })
        }));
        let step = match stepped {
            Ok(Some(step)) => step,
            Ok(None) => break, // exiting
            Err(panic) => Step::Failed(panic_error(&*panic)),
        };
        let finished = !matches!(step, Step::Batch(_));
        let leftover = {
            let mut buffers = lock(&shared.buffers);
            if shared.is_closed() {
                Some(step)
            } else {
                match step {
                    Step::Batch(batch) => buffers.push(stream, Ok(batch)),
                    Step::Failed(error) => buffers.push(stream, Err(error)),
                    Step::End => {}
                }
                if finished {
                    buffers.end(stream);
                }
                None
            }
        };
        shared.changed.notify_all();
        if let Some(leftover) = leftover {
            attach::with_python(|py| match leftover {
                Step::Batch(batch) => attach::release(py, batch),
                other => drop(other),
            });
            break;
        }
        if finished {
            break;
        }
    }
    if let Some(items) = items {
        if attach::exiting() {
            std::mem::forget(items);
        } else {
            // Closing a generator runs its `finally` blocks.
            attach::with_python(|py| attach::release(py, items));
        }
    }
}

/// The batches of one iterable-dataset epoch.
#[pyclass(frozen, module = "dataloader_rust._native")]
pub struct IterStream {
    pool_shared: Arc<PoolShared>,
    shared: Arc<IterShared>,
    delivered: Mutex<u64>,
    timeout: Option<Duration>,
    on_timeout: Py<PyAny>,
}

impl IterStream {
    /// Start draining every stream of `work` at once; each drain holds a pool
    /// thread while its buffer has room.
    pub fn new(workers: &Workers, work: IterWork, stream: StreamSpec) -> PyResult<Self> {
        let IterWork {
            open_stream,
            num_streams,
        } = work;
        // The contract's checks make 0 impossible: only the allocation can fail.
        let buffers =
            StreamBuffers::new(num_streams, stream.window, stream.in_order).ok_or_else(|| {
                PyMemoryError::new_err(format!("cannot allocate buffers for {num_streams} streams"))
            })?;
        let shared = Arc::new(IterShared {
            buffers: Mutex::new(buffers),
            changed: Condvar::new(),
            closed: AtomicBool::new(false),
        });
        let pool_shared = Arc::clone(&workers.shared);
        let epoch: Arc<dyn Epoch> = shared.clone();
        pool_shared.track(Arc::downgrade(&epoch))?;
        let open_stream = Arc::new(open_stream);
        for stream in 0..num_streams {
            let (shared, open_stream) = (Arc::clone(&shared), Arc::clone(&open_stream));
            workers.spawn(move || drain(shared, stream, open_stream))?;
        }
        Ok(IterStream {
            pool_shared,
            shared,
            delivered: Mutex::new(0),
            timeout: stream.timeout,
            on_timeout: stream.on_timeout,
        })
    }
}

#[pymethods]
impl IterStream {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.pool_shared.check_process()?;
        let Ok(mut delivered) = self.delivered.try_lock() else {
            return Err(PyRuntimeError::new_err(
                "this batch stream is being read by another thread",
            ));
        };
        let shared = &self.shared;
        let deadline = deadline(self.timeout);
        loop {
            if shared.is_closed() {
                if self.pool_shared.is_closed() {
                    wait_out_interpreter_exit(py);
                    return Err(pool_closed_error());
                }
                return Ok(None);
            }
            // Under one lock: a push between take() and reading `changes` would be lost.
            let (taken, seen) = {
                let mut buffers = lock(&shared.buffers);
                (buffers.take(), buffers.changes())
            };
            match taken {
                Take::Batch(_, outcome) => {
                    *delivered += 1;
                    shared.changed.notify_all(); // a drain task may wait for room
                    return deliver(outcome);
                }
                Take::End => {
                    shared.closed.store(true, Ordering::SeqCst);
                    return Ok(None);
                }
                Take::Wait => {}
            }
            // Wait for a change, then look again: which stream is due is decided by take().
            let arrived = wait_for(py, &shared.buffers, &shared.changed, deadline, |b| {
                b.changes() != seen || shared.is_closed()
            })?;
            if !arrived {
                Epoch::close(&**shared);
                let args = PyTuple::new(py, [*delivered])?;
                let error = attach::call(py, self.on_timeout.bind(py), args.as_any())?;
                return Err(PyErr::from_value(error));
            }
        }
    }

    fn close(&self) {
        Epoch::close(&*self.shared);
    }
}

impl Drop for IterStream {
    fn drop(&mut self) {
        Epoch::close(&*self.shared);
    }
}
