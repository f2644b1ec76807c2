//! The `rust` backend of dataloader-api: see `dataloader_api.contract` for the
//! duties and `backends/rust/README.md` for how they are kept and which file
//! holds what (its room map draws the module graph, which has no cycle).

mod contract;
mod images;
mod interp;
mod io;
mod pool;

use pyo3::prelude::*;

/// Free-threaded builds: nothing here relies on the GIL (`gil_used = false`).
#[pymodule(gil_used = false)]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    // First, so that what follows, which pyo3 may detach in, is covered too.
    module.add("EXIT_THREADS", interp::exit_hang::install(module.py()))?;
    module.add_class::<pool::rayon_pool::Pool>()?;
    module.add_class::<pool::map_stream::MapStream>()?;
    module.add_class::<pool::iter_stream::IterStream>()?;
    module.add_function(wrap_pyfunction!(pool::pool_shared::drain_at_exit, module)?)?;
    module.add_class::<images::pixel_buffer::PixelBuffer>()?;
    module.add_function(wrap_pyfunction!(images::transform::run_pipeline, module)?)?;
    module.add_function(wrap_pyfunction!(
        images::pipeline_record::pipeline_ops,
        module
    )?)?;
    module.add_function(wrap_pyfunction!(
        images::pipeline_record::pipeline_fields,
        module
    )?)?;
    module.add("JPEG_SIMD", dataloader_imaging::JPEG_SIMD)?;
    module.add("JPEG_SIMD_FEATURE", images::jpeg_build::SIMD_FEATURE)?;
    module.add("WITHOUT_SIMD", images::jpeg_build::WITHOUT_SIMD)?;
    module.add_class::<io::netio::NativeReader>()?;
    module.add_class::<io::netio::ReadCancel>()?;
    module.add_class::<io::netio::PendingRead>()?;
    module.add_class::<io::netio::NativeStream>()?;
    Ok(())
}
