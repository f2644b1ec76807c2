//! Threads that take the interpreter back during finalization hang instead of
//! unwinding through our frames (csrc/hang_at_exit.c says why and how).

use pyo3::prelude::*;

#[cfg(target_os = "linux")]
extern "C" {
    fn dl_hang_threads_at_exit() -> i32;
}

/// What `EXIT_THREADS` reports: how a thread ended by finalization ends.
fn status_text(status: i32) -> &'static str {
    match status {
        0 => "hang (the interpreter's pthread_exit is redirected)",
        1 => "unwind: no Py_IsFinalizing or _Py_IsFinalizing to ask",
        2 => "unwind: no loaded object holds the interpreter",
        3 => "unwind: the interpreter has no GOT slot for pthread_exit",
        4 => "unwind: the interpreter's GOT slot could not be made writable",
        5 => "unwind: a platform this build does not know",
        6 => "unwind: built with DL_NO_HANG",
        _ => "unwind: a status this build does not know",
    }
}

/// Make the interpreter park, not unwind, a thread it ends during finalization:
/// needed before CPython 3.14, which parks such threads itself. Called once, as
/// the module is imported; what it did is the module's `EXIT_THREADS`.
pub fn install(py: Python<'_>) -> &'static str {
    if py.version_info() >= (3, 14) {
        return "hang (CPython 3.14 and later park them)";
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: the C function takes no argument; it only reads loaded ELF
        // headers and writes the interpreter's own GOT slot for pthread_exit.
        status_text(unsafe { dl_hang_threads_at_exit() })
    }
    #[cfg(not(target_os = "linux"))]
    {
        status_text(5)
    }
}
