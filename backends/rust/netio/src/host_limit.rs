//! How many requests one host gets at once: the rules of
//! `dataloader_api/io/_host_limit.py` (read its docstring for why).
//!
//! A host starts at `START` requests (or at what this process learned of it:
//! `LEARNED`), one more per reply up to the ceiling (doubling each round
//! trip), halved once per burst on a drop, then one more per round trip, never
//! past one below the limit a drop came at (`cap`) until `PROBE` replies came
//! without one. A drop is a connect that stalled (`stall::StallLayer`), or
//! `DROPS` of the last `WINDOW` replies far beyond the median (slower than
//! `STALL_FACTOR` times it and than `STALL`), each while the host had all the
//! limit allows (not an epoch's last replies): a latency tail never halves it.
//! It grows only while connects stay near the fastest (`stall::ConnectTimes`),
//! and not on replies to requests sent before the last drop.
//! Turns go first come, first served, as there: a later batch's request never
//! takes a turn an earlier one waits for.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use tokio::sync::Notify;

const START: f64 = 8.0;
const STALL: f64 = 0.75;
pub(crate) const STALL_FACTOR: f64 = 8.0;
pub(crate) const CONNECT_STALL: f64 = 0.2;
/// Replies the typical one is the median of; this many of them far beyond it: drops.
const WINDOW: usize = 64;
const DROPS: usize = 8;
/// Replies without a drop before the limit may pass the cap a drop set, one at a time.
const PROBE: u32 = 256;

/// A host's (limit, threshold, cap), as learned.
type Learned = (f64, f64, f64);

/// Each host's state learned in this process, by "host:port".
static LEARNED: LazyLock<Mutex<HashMap<String, Learned>>> = LazyLock::new(Default::default);

struct State {
    limit: f64,
    threshold: f64,
    cap: f64,
    in_flight: usize,
    /// The last `WINDOW` reply times (seconds), and which were far beyond the median.
    replies: VecDeque<f64>,
    far: VecDeque<bool>,
    since_cut: u32,
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
    /// The key of `LEARNED` (None: learn nothing, as in the unit tests).
    host: Option<String>,
    state: Mutex<State>,
}

impl HostLimit {
    pub fn new(ceiling: usize, host: Option<String>) -> HostLimit {
        let ceiling = ceiling.max(1) as f64;
        let fresh = (START, f64::INFINITY, f64::INFINITY);
        let (limit, threshold, cap) = match &host {
            Some(host) => *learned().get(host).unwrap_or(&fresh),
            None => fresh,
        };
        HostLimit {
            ceiling,
            host,
            state: Mutex::new(State {
                limit: limit.min(ceiling),
                threshold,
                cap,
                in_flight: 0,
                replies: VecDeque::with_capacity(WINDOW),
                far: VecDeque::with_capacity(WINDOW),
                since_cut: 0,
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

    /// A request that started at `started` ended; its headers came at `replied`;
    /// `near`: the reader's last connect took about what its fastest did.
    pub fn release(&self, started: Instant, replied: Option<Instant>, near: bool) {
        let mut state = self.lock();
        state.in_flight -= 1;
        if let Some(replied) = replied {
            let seconds = replied.duration_since(started).as_secs_f64();
            self.measure(&mut state, started, seconds, near);
        }
        state.wake();
    }

    /// A connect of the request that started at `started` stalled (`first`: its
    /// first attempt's).
    pub fn stalled(&self, started: Instant, first: bool) {
        let mut state = self.lock();
        if !self.cut(&mut state, started) && first {
            // One more request than the host takes, in the burst the last cut began.
            state.cap = (state.cap - 1.0).max(1.0);
            state.limit = state.limit.min(state.cap);
            state.threshold = state.threshold.min(state.limit);
            self.learn(&state);
        }
    }

    fn measure(&self, state: &mut State, started: Instant, seconds: f64, near: bool) {
        let typical = match state.replies.len() >= 8 {
            true => {
                let mut sorted = [0.0; WINDOW];
                let sorted = &mut sorted[..state.replies.len()];
                for (slot, &seconds) in sorted.iter_mut().zip(&state.replies) {
                    *slot = seconds;
                }
                let middle = sorted.len() / 2;
                Some(*sorted.select_nth_unstable_by(middle, f64::total_cmp).1)
            }
            false => None,
        };
        let far = typical.is_some_and(|t| seconds > STALL && seconds > STALL_FACTOR * t);
        push(&mut state.replies, seconds);
        // Only while the host is given all it may take: a drop comes from pushing it,
        // and the slow replies left when an epoch drains are its tail, not drops.
        let pushed = !state.waiters.is_empty() || state.in_flight + 1 >= state.limit as usize;
        push(&mut state.far, far && pushed);
        if far {
            if state.far.iter().filter(|&&f| f).count() >= DROPS {
                self.cut(state, started);
            }
            return; // a tail: neither a drop nor a reason to grow
        }
        state.since_cut += 1;
        if state.since_cut >= PROBE && state.cap < self.ceiling {
            state.cap += 1.0; // the server may take more now
            state.since_cut = 0;
        }
        if !near || state.last_cut.is_some_and(|last| started < last) {
            return; // a connect slowed down, or sent before the last drop: no growth
        }
        let before = state.limit.floor();
        let step = match state.limit < state.threshold {
            true => 1.0,
            false => 1.0 / state.limit,
        };
        let grown = (state.limit + step).min(self.ceiling).min(state.cap);
        state.limit = state.limit.max(grown);
        if state.limit.floor() != before {
            self.learn(state);
        }
    }

    /// Halve the limit, once per burst: not again for requests sent before the
    /// last cut; and never grow past the limit it was dropped at (until `PROBE`).
    /// Whether it cut.
    fn cut(&self, state: &mut State, started: Instant) -> bool {
        if state.last_cut.is_some_and(|last| started < last) {
            return false;
        }
        state.cap = (state.limit.floor() - 1.0).max(1.0);
        state.limit = (state.limit / 2.0).max(1.0);
        state.threshold = state.limit;
        state.last_cut = Some(Instant::now());
        state.far.clear();
        state.since_cut = 0;
        self.learn(state);
        true
    }

    fn learn(&self, state: &State) {
        if let Some(host) = &self.host {
            learned().insert(host.clone(), (state.limit, state.threshold, state.cap));
        }
    }
}

fn learned() -> std::sync::MutexGuard<'static, HashMap<String, Learned>> {
    LEARNED.lock().unwrap_or_else(|e| e.into_inner())
}

fn push<T>(window: &mut VecDeque<T>, value: T) {
    if window.len() == WINDOW {
        window.pop_front();
    }
    window.push_back(value);
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

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;
    use std::pin::pin;
    use std::time::Duration;

    impl HostLimit {
        fn limit_and_cap(&self) -> (f64, f64) {
            let state = self.lock();
            (state.limit, state.cap)
        }
    }

    /// `count` replies that took `millis`, each sent at `sent`.
    fn replies(limit: &HostLimit, sent: Instant, count: usize, millis: u64) {
        for _ in 0..count {
            limit.lock().in_flight += 1;
            limit.release(sent, Some(sent + Duration::from_millis(millis)), true);
        }
    }

    #[test]
    fn a_tail_never_halves_it_a_burst_of_drops_does_once_and_caps_it() {
        let limit = HostLimit::new(64, None);
        let now = Instant::now();
        replies(&limit, now, 24, 20);
        assert_eq!(limit.lock().limit, 32.0); // one more per reply: doubling each round
        limit.lock().in_flight += 64; // the host has all the limit allows
        for _ in 0..20 {
            replies(&limit, now, 1, 1100); // a 1 s tail: 1 reply in 10
            replies(&limit, now, 9, 20);
        }
        assert_eq!(limit.lock().limit, 64.0);
        replies(&limit, now, 64, 20);
        replies(&limit, now, 7, 1100);
        assert_eq!(limit.lock().limit, 64.0);
        replies(&limit, now, 1, 1100); // the 8th far reply in 64: drops
        assert_eq!(limit.limit_and_cap(), (32.0, 63.0));
        replies(&limit, now, 8, 1100); // sent before the cut: the same burst
        assert_eq!(limit.lock().limit, 32.0);
        limit.stalled(Instant::now(), true); // a connect stalled: a new burst
        assert_eq!(limit.limit_and_cap(), (16.0, 31.0));
        limit.stalled(now, true); // another request of that burst: one past what it takes
        limit.stalled(now, false); // and its next attempt: the same request
        assert_eq!(limit.limit_and_cap(), (16.0, 30.0));
    }

    #[test]
    fn after_a_drop_it_stays_below_the_limit_it_came_at_until_probe_replies() {
        let limit = HostLimit::new(64, None);
        replies(&limit, Instant::now(), 2, 20);
        limit.stalled(Instant::now(), true);
        assert_eq!(limit.limit_and_cap(), (5.0, 9.0));
        replies(&limit, Instant::now(), 200, 20);
        assert_eq!(limit.lock().limit, 9.0);
        replies(&limit, Instant::now(), 100, 20); // PROBE replies without a drop
        assert_eq!(limit.lock().limit, 10.0);
    }

    #[test]
    fn slow_replies_while_the_host_has_less_than_the_limit_are_a_tail() {
        let limit = HostLimit::new(64, None); // an epoch drains: its slowest are left
        replies(&limit, Instant::now(), 64, 20);
        replies(&limit, Instant::now(), WINDOW, 1100);
        assert_eq!(limit.lock().limit, 64.0);
    }

    #[test]
    fn a_server_slow_every_time_is_not_a_stall() {
        let limit = HostLimit::new(64, None);
        replies(&limit, Instant::now(), 100, 2000);
        assert_eq!(limit.lock().limit, 64.0);
    }

    #[test]
    fn slow_connects_stop_the_growth_and_a_new_limit_starts_where_one_left_off() {
        let host = Some("learned.test:80".to_string());
        let limit = HostLimit::new(64, host.clone());
        let now = Instant::now();
        limit.lock().in_flight += 1;
        limit.release(now, Some(now + Duration::from_millis(20)), false);
        assert_eq!(limit.lock().limit, START); // the connect was far from the fastest
        replies(&limit, now, 4, 20);
        limit.stalled(Instant::now(), true);
        assert_eq!(HostLimit::new(64, host.clone()).lock().limit, 6.0);
        assert_eq!(HostLimit::new(4, host).lock().limit, 4.0); // within its own ceiling
        assert_eq!(HostLimit::new(64, None).lock().limit, START);
    }

    #[test]
    fn a_turn_goes_to_the_request_that_waited_first_not_to_a_newcomer() {
        let limit = HostLimit::new(1, None);
        let first = limit.acquire().now_or_never().expect("a free turn");
        let mut waiting = pin!(limit.acquire());
        assert!(waiting.as_mut().now_or_never().is_none());
        limit.release(first, None, true);
        // A later request asks before the waiter runs again: it waits its turn.
        assert!(limit.acquire().now_or_never().is_none());
        assert!(waiting.now_or_never().is_some());
        assert_eq!(limit.lock().in_flight, 1);
    }

    #[test]
    fn a_dropped_waiter_leaves_the_queue_or_hands_its_turn_on() {
        let limit = HostLimit::new(1, None);
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
        limit.release(first, None, true); // handed to `handed`, dropped before it ran
        drop(handed);
        assert!(last.now_or_never().is_some());
        let state = limit.lock();
        assert_eq!((state.in_flight, state.waiters.len()), (1, 0));
    }
}
