//! `Backend.open_reader`: the reads of `dataloader_api.io` datasets natively
//! (crate `dataloader-netio`), without the interpreter while they run.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use dataloader_netio::{Cancel, HttpOptions, Reader, RetryPolicy, S3Options, Source};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::attach;

fn item<'py>(spec: &Bound<'py, PyDict>, key: &str) -> PyResult<Bound<'py, PyAny>> {
    spec.get_item(key)?
        .ok_or_else(|| PyValueError::new_err(format!("reader spec: no {key:?} in {spec}")))
}

fn retry(spec: &Bound<'_, PyDict>) -> PyResult<RetryPolicy> {
    let record = item(spec, "retry")?;
    let get = |key: &str| record.get_item(key);
    Ok(RetryPolicy {
        max_retries: get("max_retries")?.extract()?,
        backoff: get("backoff")?.extract()?,
        multiplier: get("multiplier")?.extract()?,
        max_backoff: get("max_backoff")?.extract()?,
        jitter: get("jitter")?.extract()?,
        statuses: get("statuses")?.extract()?,
    })
}

fn source(spec: &Bound<'_, PyDict>) -> PyResult<Source> {
    let kind: String = item(spec, "kind")?.extract()?;
    let max_bytes: Option<u64> = item(spec, "max_bytes")?.extract()?;
    Ok(match kind.as_str() {
        "files" => Source::Files { max_bytes },
        "http" => Source::Http(HttpOptions {
            headers: item(spec, "headers")?.extract()?,
            timeout: item(spec, "timeout")?.extract()?,
            retry: retry(spec)?,
            max_bytes,
            max_connections: item(spec, "max_connections")?.extract()?,
        }),
        "s3" => Source::S3(S3Options {
            bucket: item(spec, "bucket")?.extract()?,
            prefix: item(spec, "prefix")?.extract()?,
            endpoint: item(spec, "endpoint")?.extract()?,
            region: item(spec, "region")?.extract()?,
            credentials: item(spec, "credentials")?.extract()?,
            timeout: item(spec, "timeout")?.extract()?,
            retry: retry(spec)?,
            max_bytes,
            max_connections: item(spec, "max_connections")?.extract()?,
        }),
        other => {
            return Err(PyValueError::new_err(format!(
                "reader spec: kind {other:?} is not 'files', 'http' or 's3'"
            )))
        }
    })
}

/// A source opened for reading, shared by the worker threads of a loader.
#[pyclass(frozen, module = "dataloader_rust._native")]
pub struct NativeReader {
    reader: Reader,
}

#[pymethods]
impl NativeReader {
    #[new]
    #[pyo3(signature = (spec, concurrency=None))]
    fn new(spec: &Bound<'_, PyDict>, concurrency: Option<usize>) -> PyResult<Self> {
        let source = source(spec)?;
        let reader = Reader::open(source, concurrency).map_err(PyValueError::new_err)?;
        Ok(NativeReader { reader })
    }

    /// Each location's bytes, or a failure record `(kind, message, status,
    /// attempts, errno)`, in order; the reads run without the interpreter and
    /// end at once when `cancel` is cancelled.
    #[pyo3(signature = (locations, cancel=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        locations: Vec<String>,
        cancel: Option<&ReadCancel>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let never = Cancel::default();
        let cancel = cancel.map_or(&never, |c| &*c.cancel);
        let results = attach::detached(py, || self.reader.read_all(&locations, cancel));
        results
            .into_iter()
            .map(|result| match result {
                Ok(bytes) => Ok(PyBytes::new(py, &bytes).into_any()),
                Err(f) => Ok(PyTuple::new(
                    py,
                    [
                        f.kind.name().into_pyobject(py)?.into_any(),
                        f.message.into_pyobject(py)?.into_any(),
                        f.status.into_pyobject(py)?.into_any(),
                        f.attempts.into_pyobject(py)?.into_any(),
                        f.errno.into_pyobject(py)?.into_any(),
                    ],
                )?
                .into_any()),
            })
            .collect()
    }

    /// A new cancel handle, for one epoch's reads.
    fn new_cancel(&self) -> ReadCancel {
        ReadCancel::new()
    }

    /// (requests, retries, bytes) so far.
    fn counters(&self) -> (u64, u64, u64) {
        let c = &self.reader.counters;
        (
            c.requests.load(Ordering::Relaxed),
            c.retries.load(Ordering::Relaxed),
            c.bytes.load(Ordering::Relaxed),
        )
    }
}

/// Cancels the reads of one epoch (`cancel()` when it closes).
#[pyclass(frozen, module = "dataloader_rust._native")]
pub struct ReadCancel {
    cancel: Arc<Cancel>,
}

#[pymethods]
impl ReadCancel {
    #[new]
    fn new() -> Self {
        ReadCancel {
            cancel: Arc::new(Cancel::default()),
        }
    }

    fn cancel(&self) {
        self.cancel.cancel();
    }
}
