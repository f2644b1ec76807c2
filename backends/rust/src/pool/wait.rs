//! How a consumer waits for its batch: detached, in slices that let signals
//! through, with the epoch's timeout, and past interpreter exit.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::interp::attach;
use crate::pool::pool_shared::lock;

/// The consumer checks for signals (KeyboardInterrupt) at least this often.
const WAIT_SLICE: Duration = Duration::from_millis(20);
/// How long the consumer spins before it sleeps on the condition variable.
const SPIN: Duration = Duration::from_micros(50);
/// How long a consumer with its batch ready spins for the GIL to look free.
const SETTLE: Duration = Duration::from_micros(20);

/// A consumer on a thread other than the exiting one, whose pool the exit hook
/// closed, waits, detached, until the process ends, like any daemon thread:
/// raising into user code (or ending its loop early) while the interpreter
/// shuts down would run user code. Runs no Python code to decide.
pub fn wait_out_interpreter_exit(py: Python<'_>) {
    if attach::exit_started_elsewhere() {
        attach::detached(py, || loop {
            std::thread::park();
        });
    }
}

/// When a wait of `timeout` that starts now gives up; `None` (never) also for
/// a timeout so long that the instant cannot be represented.
pub fn deadline(timeout: Option<Duration>) -> Option<Instant> {
    timeout.and_then(|t| Instant::now().checked_add(t))
}

/// When a `join(timeout)` that starts now gives up: `None` for no limit (also
/// for a timeout too long to represent); a negative or NaN timeout is an error.
pub fn deadline_after(timeout: Option<f64>) -> PyResult<Option<Instant>> {
    match timeout {
        None => Ok(None),
        Some(t) if t.is_nan() || t < 0.0 => Err(PyValueError::new_err(format!(
            "timeout should be a non-negative number of seconds or None, but got timeout={t}"
        ))),
        Some(t) => Ok(Duration::try_from_secs_f64(t)
            .ok()
            .and_then(|d| Instant::now().checked_add(d))),
    }
}

/// The next slice of a wait that ends at `deadline`: signals are checked between.
pub fn slice_until(deadline: Option<Instant>) -> Duration {
    match deadline {
        None => WAIT_SLICE,
        Some(deadline) => WAIT_SLICE.min(deadline.saturating_duration_since(Instant::now())),
    }
}

/// The consumer's wait: detached, in slices, checking signals in between.
/// `ready` is evaluated under the epoch's lock. False on timeout.
pub fn wait_for<T>(
    py: Python<'_>,
    state: &Mutex<T>,
    changed: &Condvar,
    deadline: Option<Instant>,
    ready: impl Fn(&T) -> bool + Send + Sync,
) -> PyResult<bool> {
    loop {
        if ready(&lock(state)) {
            return Ok(true);
        }
        let slice = match deadline {
            None => WAIT_SLICE,
            Some(deadline) => {
                let now = Instant::now();
                if now >= deadline {
                    return Ok(false);
                }
                WAIT_SLICE.min(deadline - now)
            }
        };
        attach::detached(py, || {
            // A batch due within microseconds is cheaper to spin for than to sleep for;
            // the spin never yields (see map_stream's LINGER_SPIN).
            // Once ready, also wait (up to SETTLE) for the pool threads to let go of
            // the GIL: re-attaching while one holds it sleeps in CPython's take_gil,
            // and that wake-up costs more than the spin.
            let spin_until = Instant::now() + SPIN;
            let mut ready_since = None;
            loop {
                if ready(&lock(state)) {
                    let since = *ready_since.get_or_insert_with(Instant::now);
                    if attach::gil_looks_free() || since.elapsed() >= SETTLE {
                        return;
                    }
                } else if Instant::now() >= spin_until {
                    break;
                }
                std::hint::spin_loop();
            }
            let guard = lock(state);
            if !ready(&guard) {
                drop(changed.wait_timeout(guard, slice));
            }
        });
        py.check_signals()?;
    }
}
