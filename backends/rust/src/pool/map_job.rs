//! What one map-style job runs on a pool thread: `collate(fetch(indices))`,
//! or the backend's own version of either step (items fetched in parallel,
//! a transforms pipeline run natively (`images/transform.rs`),
//! native collation) with its time reported to the loader.

use std::sync::Arc;
use std::time::Instant;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use rayon::prelude::*;

use crate::contract::{stats_method, MapWork};
use crate::images::transform::{Fetched, ImageJobs};
use crate::interp::attach;
use crate::pool::collate::NativeCollate;

/// The callables a map-style job runs, looked up once per epoch.
pub struct MapJobs {
    fetch: Py<PyAny>,
    collate: Py<PyAny>,
    /// Set when `collate` is the library's default collate (`MapWork.default_collate`).
    native: Option<Arc<NativeCollate>>,
    /// `stats.record_collate(seconds)`, for native collation with stats on.
    record_collate: Option<Py<PyAny>>,
    /// The dataset's `__getitem__`, when items of a batch are fetched in parallel.
    getitem: Option<Py<PyAny>>,
    /// `stats.record_fetch(seconds, items)`, for that case with stats on.
    record_fetch: Option<Py<PyAny>>,
    /// A transforms pipeline run natively on each job's items.
    images: Option<ImageJobs>,
    pub items_in_parallel: usize,
}

/// Call one of the stats sink's methods; its failure is only reported.
fn report<'py>(py: Python<'py>, record: &Option<Py<PyAny>>, args: PyResult<Bound<'py, PyTuple>>) {
    let Some(record) = record else { return };
    let called = args.and_then(|args| attach::call(py, record.bind(py), args.as_any()));
    if let Err(error) = called {
        error.write_unraisable(py, None);
    }
}

impl MapJobs {
    /// What `work` runs on a pool of `items_in_parallel`: the backend's own
    /// collation and item fetching where `work` allows them.
    pub fn new(py: Python<'_>, work: &MapWork<'_>, items_in_parallel: usize) -> PyResult<Self> {
        let native = match &work.default_collate {
            Some(default_collate) => Some(Arc::new(NativeCollate::new(py, default_collate)?)),
            None => None,
        };
        let getitem = match &work.getitem {
            Some(getitem) if items_in_parallel > 1 => Some(getitem.clone().unbind()),
            _ => None,
        };
        // `fetch` and `collate` time themselves; what replaces them reports here.
        let (mut record_collate, mut record_fetch) = (None, None);
        if let Some(stats) = &work.stats {
            if native.is_some() {
                record_collate = Some(stats_method(stats, "record_collate")?);
            }
            if getitem.is_some() {
                record_fetch = Some(stats_method(stats, "record_fetch")?);
            }
        }
        Ok(MapJobs {
            fetch: work.fetch.clone().unbind(),
            collate: work.collate.clone().unbind(),
            native,
            record_collate,
            getitem,
            record_fetch,
            images: work.images.as_ref().map(ImageJobs::read).transpose()?,
            items_in_parallel,
        })
    }

    pub fn run<'py>(
        &self,
        py: Python<'py>,
        indices: &Bound<'py, PyAny>,
        started: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        // What `fetch` receives (`BatchJob.fetch_argument`); items pair with `indices`.
        let argument = started.unwrap_or(indices);
        let samples = match (&self.images, &self.getitem) {
            (Some(images), _) => match images.fetch(py, argument, indices)? {
                Fetched::Batch(batch) => return Ok(batch),
                Fetched::Items(items) => items,
            },
            (None, Some(getitem)) => {
                let started = Instant::now();
                let samples = self.fetch_in_parallel(py, getitem, indices)?;
                let seconds = started.elapsed().as_secs_f64();
                let items = samples.len()?;
                report(py, &self.record_fetch, (seconds, items).into_pyobject(py));
                samples
            }
            (None, None) => {
                let args = PyTuple::new(py, [argument])?;
                attach::call(py, self.fetch.bind(py), args.as_any())?
            }
        };
        match &self.native {
            Some(native) => {
                let started = Instant::now();
                let batch = native.collate(&samples);
                let seconds = started.elapsed().as_secs_f64();
                report(py, &self.record_collate, PyTuple::new(py, [seconds]));
                batch
            }
            None => {
                let args = PyTuple::new(py, [samples])?;
                attach::call(py, self.collate.bind(py), args.as_any())
            }
        }
    }

    /// `[getitem(i) for i in indices]`, items spread over the pool's threads.
    fn fetch_in_parallel<'py>(
        &self,
        py: Python<'py>,
        getitem: &Py<PyAny>,
        indices: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let indices: Vec<Py<PyAny>> = indices
            .try_iter()?
            .map(|i| i.map(Bound::unbind))
            .collect::<PyResult<_>>()?;
        let chunk = indices.len().div_ceil(self.items_in_parallel).max(1);
        let fetched: Vec<Option<PyResult<Vec<Py<PyAny>>>>> = attach::detached(py, || {
            indices
                .par_chunks(chunk)
                .map(|part| {
                    attach::with_python(|py| {
                        part.iter()
                            .map(|index| {
                                let args = PyTuple::new(py, [index.bind(py)])?;
                                Ok(attach::call(py, getitem.bind(py), args.as_any())?.unbind())
                            })
                            .collect()
                    })
                })
                .collect()
        });
        let list = PyList::empty(py);
        for part in fetched {
            let part = part.ok_or_else(|| PyRuntimeError::new_err("the interpreter is exiting"))?;
            for item in part? {
                list.append(item)?;
            }
        }
        Ok(list.into_any())
    }
}
