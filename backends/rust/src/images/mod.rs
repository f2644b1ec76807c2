//! `dataloader_api.transforms` natively: a job's images transformed without
//! the interpreter (`transform`: `MapWork.images`, `run_pipeline`), the
//! pipeline's record parsed (`pipeline_record`, one row per op), images
//! handed to NumPy without a copy (`pixel_buffer`) or written straight into
//! their batch array (`batch_slots`, arrays reused by `batch_pool`), and how
//! libjpeg-turbo was built, told to Python (`jpeg_build`). Uses `interp` and
//! the crate `dataloader-imaging`.

pub(crate) mod batch_pool;
pub(crate) mod batch_slots;
pub(crate) mod jpeg_build;
pub(crate) mod pipeline_record;
pub(crate) mod pixel_buffer;
pub(crate) mod transform;
