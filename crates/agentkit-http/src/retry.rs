//! When and how long to wait before sending a request again.
//!
//! A request is retried only while nothing of the answer has reached the
//! caller: on a connection failure, or on a status that means "not now"
//! (408, 429, 500, 502, 503, 504, 529) unless the body says waiting cannot
//! help (an account out of quota, a bad key, a prompt too long: OpenAI
//! sends `insufficient_quota` as a 429). Once a byte of the stream has been
//! handed on, a retry would duplicate output, so the client never does it.
//! The wait is the provider's `Retry-After` when it sent one, otherwise an
//! exponential backoff with jitter so that many clients failing together do
//! not come back together.

use crate::ProviderError;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime};

/// How failed requests are retried.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Requests made at most, the first one included (1 disables retries).
    pub max_attempts: u32,
    /// The backoff before the first retry; it doubles with every retry.
    pub initial_backoff: Duration,
    /// The longest backoff.
    pub max_backoff: Duration,
    /// The longest `Retry-After` we are willing to wait; a provider asking
    /// for more gets its error returned at once, carrying the wait it asked.
    pub max_retry_after: Duration,
    /// HTTP statuses worth retrying.
    pub retry_statuses: Vec<u16>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            retry_statuses: vec![408, 429, 500, 502, 503, 504, 529],
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// Sets the number of attempts (at least 1).
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Sets the first backoff and the cap.
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        self
    }

    /// Sets the longest `Retry-After` honoured.
    pub fn with_max_retry_after(mut self, max: Duration) -> Self {
        self.max_retry_after = max;
        self
    }

    /// `true` when a response with this status should be retried.
    pub fn retries_status(&self, status: u16) -> bool {
        self.retry_statuses.contains(&status)
    }

    /// The wait before retry number `retry` (1 for the first retry), or
    /// `None` when the error should be returned instead.
    pub(crate) fn delay_before(&self, retry: u32, error: &ProviderError) -> Option<Duration> {
        if retry >= self.max_attempts {
            return None;
        }
        if let Some(asked) = error.retry_after {
            return (asked <= self.max_retry_after).then_some(asked);
        }
        Some(self.backoff(retry))
    }

    /// Exponential backoff with "equal jitter": half the step is fixed, half
    /// random, so waits grow but never collapse to zero.
    pub fn backoff(&self, retry: u32) -> Duration {
        let exponent = retry.saturating_sub(1).min(20);
        let step = self
            .initial_backoff
            .saturating_mul(1u32 << exponent)
            .min(self.max_backoff);
        let half = step / 2;
        let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        let jitter = if nanos == 0 { 0 } else { random_u64() % nanos };
        half + Duration::from_nanos(jitter)
    }
}

/// One retry, reported to the caller so it can tell its observers.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryNotice {
    /// The attempt that failed (1 for the first request).
    pub attempt: u32,
    /// How long the client waited before the next attempt.
    pub delay: Duration,
    /// Why the attempt failed.
    pub error: ProviderError,
}

impl std::fmt::Display for RetryNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "attempt {} failed ({}); retried after {} ms",
            self.attempt,
            self.error,
            self.delay.as_millis()
        )
    }
}

/// Parses a `Retry-After` value: delay-seconds or an HTTP date
/// (RFC 9110 §10.2.3). A date in the past means "now".
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    // Some providers send fractional seconds; accept them rather than ignore
    // the hint.
    if let Ok(seconds) = value.parse::<f64>() {
        return duration_from_secs(seconds);
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A non-negative number of seconds as a duration; a value too large for
/// a `Duration` (`1e20`) saturates instead of panicking, and the policy's
/// `max_retry_after` then bounds it.
pub(crate) fn duration_from_secs(seconds: f64) -> Option<Duration> {
    if seconds.is_nan() || seconds < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
}

/// Randomness for jitter only: std's per-process random hasher keys are
/// enough, and spare a dependency.
fn random_u64() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProviderErrorKind;

    #[test]
    fn retry_after_as_seconds_and_as_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        assert_eq!(parse_retry_after(" 7 ", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("1.5", now),
            Some(Duration::from_millis(1_500))
        );
        // 1445412480 is Wed, 21 Oct 2015 07:28:00 GMT.
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO),
            "a date in the past means now"
        );
        assert_eq!(parse_retry_after("soon", now), None);
        // Absurd values saturate rather than panic.
        assert_eq!(parse_retry_after("1e20", now), Some(Duration::MAX));
        assert_eq!(parse_retry_after("inf", now), Some(Duration::MAX));
        assert_eq!(
            parse_retry_after("99999999999999999999999", now),
            Some(Duration::MAX)
        );
        assert_eq!(parse_retry_after("NaN", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let policy = RetryPolicy::default()
            .with_backoff(Duration::from_millis(100), Duration::from_millis(1_000));
        for retry in 1..=10 {
            let step = Duration::from_millis(100 * (1 << (retry - 1))).min(Duration::from_secs(1));
            let delay = policy.backoff(retry);
            assert!(
                delay >= step / 2 && delay <= step,
                "retry {retry}: {delay:?}"
            );
        }
        let samples: std::collections::HashSet<_> = (0..20).map(|_| policy.backoff(3)).collect();
        assert!(samples.len() > 1, "jitter varies the delay");
    }

    #[test]
    fn attempts_are_bounded_and_long_retry_after_is_refused() {
        let policy = RetryPolicy::default().with_max_attempts(3);
        let mut error = ProviderError::new(ProviderErrorKind::RateLimited, "slow down");
        assert!(policy.delay_before(1, &error).is_some());
        assert!(policy.delay_before(2, &error).is_some());
        assert_eq!(policy.delay_before(3, &error), None);
        error.retry_after = Some(Duration::from_secs(2));
        assert_eq!(policy.delay_before(1, &error), Some(Duration::from_secs(2)));
        error.retry_after = Some(Duration::from_secs(3_600));
        assert_eq!(policy.delay_before(1, &error), None);
        assert_eq!(RetryPolicy::none().delay_before(1, &error), None);
    }
}
