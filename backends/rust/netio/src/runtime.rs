//! One tokio runtime per process, for every reader: a forked child, whose copy
//! has no threads, makes its own (the parent's copy is leaked, never dropped).

use std::sync::{Arc, Mutex, OnceLock};

use tokio::runtime::{Builder, Runtime};

/// The process that made it, and the runtime.
type Owned = Option<(u32, Arc<Runtime>)>;

static RUNTIME: OnceLock<Mutex<Owned>> = OnceLock::new();

pub fn get() -> Arc<Runtime> {
    let mut slot = RUNTIME
        .get_or_init(|| Mutex::new(None))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    if let Some((owner, runtime)) = slot.as_ref() {
        if *owner == pid {
            return runtime.clone();
        }
    }
    if let Some(inherited) = slot.take() {
        std::mem::forget(inherited); // its threads are in the parent; dropping it would wait for them
    }
    // The reads run here, not on the callers' threads (which only wait): two
    // threads for two cores; files take threads of its blocking pool.
    let runtime = Arc::new(
        Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("dataloader-netio")
            .enable_all()
            .build()
            .expect("a tokio runtime"),
    );
    *slot = Some((pid, runtime.clone()));
    runtime
}
