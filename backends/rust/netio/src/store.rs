//! S3-compatible stores through `object_store`, with the retry policy mapped
//! onto its own (exponential backoff; it does not read `Retry-After`).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectStore, RetryConfig};

use crate::failure::{error_chain, Failure, FailureKind};
use crate::redirect::OwnOriginConnector;
use crate::retry::RetryPolicy;
use crate::stream::{BodyWriter, StreamBuffer};
use crate::Counters;

pub struct S3Options {
    pub bucket: String,
    pub prefix: String,
    pub endpoint: Option<String>,
    pub region: String,
    /// (access key, secret key, session token); None: unsigned requests.
    pub credentials: Option<(String, String, Option<String>)>,
    pub timeout: f64,
    pub retry: RetryPolicy,
    pub max_bytes: Option<u64>,
    pub max_connections: usize,
}

pub struct S3Reader {
    store: Arc<dyn ObjectStore>,
    /// For `stream`, which retries itself: object_store would resume a body cut
    /// short by appending what the server sends, the whole object if it ignores
    /// the range, and a streamed object's readers may already hold those bytes.
    single: Arc<dyn ObjectStore>,
    prefix: String,
    max_bytes: Option<u64>,
    retry: RetryPolicy,
}

impl S3Reader {
    pub fn new(options: S3Options, counters: Arc<Counters>) -> Result<S3Reader, String> {
        let retry = RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_secs_f64(options.retry.backoff),
                max_backoff: Duration::from_secs_f64(options.retry.max_backoff),
                base: options.retry.multiplier,
            },
            max_retries: options.retry.max_retries as usize,
            // Bounded by the count above, not by time.
            retry_timeout: Duration::from_secs(24 * 3600),
        };
        let client = ClientOptions::new()
            .with_timeout(Duration::from_secs_f64(options.timeout))
            .with_allow_http(true)
            .with_pool_max_idle_per_host(options.max_connections);
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&options.bucket)
            .with_region(&options.region)
            .with_retry(retry.clone())
            .with_client_options(client)
            // object_store's own client would send the session token to any origin a
            // redirect names: this one sends it to the endpoint's only (`redirect`).
            .with_http_connector(OwnOriginConnector {
                timeout: Duration::from_secs_f64(options.timeout),
                max_connections: options.max_connections,
                counters,
            });
        if let Some(endpoint) = &options.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        builder = match &options.credentials {
            Some((key, secret, token)) => {
                let builder = builder
                    .with_access_key_id(key)
                    .with_secret_access_key(secret);
                match token {
                    Some(token) => builder.with_token(token),
                    None => builder,
                }
            }
            None => builder.with_skip_signature(true),
        };
        let store = builder.clone().build().map_err(|e| e.to_string())?;
        let once = RetryConfig {
            max_retries: 0,
            ..retry
        };
        let single = builder
            .with_retry(once)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(S3Reader {
            store: Arc::new(store),
            single: Arc::new(single),
            prefix: options.prefix,
            max_bytes: options.max_bytes,
            retry: options.retry,
        })
    }

    fn path(&self, key: &str) -> Result<Path, Failure> {
        // The key as it is (Path::from would percent-encode non-ASCII characters).
        let full = format!("{}{key}", self.prefix);
        Path::parse(&full).map_err(|e| {
            Failure::new(
                FailureKind::Invalid,
                format!("is not a key the store takes: {e}"),
            )
        })
    }

    /// Object `key` into `sink` as it arrives. A body cut short resumes from where
    /// it stopped, with the first reply's ETag as If-Match: an object that changed
    /// fails the request instead of mixing two objects' bytes.
    pub async fn stream(&self, key: &str, sink: &StreamBuffer) -> Result<(), Failure> {
        let path = self.path(key)?;
        let (mut attempt, mut whole) = (0, false);
        loop {
            // A resumed read asks for the rest; after a resumed request that failed
            // without a status (a reply that was not the range: object_store refuses
            // it), for all of it again, its bytes already here compared.
            let before = sink.received();
            let resume = before > 0 && !whole;
            let options = GetOptions {
                range: resume.then(|| GetRange::Offset(sink.received())),
                if_match: sink.validator().filter(|_| resume),
                ..GetOptions::default()
            };
            let reason = match self.single.get_opts(&path, options).await {
                Ok(result) => match self.stream_reply(result, sink).await? {
                    true => return Ok(()),
                    false => format!(
                        "the body was cut short ({} of {} bytes)",
                        sink.received(),
                        sink.size()
                    ),
                },
                Err(error) => {
                    let failure = store_failure(error);
                    let transient = failure.status.is_none_or(|s| self.retry.is_transient(s));
                    if failure.kind != FailureKind::Fetch || !transient {
                        return Err(failure.with_attempts(attempt + 1));
                    }
                    whole = resume && failure.status.is_none();
                    failure.message
                }
            };
            if sink.received() > before {
                // It moved on before it was cut: resumed without using up a retry.
                tokio::time::sleep(self.retry.delay(0, None)).await;
                continue;
            }
            self.after_failure(&mut attempt, reason).await?;
        }
    }

    /// One more attempt failed for `reason`: the failure once `max_retries` are
    /// used up, else the backoff before the next attempt.
    async fn after_failure(&self, attempt: &mut u32, reason: String) -> Result<(), Failure> {
        *attempt += 1;
        if *attempt > self.retry.max_retries {
            return Err(Failure::new(
                FailureKind::Fetch,
                format!("failed after {attempt} attempts; last: {reason}"),
            )
            .with_attempts(*attempt));
        }
        tokio::time::sleep(self.retry.delay(*attempt - 1, None)).await;
        Ok(())
    }

    /// One reply's body into `sink`: whether all of the object is now there.
    async fn stream_reply(
        &self,
        result: object_store::GetResult,
        sink: &StreamBuffer,
    ) -> Result<bool, Failure> {
        sink.expect_total(result.meta.size)?;
        if let Some(limit) = self.max_bytes.filter(|&limit| sink.size() > limit) {
            return Err(Failure::too_large(sink.size(), limit));
        }
        let partial = result.range.start > 0;
        let (start, end) = (result.range.start, result.range.end);
        let range = format!("bytes {start}-{}/{}", end.saturating_sub(1), sink.size());
        // A strong ETag only, as the reference takes it (and If-Match compares strongly).
        let validator = result.meta.e_tag.clone().filter(|tag| tag.starts_with('"'));
        let mut writer = BodyWriter::new(sink, partial, Some(&range), validator)?;
        let mut stream = result.into_stream();
        loop {
            match stream.next().await {
                Some(Ok(chunk)) => writer.write(&chunk)?,
                None if sink.received() == sink.size() => return Ok(true),
                Some(Err(_)) | None => return Ok(false),
            }
        }
    }

    pub async fn get(&self, key: &str) -> Result<Vec<u8>, Failure> {
        let path = self.path(key)?;
        // object_store retries requests itself, and resumes a body cut short with a
        // range request; a server that ignores the range answers with the whole
        // object, which object_store appends. So a body that fails, or whose length
        // is not the object's, starts over here: only the object's bytes come back.
        let mut attempt = 0;
        loop {
            let result = self.store.get(&path).await.map_err(store_failure)?;
            let size = result.meta.size;
            if let Some(limit) = self.max_bytes {
                if size > limit {
                    return Err(Failure::too_large(size, limit));
                }
            }
            let mut body = Vec::with_capacity(size.min(crate::stream::RESERVE_AT_MOST) as usize);
            let mut stream = result.into_stream();
            let reason = loop {
                match stream.next().await {
                    Some(Ok(chunk)) if body.len() + chunk.len() <= size as usize => {
                        body.extend_from_slice(&chunk)
                    }
                    Some(Ok(chunk)) => {
                        break format!(
                            "the store sent {} bytes for an object of {size} bytes",
                            body.len() + chunk.len()
                        )
                    }
                    Some(Err(_)) => {
                        break format!("the body was cut short ({} of {size} bytes)", body.len())
                    }
                    None if body.len() as u64 == size => return Ok(body),
                    None => {
                        break format!("the body was cut short ({} of {size} bytes)", body.len())
                    }
                }
            };
            self.after_failure(&mut attempt, reason).await?;
        }
    }
}

fn store_failure(error: object_store::Error) -> Failure {
    let mut status = match &error {
        object_store::Error::NotFound { .. } => Some(404),
        object_store::Error::PermissionDenied { .. } => Some(403),
        object_store::Error::Unauthenticated { .. } => Some(401),
        _ => None,
    };
    let detail = error_chain(&error);
    // "... after N retries ..." when object_store's retries ran out.
    let retries = detail
        .split(" after ")
        .skip(1)
        .find_map(|rest| rest.split(' ').next().and_then(|n| n.parse::<u32>().ok()));
    // The store's own words, as the reference shows them: "Code: Message".
    let code = between(&detail, "<Code>", "</Code>");
    let text = match (status, code) {
        (Some(status), Some(code)) => {
            let reason = match status {
                404 => "Not Found",
                403 => "Forbidden",
                _ => "Unauthorized",
            };
            let message = between(&detail, "<Message>", "</Message>").unwrap_or_default();
            format!("HTTP {status} {reason}: {code}: {message} (not retried)")
        }
        _ => {
            // What failed in the reference's words, not object_store's internals.
            let (reason, code) = plain_reason(&detail);
            status = status.or(code);
            match retries {
                Some(n) => format!("failed after {} attempts; last: {reason}", n + 1),
                None => reason,
            }
        }
    };
    Failure::new(FailureKind::Fetch, text)
        .with_status(status)
        .with_attempts(retries.map_or(1, |n| n + 1))
}

/// An object_store error chain as the reference words it: "HTTP 503 Service
/// Unavailable" (with the status), "connection failed: <the system's reason>", or
/// the innermost cause.
fn plain_reason(detail: &str) -> (String, Option<u16>) {
    if let Some(rest) = detail.split("non-2xx status code: ").nth(1) {
        let line = rest.split(':').next().unwrap_or(rest).trim();
        let status = line.get(..3).and_then(|code| code.parse().ok());
        return (format!("HTTP {line}"), status);
    }
    if let Some(at) = detail.find("refused a redirect from https") {
        // redirect::downgrade's words, whole: they hold ": " themselves.
        return (detail[at..].trim().to_string(), None);
    }
    let innermost = detail.rsplit(": ").next().unwrap_or(detail).trim();
    let mut reason = innermost.to_string();
    reason.truncate(
        reason
            .char_indices()
            .nth(300)
            .map_or(reason.len(), |(i, _)| i),
    );
    if detail.contains("certificate verification failed") {
        // redirect::OwnOriginClient's words: not retried (as the reference).
        return (
            format!("certificate verification failed: {reason} (not retried)"),
            None,
        );
    }
    if detail.contains("error sending request") {
        return (format!("connection failed: {reason}"), None);
    }
    (reason, None)
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let to = text[from..].find(end)? + from;
    Some(&text[from..to])
}
