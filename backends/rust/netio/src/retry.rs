//! The retry policy of `dataloader_api.io.RetryPolicy`, computed the same way.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime};

#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub backoff: f64,
    pub multiplier: f64,
    pub max_backoff: f64,
    pub jitter: f64,
    pub statuses: Vec<u16>,
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0 for the first).
    pub fn delay(&self, retry: u32, retry_after: Option<f64>) -> Duration {
        let seconds = match retry_after {
            Some(after) => after.max(0.0).min(self.max_backoff),
            None => {
                let base =
                    (self.backoff * self.multiplier.powi(retry as i32)).min(self.max_backoff);
                base - base * self.jitter * unit_random()
            }
        };
        Duration::from_secs_f64(seconds.max(0.0))
    }

    pub fn is_transient(&self, status: u16) -> bool {
        self.statuses.contains(&status)
    }
}

/// A number in [0, 1) that differs on each call (the std hasher's random keys).
fn unit_random() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(0);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Seconds from a `Retry-After` value: delta-seconds or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<f64> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return value.parse::<f64>().ok();
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 5,
            backoff: 0.1,
            multiplier: 2.0,
            max_backoff: 1.0,
            jitter: 0.5,
            statuses: vec![503],
        }
    }

    #[test]
    fn backoff_grows_jittered_and_bounded() {
        for retry in 0..8 {
            let base = (0.1 * 2f64.powi(retry)).min(1.0);
            let delay = policy().delay(retry as u32, None).as_secs_f64();
            assert!(
                delay <= base + 1e-9 && delay >= base * 0.5 - 1e-9,
                "{retry}: {delay}"
            );
        }
    }

    #[test]
    fn retry_after_replaces_the_backoff_up_to_the_bound() {
        assert_eq!(policy().delay(0, Some(0.3)), Duration::from_secs_f64(0.3));
        assert_eq!(policy().delay(0, Some(30.0)), Duration::from_secs(1));
        assert_eq!(parse_retry_after(" 7 "), Some(7.0));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(0.0)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }
}
