//! Redirects and a dataset's secrets. A dataset's headers (an API key, its
//! Authorization, a URL's user:password, an S3 session token) go only to the
//! dataset's own origin (scheme, host and port), and no Referer goes anywhere (it
//! would carry the URL's query): as `dataloader_api.io._http_client` (issue 49).
//!
//! reqwest's redirect policies cannot edit a request's headers: `http` follows
//! redirects itself, and so does object_store's client (`OwnOriginConnector`).

use std::sync::Arc;
use std::time::Duration;

use http::uri::InvalidUri;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpService,
};
use object_store::ClientOptions;
use reqwest::header::{
    HeaderName, HeaderValue, IF_MATCH, IF_MODIFIED_SINCE, IF_NONE_MATCH, IF_RANGE,
    IF_UNMODIFIED_SINCE, LOCATION, RANGE,
};
use reqwest::redirect::Policy;
use reqwest::{Method, StatusCode, Url};

use crate::connections::CountConnects;
use crate::failure::{error_chain, Failure, FailureKind};
use crate::Counters;

/// Redirects followed per item at most (`dataloader_api.io._http_client.MAX_REDIRECTS`).
pub const MAX_REDIRECTS: usize = 10;

/// Whether `a` and `b` are one origin: the same scheme, host and port.
pub fn same_origin(a: &Url, b: &Url) -> bool {
    a.origin() == b.origin()
}

/// The statuses followed, as the reference follows them.
pub fn is_followed(status: StatusCode) -> bool {
    matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
}

/// Where a redirect from `from` with `location` goes: an http(s) URL, or the
/// reference's ValueError; from https to http, the reference's FetchError
/// (`downgrade`).
pub fn target(from: &Url, location: &HeaderValue) -> Result<Url, Failure> {
    let text = String::from_utf8_lossy(location.as_bytes());
    match from.join(&text) {
        Ok(url) if from.scheme() == "https" && url.scheme() == "http" => Err(downgrade(&url)),
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => Ok(url),
        _ => {
            let shown = text.split('?').next().unwrap_or_default();
            Err(Failure::new(
                FailureKind::Invalid,
                format!("is redirected to {shown:?}, which is not an http(s) URL"),
            ))
        }
    }
}

/// A redirect from https to http is not followed (reqwest and requests follow
/// it): the item's bytes would come unauthenticated, open to anyone on the path,
/// from a dataset that listed https URLs. Not retried: the same redirect comes
/// again. `_http_client.downgrade` in the reference, word for word.
pub fn downgrade(to: &Url) -> Failure {
    Failure::new(
        FailureKind::Fetch,
        format!(
            "refused a redirect from https to {}: a downgrade to plain http is not \
             followed; list the http:// URL itself to read it without TLS (not retried)",
            shown(to)
        ),
    )
}

/// `url` for an error message: without user:password, query or fragment.
pub fn shown(url: &Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

/// object_store's client: it follows redirects itself (reqwest's policies
/// cannot edit headers, and object_store signs each request, Authorization and
/// x-amz-security-token included, which reqwest would send on to another origin).
#[derive(Debug)]
pub struct OwnOriginConnector {
    pub timeout: Duration,
    pub max_connections: usize,
    pub counters: Arc<Counters>,
}

impl HttpConnector for OwnOriginConnector {
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        // What S3Reader sets of ClientOptions, which this replaces.
        let client = reqwest::Client::builder()
            .timeout(self.timeout)
            .pool_max_idle_per_host(self.max_connections)
            .no_gzip()
            .redirect(Policy::none())
            .referer(false)
            .tls_built_in_webpki_certs(false) // the reference's roots alone (http.rs)
            .connector_layer(CountConnects::on(&self.counters))
            .build()
            .map_err(|e| object_store::Error::Generic {
                store: "S3",
                source: Box::new(e),
            })?;
        Ok(HttpClient::new(OwnOriginClient { client }))
    }
}

/// Follows a GET's redirects (at most MAX_REDIRECTS) as the reference: a hop to
/// another origin is sent unsigned, with only the headers that say which bytes.
#[derive(Debug)]
struct OwnOriginClient {
    client: reqwest::Client,
}

/// What a request to another origin keeps of a store's request.
const KEPT: [HeaderName; 6] = [
    RANGE,
    IF_RANGE,
    IF_MATCH,
    IF_NONE_MATCH,
    IF_MODIFIED_SINCE,
    IF_UNMODIFIED_SINCE,
];

#[async_trait::async_trait]
impl HttpService for OwnOriginClient {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let (parts, body) = request.into_parts();
        let refused = |e: String| HttpError::new(HttpErrorKind::Unknown, std::io::Error::other(e));
        let origin = Url::parse(&parts.uri.to_string()).map_err(|e| refused(e.to_string()))?;
        let follows = parts.method == Method::GET || parts.method == Method::HEAD;
        let (mut hop, mut redirects) = (origin.clone(), 0);
        loop {
            let mut request = HttpRequest::new(body.clone());
            *request.method_mut() = parts.method.clone();
            *request.uri_mut() = hop
                .as_str()
                .parse()
                .map_err(|e: InvalidUri| refused(e.to_string()))?;
            *request.headers_mut() = match same_origin(&origin, &hop) {
                true => parts.headers.clone(),
                false => KEPT
                    .iter()
                    .filter_map(|name| Some((name.clone(), parts.headers.get(name)?.clone())))
                    .collect(),
            };
            let response = self.client.call(request).await.map_err(|e| {
                // rustls's words: the same certificate comes again, so object_store
                // must not retry it (it retries a Connect error).
                let chain = error_chain(&e);
                match chain.contains("invalid peer certificate") {
                    true => refused(format!("certificate verification failed: {chain}")),
                    false => e,
                }
            })?;
            let location = response.headers().get(LOCATION);
            let location = match location.filter(|_| follows && is_followed(response.status())) {
                Some(location) if redirects < MAX_REDIRECTS => location,
                _ => return Ok(response),
            };
            hop = target(&hop, location)
                .map_err(|failure| refused(format!("{} {}", shown(&hop), failure.message)))?;
            redirects += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).expect("a test URL")
    }

    #[test]
    fn origins_are_scheme_host_and_port() {
        let a = url("http://u:p@Example.com/a?x=1");
        assert!(same_origin(&a, &url("http://example.com:80/b")));
        assert!(!same_origin(&a, &url("https://example.com/a")));
        assert!(!same_origin(&a, &url("http://example.com:8080/a")));
        assert!(!same_origin(&a, &url("http://example.org/a")));
    }

    #[test]
    fn targets_are_http_urls_resolved_against_the_request() {
        let from = url("http://h:1/a/b?token=t");
        let to = |location: &str| target(&from, &HeaderValue::from_str(location).expect("ascii"));
        assert_eq!(
            to("c").map(|u| u.to_string()).ok(),
            Some("http://h:1/a/c".into())
        );
        assert_eq!(
            to("https://o/x").map(|u| u.to_string()).ok(),
            Some("https://o/x".into())
        );
        let refused = to("ftp://o/x?secret=1").err().map(|f| (f.kind, f.message));
        let message = "is redirected to \"ftp://o/x\", which is not an http(s) URL";
        assert_eq!(refused, Some((FailureKind::Invalid, message.into())));
    }

    #[test]
    fn a_downgrade_from_https_to_http_is_refused() {
        let from = url("https://h/a");
        let to = |location: &str| target(&from, &HeaderValue::from_str(location).expect("ascii"));
        let refused = to("http://h/b?token=t").err().map(|f| f.kind);
        assert_eq!(refused, Some(FailureKind::Fetch));
        assert!(to("https://o/b").is_ok());
        let up = target(&url("http://h/a"), &HeaderValue::from_static("https://h/b"));
        assert!(up.is_ok());
    }

    #[test]
    fn shown_urls_hold_no_credentials() {
        let shown = shown(&url("http://u:pw@h:1/k?X-Amz-Signature=s#f"));
        assert_eq!(shown, "http://h:1/k");
    }
}
