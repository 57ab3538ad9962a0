//! What every provider adapter holds and does around its wire format.
//!
//! An adapter is a configuration, one pooled [`HttpClient`] built from it,
//! an encoder and an [`SseDecoder`](crate::SseDecoder). The first two, the
//! key-hiding `Debug` and the warning per retried request are the same for
//! every provider, so they live here once: an adapter author writes the
//! request body, the headers and the decoder.

use crate::{HttpClient, HttpConfig, ModelError, RetryNotice};
use std::sync::Arc;

/// An adapter's configuration and its HTTP client, shared by the adapter,
/// its sessions and their turns.
///
/// Its `Debug` shows the configuration's own `Debug` (which hides keys)
/// and leaves the client out.
///
/// ```
/// use agentkit_http::{AdapterShared, HttpConfig};
///
/// #[derive(Debug)]
/// struct MyConfig {
///     model: String,
///     http: HttpConfig,
/// }
///
/// let config = MyConfig { model: "m".into(), http: HttpConfig::default() };
/// let shared = AdapterShared::new(config.http.clone(), config)?;
/// assert_eq!(shared.config.model, "m");
/// assert!(format!("{shared:?}").contains("MyConfig"));
/// # Ok::<(), agentkit_http::ModelError>(())
/// ```
#[non_exhaustive]
pub struct AdapterShared<C> {
    /// The adapter's configuration.
    pub config: C,
    /// The client every request of the adapter goes through.
    pub client: HttpClient,
}

impl<C> AdapterShared<C> {
    /// Builds the client from `http` and keeps it beside `config`.
    pub fn new(http: HttpConfig, config: C) -> Result<Arc<Self>, ModelError> {
        let client = HttpClient::new(http)?;
        Ok(Arc::new(Self { config, client }))
    }
}

impl<C: std::fmt::Debug> std::fmt::Debug for AdapterShared<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdapterShared")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// One warning per retried request, `"<label>: <what happened>"`, for an
/// adapter to hand out before the answer's first event.
///
/// ```
/// let none = agentkit_http::retry_warnings("openai", &[]);
/// assert_eq!(none.count(), 0);
/// ```
pub fn retry_warnings<'a>(
    label: &'a str,
    retries: &'a [RetryNotice],
) -> impl Iterator<Item = String> + 'a {
    retries.iter().map(move |retry| format!("{label}: {retry}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ProviderError, ProviderErrorKind};
    use std::time::Duration;

    #[test]
    fn each_retry_is_one_labelled_warning_in_order() {
        let notice = |attempt, kind| RetryNotice {
            attempt,
            delay: Duration::from_millis(250),
            error: ProviderError::new(kind, "busy"),
        };
        let retries = [
            notice(1, ProviderErrorKind::RateLimited),
            notice(2, ProviderErrorKind::Overloaded),
        ];
        let warnings: Vec<String> = retry_warnings("gemini", &retries).collect();
        assert_eq!(warnings.len(), 2);
        for (warning, retry) in warnings.iter().zip(&retries) {
            assert_eq!(*warning, format!("gemini: {retry}"));
        }
        assert!(
            warnings[0].starts_with("gemini: attempt 1 failed"),
            "{warnings:?}"
        );
        assert!(warnings[1].contains("retried after 250 ms"), "{warnings:?}");
    }
}
