//! Batch arrays kept for reuse within an epoch. An array that only this pool
//! still holds (reference count 1: no batch, view, tensor, memoryview or
//! DLPack capsule of the user's keeps it) is filled again, instead of a
//! fresh one whose pages the kernel must zero and fault in for every batch.

use std::sync::Mutex;

use pyo3::prelude::*;

/// Arrays kept at most: the batches in flight and held by the user, as a
/// loader runs, are about `prefetch_factor * num_workers + 2`.
const KEPT: usize = 8;

struct Kept {
    array: Py<PyAny>,
    shape: Vec<usize>,
    dtype: &'static str,
}

pub struct BatchPool {
    empty: Py<PyAny>,
    kept: Mutex<Vec<Kept>>,
}

impl BatchPool {
    pub fn new(py: Python<'_>) -> PyResult<BatchPool> {
        Ok(BatchPool {
            empty: py.import("numpy")?.getattr("empty")?.unbind(),
            kept: Mutex::new(Vec::new()),
        })
    }

    /// A C-contiguous array of `shape` and `dtype` nobody else holds: a kept
    /// one the user has dropped, or a new one (kept if there is room).
    pub fn take<'py>(
        &self,
        py: Python<'py>,
        shape: Vec<usize>,
        dtype: &'static str,
    ) -> PyResult<Bound<'py, PyAny>> {
        // Checked and taken under the lock, so two workers never take one array;
        // no Python runs while it is held.
        let free = |k: &Kept| k.array.bind(py).get_refcnt() == 1;
        {
            let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            let found = kept
                .iter()
                .find(|k| k.shape == shape && k.dtype == dtype && free(k));
            if let Some(k) = found {
                return Ok(k.array.bind(py).clone());
            }
        }
        let array = self.empty.bind(py).call1((shape.clone(), dtype))?;
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= KEPT {
            // Make room by dropping an array of another shape nobody holds.
            if let Some(at) = kept.iter().position(free) {
                kept.swap_remove(at);
            }
        }
        if kept.len() < KEPT {
            kept.push(Kept {
                array: array.clone().unbind(),
                shape,
                dtype,
            });
        }
        Ok(array)
    }
}
