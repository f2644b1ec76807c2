//! The bookkeeping of the Rust backend that needs no Python: the bounded
//! window with its reorder buffer (map-style epochs) and the per-stream
//! buffers with round-robin delivery (iterable epochs).

mod stream_buffers;
mod window;

pub use stream_buffers::{StreamBuffers, Take};
pub use window::Window;
