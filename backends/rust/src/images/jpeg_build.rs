//! How libjpeg-turbo was built, told to Python: without NASM it has no SIMD
//! kernels and decodes about 2x slower, which pip's quiet build hides.

use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::exceptions::PyRuntimeWarning;
use pyo3::prelude::*;

/// Whether this build asked for libjpeg-turbo's SIMD kernels (the `simd`
/// feature, on by default): without it the plain-C build was chosen, not missed.
pub const SIMD_FEATURE: bool = cfg!(feature = "simd");

/// What a build without SIMD kernels is; a build that asked for them and found
/// no NASM says it the first time it decodes: pip hides the build's own warning,
/// and the decoder is about 2x slower than Pillow's.
pub const WITHOUT_SIMD: &str = if SIMD_FEATURE {
    "dataloader_rust was built without NASM, so libjpeg-turbo \
    runs without its SIMD kernels and JPEG decoding is about 2x slower (same pixels). \
    Install NASM (apt install nasm, brew install nasm) and build dataloader-rust again \
    (pip install --force-reinstall --no-deps SOURCE); backends(details=True) shows the build"
} else {
    "dataloader_rust was built with its `simd` feature off, so libjpeg-turbo runs \
    without its SIMD kernels and JPEG decoding is about 2x slower (the same pixels on \
    valid files); a build with the default features has them"
};

pub fn warn_without_simd(py: Python<'_>) -> PyResult<()> {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if dataloader_imaging::JPEG_SIMD || !SIMD_FEATURE || WARNED.swap(true, Ordering::Relaxed) {
        return Ok(());
    }
    let message = CString::new(WITHOUT_SIMD).expect("no NUL in the message");
    PyErr::warn(py, &py.get_type::<PyRuntimeWarning>(), &message, 1)
}
