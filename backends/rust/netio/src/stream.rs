//! One object read as it arrives into memory of its known size (a tar shard):
//! a reader waits for its own part only, not for the whole object.
//!
//! One writer (the read on the runtime) appends; any thread copies out a range
//! once it is there. A read cut short resumes where it stopped (the HTTP and S3
//! readers' `stream`), and only the object's bytes are ever appended: a resumed
//! reply must be the range asked for, or the whole object again, whose bytes
//! already here are compared (`matches`), not trusted.

use std::sync::{Condvar, Mutex, MutexGuard};

use crate::failure::{Failure, FailureKind};
use crate::shard_bytes::ShardBytes;

pub struct StreamBuffer {
    size: u64,
    /// The validator the object was indexed with: a first whole reply with another
    /// is not that object (a resumed one's bytes are compared instead).
    expected: Option<String>,
    state: Mutex<State>,
    changed: Condvar,
}

/// A body's buffer reserved from its announced size at most (issue 49: a server's
/// Content-Length alone reserved up to 1 GiB, an index's size up to 16 GiB); past
/// it the buffer grows as bytes arrive.
pub const RESERVE_AT_MOST: u64 = 8 << 20;

struct State {
    data: ShardBytes,
    error: Option<Failure>,
    /// The first reply's strong ETag (or Last-Modified), sent again as If-Range.
    validator: Option<String>,
}

impl StreamBuffer {
    pub fn new(size: u64) -> StreamBuffer {
        StreamBuffer::expecting(size, None)
    }

    /// A buffer for an object indexed with `expected` as its validator (strong ETag
    /// or Last-Modified, as the reference's client takes it).
    pub fn expecting(size: u64, expected: Option<String>) -> StreamBuffer {
        StreamBuffer {
            size,
            expected,
            state: Mutex::new(State {
                // Not reserved from the size alone on the heap: a server or an index may lie.
                data: ShardBytes::new(size, RESERVE_AT_MOST),
                error: None,
                validator: None,
            }),
            changed: Condvar::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn received(&self) -> u64 {
        self.state().data.len() as u64
    }

    pub fn is_done(&self) -> bool {
        let state = self.state();
        state.data.len() as u64 == self.size || state.error.is_some()
    }

    pub fn is_failed(&self) -> bool {
        self.state().error.is_some()
    }

    pub fn validator(&self) -> Option<String> {
        self.state().validator.clone()
    }

    pub fn set_validator(&self, validator: Option<String>) {
        self.state().validator = validator;
    }

    /// A reply says the object has `total` bytes: it must be `size`.
    pub fn expect_total(&self, total: u64) -> Result<(), Failure> {
        match total == self.size {
            true => Ok(()),
            false => Err(Failure::changed(total)),
        }
    }

    /// The next bytes; past `size`, the object is not the one indexed.
    pub fn write(&self, chunk: &[u8]) -> Result<(), Failure> {
        let mut state = self.state();
        let end = state.data.len() as u64 + chunk.len() as u64;
        if end > self.size {
            return Err(Failure::changed(end));
        }
        state.data.extend_from_slice(chunk);
        drop(state);
        self.changed.notify_all();
        Ok(())
    }

    /// Whether the bytes already here at `offset` equal `chunk`.
    pub fn matches(&self, offset: u64, chunk: &[u8]) -> bool {
        let state = self.state();
        let start = offset as usize;
        state.data.as_slice().get(start..start + chunk.len()) == Some(chunk)
    }

    /// The read failed for good: readers of bytes not yet here get `failure`.
    pub fn fail(&self, failure: Failure) {
        let mut state = self.state();
        if state.error.is_none() && (state.data.len() as u64) < self.size {
            state.error = Some(failure);
        }
        drop(state);
        self.changed.notify_all();
    }

    /// Wait until bytes up to `end` are here, then `copy` them `start..end`.
    pub fn take<R>(
        &self,
        start: u64,
        end: u64,
        copy: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Failure> {
        if start > end || end > self.size {
            return Err(Failure::new(
                FailureKind::Invalid,
                format!(
                    "bytes {start}..{end} are not within the {} bytes read",
                    self.size
                ),
            ));
        }
        let mut state = self.state();
        while (state.data.len() as u64) < end {
            if let Some(error) = &state.error {
                return Err(error.clone());
            }
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        Ok(copy(&state.data.as_slice()[start as usize..end as usize]))
    }
}

/// `bytes FIRST-LAST/TOTAL` as (FIRST, TOTAL); None where it is not said.
pub fn content_range(value: &str) -> (Option<u64>, Option<u64>) {
    let Some(spec) = value.trim().strip_prefix("bytes ") else {
        return (None, None);
    };
    let (span, total) = spec.split_once('/').unwrap_or((spec, "*"));
    let first = span.split('-').next().and_then(|n| n.trim().parse().ok());
    (first, total.trim().parse().ok())
}

/// Writes a reply's body into a buffer: a resumed 206 from where it stopped, or a
/// 200 whose first `skip` bytes (already here) are compared, not written.
pub struct BodyWriter<'a> {
    buffer: &'a StreamBuffer,
    offset: u64,
    skip: u64,
}

impl<'a> BodyWriter<'a> {
    /// `status`, `content_range` and `etag`/`last_modified` of the reply.
    pub fn new(
        buffer: &'a StreamBuffer,
        partial: bool,
        content_range_header: Option<&str>,
        validator: Option<String>,
    ) -> Result<BodyWriter<'a>, Failure> {
        let received = buffer.received();
        if partial {
            let (first, total) = content_range(content_range_header.unwrap_or(""));
            if first != Some(received) {
                return Err(Failure::new(
                    FailureKind::Fetch,
                    format!(
                        "answered a range request for bytes {received}- with bytes from {} \
                         (Content-Range: {:?}) (not retried)",
                        first.map_or("?".to_string(), |n| n.to_string()),
                        content_range_header.unwrap_or("")
                    ),
                )
                .with_status(Some(206)));
            }
            if let Some(total) = total {
                buffer.expect_total(total)?;
            }
            return Ok(BodyWriter {
                buffer,
                offset: received,
                skip: 0,
            });
        }
        if let (0, Some(expected), Some(now)) = (received, &buffer.expected, &validator) {
            if expected != now {
                return Err(Failure::replaced(now));
            }
        }
        buffer.set_validator(validator);
        Ok(BodyWriter {
            buffer,
            offset: 0,
            skip: received,
        })
    }

    pub fn write(&mut self, mut chunk: &[u8]) -> Result<(), Failure> {
        if self.skip > 0 {
            let known = chunk.len().min(self.skip as usize);
            if !self.buffer.matches(self.offset, &chunk[..known]) {
                return Err(Failure::new(
                    FailureKind::Fetch,
                    format!(
                        "sent other bytes at offset {} than before (changed while read?) \
                         (not retried)",
                        self.offset
                    ),
                ));
            }
            self.skip -= known as u64;
            self.offset += known as u64;
            chunk = &chunk[known..];
        }
        if !chunk.is_empty() {
            self.buffer.write(chunk)?;
            self.offset += chunk.len() as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumed_reply_is_checked_before_its_bytes_go_in() {
        let buffer = StreamBuffer::new(8);
        let mut first = BodyWriter::new(&buffer, false, None, Some("\"v1\"".into())).unwrap();
        first.write(b"abc").unwrap();
        assert_eq!(buffer.take(0, 3, |b| b.to_vec()).unwrap(), b"abc");
        assert!(BodyWriter::new(&buffer, true, Some("bytes 2-7/8"), None).is_err());
        let changed = BodyWriter::new(&buffer, true, Some("bytes 3-8/9"), None);
        assert_eq!(changed.err().unwrap().kind, FailureKind::Changed);
        let mut again = BodyWriter::new(&buffer, false, None, None).unwrap();
        assert!(again.write(b"abX").is_err()); // other bytes than before
        let mut again = BodyWriter::new(&buffer, false, None, None).unwrap();
        again.write(b"ab").unwrap();
        again.write(b"cdefgh").unwrap();
        assert_eq!(buffer.take(2, 8, |b| b.to_vec()).unwrap(), b"cdefgh");
        assert!(buffer.is_done() && !buffer.is_failed());
        assert_eq!(buffer.write(b"i").unwrap_err().kind, FailureKind::Changed);
    }

    #[test]
    fn a_first_reply_with_another_validator_is_not_the_object_indexed() {
        let buffer = StreamBuffer::expecting(4, Some("\"v1\"".into()));
        let replaced = BodyWriter::new(&buffer, false, None, Some("\"v2\"".into()));
        let failure = replaced.err().unwrap();
        assert_eq!(
            (failure.kind, failure.message.as_str()),
            (FailureKind::Replaced, "\"v2\"")
        );
        // Nothing of it went in.
        assert_eq!(buffer.received(), 0);
        // The same validator, or a reply without one (only the length is checked then).
        assert!(BodyWriter::new(&buffer, false, None, Some("\"v1\"".into())).is_ok());
        assert!(BodyWriter::new(&buffer, false, None, None).is_ok());
    }

    #[test]
    fn readers_of_what_arrived_are_served_after_a_failure() {
        let buffer = StreamBuffer::new(4);
        buffer.write(b"ab").unwrap();
        buffer.fail(Failure::new(FailureKind::Fetch, "gone"));
        assert_eq!(buffer.take(0, 2, |b| b.to_vec()).unwrap(), b"ab");
        assert_eq!(buffer.take(0, 4, |b| b.len()).unwrap_err().message, "gone");
        assert_eq!(content_range("bytes 5-9/10"), (Some(5), Some(10)));
        assert_eq!(content_range("bytes 5-9/*"), (Some(5), None));
    }
}
