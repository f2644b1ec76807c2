//! The values of `dataloader_api.contract` read into Rust: a `PoolSpec` once
//! per pool, an epoch's `MapWork` or `IterWork` and its `StreamSpec` once per
//! epoch, so that no batch pays an attribute lookup. The loader passes the
//! frozen dataclasses, which validate themselves; anything else that reaches
//! here (a hand-built look-alike) is read by attribute, and a field that breaks
//! the contract is a Python exception naming it, never a panic.

use std::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};

/// `value.<name>`, or a TypeError saying which contract class was expected.
fn field<'py>(value: &Bound<'py, PyAny>, class: &str, name: &str) -> PyResult<Bound<'py, PyAny>> {
    value.getattr_opt(name)?.ok_or_else(|| {
        let kind = value
            .get_type()
            .qualname()
            .map_or_else(|_| "?".to_owned(), |n| n.to_string());
        PyTypeError::new_err(format!(
            "expected a dataloader_api.contract.{class}, got a value of type {kind} without .{name}"
        ))
    })
}

fn repr(value: &Bound<'_, PyAny>) -> String {
    value
        .repr()
        .map_or_else(|_| "<unprintable>".to_owned(), |r| r.to_string())
}

/// An int >= 1 (not a bool), as the contract's dataclasses require.
fn count(value: &Bound<'_, PyAny>, class: &str, name: &str) -> PyResult<usize> {
    let is_int = value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>();
    if !is_int || value.lt(1)? {
        return Err(PyValueError::new_err(format!(
            "{class}.{name} must be an int >= 1, got {}",
            repr(value)
        )));
    }
    value.extract::<usize>().map_err(|_| {
        PyValueError::new_err(format!(
            "{class}.{name}={} is more than this backend can hold",
            repr(value)
        ))
    })
}

/// How a pool is built (`dataloader_api.contract.PoolSpec`).
pub struct PoolSpec {
    pub num_threads: usize,
    pub thread_init: Py<PyAny>,
    pub name: String,
    pub items_in_parallel: usize,
    /// Bytes of stack for each pool thread: what Python's own threads get.
    pub stack_size: usize,
}

impl PoolSpec {
    pub fn read(spec: &Bound<'_, PyAny>) -> PyResult<Self> {
        const CLASS: &str = "PoolSpec";
        let num_threads = count(&field(spec, CLASS, "num_threads")?, CLASS, "num_threads")?;
        let thread_init = field(spec, CLASS, "thread_init")?.unbind();
        let name = field(spec, CLASS, "name")?;
        let name = name.extract::<String>().map_err(|_| {
            PyTypeError::new_err(format!("PoolSpec.name must be a str, got {}", repr(&name)))
        })?;
        let items_in_parallel = field(spec, CLASS, "items_in_parallel")?;
        let stack_size = field(spec, CLASS, "stack_size")?;
        Ok(PoolSpec {
            num_threads,
            thread_init,
            name,
            items_in_parallel: count(&items_in_parallel, CLASS, "items_in_parallel")?,
            stack_size: count(&stack_size, CLASS, "stack_size")?,
        })
    }
}

/// How one epoch's batches flow (`dataloader_api.contract.StreamSpec`).
pub struct StreamSpec {
    pub window: usize,
    pub in_order: bool,
    /// `None`: wait for ever, also for a timeout too long to be a `Duration`.
    pub timeout: Option<Duration>,
    pub on_timeout: Py<PyAny>,
}

impl StreamSpec {
    pub fn read(stream: &Bound<'_, PyAny>) -> PyResult<Self> {
        const CLASS: &str = "StreamSpec";
        let window = count(&field(stream, CLASS, "window")?, CLASS, "window")?;
        let in_order = field(stream, CLASS, "in_order")?.is_truthy()?;
        let timeout = field(stream, CLASS, "timeout")?;
        let timeout = if timeout.is_none() {
            None
        } else {
            let seconds = timeout.extract::<f64>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "StreamSpec.timeout must be a number of seconds or None, got {}",
                    repr(&timeout)
                ))
            })?;
            if seconds.is_nan() || seconds <= 0.0 {
                return Err(PyValueError::new_err(format!(
                    "StreamSpec.timeout must be > 0 or None, got {}",
                    repr(&timeout)
                )));
            }
            Duration::try_from_secs_f64(seconds).ok()
        };
        Ok(StreamSpec {
            window,
            in_order,
            timeout,
            on_timeout: field(stream, CLASS, "on_timeout")?.unbind(),
        })
    }
}

/// One map-style epoch (`dataloader_api.contract.MapWork`).
pub struct MapWork<'py> {
    /// The plan's `BatchJob`s, still to be iterated (on the consumer's thread).
    pub jobs: Bound<'py, PyAny>,
    pub fetch: Bound<'py, PyAny>,
    pub collate: Bound<'py, PyAny>,
    /// The library's `default_collate`, untimed, when `collate` is it.
    pub default_collate: Option<Bound<'py, PyAny>>,
    pub getitem: Option<Bound<'py, PyAny>>,
    pub stats: Option<Bound<'py, PyAny>>,
    /// `MapWork.images`: a transforms pipeline this backend runs natively.
    pub images: Option<Bound<'py, PyAny>>,
}

/// `None` for Python's None.
fn optional(value: Bound<'_, PyAny>) -> Option<Bound<'_, PyAny>> {
    (!value.is_none()).then_some(value)
}

impl<'py> MapWork<'py> {
    pub fn read(work: &Bound<'py, PyAny>) -> PyResult<Self> {
        const CLASS: &str = "MapWork";
        let jobs = field(work, CLASS, "jobs")?;
        let fetch = field(work, CLASS, "fetch")?;
        let collate = field(work, CLASS, "collate")?;
        // Strict: native collation replaces the loader's collate only when told so.
        let default_collate = optional(field(work, CLASS, "default_collate")?);
        if let Some(given) = &default_collate {
            if !given.is_callable() {
                return Err(PyTypeError::new_err(format!(
                    "MapWork.default_collate must be callable or None, got {}",
                    repr(given)
                )));
            }
        }
        Ok(MapWork {
            jobs,
            fetch,
            collate,
            default_collate,
            getitem: optional(field(work, CLASS, "getitem")?),
            stats: optional(field(work, CLASS, "stats")?),
            // Older look-alikes without the field: no native pipeline.
            images: work.getattr_opt("images")?.and_then(optional),
        })
    }
}

/// A method of `MapWork.stats` (`dataloader_api.contract.StatsSink`).
pub fn stats_method(stats: &Bound<'_, PyAny>, name: &str) -> PyResult<Py<PyAny>> {
    Ok(field(stats, "StatsSink", name)?.unbind())
}

/// One iterable-dataset epoch (`dataloader_api.contract.IterWork`).
pub struct IterWork {
    pub open_stream: Py<PyAny>,
    pub num_streams: usize,
}

impl IterWork {
    pub fn read(work: &Bound<'_, PyAny>) -> PyResult<Self> {
        const CLASS: &str = "IterWork";
        Ok(IterWork {
            open_stream: field(work, CLASS, "open_stream")?.unbind(),
            num_streams: count(&field(work, CLASS, "num_streams")?, CLASS, "num_streams")?,
        })
    }
}
