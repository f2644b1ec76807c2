//! The batches of one map-style epoch: the consumer starts jobs from the plan
//! while the window has room; up to `num_threads` drainers run them.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use dataloader_core::Window;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::contract::StreamSpec;
use crate::interp::attach;
use crate::pool::index_plan::{Job, Plan};
use crate::pool::map_job::MapJobs;
use crate::pool::pool_shared::{
    deliver, lock, panic_error, pool_closed_error, Epoch, Outcome, Workers,
};
use crate::pool::wait::{deadline, wait_for, wait_out_interpreter_exit};

/// How long a worker with no job left waits for the consumer's next one.
const LINGER: Duration = Duration::from_millis(5);
/// The first part of LINGER, spent spinning after a job that took at least this
/// long: the workers are then what the consumer waits for, and its next job,
/// due within microseconds, is cheaper to spin for than to be woken for. After
/// shorter jobs the consumer is the bottleneck, and spinning takes its core. The
/// spin never yields: on a machine whose cores other processes keep busy, a
/// `sched_yield` gives the core away for a whole time slice.
const LINGER_SPIN: Duration = Duration::from_micros(30);

/// Jobs started by the consumer and not yet taken by a worker.
struct JobQueue {
    jobs: VecDeque<Job>,
    /// Workers draining `jobs`, lingering ones included.
    drainers: usize,
    /// Drainers waiting on `MapShared::queued` for a job.
    lingering: usize,
    /// Wake-ups sent to lingering drainers and not yet taken by one.
    wakes: usize,
}

struct MapShared {
    window: Mutex<Window<Outcome>>,
    changed: Condvar,
    closed: AtomicBool,
    queue: Mutex<JobQueue>,
    queued: Condvar,
    /// How long an idle drainer waits for the next job; zero when jobs spread
    /// their items over the pool, which needs idle threads back in rayon.
    linger: Duration,
}

impl MapShared {
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    fn pop_job(&self) -> Option<Job> {
        lock(&self.queue).jobs.pop_front()
    }

    /// Queue a job for the drainers. True if the caller must start one more.
    fn push_job(&self, job: Job, max_drainers: usize) -> bool {
        let mut queue = lock(&self.queue);
        queue.jobs.push_back(job);
        if queue.lingering > queue.wakes {
            queue.wakes += 1;
            self.queued.notify_one();
            false
        } else if queue.drainers < max_drainers {
            queue.drainers += 1;
            true
        } else {
            false // every drainer is busy and will look at the queue next
        }
    }

    /// Wait, detached, for a job; false (no longer a drainer) after `linger`
    /// without one, or once the epoch is closed.
    fn linger(&self, last_job: Duration) -> bool {
        let start = Instant::now();
        let deadline = start + self.linger;
        if !self.linger.is_zero() && last_job >= LINGER_SPIN {
            while start.elapsed() < LINGER_SPIN {
                if !lock(&self.queue).jobs.is_empty() || self.is_closed() {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        let mut queue = lock(&self.queue);
        loop {
            if !queue.jobs.is_empty() && !self.is_closed() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline || self.is_closed() {
                queue.drainers -= 1;
                return false;
            }
            queue.lingering += 1;
            queue = self
                .queued
                .wait_timeout(queue, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            queue.lingering -= 1;
            queue.wakes = queue.wakes.saturating_sub(1);
        }
    }
}

impl Epoch for MapShared {
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let dropped = lock(&self.window).drain();
        let queued = std::mem::take(&mut lock(&self.queue).jobs);
        self.changed.notify_all();
        self.queued.notify_all();
        drop(dropped);
        drop(queued);
    }
}

/// A worker's share of an epoch: jobs one after another, attached throughout
/// (with attach once), then a short wait for more before it gives its thread
/// back to rayon. Chaining jobs saves a detach and a GIL handoff per batch;
/// lingering saves rayon's idle rounds, which take the consumer's core.
fn drain_map_jobs(shared: Arc<MapShared>, fns: Arc<MapJobs>, chain: bool) {
    // How long this drainer's latest job took: it decides how it lingers.
    let mut last_job = Duration::ZERO;
    loop {
        let ran = attach::with_python(|py| {
            while !attach::exiting() {
                let Some(job) = shared.pop_job() else {
                    break;
                };
                let started = Instant::now();
                run_map_job(py, &shared, &fns, job);
                last_job = started.elapsed();
                if !chain {
                    break;
                }
            }
        });
        if ran.is_none() || attach::exiting() {
            // At exit no pool thread touches Python again, not even to decref.
            std::mem::forget(std::mem::take(&mut lock(&shared.queue).jobs));
            return;
        }
        if !shared.linger(last_job) {
            if Arc::strong_count(&fns) == 1 {
                // The epoch's last holder of its callables (and so of the dataset):
                // drop them attached, so they are freed now and not at pyo3's next
                // reference-pool update, which an idle pool may not see for long.
                attach::with_python(move |_| drop(fns));
            }
            return;
        }
    }
}

fn run_map_job(py: Python<'_>, shared: &MapShared, fns: &MapJobs, job: Job) {
    if shared.is_closed() {
        drop(job);
        return;
    }
    let position = job.position;
    let ran = catch_unwind(AssertUnwindSafe(|| {
        let started = job.started.as_ref().map(|s| s.bind(py));
        fns.run(py, job.indices.bind(py), started)
            .map(Bound::unbind)
    }));
    let outcome = ran.unwrap_or_else(|panic| Err(panic_error(&*panic)));
    let leftover = {
        let mut window = lock(&shared.window);
        if shared.is_closed() {
            Some(outcome)
        } else {
            window.finish(position, outcome);
            None
        }
    };
    shared.changed.notify_all();
    drop(leftover);
    drop(job);
}

struct MapConsumer {
    jobs: Option<Plan>,
}

/// The batches of one map-style epoch.
#[pyclass(frozen, module = "dataloader_rust._native")]
pub struct MapStream {
    /// The `Pool` object, kept alive: dropping it would close this epoch.
    _pool: Py<PyAny>,
    workers: Workers,
    shared: Arc<MapShared>,
    fns: Arc<MapJobs>,
    consumer: Mutex<MapConsumer>,
    timeout: Option<Duration>,
    on_timeout: Py<PyAny>,
}

impl MapStream {
    /// `pool` is the `Pool` object `workers` belong to; `jobs` the plan's `BatchJob`s.
    pub fn new(
        pool: Py<PyAny>,
        workers: Workers,
        jobs: &Bound<'_, PyAny>,
        fns: MapJobs,
        stream: StreamSpec,
    ) -> PyResult<Self> {
        let window = Window::new(stream.window, stream.in_order)
            .ok_or_else(|| PyValueError::new_err("StreamSpec.window must be an int >= 1"))?;
        let shared = Arc::new(MapShared {
            window: Mutex::new(window),
            changed: Condvar::new(),
            closed: AtomicBool::new(false),
            queue: Mutex::new(JobQueue {
                jobs: VecDeque::new(),
                drainers: 0,
                lingering: 0,
                wakes: 0,
            }),
            queued: Condvar::new(),
            linger: if fns.items_in_parallel > 1 {
                Duration::ZERO
            } else {
                LINGER
            },
        });
        let epoch: Arc<dyn Epoch> = shared.clone();
        workers.shared.track(Arc::downgrade(&epoch))?;
        let jobs = Plan::new(jobs.py(), jobs)?;
        Ok(MapStream {
            _pool: pool,
            workers,
            shared,
            fns: Arc::new(fns),
            consumer: Mutex::new(MapConsumer { jobs: Some(jobs) }),
            timeout: stream.timeout,
            on_timeout: stream.on_timeout,
        })
    }

    /// Start jobs while the window has room. Runs on the consumer's thread:
    /// the jobs iterator is the user's sampler.
    fn top_up(&self, py: Python<'_>, consumer: &mut MapConsumer) -> PyResult<()> {
        while let Some(jobs) = &mut consumer.jobs {
            if !lock(&self.shared.window).has_room() {
                return Ok(());
            }
            let Some(job) = jobs.next_job(py)? else {
                consumer.jobs = None;
                return Ok(());
            };
            lock(&self.shared.window).start();
            let workers = &self.workers;
            if self.shared.push_job(job, workers.num_threads) {
                let (shared, fns) = (Arc::clone(&self.shared), Arc::clone(&self.fns));
                let chain = workers.attach_once;
                workers.spawn(move || drain_map_jobs(shared, fns, chain))?;
            }
        }
        Ok(())
    }

    fn end_of_wait(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if self.workers.shared.is_closed() {
            wait_out_interpreter_exit(py);
            Err(pool_closed_error())
        } else {
            Ok(None)
        }
    }
}

#[pymethods]
impl MapStream {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.workers.shared.check_process()?;
        let Ok(mut consumer) = self.consumer.try_lock() else {
            return Err(PyRuntimeError::new_err(
                "this batch stream is being read by another thread",
            ));
        };
        if self.shared.is_closed() {
            return self.end_of_wait(py);
        }
        self.top_up(py, &mut consumer)?;
        if consumer.jobs.is_none() && lock(&self.shared.window).is_idle() {
            Epoch::close(&*self.shared);
            return Ok(None);
        }
        let deadline = deadline(self.timeout);
        let shared = &self.shared;
        let arrived = wait_for(py, &shared.window, &shared.changed, deadline, |w| {
            w.ready() || shared.is_closed()
        })?;
        if !arrived {
            let position = lock(&shared.window).waiting_for();
            consumer.jobs = None;
            Epoch::close(&**shared);
            let args = PyTuple::new(py, [position])?;
            let error = attach::call(py, self.on_timeout.bind(py), args.as_any())?;
            return Err(PyErr::from_value(error));
        }
        let taken = lock(&shared.window).take();
        let Some((_, outcome)) = taken else {
            return self.end_of_wait(py);
        };
        self.top_up(py, &mut consumer)?;
        deliver(outcome)
    }

    fn close(&self) {
        if let Ok(mut consumer) = self.consumer.try_lock() {
            consumer.jobs = None;
        }
        Epoch::close(&*self.shared);
    }
}

impl Drop for MapStream {
    fn drop(&mut self) {
        Epoch::close(&*self.shared);
    }
}
