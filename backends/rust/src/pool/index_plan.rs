//! An epoch's plan as the consumer reads it: a Python iterator of `BatchJob`s,
//! or an `IndexBatches` (`dataloader_api.contract`) whose int64 chunks
//! are cut into batches here, with no Python call per batch.

use pyo3::buffer::PyBuffer;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple, PyType};

use crate::interp::attach;

/// A job as the consumer took it: its place in the epoch, its indices, and
/// `BatchJob.started` (what `fetch` receives instead of the indices, when set).
pub struct Job {
    pub position: u64,
    pub indices: Py<PyAny>,
    pub started: Option<Py<PyAny>>,
}

/// Where a map-style epoch's jobs come from.
pub enum Plan {
    /// `iter(MapWork.jobs)`: `BatchJob`s made by Python.
    Jobs(Py<PyAny>),
    /// `MapWork.jobs` given as data.
    Chunks(ChunkCursor),
}

pub struct ChunkCursor {
    source: Py<PyAny>,
    batch_size: usize,
    drop_last: bool,
    /// The indices read from chunks and not yet cut into batches start at `at`.
    indices: Vec<i64>,
    at: usize,
    position: u64,
    ended: bool,
}

fn index_batches_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    CLASS.import(py, "dataloader_api.contract", "IndexBatches")
}

impl Plan {
    /// The plan of `jobs`: read as data when it is exactly an `IndexBatches`
    /// (a subclass may have changed how it iterates).
    pub fn new(py: Python<'_>, jobs: &Bound<'_, PyAny>) -> PyResult<Self> {
        if jobs.get_type().is(index_batches_class(py)?) {
            return Ok(Plan::Chunks(ChunkCursor {
                source: jobs.clone().unbind(),
                batch_size: jobs.getattr(intern!(py, "batch_size"))?.extract()?,
                drop_last: jobs.getattr(intern!(py, "drop_last"))?.extract()?,
                indices: Vec::new(),
                at: 0,
                position: 0,
                ended: false,
            }));
        }
        Ok(Plan::Jobs(attach::iter(py, jobs)?.unbind()))
    }

    /// The next job; None at the end.
    pub fn next_job(&mut self, py: Python<'_>) -> PyResult<Option<Job>> {
        match self {
            Plan::Jobs(jobs) => {
                let Some(job) = attach::next(py, jobs.bind(py))? else {
                    return Ok(None);
                };
                let position: u64 = job.getattr(intern!(py, "position"))?.extract()?;
                let indices = job.getattr(intern!(py, "indices"))?.unbind();
                let started = job.getattr(intern!(py, "started"))?;
                let started = (!started.is_none()).then(|| started.unbind());
                Ok(Some(Job {
                    position,
                    indices,
                    started,
                }))
            }
            Plan::Chunks(cursor) => cursor.next_batch(py),
        }
    }
}

impl ChunkCursor {
    fn next_batch(&mut self, py: Python<'_>) -> PyResult<Option<Job>> {
        while self.indices.len() - self.at < self.batch_size && !self.ended {
            self.read_chunk(py)?;
        }
        let left = self.indices.len() - self.at;
        if left == 0 || (left < self.batch_size && self.drop_last) {
            return Ok(None);
        }
        let end = self.at + left.min(self.batch_size);
        let batch = PyList::new(py, &self.indices[self.at..end])?;
        self.at = end;
        let position = self.position;
        self.position += 1;
        Ok(Some(Job {
            position,
            indices: batch.into_any().unbind(),
            started: None,
        }))
    }

    fn read_chunk(&mut self, py: Python<'_>) -> PyResult<()> {
        let next_chunk = self.source.bind(py).getattr(intern!(py, "next_chunk"))?;
        let chunk = attach::call(py, &next_chunk, PyTuple::empty(py).as_any())?;
        if chunk.is_none() {
            self.ended = true;
            return Ok(());
        }
        self.indices.drain(..self.at);
        self.at = 0;
        // An int64 array is copied as it is; any other chunk is read as ints.
        match PyBuffer::<i64>::get(&chunk) {
            Ok(buffer) => self.indices.extend(buffer.to_vec(py)?),
            Err(_) => {
                for index in chunk.try_iter()? {
                    self.indices.push(index?.extract()?);
                }
            }
        }
        Ok(())
    }
}
