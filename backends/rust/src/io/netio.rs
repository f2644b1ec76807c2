//! `Backend.open_reader`: the reads of `dataloader_api.io` datasets natively
//! (crate `dataloader-netio`), without the interpreter while they run.

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use dataloader_netio::{
    BufferPool, Cancel, Failure, HttpOptions, Pending, Reader, RetryPolicy, S3Options, Source,
    StreamBuffer,
};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::interp::attach;

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

    /// Start reading `locations` now (on the reader's runtime); `PendingRead.wait`
    /// gives the results. The reads end at once when `cancel` is cancelled.
    /// A location is `bytes` (a file's path, `os.fsencode`d) or `str` (a URL, a key).
    fn start(
        &self,
        locations: Vec<Bound<'_, PyAny>>,
        cancel: &ReadCancel,
    ) -> PyResult<PendingRead> {
        let locations = locations
            .iter()
            .map(|location| match location.cast::<PyBytes>() {
                Ok(bytes) => Ok(bytes.as_bytes().to_vec()),
                Err(_) => Ok(location.extract::<String>()?.into_bytes()),
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PendingRead {
            pending: self.reader.start(locations, cancel.cancel.clone()),
            buffers: self.reader.buffers(),
        })
    }

    /// Start streaming one object of `size` bytes (a tar shard, by its URL or key),
    /// indexed with validator `expected` (strong ETag or Last-Modified; None: the
    /// length alone is checked); `NativeStream.take` gives a part once it has arrived.
    #[pyo3(signature = (location, size, cancel, expected=None))]
    fn stream(
        &self,
        location: String,
        size: u64,
        cancel: &ReadCancel,
        expected: Option<String>,
    ) -> NativeStream {
        let buffer = Arc::new(StreamBuffer::expecting(size, expected));
        let location = location.into_bytes();
        self.reader
            .stream(location, buffer.clone(), cancel.cancel.clone());
        NativeStream { buffer }
    }

    /// Close the idle keep-alive connections (an epoch closed: a `break`, `close()`).
    fn close_idle(&self, py: Python<'_>) {
        attach::detached(py, || self.reader.close_idle());
    }

    /// A new cancel handle, for one epoch's reads.
    fn new_cancel(&self) -> ReadCancel {
        ReadCancel::new()
    }

    /// (requests, retries, bytes, redirects, connections opened) so far.
    fn counters(&self) -> (u64, u64, u64, u64, u64) {
        let c = self.reader.counters();
        (
            c.requests.load(Ordering::Relaxed),
            c.retries.load(Ordering::Relaxed),
            c.bytes.load(Ordering::Relaxed),
            c.redirects.load(Ordering::Relaxed),
            c.connections.load(Ordering::Relaxed),
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

/// One job's reads, started.
#[pyclass(frozen, module = "dataloader_rust._native")]
pub struct PendingRead {
    pending: Arc<Pending>,
    buffers: Arc<BufferPool>,
}

#[pymethods]
impl PendingRead {
    /// Each location's bytes, or a failure record `(kind, message, status,
    /// attempts, errno)`, in order; waits without the interpreter.
    fn wait<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let results = attach::detached(py, || self.pending.wait());
        // Each item's bytes object is made (uninitialised) with the interpreter, and
        // filled without it: the copies of several workers then run side by side.
        let mut items = Vec::with_capacity(results.len());
        let mut copies = Vec::new();
        for result in &results {
            match result {
                Ok(bytes) => {
                    let (item, target) = uninitialised_bytes(py, bytes.len())?;
                    copies.push((target, bytes.as_ptr(), bytes.len()));
                    items.push(item);
                }
                Err(f) => items.push(failure_record(py, f)?),
            }
        }
        attach::detached(py, || {
            for &(target, source, len) in &copies {
                // SAFETY: `target` is the buffer of a new bytes object of `len` bytes
                // that nothing else sees yet; `source` is `len` bytes of `results`.
                unsafe { std::ptr::copy_nonoverlapping(source, target.0, len) };
            }
        });
        for bytes in results.into_iter().flatten() {
            self.buffers.give(bytes);
        }
        Ok(items)
    }
}

/// One object streaming into memory (`NativeReader.stream`).
#[pyclass(frozen, module = "dataloader_rust._native")]
pub struct NativeStream {
    buffer: Arc<StreamBuffer>,
}

#[pymethods]
impl NativeStream {
    /// Bytes `start:end` once they have arrived (waiting without the interpreter),
    /// or the read's failure record `(kind, message, status, attempts, errno,
    /// total)` if it failed before they did.
    fn take<'py>(&self, py: Python<'py>, start: u64, end: u64) -> PyResult<Bound<'py, PyAny>> {
        let buffer = &self.buffer;
        let arrived = attach::detached(py, || buffer.take(start, end, |_| ()));
        let taken = arrived.and_then(|()| buffer.take(start, end, |b| PyBytes::new(py, b)));
        match taken {
            Ok(bytes) => Ok(bytes.into_any()),
            Err(f) => {
                let total = f.total.into_pyobject(py)?.into_any();
                let record = failure_record(py, &f)?.cast_into::<PyTuple>()?;
                let mut fields: Vec<Bound<'py, PyAny>> = record.iter().collect();
                fields.push(total);
                Ok(PyTuple::new(py, fields)?.into_any())
            }
        }
    }

    #[getter]
    fn size(&self) -> u64 {
        self.buffer.size()
    }

    #[getter]
    fn received(&self) -> u64 {
        self.buffer.received()
    }

    #[getter]
    fn done(&self) -> bool {
        self.buffer.is_done()
    }

    #[getter]
    fn failed(&self) -> bool {
        self.buffer.is_failed()
    }
}

/// A bytes object's buffer, written by one thread before the object is shared.
#[derive(Clone, Copy)]
struct Target(*mut u8);
// SAFETY: the buffer belongs to a bytes object no other thread can reach yet.
unsafe impl Send for Target {}

fn uninitialised_bytes(py: Python<'_>, len: usize) -> PyResult<(Bound<'_, PyAny>, Target)> {
    // SAFETY: a new bytes object of `len` bytes, owned by the Bound below.
    let item = unsafe {
        let raw = ffi::PyBytes_FromStringAndSize(std::ptr::null(), len as ffi::Py_ssize_t);
        Bound::from_owned_ptr_or_err(py, raw)?
    };
    // SAFETY: `item` is a bytes object; its buffer holds `len` bytes.
    let target = unsafe { ffi::PyBytes_AsString(item.as_ptr()) }.cast::<u8>();
    Ok((item, Target(target)))
}

fn failure_record<'py>(py: Python<'py>, f: &Failure) -> PyResult<Bound<'py, PyAny>> {
    Ok(PyTuple::new(
        py,
        [
            f.kind.name().into_pyobject(py)?.into_any(),
            f.message.as_str().into_pyobject(py)?.into_any(),
            f.status.into_pyobject(py)?.into_any(),
            f.attempts.into_pyobject(py)?.into_any(),
            f.errno.into_pyobject(py)?.into_any(),
        ],
    )?
    .into_any())
}
