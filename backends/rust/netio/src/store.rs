//! S3-compatible stores through `object_store`, with the retry policy mapped
//! onto its own (exponential backoff; it does not read `Retry-After`).

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};

use crate::failure::{error_chain, Failure, FailureKind};
use crate::retry::RetryPolicy;

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
    prefix: String,
    max_bytes: Option<u64>,
}

impl S3Reader {
    pub fn new(options: S3Options) -> Result<S3Reader, String> {
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
            .with_retry(retry)
            .with_client_options(client);
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
        let store = builder.build().map_err(|e| e.to_string())?;
        Ok(S3Reader {
            store: Arc::new(store),
            prefix: options.prefix,
            max_bytes: options.max_bytes,
        })
    }

    pub async fn get(&self, key: &str) -> Result<Vec<u8>, Failure> {
        // The key as it is (Path::from would percent-encode non-ASCII characters).
        let full = format!("{}{key}", self.prefix);
        let path = Path::parse(&full).map_err(|e| {
            Failure::new(
                FailureKind::Invalid,
                format!("is not a key the store takes: {e}"),
            )
        })?;
        let result = self.store.get(&path).await.map_err(store_failure)?;
        if let Some(limit) = self.max_bytes {
            if result.meta.size > limit {
                return Err(Failure::too_large(result.meta.size, limit));
            }
        }
        let bytes = result.bytes().await.map_err(store_failure)?;
        Ok(bytes.to_vec())
    }
}

fn store_failure(error: object_store::Error) -> Failure {
    let status = match &error {
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
            let mut text = detail.clone();
            text.truncate(text.char_indices().nth(400).map_or(text.len(), |(i, _)| i));
            match retries {
                Some(n) => format!("failed after {} attempts; last: {text}", n + 1),
                None => text,
            }
        }
    };
    Failure::new(FailureKind::Fetch, text)
        .with_status(status)
        .with_attempts(retries.map_or(1, |n| n + 1))
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let to = text[from..].find(end)? + from;
    Some(&text[from..to])
}
