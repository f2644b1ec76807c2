//! Reads ask for their turns (the reader's limit, then each host's, both first
//! come, first served) in the order their jobs were started. The backend starts
//! jobs in the plan's order, but the runtime may poll a later job's task first:
//! its reads would then take a host's first turns, and the first batch would
//! wait behind the later batches' replies. So a job's task waits until every
//! job started before it has asked, and gives the turn on once its own reads
//! have asked (one poll).

use std::collections::BTreeSet;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use tokio::sync::Notify;

#[derive(Default)]
struct Numbers {
    next: u64,
    waiting: BTreeSet<u64>,
}

/// The jobs of one reader that have not asked for their turns yet.
#[derive(Default)]
pub struct StartOrder {
    numbers: Mutex<Numbers>,
    asked: Notify,
}

impl StartOrder {
    fn lock(&self) -> std::sync::MutexGuard<'_, Numbers> {
        self.numbers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next job's place; take it where the job is started, in order.
    pub fn ticket(self: &Arc<Self>) -> Ticket {
        let mut numbers = self.lock();
        let number = numbers.next;
        numbers.next += 1;
        numbers.waiting.insert(number);
        Ticket {
            order: self.clone(),
            number,
        }
    }
}

/// A job's place; dropped (the job asked, or was cancelled first), it lets the next go.
pub struct Ticket {
    order: Arc<StartOrder>,
    number: u64,
}

impl Ticket {
    async fn turn(&self) {
        loop {
            let asked = self.order.asked.notified();
            let mut asked = pin!(asked);
            asked.as_mut().enable(); // registered before the check: no wake-up is lost
            if self.order.lock().waiting.first() == Some(&self.number) {
                return;
            }
            asked.await;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.order.lock().waiting.remove(&self.number);
        self.order.asked.notify_waiters();
    }
}

/// Run `job` once every job started before `ticket` has asked for its turns, and
/// let the next job go once `job` has been polled once (its reads have asked).
pub async fn in_order<F: Future>(ticket: Ticket, job: F) -> F::Output {
    ticket.turn().await;
    let mut job = pin!(job);
    let first = poll_fn(|cx| Poll::Ready(job.as_mut().poll(cx))).await;
    drop(ticket);
    match first {
        Poll::Ready(output) => output,
        Poll::Pending => job.await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[test]
    fn a_job_waits_for_the_jobs_started_before_it_to_ask() {
        let order = Arc::new(StartOrder::default());
        let (first, second) = (order.ticket(), order.ticket());
        let mut later = pin!(in_order(second, async { "second" }));
        assert_eq!(later.as_mut().now_or_never(), None); // polled first, it waits
        assert_eq!(
            in_order(first, async { "first" }).now_or_never(),
            Some("first")
        );
        assert_eq!(later.now_or_never(), Some("second"));
    }

    #[test]
    fn a_job_dropped_before_its_turn_does_not_hold_up_the_next() {
        let order = Arc::new(StartOrder::default());
        let (cancelled, next) = (order.ticket(), order.ticket());
        drop(cancelled);
        assert_eq!(in_order(next, async { 1 }).now_or_never(), Some(1));
    }

    #[test]
    fn the_turn_passes_on_after_one_poll_of_a_job_still_running() {
        let order = Arc::new(StartOrder::default());
        let (first, second) = (order.ticket(), order.ticket());
        let mut running = pin!(in_order(first, futures::future::pending::<()>()));
        assert_eq!(running.as_mut().now_or_never(), None);
        assert_eq!(in_order(second, async { 2 }).now_or_never(), Some(2));
    }
}
