//! How many requests one host gets at once, and connects that stall: the rules
//! of `dataloader_api/io/_host_limit.py` (read its docstring for why).
//!
//! A host starts at `START` requests, one more per reply up to the ceiling
//! (doubling each round trip), halved once per burst when a reply stalls
//! (slower than `STALL_FACTOR` times the fastest and than `STALL`), then one
//! more per round trip. A connect slower than `STALL_FACTOR` times the
//! fastest (and `CONNECT_STALL`) is a SYN the server dropped: `StallLayer`
//! fails it at once with `SlowConnect`, and the request connects again.
//! Turns go first come, first served, as there: a later batch's request never
//! takes a turn an earlier one waits for.

use std::collections::VecDeque;
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tower_layer::Layer;
use tower_service::Service;

const START: f64 = 8.0;
const STALL: f64 = 0.75;
const STALL_FACTOR: f64 = 8.0;
const CONNECT_STALL: f64 = 0.2;

struct State {
    limit: f64,
    threshold: f64,
    in_flight: usize,
    fastest: f64,
    last_cut: Option<Instant>,
    waiters: VecDeque<Arc<Waiter>>,
}

/// A request waiting for a turn; `granted` is set, under the state's lock, when
/// `wake` hands it one (already counted in `in_flight`).
#[derive(Default)]
struct Waiter {
    granted: AtomicBool,
    notify: Notify,
}

/// One host's adaptive limit on requests in flight.
pub struct HostLimit {
    ceiling: f64,
    state: Mutex<State>,
}

impl HostLimit {
    pub fn new(ceiling: usize) -> HostLimit {
        let ceiling = ceiling.max(1) as f64;
        HostLimit {
            ceiling,
            state: Mutex::new(State {
                limit: START.min(ceiling),
                threshold: ceiling,
                in_flight: 0,
                fastest: f64::INFINITY,
                last_cut: None,
                waiters: VecDeque::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait for a turn, after every request that asked before; the instant it
    /// started (give it back to `release`).
    pub async fn acquire(&self) -> Instant {
        let waiter = {
            let mut state = self.lock();
            if state.waiters.is_empty() && state.has_room() {
                state.in_flight += 1;
                return Instant::now();
            }
            let waiter = Arc::new(Waiter::default());
            state.waiters.push_back(waiter.clone());
            waiter
        };
        let mut queued = Queued {
            limit: self,
            waiter,
            taken: false,
        };
        // notify_one keeps a wake-up given before this waits: none is lost.
        while !queued.waiter.granted.load(Ordering::Acquire) {
            queued.waiter.notify.notified().await;
        }
        queued.taken = true;
        Instant::now()
    }

    /// A request that started at `started` ended; its headers came at `replied`.
    pub fn release(&self, started: Instant, replied: Option<Instant>) {
        let mut state = self.lock();
        state.in_flight -= 1;
        if let Some(replied) = replied {
            let seconds = replied.duration_since(started).as_secs_f64();
            let stalled = seconds > STALL && seconds > STALL_FACTOR * state.fastest;
            state.fastest = state.fastest.min(seconds);
            if stalled {
                cut(&mut state, started);
            } else if state.limit < state.threshold {
                state.limit = (state.limit + 1.0).min(self.ceiling);
            } else {
                state.limit = (state.limit + 1.0 / state.limit).min(self.ceiling);
            }
        }
        state.wake();
    }

    /// A connect of the request that started at `started` stalled.
    pub fn stalled(&self, started: Instant) {
        cut(&mut self.lock(), started);
    }
}

/// A waiting `acquire`, dropped if the request is (an epoch closed): it leaves
/// the queue, or gives on the turn it was handed.
struct Queued<'a> {
    limit: &'a HostLimit,
    waiter: Arc<Waiter>,
    taken: bool,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if self.taken {
            return;
        }
        let mut state = self.limit.lock();
        if self.waiter.granted.load(Ordering::Acquire) {
            state.in_flight -= 1;
            state.wake();
        } else {
            state.waiters.retain(|w| !Arc::ptr_eq(w, &self.waiter));
        }
    }
}

impl State {
    fn has_room(&self) -> bool {
        (self.in_flight as f64) < self.limit.floor()
    }

    /// Hand the free turns to the waiters, in the order they asked.
    fn wake(&mut self) {
        while self.has_room() {
            let Some(waiter) = self.waiters.pop_front() else {
                return;
            };
            self.in_flight += 1;
            waiter.granted.store(true, Ordering::Release);
            waiter.notify.notify_one();
        }
    }
}

/// Halve the limit, once per burst: not again for requests sent before the last cut.
fn cut(state: &mut State, started: Instant) {
    if state.last_cut.is_none_or(|last| started >= last) {
        state.limit = (state.limit / 2.0).max(1.0);
        state.threshold = state.limit;
        state.last_cut = Some(Instant::now());
    }
}

/// The fastest connect so far, over a reader's hosts.
#[derive(Default)]
pub struct ConnectTimes {
    fastest: Mutex<Option<Duration>>,
}

impl ConnectTimes {
    fn deadline(&self) -> Option<Duration> {
        let fastest = *self.fastest.lock().unwrap_or_else(|e| e.into_inner());
        fastest.map(|f| Duration::from_secs_f64(CONNECT_STALL.max(STALL_FACTOR * f.as_secs_f64())))
    }

    fn connected(&self, took: Duration) {
        let mut fastest = self.fastest.lock().unwrap_or_else(|e| e.into_inner());
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

/// reqwest's connector, with each connect timed against `ConnectTimes`.
#[derive(Clone, Default)]
pub struct StallLayer {
    pub times: Arc<ConnectTimes>,
}

impl<S> Layer<S> for StallLayer {
    type Service = Stall<S>;

    fn layer(&self, inner: S) -> Stall<S> {
        Stall {
            inner,
            times: self.times.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Stall<S> {
    inner: S,
    times: Arc<ConnectTimes>,
}

impl<S, R> Service<R> for Stall<S>
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
        let (deadline, times) = (self.times.deadline(), self.times.clone());
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
                times.connected(begun.elapsed());
            }
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;
    use std::pin::pin;

    #[test]
    fn grows_each_reply_and_halves_once_per_burst() {
        let limit = HostLimit::new(64);
        let now = Instant::now();
        let fast = Some(now + Duration::from_millis(20));
        for _ in 0..24 {
            limit.lock().in_flight += 1;
            limit.release(now, fast);
        }
        assert_eq!(limit.lock().limit, 32.0);
        let slow = Some(now + Duration::from_millis(1100));
        limit.lock().in_flight += 2;
        limit.release(now, slow);
        assert_eq!(limit.lock().limit, 16.0);
        limit.release(now, slow); // sent before the cut: the same burst
        assert_eq!(limit.lock().limit, 16.0);
    }

    #[test]
    fn a_server_slow_every_time_is_not_a_stall() {
        let limit = HostLimit::new(64);
        let now = Instant::now();
        for _ in 0..100 {
            limit.lock().in_flight += 1;
            limit.release(now, Some(now + Duration::from_secs(2)));
        }
        assert_eq!(limit.lock().limit, 64.0);
    }

    #[test]
    fn a_turn_goes_to_the_request_that_waited_first_not_to_a_newcomer() {
        let limit = HostLimit::new(1);
        let first = limit.acquire().now_or_never().expect("a free turn");
        let mut waiting = pin!(limit.acquire());
        assert!(waiting.as_mut().now_or_never().is_none());
        limit.release(first, None);
        // A later request asks before the waiter runs again: it waits its turn.
        assert!(limit.acquire().now_or_never().is_none());
        assert!(waiting.now_or_never().is_some());
        assert_eq!(limit.lock().in_flight, 1);
    }

    #[test]
    fn a_dropped_waiter_leaves_the_queue_or_hands_its_turn_on() {
        let limit = HostLimit::new(1);
        let first = limit.acquire().now_or_never().expect("a free turn");
        let mut left = Box::pin(limit.acquire());
        let mut handed = Box::pin(limit.acquire());
        let mut last = pin!(limit.acquire());
        for waiter in [left.as_mut(), handed.as_mut()] {
            assert!(waiter.now_or_never().is_none());
        }
        assert!(last.as_mut().now_or_never().is_none());
        drop(left); // an epoch closed while it waited
        assert_eq!(limit.lock().waiters.len(), 2);
        limit.release(first, None); // handed to `handed`, dropped before it ran
        drop(handed);
        assert!(last.now_or_never().is_some());
        let state = limit.lock();
        assert_eq!((state.in_flight, state.waiters.len()), (1, 0));
    }

    #[test]
    fn connect_deadline_follows_the_fastest_connect() {
        let times = ConnectTimes::default();
        assert_eq!(times.deadline(), None);
        times.connected(Duration::from_micros(100));
        assert_eq!(
            times.deadline(),
            Some(Duration::from_secs_f64(CONNECT_STALL))
        );
        let error: BoxError = Box::new(SlowConnect);
        assert!(is_slow_connect(error.as_ref()));
    }
}
