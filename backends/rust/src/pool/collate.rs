//! The library's `default_collate` (`MapWork.default_collate`), natively where the result is
//! sure to be identical: same-dtype, same-shape, C-contiguous NumPy arrays
//! (also inside dicts, tuples and lists) are stacked into one new array, the
//! bytes copied without the interpreter. Anything else is handed to the
//! Python function, level by level, so results and errors stay its own.

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple, PyType};

use crate::interp::attach;

pub struct NativeCollate {
    /// The Python function, untimed, for what is not collated natively: the
    /// epoch's own `collate` may be the loader's timing wrapper around it, and
    /// the native path reports its whole time (fallbacks included) itself.
    default_collate: Py<PyAny>,
    ndarray: Py<PyType>,
    empty: Py<PyAny>,
}

/// A contiguous view of one array's bytes, released on drop.
struct View(ffi::Py_buffer);

impl View {
    fn get(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<View> {
        let mut flags = ffi::PyBUF_C_CONTIGUOUS;
        if writable {
            flags |= ffi::PyBUF_WRITABLE;
        }
        // SAFETY: a zeroed Py_buffer is what PyObject_GetBuffer fills in.
        let mut view: ffi::Py_buffer = unsafe { std::mem::zeroed() };
        // SAFETY: attached (obj is Bound) and `view` is valid for writing.
        if unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut view, flags) } != 0 {
            return Err(PyErr::take(obj.py())
                .unwrap_or_else(|| PyBufferError::new_err("no contiguous buffer")));
        }
        Ok(View(view))
    }

    fn len(&self) -> usize {
        usize::try_from(self.0.len).unwrap_or(0)
    }

    fn ptr(&self) -> *mut u8 {
        self.0.buf.cast()
    }
}

impl Drop for View {
    fn drop(&mut self) {
        // Views are dropped attached: they live inside `stack`.
        // SAFETY: releases the buffer obtained in View::get.
        unsafe { ffi::PyBuffer_Release(&mut self.0) };
    }
}

/// Raw pointers for copying while detached; the views they come from outlive the copy.
struct Copy {
    dst: *mut u8,
    srcs: Vec<*const u8>,
    len: usize,
}

// SAFETY: the pointers stay valid (the views and arrays are kept alive by the
// attached caller until the copy returns), and the destination is a new array
// no other thread can see yet.
unsafe impl Send for Copy {}

impl NativeCollate {
    /// `default_collate`: the contract's untimed function, for what is not native.
    pub fn new(py: Python<'_>, default_collate: &Bound<'_, PyAny>) -> PyResult<Self> {
        let numpy = py.import("numpy")?;
        Ok(NativeCollate {
            default_collate: default_collate.clone().unbind(),
            ndarray: numpy.getattr("ndarray")?.cast_into::<PyType>()?.unbind(),
            empty: numpy.getattr("empty")?.unbind(),
        })
    }

    pub fn collate<'py>(&self, batch: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        match batch.cast_exact::<PyList>() {
            Ok(list) => {
                let items: Vec<Bound<'py, PyAny>> = list.iter().collect();
                self.collate_items(batch.py(), &items, Some(batch))
            }
            Err(_) => self.fallback(batch),
        }
    }

    fn fallback<'py>(&self, batch: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = batch.py();
        let args = PyTuple::new(py, [batch])?;
        attach::call(py, self.default_collate.bind(py), args.as_any())
    }

    fn fallback_items<'py>(
        &self,
        py: Python<'py>,
        items: &[Bound<'py, PyAny>],
        batch: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match batch {
            Some(batch) => self.fallback(batch),
            None => self.fallback(PyList::new(py, items)?.as_any()),
        }
    }

    /// `batch`, when given, is the Python list `items` came from.
    fn collate_items<'py>(
        &self,
        py: Python<'py>,
        items: &[Bound<'py, PyAny>],
        batch: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let Some(first) = items.first() else {
            return self.fallback_items(py, items, batch);
        };
        if first.get_type().is(self.ndarray.bind(py)) {
            if let Some(stacked) = self.stack(py, items)? {
                return Ok(stacked);
            }
        } else if first.is_exact_instance_of::<PyDict>() {
            if let Some(collated) = self.collate_dicts(py, items)? {
                return Ok(collated);
            }
        } else if first.is_exact_instance_of::<PyTuple>() || first.is_exact_instance_of::<PyList>()
        {
            if let Some(collated) = self.collate_sequences(py, items)? {
                return Ok(collated);
            }
        }
        self.fallback_items(py, items, batch)
    }

    /// Same keys taken from the first dict, in its order; None if any item is not a dict with
    /// exactly them (the Python function then names the key a dict lacks or has in addition).
    fn collate_dicts<'py>(
        &self,
        py: Python<'py>,
        items: &[Bound<'py, PyAny>],
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut dicts = Vec::with_capacity(items.len());
        for item in items {
            match item.cast_exact::<PyDict>() {
                Ok(dict) => dicts.push(dict),
                Err(_) => return Ok(None),
            }
        }
        // Every key of the first in each, and as many keys: the same keys.
        if dicts.iter().any(|dict| dict.len() != dicts[0].len()) {
            return Ok(None);
        }
        let out = PyDict::new(py);
        for key in dicts[0].keys() {
            let mut values = Vec::with_capacity(dicts.len());
            for dict in &dicts {
                match dict.get_item(&key)? {
                    Some(value) => values.push(value),
                    None => return Ok(None),
                }
            }
            out.set_item(key, self.collate_items(py, &values, None)?)?;
        }
        Ok(Some(out.into_any()))
    }

    /// Tuples or lists of one length: a list with each field collated.
    fn collate_sequences<'py>(
        &self,
        py: Python<'py>,
        items: &[Bound<'py, PyAny>],
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let kind = items[0].get_type();
        let size = items[0].len()?;
        for item in items {
            if !item.get_type().is(&kind) || item.len()? != size {
                return Ok(None);
            }
        }
        let out = PyList::empty(py);
        for field in 0..size {
            let mut values = Vec::with_capacity(items.len());
            for item in items {
                values.push(item.get_item(field)?);
            }
            out.append(self.collate_items(py, &values, None)?)?;
        }
        Ok(Some(out.into_any()))
    }

    /// `np.stack(items)` when every item is a C-contiguous ndarray of the first's dtype and shape.
    fn stack<'py>(
        &self,
        py: Python<'py>,
        items: &[Bound<'py, PyAny>],
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let ndarray = self.ndarray.bind(py);
        let first = &items[0];
        let dtype = first.getattr("dtype")?;
        let kind: String = dtype.getattr("kind")?.extract()?;
        if "OUSV".contains(kind.as_str()) {
            return Ok(None); // the Python function raises the error for these
        }
        // np.stack may return another byte order for these (NumPy 2.4 does).
        if !dtype.getattr("isnative")?.is_truthy()? {
            return Ok(None);
        }
        let shape = first.getattr("shape")?.cast_into::<PyTuple>()?;
        let mut views = Vec::with_capacity(items.len());
        for item in items {
            if !item.get_type().is(ndarray) {
                return Ok(None);
            }
            let item_dtype = item.getattr("dtype")?;
            if !(item_dtype.is(&dtype) || item_dtype.eq(&dtype)?) {
                return Ok(None);
            }
            if !item.getattr("shape")?.eq(&shape)? {
                return Ok(None);
            }
            match View::get(item, false) {
                Ok(view) => views.push(view),
                Err(_) => return Ok(None), // not C-contiguous: np.stack copes
            }
        }
        let mut out_shape: Vec<Bound<'py, PyAny>> = vec![items.len().into_pyobject(py)?.into_any()];
        out_shape.extend(shape.iter());
        let out = self
            .empty
            .bind(py)
            .call1((PyTuple::new(py, out_shape)?, &dtype))?;
        let target = View::get(&out, true)?;
        let len = views[0].len();
        if target.len() != len * views.len() || views.iter().any(|v| v.len() != len) {
            return Ok(None);
        }
        let copy = Copy {
            dst: target.ptr(),
            srcs: views.iter().map(|v| v.ptr().cast_const()).collect(),
            len,
        };
        let copy_all = move || {
            let copy = copy;
            for (i, src) in copy.srcs.iter().enumerate() {
                // SAFETY: `src` holds `len` bytes, the target `len * n`; they do not overlap.
                unsafe {
                    std::ptr::copy_nonoverlapping(*src, copy.dst.add(i * copy.len), copy.len)
                };
            }
        };
        if len * views.len() >= DETACH_FROM_BYTES {
            attach::detached(py, copy_all);
        } else {
            copy_all();
        }
        drop(target);
        drop(views);
        Ok(Some(out))
    }
}

/// Below this many bytes a copy is quicker than letting the interpreter go and taking it back.
const DETACH_FROM_BYTES: usize = 64 * 1024;
