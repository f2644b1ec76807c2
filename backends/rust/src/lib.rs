//! The `rust` backend of dataloader-api: see `dataloader_api.contract` for the
//! duties and `backends/rust/README.md` for how they are kept.

mod attach;
mod collate;
mod pool;
mod streams;

use pyo3::prelude::*;

/// Free-threaded builds: nothing here relies on the GIL (`gil_used = false`).
#[pymodule(gil_used = false)]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<pool::Pool>()?;
    module.add_class::<streams::MapStream>()?;
    module.add_class::<streams::IterStream>()?;
    module.add_function(wrap_pyfunction!(pool::mark_exiting, module)?)?;
    Ok(())
}
