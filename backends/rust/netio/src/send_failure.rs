//! What a request that got no usable reply was: a connect that stalled, a
//! certificate that does not verify, an HTTP/2-only server (all told apart
//! here, so `http` stays the happy path), or a transient failure.
//!
//! `counters.requests` counts requests sent, as the reference and the server
//! count them: a connect that failed (refused, stalled) sent nothing.

use std::sync::atomic::Ordering;
use std::time::Duration;

use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::failure::{error_chain, Failure, FailureKind};
use crate::http::Attempt;
use crate::stall::is_slow_connect;
use crate::Counters;

/// The reference's words (`_http_head.HTTP2_ONLY`).
pub const HTTP2_ONLY: &str = "the server speaks HTTP/2 only; this client speaks HTTP/1.1";
/// How long the probe for an HTTP/2 server's first frame waits.
const PROBE: Duration = Duration::from_secs(2);

/// Why sending a request to `hop` failed (counted if it was sent).
pub async fn classify(error: reqwest::Error, hop: &Url, counters: &Counters) -> Attempt {
    // Without the URL: it may hold user:password, and the caller names the item.
    let error = error.without_url();
    let chain = error_chain(&error);
    let reason = format!("connection failed: {chain}");
    if is_slow_connect(&error) {
        return Attempt::SlowConnect(reason); // never sent: not counted
    }
    if !error.is_connect() {
        counters.requests.fetch_add(1, Ordering::Relaxed);
    }
    // rustls's words: the same certificate comes again, so not retried.
    if chain.contains("invalid peer certificate") {
        let text = format!("certificate verification failed: {chain} (not retried)");
        return Attempt::Permanent(Failure::new(FailureKind::Fetch, text));
    }
    // hyper's words for a reply that does not begin "HTTP/1.": an HTTP/2 frame?
    if chain.contains("invalid HTTP version") && speaks_http2(hop).await {
        let text = format!("{HTTP2_ONLY} (not retried)");
        return Attempt::Permanent(Failure::new(FailureKind::Fetch, text));
    }
    Attempt::Transient(reason, None)
}

/// Whether the server of `hop` answers an HTTP/1.1 request with an HTTP/2
/// frame (hyper does not say what the bytes it refused were, so one more
/// connection asks, on this rare path only).
async fn speaks_http2(hop: &Url) -> bool {
    let (Some(host), Some(port)) = (hop.host_str(), hop.port_or_known_default()) else {
        return false;
    };
    if hop.scheme() != "http" {
        return false; // over TLS, ALPN settles the protocol before any reply
    }
    let probe = async {
        let mut stream = tokio::net::TcpStream::connect(format!("{host}:{port}"))
            .await
            .ok()?;
        let request = format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut head = [0u8; 9];
        stream.read_exact(&mut head).await.ok()?;
        Some(is_http2_frame(&head))
    };
    matches!(tokio::time::timeout(PROBE, probe).await, Ok(Some(true)))
}

/// A SETTINGS or GOAWAY frame on stream 0: how an HTTP/2 server begins (and
/// ends) a connection that did not start with its preface.
pub fn is_http2_frame(head: &[u8]) -> bool {
    head.len() >= 9 && matches!(head[3], 4 | 7) && head[5..9] == [0, 0, 0, 0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http2_frames_are_told_from_http1_replies() {
        assert!(is_http2_frame(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"));
        assert!(is_http2_frame(b"\x00\x00\x08\x07\x00\x00\x00\x00\x00\x00"));
        assert!(!is_http2_frame(b"HTTP/1.1 200 OK\r\n"));
        assert!(!is_http2_frame(b"\x00\x00\x00\x04"));
    }
}
