//! Why an item could not be read, as the Python side raises it.

/// Which Python exception the failure becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// `FetchError`: a permanent status, or transient failures past the retries.
    Fetch,
    /// `ItemTooLargeError`: more than `max_bytes`.
    TooLarge,
    /// `OSError` with `errno` (files).
    Os,
    /// `ValueError`: a location that cannot be read at all (not an http(s) URL, ...).
    Invalid,
    /// The epoch closed while the read ran (nobody waits for the result).
    Cancelled,
    /// A streamed object is not the size it was indexed at (`total`): it changed.
    Changed,
    /// A streamed object of the size indexed, but another validator (the message
    /// holds the reply's): replaced by one of the same length.
    Replaced,
}

impl FailureKind {
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Fetch => "fetch",
            FailureKind::TooLarge => "too_large",
            FailureKind::Os => "os",
            FailureKind::Invalid => "invalid",
            FailureKind::Cancelled => "cancelled",
            FailureKind::Changed => "changed",
            FailureKind::Replaced => "replaced",
        }
    }
}

/// One item's failure: the message says what happened (the Python side adds the
/// item's index and its location, credentials redacted).
#[derive(Debug, Clone)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
    pub status: Option<u16>,
    pub attempts: u32,
    pub errno: Option<i32>,
    /// `Changed`: the object's size now (or at least this many bytes).
    pub total: Option<u64>,
}

impl Failure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
            status: None,
            attempts: 1,
            errno: None,
            total: None,
        }
    }

    /// A streamed object of `total` bytes, not the size expected.
    pub fn changed(total: u64) -> Failure {
        let mut failure = Failure::new(FailureKind::Changed, format!("{total} bytes now"));
        failure.total = Some(total);
        failure
    }

    /// A streamed object whose reply carries `validator`, not the one it was indexed with.
    pub fn replaced(validator: &str) -> Failure {
        Failure::new(FailureKind::Replaced, validator)
    }

    /// An item of `size` bytes, past `max_bytes`.
    pub fn too_large(size: u64, limit: u64) -> Failure {
        Failure::new(
            FailureKind::TooLarge,
            format!("{size} bytes, more than max_bytes={limit}"),
        )
    }

    pub fn with_status(mut self, status: Option<u16>) -> Failure {
        self.status = status;
        self
    }

    pub fn with_attempts(mut self, attempts: u32) -> Failure {
        self.attempts = attempts;
        self
    }
}

/// The error and its causes (reqwest's and object_store's own text is only the
/// outermost one); a cause already quoted by the text before it is left out.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let next = cause.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = cause.source();
    }
    text
}
/// "HTTP 404 Not Found", as the reference words a status.
pub fn status_text(status: reqwest::StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("HTTP {} {reason}", status.as_u16()),
        None => format!("HTTP {}", status.as_u16()),
    }
}

/// Seconds as the reference prints them (`{:g}`: no ".0").
pub fn trim(seconds: f64) -> String {
    let text = format!("{seconds}");
    text.strip_suffix(".0").unwrap_or(&text).to_string()
}
