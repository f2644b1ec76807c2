//! Connects that stall: a connect slower than `STALL_FACTOR` times the
//! fastest (and `CONNECT_STALL`) is a SYN the server dropped; `StallLayer`
//! fails it at once with `SlowConnect`, and the request connects again (the
//! rules of `dataloader_api/io/_host_limit.py`). `ConnectTimes` also says
//! whether the last connect stayed near the fastest: the host limit grows
//! only then (`host_limit`).

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tower_layer::Layer;
use tower_service::Service;

use crate::host_limit::{CONNECT_STALL, STALL_FACTOR};

/// A connect within `NEAR` times the fastest, or `CONNECT_SLACK` more, is near it.
const NEAR: f64 = 4.0;
const CONNECT_SLACK: Duration = Duration::from_millis(2);

/// The fastest connect so far, over a reader's hosts, and whether the last one
/// was near it.
pub struct ConnectTimes {
    fastest: Mutex<Option<Duration>>,
    near: AtomicBool,
}

impl Default for ConnectTimes {
    fn default() -> ConnectTimes {
        ConnectTimes {
            fastest: Mutex::new(None),
            near: AtomicBool::new(true),
        }
    }
}

impl ConnectTimes {
    /// Whether the last connect took about what the fastest did (the limit grows).
    pub fn near(&self) -> bool {
        self.near.load(Ordering::Relaxed)
    }
}

/// What a connector layer (`WatchLayer`) asks before each connect and tells after
/// one that succeeded: the stall rule here, the connection count (`connections`).
pub trait ConnectWatch: Send + Sync + 'static {
    /// How long the next connect may take (None: as long as the system lets it).
    fn deadline(&self) -> Option<Duration>;
    /// A connect succeeded after `took`.
    fn connected(&self, took: Duration);
}

impl ConnectWatch for ConnectTimes {
    fn deadline(&self) -> Option<Duration> {
        let fastest = *self.fastest.lock().unwrap_or_else(|e| e.into_inner());
        fastest.map(|f| Duration::from_secs_f64(CONNECT_STALL.max(STALL_FACTOR * f.as_secs_f64())))
    }

    fn connected(&self, took: Duration) {
        let mut fastest = self.fastest.lock().unwrap_or_else(|e| e.into_inner());
        let near = fastest.is_none_or(|f| took <= (f.mul_f64(NEAR)).max(f + CONNECT_SLACK));
        self.near.store(near, Ordering::Relaxed);
        *fastest = Some(fastest.map_or(took, |f| f.min(took)));
    }
}

/// A connect given up past its deadline (see the module's doc).
#[derive(Debug)]
pub struct SlowConnect;

impl fmt::Display for SlowConnect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the connect stalled (a SYN the server dropped)")
    }
}

impl Error for SlowConnect {}

/// Whether `error` (or a cause of it) is a `SlowConnect`.
pub fn is_slow_connect(error: &(dyn Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if e.is::<SlowConnect>() {
            return true;
        }
        next = e.source();
    }
    false
}

type BoxError = Box<dyn Error + Send + Sync>;

/// reqwest's connector, with each connect watched by `W`.
pub struct WatchLayer<W> {
    pub watch: Arc<W>,
}

/// Each connect timed against `ConnectTimes`.
pub type StallLayer = WatchLayer<ConnectTimes>;

impl<W> Clone for WatchLayer<W> {
    fn clone(&self) -> Self {
        WatchLayer {
            watch: self.watch.clone(),
        }
    }
}

impl<W: Default> Default for WatchLayer<W> {
    fn default() -> Self {
        WatchLayer {
            watch: Arc::default(),
        }
    }
}

impl<S, W> Layer<S> for WatchLayer<W> {
    type Service = Watched<S, W>;

    fn layer(&self, inner: S) -> Watched<S, W> {
        Watched {
            inner,
            watch: self.watch.clone(),
        }
    }
}

pub struct Watched<S, W> {
    inner: S,
    watch: Arc<W>,
}

impl<S: Clone, W> Clone for Watched<S, W> {
    fn clone(&self) -> Self {
        Watched {
            inner: self.inner.clone(),
            watch: self.watch.clone(),
        }
    }
}

impl<S, R, W: ConnectWatch> Service<R> for Watched<S, W>
where
    S: Service<R, Error = BoxError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let (deadline, watch) = (self.watch.deadline(), self.watch.clone());
        let connecting = self.inner.call(request);
        Box::pin(async move {
            let begun = Instant::now();
            let result = match deadline {
                Some(deadline) => match tokio::time::timeout(deadline, connecting).await {
                    Ok(result) => result,
                    Err(_) => return Err(Box::new(SlowConnect) as BoxError),
                },
                None => connecting.await,
            };
            if result.is_ok() {
                watch.connected(begun.elapsed());
            }
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_deadline_follows_the_fastest_connect() {
        let times = ConnectTimes::default();
        assert_eq!(times.deadline(), None);
        times.connected(Duration::from_micros(100));
        assert_eq!(
            times.deadline(),
            Some(Duration::from_secs_f64(CONNECT_STALL))
        );
        assert!(times.near());
        times.connected(Duration::from_millis(50)); // far past 4 x 100 us and 2 ms more
        assert!(!times.near());
        times.connected(Duration::from_micros(300));
        assert!(times.near());
        let error: BoxError = Box::new(SlowConnect);
        assert!(is_slow_connect(error.as_ref()));
    }
}
