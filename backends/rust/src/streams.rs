//! The batches of one epoch: `MapStream` (map-style datasets, jobs from the
//! plan) and `IterStream` (iterable datasets, one stream per worker).

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use dataloader_core::{StreamBuffers, Take, Window};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use rayon::prelude::*;

use crate::attach;
use crate::collate::NativeCollate;
use crate::pool::{lock, panic_error, Epoch, Pool, PoolShared};

/// The consumer checks for signals (KeyboardInterrupt) at least this often.
const WAIT_SLICE: Duration = Duration::from_millis(20);
/// How long the consumer spins before it sleeps on the condition variable.
const SPIN: Duration = Duration::from_micros(50);
/// How long a consumer with its batch ready spins for the GIL to look free.
const SETTLE: Duration = Duration::from_micros(20);
/// How long a worker with no job left waits for the consumer's next one.
const LINGER: Duration = Duration::from_millis(5);
/// The first part of LINGER, spent yielding after a job that took at least this
/// long: the workers are then what the consumer waits for, and its next job,
/// due within microseconds, is cheaper to spin for than to be woken for. After
/// shorter jobs the consumer is the bottleneck, and yielding takes its core.
const LINGER_SPIN: Duration = Duration::from_micros(30);
/// A worker waiting for room wakes this often, to notice exit and closing.
const IDLE_WAKE: Duration = Duration::from_millis(200);

type Outcome = PyResult<Py<PyAny>>;

fn pool_closed_error() -> PyErr {
    PyRuntimeError::new_err("the worker pool was closed while this epoch was running")
}

/// A consumer on a non-main thread whose pool the exit hook closed waits, detached,
/// until the process ends, like any daemon thread: raising into user code (or
/// ending its loop early) while the interpreter shuts down would run user code.
fn wait_out_interpreter_exit(py: Python<'_>) {
    if !attach::exiting() {
        return;
    }
    let on_main = py
        .import("threading")
        .and_then(|t| {
            Ok(t.call_method0("current_thread")?
                .is(&t.call_method0("main_thread")?))
        })
        .unwrap_or(true);
    if !on_main {
        attach::detached(py, || loop {
            std::thread::park();
        });
    }
}

fn timeout_of(seconds: Option<f64>) -> PyResult<Option<Duration>> {
    match seconds {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(PyValueError::new_err(format!(
            "timeout must be a positive number of seconds or None, got {s}"
        ))),
    }
}

/// Raise `error` (or return the batch) to the consumer.
fn deliver(outcome: Outcome) -> PyResult<Option<Py<PyAny>>> {
    outcome.map(Some)
}

/// The consumer's wait: detached, in slices, checking signals in between.
/// `ready` is evaluated under the epoch's lock. False on timeout.
fn wait_for<T>(
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
            // A batch due within microseconds is cheaper to spin for than to sleep for.
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
                std::thread::yield_now();
            }
            let guard = lock(state);
            if !ready(&guard) {
                drop(changed.wait_timeout(guard, slice));
            }
        });
        py.check_signals()?;
    }
}

/// The callables a map-style job runs.
pub struct MapJobs {
    pub fetch: Py<PyAny>,
    pub collate: Py<PyAny>,
    /// Set when `collate` is the default collate and may be done natively.
    pub native: Option<Arc<NativeCollate>>,
    /// `collate.record(seconds)` of the loader's timing wrapper, for native collation.
    pub collate_record: Option<Py<PyAny>>,
    /// The dataset's `__getitem__`, when items of a batch are fetched in parallel.
    pub getitem: Option<Py<PyAny>>,
    /// `fetch.record(seconds, items)` of the loader's timing wrapper, for that case.
    pub fetch_record: Option<Py<PyAny>>,
    pub items_in_parallel: usize,
}

/// Call one of the loader's `record` callables; its failure is only reported.
fn report<'py>(py: Python<'py>, record: &Option<Py<PyAny>>, args: PyResult<Bound<'py, PyTuple>>) {
    let Some(record) = record else { return };
    let called = args.and_then(|args| attach::call(py, record.bind(py), args.as_any()));
    if let Err(error) = called {
        error.write_unraisable(py, None);
    }
}

impl MapJobs {
    fn run<'py>(
        &self,
        py: Python<'py>,
        indices: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let samples = match &self.getitem {
            Some(getitem) => {
                let started = Instant::now();
                let samples = self.fetch_in_parallel(py, getitem, indices)?;
                let seconds = started.elapsed().as_secs_f64();
                let items = samples.len()?;
                report(py, &self.fetch_record, (seconds, items).into_pyobject(py));
                samples
            }
            None => {
                let args = PyTuple::new(py, [indices])?;
                attach::call(py, self.fetch.bind(py), args.as_any())?
            }
        };
        match &self.native {
            Some(native) => {
                let started = Instant::now();
                let batch = native.collate(&samples);
                let seconds = started.elapsed().as_secs_f64();
                report(py, &self.collate_record, PyTuple::new(py, [seconds]));
                batch
            }
            None => {
                let args = PyTuple::new(py, [samples])?;
                attach::call(py, self.collate.bind(py), args.as_any())
            }
        }
    }

    /// `[getitem(i) for i in indices]`, items spread over the pool's threads.
    fn fetch_in_parallel<'py>(
        &self,
        py: Python<'py>,
        getitem: &Py<PyAny>,
        indices: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let indices: Vec<Py<PyAny>> = indices
            .try_iter()?
            .map(|i| i.map(Bound::unbind))
            .collect::<PyResult<_>>()?;
        let chunk = indices.len().div_ceil(self.items_in_parallel).max(1);
        let fetched: Vec<Option<PyResult<Vec<Py<PyAny>>>>> = attach::detached(py, || {
            indices
                .par_chunks(chunk)
                .map(|part| {
                    attach::with_python(|py| {
                        part.iter()
                            .map(|index| {
                                let args = PyTuple::new(py, [index.bind(py)])?;
                                Ok(attach::call(py, getitem.bind(py), args.as_any())?.unbind())
                            })
                            .collect()
                    })
                })
                .collect()
        });
        let list = PyList::empty(py);
        for part in fetched {
            let part = part.ok_or_else(|| PyRuntimeError::new_err("the interpreter is exiting"))?;
            for item in part? {
                list.append(item)?;
            }
        }
        Ok(list.into_any())
    }
}

/// Jobs started by the consumer and not yet taken by a worker.
struct JobQueue {
    jobs: VecDeque<(u64, Py<PyAny>)>,
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

    fn pop_job(&self) -> Option<(u64, Py<PyAny>)> {
        lock(&self.queue).jobs.pop_front()
    }

    /// Queue a job for the drainers. True if the caller must start one more.
    fn push_job(&self, job: (u64, Py<PyAny>), max_drainers: usize) -> bool {
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
                std::thread::yield_now();
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
/// lingering saves rayon's idle spin, whose yields take the consumer's core.
fn drain_map_jobs(shared: Arc<MapShared>, fns: Arc<MapJobs>, chain: bool) {
    // How long this drainer's latest job took: it decides how it lingers.
    let mut last_job = Duration::ZERO;
    loop {
        let ran = attach::with_python(|py| {
            while !attach::exiting() {
                let Some((position, indices)) = shared.pop_job() else {
                    break;
                };
                let started = Instant::now();
                run_map_job(py, &shared, &fns, position, indices);
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
            return;
        }
    }
}

fn run_map_job(
    py: Python<'_>,
    shared: &MapShared,
    fns: &MapJobs,
    position: u64,
    indices: Py<PyAny>,
) {
    if shared.is_closed() {
        drop(indices);
        return;
    }
    let ran = catch_unwind(AssertUnwindSafe(|| {
        fns.run(py, indices.bind(py)).map(Bound::unbind)
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
    drop(indices);
}

struct MapConsumer {
    jobs: Option<Py<PyAny>>,
}

/// The batches of one map-style epoch.
#[pyclass(frozen, module = "dataloader_rust._native")]
pub struct MapStream {
    pool: Py<Pool>,
    pool_shared: Arc<PoolShared>,
    shared: Arc<MapShared>,
    fns: Arc<MapJobs>,
    consumer: Mutex<MapConsumer>,
    timeout: Option<Duration>,
    on_timeout: Py<PyAny>,
}

impl MapStream {
    pub fn new(
        pool: Py<Pool>,
        jobs: &Bound<'_, PyAny>,
        fns: MapJobs,
        window: usize,
        in_order: bool,
        timeout: Option<f64>,
        on_timeout: Py<PyAny>,
    ) -> PyResult<Self> {
        let window = Window::new(window, in_order)
            .ok_or_else(|| PyValueError::new_err("window must be at least 1, got 0"))?;
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
        let pool_shared = Arc::clone(pool.get().shared());
        let epoch: Arc<dyn Epoch> = shared.clone();
        pool_shared.track(Arc::downgrade(&epoch))?;
        let jobs = attach::iter(jobs.py(), jobs)?.unbind();
        Ok(MapStream {
            pool,
            pool_shared,
            shared,
            fns: Arc::new(fns),
            consumer: Mutex::new(MapConsumer { jobs: Some(jobs) }),
            timeout: timeout_of(timeout)?,
            on_timeout,
        })
    }

    /// Start jobs while the window has room. Runs on the consumer's thread:
    /// the jobs iterator is the user's sampler.
    fn top_up(&self, py: Python<'_>, consumer: &mut MapConsumer) -> PyResult<()> {
        while let Some(jobs) = &consumer.jobs {
            if !lock(&self.shared.window).has_room() {
                return Ok(());
            }
            let Some(job) = attach::next(py, jobs.bind(py))? else {
                consumer.jobs = None;
                return Ok(());
            };
            let position: u64 = job.getattr(intern!(py, "position"))?.extract()?;
            let indices = job.getattr(intern!(py, "indices"))?.unbind();
            lock(&self.shared.window).start();
            let pool = self.pool.get();
            if self
                .shared
                .push_job((position, indices), pool.num_threads())
            {
                let (shared, fns) = (Arc::clone(&self.shared), Arc::clone(&self.fns));
                let chain = pool.attach_once();
                pool.spawn(move || drain_map_jobs(shared, fns, chain))?;
            }
        }
        Ok(())
    }

    fn end_of_wait(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if self.pool_shared.is_closed() {
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
        self.pool_shared.check_process()?;
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
        let deadline = self.timeout.map(|t| Instant::now() + t);
        let shared = &self.shared;
        let arrived = wait_for(py, &shared.window, &shared.changed, deadline, |w| {
            w.ready() || shared.is_closed()
        })?;
        if !arrived {
            let position = lock(&shared.window).waiting_for();
            consumer.jobs = None;
            Epoch::close(&**shared);
            let error = self.on_timeout.bind(py).call1((position,))?;
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
        if leftover.is_some() {
            attach::with_python(|_| drop(leftover));
            break;
        }
        if finished {
            break;
        }
    }
    if items.is_some() {
        if attach::exiting() {
            std::mem::forget(items);
        } else {
            attach::with_python(|_| drop(items));
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
    pub fn new(
        pool: &Pool,
        open_stream: Py<PyAny>,
        num_streams: usize,
        window: usize,
        in_order: bool,
        timeout: Option<f64>,
        on_timeout: Py<PyAny>,
    ) -> PyResult<Self> {
        if num_streams < 1 {
            return Err(PyValueError::new_err(format!(
                "num_streams must be at least 1, got {num_streams}"
            )));
        }
        let buffers = StreamBuffers::new(num_streams, window, in_order)
            .ok_or_else(|| PyValueError::new_err("window must be at least 1, got 0"))?;
        let shared = Arc::new(IterShared {
            buffers: Mutex::new(buffers),
            changed: Condvar::new(),
            closed: AtomicBool::new(false),
        });
        let pool_shared = Arc::clone(pool.shared());
        let epoch: Arc<dyn Epoch> = shared.clone();
        pool_shared.track(Arc::downgrade(&epoch))?;
        let timeout = timeout_of(timeout)?;
        let open_stream = Arc::new(open_stream);
        for stream in 0..num_streams {
            let (shared, open_stream) = (Arc::clone(&shared), Arc::clone(&open_stream));
            pool.spawn(move || drain(shared, stream, open_stream))?;
        }
        Ok(IterStream {
            pool_shared,
            shared,
            delivered: Mutex::new(0),
            timeout,
            on_timeout,
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
        let deadline = self.timeout.map(|t| Instant::now() + t);
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
                let error = self.on_timeout.bind(py).call1((*delivered,))?;
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
