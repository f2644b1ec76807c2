//! The `rust` backend of dataloader-api: see `dataloader_api.contract` for the
//! duties and `backends/rust/README.md` for how they are kept and which file
//! holds what (its room map draws the module graph, which has no cycle).

mod attach;
mod batch_pool;
mod batch_slots;
mod collate;
mod contract;
mod exit_hang;
mod images;
mod index_plan;
mod iter_stream;
mod jpeg_build;
mod map_job;
mod map_stream;
mod netio;
mod pipeline_record;
mod pixel_buffer;
mod pool;
mod pool_shared;
mod wait;

use pyo3::prelude::*;

/// Free-threaded builds: nothing here relies on the GIL (`gil_used = false`).
#[pymodule(gil_used = false)]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    // First, so that what follows, which pyo3 may detach in, is covered too.
    module.add("EXIT_THREADS", exit_hang::install(module.py()))?;
    module.add_class::<pool::Pool>()?;
    module.add_class::<map_stream::MapStream>()?;
    module.add_class::<iter_stream::IterStream>()?;
    module.add_function(wrap_pyfunction!(pool_shared::drain_at_exit, module)?)?;
    module.add_class::<pixel_buffer::PixelBuffer>()?;
    module.add_function(wrap_pyfunction!(images::run_pipeline, module)?)?;
    module.add_function(wrap_pyfunction!(pipeline_record::pipeline_ops, module)?)?;
    module.add_function(wrap_pyfunction!(pipeline_record::pipeline_fields, module)?)?;
    module.add("JPEG_SIMD", dataloader_imaging::JPEG_SIMD)?;
    module.add("WITHOUT_SIMD", jpeg_build::WITHOUT_SIMD)?;
    module.add_class::<netio::NativeReader>()?;
    module.add_class::<netio::ReadCancel>()?;
    module.add_class::<netio::PendingRead>()?;
    module.add_class::<netio::NativeStream>()?;
    Ok(())
}
