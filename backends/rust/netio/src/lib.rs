//! The reads of `dataloader_api.io` natively: each item's bytes from a file, an
//! HTTP(S) URL or an S3-compatible store, many in flight on one runtime, with
//! the reference's retry policy. No Python here: the pyo3 side converts.

mod failure;
mod files;
mod http;
mod retry;
mod runtime;
mod store;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use futures::future::{join_all, select, Either};
use tokio::sync::{Notify, Semaphore};

pub use failure::{Failure, FailureKind};
pub use retry::RetryPolicy;

/// Where items come from, with that source's options (as the Python side gives them).
pub enum Source {
    Files { max_bytes: Option<u64> },
    Http(http::HttpOptions),
    S3(store::S3Options),
}

pub use http::HttpOptions;
pub use store::S3Options;

/// What a read did, for the dataset's counters.
#[derive(Default)]
pub struct Counters {
    pub requests: AtomicU64,
    pub retries: AtomicU64,
    pub bytes: AtomicU64,
}

enum Engine {
    Files { max_bytes: Option<u64> },
    Http(http::HttpReader),
    S3(store::S3Reader),
}

/// A source opened for reading: its client (connection pool) and the limit on
/// reads in flight, shared by every thread that reads through it.
pub struct Reader {
    engine: Engine,
    limit: Arc<Semaphore>,
    pub counters: Arc<Counters>,
}

impl Reader {
    /// `concurrency`: reads in flight at most, over all threads (None: the source's
    /// connection limit).
    pub fn open(source: Source, concurrency: Option<usize>) -> Result<Reader, String> {
        let counters = Arc::new(Counters::default());
        let (engine, connections) = match source {
            Source::Files { max_bytes } => (Engine::Files { max_bytes }, usize::MAX),
            Source::Http(options) => {
                let limit = options.max_connections;
                (
                    Engine::Http(http::HttpReader::new(options, counters.clone())?),
                    limit,
                )
            }
            Source::S3(options) => {
                let limit = options.max_connections;
                let _guard = runtime::get().enter(); // the store's client is made here
                (Engine::S3(store::S3Reader::new(options)?), limit)
            }
        };
        let permits = concurrency
            .unwrap_or(connections)
            .min(connections)
            .min(Semaphore::MAX_PERMITS);
        Ok(Reader {
            engine,
            limit: Arc::new(Semaphore::new(permits.max(1))),
            counters,
        })
    }

    /// The bytes of each location, in order; blocks the calling thread (which
    /// should not hold the interpreter) until every read has ended, or until
    /// `cancel` is set (the reads still running are dropped: their connections close).
    pub fn read_all(&self, locations: &[String], cancel: &Cancel) -> Vec<Result<Vec<u8>, Failure>> {
        let results = match &self.engine {
            Engine::Files { max_bytes } => locations
                .iter()
                .map(|path| match cancel.is_set() {
                    true => Err(Failure::new(FailureKind::Cancelled, "the epoch was closed")),
                    false => files::read(path, *max_bytes),
                })
                .collect(),
            Engine::Http(reader) => self.run(
                locations.len(),
                cancel,
                join_all(locations.iter().map(|url| async move {
                    let _permit = self.limit.acquire().await.expect("never closed");
                    reader.get(url).await
                })),
            ),
            Engine::S3(reader) => self.run(
                locations.len(),
                cancel,
                join_all(locations.iter().map(|key| async move {
                    let _permit = self.limit.acquire().await.expect("never closed");
                    self.counters.requests.fetch_add(1, Ordering::Relaxed);
                    reader.get(key).await
                })),
            ),
        };
        for bytes in results.iter().flatten() {
            self.counters
                .bytes
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        results
    }

    fn run(
        &self,
        count: usize,
        cancel: &Cancel,
        reads: impl Future<Output = Vec<Result<Vec<u8>, Failure>>>,
    ) -> Vec<Result<Vec<u8>, Failure>> {
        runtime::get().block_on(async {
            match select(Box::pin(reads), Box::pin(cancel.wait())).await {
                Either::Left((results, _)) => results,
                Either::Right(_) => (0..count)
                    .map(|_| Err(Failure::new(FailureKind::Cancelled, "the epoch was closed")))
                    .collect(),
            }
        })
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
