//! `PixelBuffer`: an image made natively, exported through the buffer
//! protocol, so `numpy.asarray` wraps its memory without a copy (and NumPy's
//! `__dlpack__`/`__array_interface__` then share it with torch).

use std::ffi::{c_int, c_void, CStr};
use std::ptr;

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

use dataloader_imaging::{Image, Pixels};

#[pyclass(frozen, module = "dataloader_rust._native")]
pub struct PixelBuffer {
    // Boxed slices never move or grow: exported pointers stay valid for the
    // object's life, which every export (and NumPy's array) keeps alive.
    bytes: PixelBytes,
    shape: Vec<isize>,
    strides: Vec<isize>,
}

enum PixelBytes {
    U8(Box<[u8]>),
    F32(Box<[f32]>),
}

// SAFETY: every field (boxed slices, Vec<isize>) is Sync already, and the
// class is frozen: after construction Rust only takes the pixels' address
// (`raw`) and reads `shape`/`strides`, which never change. The pixels are
// read or written only through exported buffers, where Python code shares
// them across threads as it does any writable buffer (a NumPy array's).
unsafe impl Sync for PixelBuffer {}

impl PixelBuffer {
    pub fn new(image: Image) -> PixelBuffer {
        let shape = image.shape();
        PixelBuffer::with_shape(image.pixels, &shape)
    }

    /// `pixels` as a C-contiguous array of `shape` (its length must match).
    pub fn with_shape(pixels: Pixels, shape: &[usize]) -> PixelBuffer {
        let (bytes, itemsize) = match pixels {
            Pixels::U8(v) => (PixelBytes::U8(v.into_boxed_slice()), 1),
            Pixels::F32(v) => (PixelBytes::F32(v.into_boxed_slice()), 4),
        };
        let mut strides = vec![itemsize as isize; shape.len()];
        for axis in (0..shape.len().saturating_sub(1)).rev() {
            strides[axis] = strides[axis + 1] * shape[axis + 1] as isize;
        }
        let shape = shape.iter().map(|&n| n as isize).collect();
        PixelBuffer {
            bytes,
            shape,
            strides,
        }
    }

    fn raw(&self) -> (*mut c_void, usize, &'static CStr) {
        match &self.bytes {
            PixelBytes::U8(v) => (v.as_ptr() as *mut c_void, 1, c"B"),
            PixelBytes::F32(v) => (v.as_ptr() as *mut c_void, 4, c"f"),
        }
    }
}

#[pymethods]
impl PixelBuffer {
    /// # Safety
    /// CPython calls this with a valid `view` to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("no view to fill"));
        }
        let this = slf.get();
        let (data, itemsize, format) = this.raw();
        let count: isize = this.shape.iter().product();
        (*view).obj = slf.clone().into_any().into_ptr();
        (*view).buf = data;
        (*view).len = count * itemsize as isize;
        (*view).readonly = 0;
        (*view).itemsize = itemsize as isize;
        (*view).format = if flags & ffi::PyBUF_FORMAT != 0 {
            format.as_ptr() as *mut _
        } else {
            ptr::null_mut()
        };
        (*view).ndim = this.shape.len() as c_int;
        (*view).shape = if flags & ffi::PyBUF_ND != 0 {
            this.shape.as_ptr() as *mut isize
        } else {
            ptr::null_mut()
        };
        (*view).strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
            this.strides.as_ptr() as *mut isize
        } else {
            ptr::null_mut()
        };
        (*view).suboffsets = ptr::null_mut();
        (*view).internal = ptr::null_mut();
        Ok(())
    }

    /// # Safety
    /// CPython calls this with a view that `__getbuffer__` filled. It does
    /// nothing: the pixels live as long as the object, and CPython drops the
    /// view's reference to it (`view.obj`) itself.
    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}
}
