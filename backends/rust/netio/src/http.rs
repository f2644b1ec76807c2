//! HTTP(S) GETs on pooled keep-alive connections, with the retry policy.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::header::{
    HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_LENGTH, CONTENT_RANGE, ETAG,
    IF_RANGE, LAST_MODIFIED, LOCATION, RANGE, RETRY_AFTER,
};
use reqwest::{StatusCode, Url};

use crate::buffers::BufferPool;
use crate::client::Clients;
use crate::failure::{status_text, trim, Failure, FailureKind};
use crate::host_limit::HostLimit;
use crate::redirect::{self, same_origin, MAX_REDIRECTS};
use crate::retry::{parse_retry_after, RetryPolicy};
use crate::send_failure;
use crate::stall::{ConnectTimes, StallLayer};
use crate::stream::{BodyWriter, StreamBuffer, RESERVE_AT_MOST};
use crate::Counters;

/// A redirect's body is read (the connection kept) up to this size.
const REDIRECT_BODY: u64 = 4096;
/// A reply's header fields, each counted as its line (name, ": ", value, CRLF), at most:
/// hyper's read buffer, which a read may overshoot, so checked here too; as the reference's
/// `_http_head.MAX_HEAD_BYTES` (hyper refuses more than 100 fields: `MAX_HEADER_FIELDS`).
const MAX_HEAD_BYTES: usize = 8192 + 4096 * 100;

pub struct HttpOptions {
    pub headers: Vec<(String, String)>,
    pub timeout: f64,
    pub retry: RetryPolicy,
    pub max_bytes: Option<u64>,
    pub max_connections: usize,
}

pub struct HttpReader {
    client: Clients,
    timeout: Duration,
    retry: RetryPolicy,
    max_bytes: Option<u64>,
    counters: Arc<Counters>,
    buffers: Arc<BufferPool>,
    /// The dataset's headers: sent to the item's own origin only (`redirect`).
    headers: HeaderMap,
    /// `headers` hold Authorization: it wins over a URL's user:password.
    authorization: bool,
    max_connections: usize,
    /// Each host's requests in flight (`host_limit`), by "host:port".
    limits: Mutex<HashMap<String, Arc<HostLimit>>>,
    connects: Arc<ConnectTimes>,
}

/// Why one attempt failed.
pub(crate) enum Attempt {
    Transient(String, Option<f64>),
    Permanent(Failure),
    /// A connect past the reader's deadline (`host_limit`): made again at once.
    SlowConnect(String),
}

/// Connects made again at once per attempt before one waits as long as the system does.
const QUICK_RECONNECTS: u32 = 3;

impl HttpReader {
    pub fn new(
        options: HttpOptions,
        counters: Arc<Counters>,
        buffers: Arc<BufferPool>,
    ) -> Result<HttpReader, String> {
        let mut headers = HeaderMap::new();
        for (name, value) in &options.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| format!("header {name:?}: {e}"))?;
            let mut value =
                HeaderValue::from_str(value).map_err(|e| format!("header {name:?}: {e}"))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let authorization = headers.contains_key(AUTHORIZATION);
        let stall = StallLayer::default();
        let connects = stall.watch.clone();
        let client = Clients::new(options.max_connections, stall, counters.clone())?;
        Ok(HttpReader {
            client,
            timeout: Duration::from_secs_f64(options.timeout),
            retry: options.retry,
            max_bytes: options.max_bytes,
            counters,
            buffers,
            headers,
            authorization,
            max_connections: options.max_connections,
            limits: Mutex::new(HashMap::new()),
            connects,
        })
    }

    fn host_limit(&self, url: &reqwest::Url) -> Arc<HostLimit> {
        let host = format!(
            "{}:{}",
            url.host_str().unwrap_or(""),
            url.port_or_known_default().unwrap_or(0)
        );
        let mut limits = self.limits.lock().unwrap_or_else(|e| e.into_inner());
        let new = || Arc::new(HostLimit::new(self.max_connections, Some(host.clone())));
        limits.entry(host.clone()).or_insert_with(new).clone()
    }

    /// Close the idle connections (an epoch closed: `client::Clients`).
    pub fn close_idle(&self) {
        self.client.close_idle();
    }

    pub async fn get(&self, url: &str) -> Result<Vec<u8>, Failure> {
        self.get_into(url, None).await
    }

    /// The body of `url`, or with a `sink`, into it as it arrives (an empty Vec
    /// is returned); a retry then resumes where the body was cut.
    pub async fn get_into(
        &self,
        url: &str,
        sink: Option<&StreamBuffer>,
    ) -> Result<Vec<u8>, Failure> {
        let parsed = reqwest::Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"));
        let Some(mut parsed) = parsed else {
            return Err(Failure::new(FailureKind::Invalid, "is not an http(s) URL"));
        };
        // reqwest sends a URL's user:password as Basic auth (as curl and requests
        // do), unless the dataset's headers give Authorization, as the reference.
        if self.authorization && (!parsed.username().is_empty() || parsed.password().is_some()) {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
        }
        let limit = self.host_limit(&parsed);
        let url = &parsed;
        let (mut retry, mut quick) = (0, QUICK_RECONNECTS);
        loop {
            let started = limit.acquire().await;
            let mut replied = None;
            let before = sink.map(StreamBuffer::received);
            let attempt = self.attempt(url, &mut replied, sink);
            let outcome = match tokio::time::timeout(self.timeout, attempt).await {
                Ok(outcome) => outcome,
                Err(_) => Err(Attempt::Transient(
                    format!("timed out after {} s", trim(self.timeout.as_secs_f64())),
                    None,
                )),
            };
            limit.release(started, replied, self.connects.near());
            let (reason, retry_after) = match outcome {
                Ok(body) => return Ok(body),
                Err(Attempt::Permanent(failure)) => return Err(failure.with_attempts(retry + 1)),
                Err(Attempt::SlowConnect(reason)) => {
                    limit.stalled(started, quick == QUICK_RECONNECTS);
                    if quick > 0 {
                        quick -= 1; // connect again at once, as the reference does
                        continue;
                    }
                    (reason, None)
                }
                Err(Attempt::Transient(reason, retry_after)) => (reason, retry_after),
            };
            // A streamed body that moved on before it was cut resumes without using up
            // a retry: a large object on a slow link may need several attempts.
            let progressed = sink.map(StreamBuffer::received) > before;
            if retry >= self.retry.max_retries && !progressed {
                let status = reason
                    .strip_prefix("HTTP ")
                    .and_then(|rest| rest.get(..3))
                    .and_then(|code| code.parse().ok());
                return Err(Failure::new(
                    FailureKind::Fetch,
                    format!("failed after {} attempts; last: {reason}", retry + 1),
                )
                .with_status(status)
                .with_attempts(retry + 1));
            }
            tokio::time::sleep(self.retry.delay(retry, retry_after)).await;
            retry += u32::from(!progressed);
            self.counters.retries.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// One request and the redirects it is sent on (at most MAX_REDIRECTS, counted);
    /// `replied` is set when the last reply's headers come.
    async fn attempt(
        &self,
        url: &Url,
        replied: &mut Option<Instant>,
        sink: Option<&StreamBuffer>,
    ) -> Result<Vec<u8>, Attempt> {
        let (mut hop, mut redirects) = (url.clone(), 0);
        let mut response = loop {
            let mut response = self.send(url, &hop, sink).await?;
            *replied = Some(Instant::now());
            check_head(response.headers())?;
            let location = response.headers().get(LOCATION);
            let to = match location.filter(|_| redirect::is_followed(response.status())) {
                Some(location) if redirects < MAX_REDIRECTS => redirect::target(&hop, location),
                _ => break response,
            };
            hop = to.map_err(Attempt::Permanent)?;
            redirects += 1;
            self.counters.redirects.fetch_add(1, Ordering::Relaxed);
            if response
                .content_length()
                .is_some_and(|n| n <= REDIRECT_BODY)
            {
                while let Ok(Some(_)) = response.chunk().await {} // the connection is kept
            }
        };
        let status = response.status();
        let mut text = status_text(status);
        if redirect::is_followed(status) {
            // Past MAX_REDIRECTS, or without a Location: the reference's words.
            text += &match response.headers().contains_key(LOCATION) {
                true => format!(" after {redirects} redirects"),
                false => " without a Location".to_string(),
            };
        }
        let partial = sink.is_some() && status == StatusCode::PARTIAL_CONTENT;
        if status != StatusCode::OK && !partial {
            if self.retry.is_transient(status.as_u16()) {
                let after = response
                    .headers()
                    .get(RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(parse_retry_after);
                return Err(Attempt::Transient(text, after));
            }
            return Err(Attempt::Permanent(
                Failure::new(FailureKind::Fetch, format!("{text} (not retried)"))
                    .with_status(Some(status.as_u16())),
            ));
        }
        let expected = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if let (Some(size), Some(limit)) = (expected, self.max_bytes) {
            if size > limit {
                return Err(Attempt::Permanent(Failure::too_large(size, limit)));
            }
        }
        if let Some(sink) = sink {
            return self.stream_body(response, sink, partial, expected).await;
        }
        // Never reserved from Content-Length alone: grown as the bytes arrive.
        let mut body = self
            .buffers
            .take(expected.unwrap_or(0).min(RESERVE_AT_MOST) as usize);
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    body.extend_from_slice(&chunk);
                    if let Some(limit) = self.max_bytes {
                        if body.len() as u64 > limit {
                            return Err(Attempt::Permanent(Failure::too_large(
                                body.len() as u64,
                                limit,
                            )));
                        }
                    }
                }
                Ok(None) => return Ok(body),
                Err(_) => {
                    let of = expected.map(|n| format!(" of {n}")).unwrap_or_default();
                    return Err(Attempt::Transient(
                        format!("the body was cut short ({}{of} bytes)", body.len()),
                        None,
                    ));
                }
            }
        }
    }
}

impl HttpReader {
    /// One request to `hop`, on the way to item `url`: the dataset's headers, and
    /// the item's user:password unless they hold Authorization, go to the item's
    /// origin only (`redirect`).
    async fn send(
        &self,
        url: &Url,
        hop: &Url,
        sink: Option<&StreamBuffer>,
    ) -> Result<reqwest::Response, Attempt> {
        let mut target = hop.clone();
        let own = same_origin(url, hop);
        // reqwest sends a URL's user:password as Basic auth (get_into has cleared
        // the item's when the headers hold Authorization); never a Location's.
        let _ = target.set_username(if own { url.username() } else { "" });
        let _ = target.set_password(url.password().filter(|_| own));
        let mut request = self.client.get().get(target);
        if own {
            request = request.headers(self.headers.clone());
        }
        if let Some(received) = sink.map(StreamBuffer::received).filter(|&n| n > 0) {
            request = request.header(RANGE, format!("bytes={received}-"));
            if let Some(validator) = sink.and_then(StreamBuffer::validator) {
                request = request.header(IF_RANGE, validator);
            }
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => return Err(send_failure::classify(e, hop, &self.counters).await),
        };
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        Ok(response)
    }

    /// A 200 or 206 reply's body into `sink` (see `stream::BodyWriter`).
    async fn stream_body(
        &self,
        mut response: reqwest::Response,
        sink: &StreamBuffer,
        partial: bool,
        expected: Option<u64>,
    ) -> Result<Vec<u8>, Attempt> {
        if let Some(limit) = self.max_bytes.filter(|&limit| sink.size() > limit) {
            return Err(Attempt::Permanent(Failure::too_large(sink.size(), limit)));
        }
        let header = |name| response.headers().get(name).and_then(|v| v.to_str().ok());
        if let (false, Some(size)) = (partial, expected) {
            sink.expect_total(size).map_err(Attempt::Permanent)?;
        }
        let etag = header(ETAG).filter(|tag| tag.starts_with('"'));
        let validator = etag.or(header(LAST_MODIFIED)).map(str::to_string);
        let range = header(CONTENT_RANGE).map(str::to_string);
        let mut writer = BodyWriter::new(sink, partial, range.as_deref(), validator)
            .map_err(Attempt::Permanent)?;
        let cut = || {
            let reason = format!(
                "the body was cut short ({} of {} bytes)",
                sink.received(),
                sink.size()
            );
            Attempt::Transient(reason, None)
        };
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => writer.write(&chunk).map_err(Attempt::Permanent)?,
                Ok(None) if sink.received() == sink.size() => return Ok(Vec::new()),
                Ok(None) | Err(_) => return Err(cut()),
            }
        }
    }
}

/// A reply whose header fields take more than `MAX_HEAD_BYTES` (the reference's
/// words: a malformed reply, retried).
fn check_head(headers: &HeaderMap) -> Result<(), Attempt> {
    let used: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    match used > MAX_HEAD_BYTES {
        true => Err(Attempt::Transient(
            format!("a malformed reply: headers of more than {MAX_HEAD_BYTES} bytes"),
            None,
        )),
        false => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_past_the_reference_cap_are_refused() {
        let mut headers = HeaderMap::new();
        let value = HeaderValue::from_str(&"a".repeat(40_000)).expect("ascii");
        for i in 0..10 {
            let name = HeaderName::from_bytes(format!("x-f{i}").as_bytes()).expect("a name");
            headers.insert(name, value.clone());
        }
        assert!(check_head(&headers).is_ok()); // 10 * 40,009 bytes
        headers.insert("x-more", value);
        assert!(matches!(check_head(&headers), Err(Attempt::Transient(..))));
    }
}
