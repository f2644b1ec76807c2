//! Local files: one read of the whole file, its size checked first.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;

use crate::buffers::BufferPool;
use crate::failure::{Failure, FailureKind};

/// `path`: the bytes the system takes (`os.fsencode`), so names that are not
/// UTF-8 are read too.
pub fn read(path: &[u8], max_bytes: Option<u64>, buffers: &BufferPool) -> Result<Vec<u8>, Failure> {
    let os = |error: std::io::Error| {
        let mut failure = Failure::new(FailureKind::Os, os_message(&error));
        failure.errno = error.raw_os_error();
        failure
    };
    let mut file = File::open(OsStr::from_bytes(path)).map_err(os)?;
    let metadata = file.metadata().map_err(os)?;
    if metadata.is_dir() {
        file.read(&mut [0u8; 1]).map_err(os)?; // the system's EISDIR, as the reference gets
    }
    let size = metadata.len();
    if let Some(limit) = max_bytes {
        if size > limit {
            return Err(Failure::too_large(size, limit));
        }
    }
    let mut data = buffers.take(size as usize + 1); // + 1: read_to_end's probe at EOF
    file.read_to_end(&mut data).map_err(os)?; // a directory fails here, with EISDIR
    if let Some(limit) = max_bytes {
        if data.len() as u64 > limit {
            return Err(Failure::too_large(data.len() as u64, limit));
        }
    }
    Ok(data)
}

/// The system's text for the error, without Rust's " (os error N)" suffix.
fn os_message(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}
