//! The worker pool and its epochs: `Pool` (rayon threads attached once), the
//! map-style stream (`MapStream`: the window, its plan of jobs, what one job
//! runs, native `default_collate`) and the iterable one (`IterStream`), what a
//! pool shares with its threads and the exit hook (`pool_shared`), and the
//! consumer's wait (`wait`). Uses `interp`, `contract` and, for a job's
//! images, `images`.

pub(crate) mod collate;
pub(crate) mod index_plan;
pub(crate) mod iter_stream;
pub(crate) mod map_job;
pub(crate) mod map_stream;
pub(crate) mod pool_shared;
pub(crate) mod rayon_pool;
pub(crate) mod wait;
