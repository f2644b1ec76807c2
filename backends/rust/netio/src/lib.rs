//! The reads of `dataloader_api.io` natively: each item's bytes from a file, an
//! HTTP(S) URL or an S3-compatible store, many in flight on one runtime, with
//! the reference's retry policy. No Python here: the pyo3 side converts.

mod buffers;
mod client;
mod connections;
mod failure;
mod files;
mod host_limit;
mod http;
mod redirect;
mod retry;
mod runtime;
mod send_failure;
mod shard_bytes;
mod stall;
mod start_order;
mod store;
mod stream;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use futures::future::{join_all, select, Either};
use tokio::sync::{Notify, Semaphore};

pub use buffers::BufferPool;
pub use failure::{Failure, FailureKind};
pub use retry::RetryPolicy;
use start_order::{in_order, StartOrder};
pub use stream::StreamBuffer;

/// Where items come from, with that source's options (as the Python side gives them).
pub enum Source {
    Files { max_bytes: Option<u64> },
    Http(http::HttpOptions),
    S3(store::S3Options),
}

pub use http::HttpOptions;
pub use store::S3Options;

/// What a read did, for the dataset's counters.
#[derive(Default, Debug)]
pub struct Counters {
    pub requests: AtomicU64,
    pub retries: AtomicU64,
    pub redirects: AtomicU64,
    pub bytes: AtomicU64,
    /// Connections opened (`connections::CountConnects`).
    pub connections: AtomicU64,
}

enum Engine {
    Files { max_bytes: Option<u64> },
    Http(http::HttpReader),
    S3(store::S3Reader),
}

/// Jobs of files read at once when no concurrency is given (each takes a thread
/// of the runtime's blocking pool while the system reads its files in turn).
const FILE_READS: usize = 16;

struct Inner {
    engine: Engine,
    limit: Semaphore,
    counters: Arc<Counters>,
    buffers: Arc<BufferPool>,
    order: Arc<StartOrder>,
}

/// A source opened for reading: its client (connection pool) and the limit on
/// reads in flight, shared by every thread and epoch that reads through it.
pub struct Reader {
    inner: Arc<Inner>,
}

impl Reader {
    /// `concurrency`: reads in flight at most, over all threads (None: the source's
    /// connection limit; for files, 16).
    pub fn open(source: Source, concurrency: Option<usize>) -> Result<Reader, String> {
        let counters = Arc::new(Counters::default());
        let buffers = Arc::new(BufferPool::default());
        let (engine, default) = match source {
            Source::Files { max_bytes } => (Engine::Files { max_bytes }, FILE_READS),
            Source::Http(options) => {
                let limit = options.max_connections;
                let reader = http::HttpReader::new(options, counters.clone(), buffers.clone())?;
                (Engine::Http(reader), limit)
            }
            Source::S3(options) => {
                let limit = options.max_connections;
                let _guard = runtime::get().enter(); // the store's client is made here
                (
                    Engine::S3(store::S3Reader::new(options, counters.clone())?),
                    limit,
                )
            }
        };
        // A network source never has more reads in flight than its connections.
        let permits = match (&engine, concurrency) {
            (Engine::Files { .. }, Some(n)) => n,
            (_, Some(n)) => n.min(default),
            (_, None) => default,
        }
        .clamp(1, Semaphore::MAX_PERMITS);
        let limit = Semaphore::new(permits);
        Ok(Reader {
            inner: Arc::new(Inner {
                engine,
                limit,
                counters,
                buffers,
                order: Arc::default(),
            }),
        })
    }

    pub fn counters(&self) -> &Counters {
        &self.inner.counters
    }

    /// Close the idle keep-alive connections (an epoch closed); the next read
    /// opens new ones.
    pub fn close_idle(&self) {
        if let Engine::Http(reader) = &self.inner.engine {
            reader.close_idle();
        }
    }

    /// Where a caller returns an item's buffer once it has copied the bytes out.
    pub fn buffers(&self) -> Arc<BufferPool> {
        self.inner.buffers.clone()
    }

    /// Start reading `locations` on the runtime now; `Pending::wait` gives each
    /// one's bytes, in order. A location is bytes: a file's path as the system
    /// takes it (any bytes on Unix), a URL or key in UTF-8. Setting `cancel` ends
    /// the reads still running (their connections close) and fails them as
    /// cancelled. Jobs take their turns in the order they were started (`start_order`).
    pub fn start(&self, locations: Vec<Vec<u8>>, cancel: Arc<Cancel>) -> Arc<Pending> {
        let pending = Arc::new(Pending::default());
        let done = pending.clone();
        let inner = self.inner.clone();
        let ticket = inner.order.ticket();
        runtime::get().spawn(async move {
            let reads = in_order(ticket, inner.read_job(&locations, &cancel));
            let results = match select(Box::pin(reads), Box::pin(cancel.wait())).await {
                Either::Left((results, _)) => results,
                Either::Right(_) => (0..locations.len())
                    .map(|_| Err(Failure::new(FailureKind::Cancelled, "the epoch was closed")))
                    .collect(),
            };
            for bytes in results.iter().flatten() {
                inner
                    .counters
                    .bytes
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
            }
            done.finish(results);
        });
        pending
    }
}

impl Reader {
    /// Start reading one object (a tar shard) into `buffer` as it arrives, with one
    /// request that a retry resumes where it was cut (`stream`). Local files are
    /// not streamed: a sample of one is a read of its own.
    pub fn stream(&self, location: Vec<u8>, buffer: Arc<StreamBuffer>, cancel: Arc<Cancel>) {
        let inner = self.inner.clone();
        let ticket = inner.order.ticket();
        runtime::get().spawn(async move {
            let read = in_order(ticket, inner.stream_one(&location, &buffer));
            let outcome = match select(Box::pin(read), Box::pin(cancel.wait())).await {
                Either::Left((outcome, _)) => outcome,
                Either::Right(_) => Err(Failure::new(
                    FailureKind::Cancelled,
                    "the read was cancelled",
                )),
            };
            match outcome {
                Ok(()) => {
                    let size = buffer.size();
                    inner.counters.bytes.fetch_add(size, Ordering::Relaxed);
                }
                Err(failure) => buffer.fail(failure),
            }
        });
    }
}

impl Inner {
    async fn stream_one(&self, location: &[u8], buffer: &StreamBuffer) -> Result<(), Failure> {
        let Ok(location) = std::str::from_utf8(location) else {
            return Err(Failure::new(FailureKind::Invalid, "is not valid UTF-8"));
        };
        let _permit = self.limit.acquire().await.expect("never closed");
        match &self.engine {
            Engine::Files { .. } => Err(Failure::new(
                FailureKind::Invalid,
                "is a local file: its samples are read where they are, not streamed",
            )),
            Engine::Http(reader) => reader.get_into(location, Some(buffer)).await.map(drop),
            Engine::S3(reader) => {
                self.counters.requests.fetch_add(1, Ordering::Relaxed);
                reader.stream(location, buffer).await
            }
        }
    }

    async fn read_job(&self, locations: &[Vec<u8>], cancel: &Arc<Cancel>) -> Results {
        let Engine::Files { max_bytes } = &self.engine else {
            return join_all(locations.iter().map(|location| self.read_one(location))).await;
        };
        // Files: one blocking task per job reads its files in turn (a page-cache hit
        // costs less than a thread hand-off per file); the jobs of the window run
        // side by side, at most `limit` at once.
        let _permit = self.limit.acquire().await.expect("never closed");
        let (paths, max_bytes, cancel) = (locations.to_vec(), *max_bytes, cancel.clone());
        let buffers = self.buffers.clone();
        self.counters
            .requests
            .fetch_add(paths.len() as u64, Ordering::Relaxed);
        tokio::task::spawn_blocking(move || {
            paths
                .iter()
                .map(|path| match cancel.is_set() {
                    true => Err(Failure::new(FailureKind::Cancelled, "the epoch was closed")),
                    false => files::read(path, max_bytes, &buffers),
                })
                .collect()
        })
        .await
        .unwrap_or_else(|e| {
            let failure = Failure::new(FailureKind::Os, e.to_string());
            vec![Err(failure); locations.len()]
        })
    }

    async fn read_one(&self, location: &[u8]) -> Result<Vec<u8>, Failure> {
        let Ok(location) = std::str::from_utf8(location) else {
            return Err(Failure::new(FailureKind::Invalid, "is not valid UTF-8"));
        };
        let _permit = self.limit.acquire().await.expect("never closed");
        match &self.engine {
            Engine::Files { .. } => unreachable!("read_job reads files"),
            Engine::Http(reader) => reader.get(location).await,
            Engine::S3(reader) => {
                self.counters.requests.fetch_add(1, Ordering::Relaxed);
                reader.get(location).await
            }
        }
    }
}

type Results = Vec<Result<Vec<u8>, Failure>>;

/// The reads of one job, started; `wait` blocks until they have all ended.
#[derive(Default)]
pub struct Pending {
    results: Mutex<Option<Results>>,
    ready: Condvar,
}

impl Pending {
    fn finish(&self, results: Results) {
        *self.results.lock().unwrap_or_else(|e| e.into_inner()) = Some(results);
        self.ready.notify_all();
    }

    /// The results (once: a second call gets an empty list).
    pub fn wait(&self) -> Results {
        let mut slot = self.results.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(results) = slot.take() {
                return results;
            }
            slot = self.ready.wait(slot).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Set when an epoch closes: its reads in progress end at once.
#[derive(Default)]
pub struct Cancel {
    set: AtomicBool,
    notify: Notify,
}

impl Cancel {
    pub fn cancel(&self) {
        self.set.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }

    async fn wait(&self) {
        let notified = self.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable(); // registered before the check: no wake-up is lost
        if !self.is_set() {
            notified.await;
        }
    }
}
