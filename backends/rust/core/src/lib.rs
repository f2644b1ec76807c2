//! The bookkeeping of the Rust backend that needs no Python: the bounded
//! window with its reorder buffer (map-style epochs) and the per-stream
//! buffers with round-robin delivery (iterable epochs).

mod streams;
mod window;

pub use streams::{StreamBuffers, Take};
pub use window::Window;
