//! The interpreter's thread states, as every other module needs them: a pool
//! thread attached once and re-attached through guarded calls (`attach`), the
//! exit flag, and threads that finalization would end made to hang instead of
//! unwinding through Rust frames (`exit_hang`). Uses no other module.

pub(crate) mod attach;
pub(crate) mod exit_hang;
