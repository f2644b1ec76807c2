//! Connections opened, counted as the reference's client counts them
//! (`Counters.connections`): each connect that succeeded, through a proxy too.
//! A connector layer (`stall::WatchLayer`) for the HTTP reader and the S3 client.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::stall::{ConnectWatch, WatchLayer};
use crate::Counters;

impl ConnectWatch for Counters {
    fn deadline(&self) -> Option<Duration> {
        None // counting only: the stall rule is `ConnectTimes`'s
    }

    fn connected(&self, _took: Duration) {
        self.connections.fetch_add(1, Ordering::Relaxed);
    }
}

/// Each connect that succeeded counted in `Counters.connections`.
pub type CountConnects = WatchLayer<Counters>;

impl WatchLayer<Counters> {
    pub fn on(counters: &Arc<Counters>) -> CountConnects {
        WatchLayer {
            watch: counters.clone(),
        }
    }
}
