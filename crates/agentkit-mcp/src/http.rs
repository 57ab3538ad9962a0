//! Streamable HTTP specifics: rmcp's client config built from ours, and
//! the `401` / `403` challenge found inside rmcp's errors.
//!
//! rmcp reports an auth failure as an error value several layers deep
//! (initialize error, dynamic transport error, HTTP transport error). The
//! functions here dig the `WWW-Authenticate` header out of those layers, so
//! the rest of the crate only ever sees a [`Challenge`].

use crate::auth::{Challenge, McpCredentials};
use crate::config::{HttpConfig, StreamRetry};
use crate::error::McpError;
use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::common::client_side_sse::SseRetryPolicy;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, StreamableHttpClientTransportConfig,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Our [`StreamRetry`] as rmcp's retry policy for resuming SSE streams.
/// Set explicitly on every transport: rmcp's default retries forever.
#[derive(Debug)]
struct BoundedRetry(StreamRetry);

impl SseRetryPolicy for BoundedRetry {
    /// rmcp asks with the number of failed attempts so far (0 after a
    /// clean close), which is what [`StreamRetry::delay`] takes.
    fn retry(&self, failures: usize) -> Option<Duration> {
        let delay = self.0.delay(failures);
        if delay.is_none() {
            tracing::debug!(failures, "giving up on a broken MCP response stream");
        }
        delay
    }
}

/// The auth challenge in an initialize failure, if that is what it was.
pub(crate) fn init_challenge(err: &ClientInitializeError) -> Option<Challenge> {
    match err {
        ClientInitializeError::TransportError { error, .. } => challenge_in(error.error.as_ref()),
        ClientInitializeError::LegacyFallbackFailed { fallback, discover } => {
            init_challenge(fallback).or_else(|| init_challenge(discover))
        }
        _ => None,
    }
}

/// The auth challenge in a request failure, if that is what it was.
pub(crate) fn service_challenge(err: &ServiceError) -> Option<Challenge> {
    match err {
        ServiceError::TransportSend(error) => challenge_in(error.error.as_ref()),
        _ => None,
    }
}

/// Walks an error's sources for rmcp's 401 / 403 errors.
fn challenge_in(err: &(dyn std::error::Error + Send + Sync + 'static)) -> Option<Challenge> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(err) = current {
        if let Some(auth) = err.downcast_ref::<AuthRequiredError>() {
            return Some(Challenge {
                header: Some(auth.www_authenticate_header.clone()).filter(|h| !h.is_empty()),
                insufficient_scope: false,
            });
        }
        if let Some(scope) = err.downcast_ref::<InsufficientScopeError>() {
            return Some(Challenge {
                header: Some(scope.www_authenticate_header.clone()).filter(|h| !h.is_empty()),
                insufficient_scope: true,
            });
        }
        // A 401 without a WWW-Authenticate header is not typed by rmcp;
        // it only survives in the message. Servers must send the header,
        // but some do not, and they still want credentials.
        if err.to_string().contains("HTTP 401") {
            return Some(Challenge::default());
        }
        // The transport error types wrap these as variants; look through
        // their sources too.
        current = err.source();
    }
    None
}

/// rmcp's client config: the URL, the configured headers, and the bearer
/// token (credentials given later win over the configured token).
pub(crate) fn http_config(
    server: &str,
    http: &HttpConfig,
    credentials: Option<&McpCredentials>,
) -> Result<StreamableHttpClientTransportConfig, McpError> {
    let invalid = |message: String| McpError::InvalidConfig {
        server: server.to_owned(),
        message,
    };
    let mut headers: HashMap<http::HeaderName, http::HeaderValue> = HashMap::new();
    let mut add = |name: &str, value: &str| -> Result<(), McpError> {
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|err| invalid(format!("header name {name:?}: {err}")))?;
        let value = http::HeaderValue::from_str(value)
            .map_err(|err| invalid(format!("header {name}: {err}")))?;
        headers.insert(name, value);
        Ok(())
    };
    for (name, value) in &http.headers {
        add(name, value)?;
    }
    let mut bearer = http.bearer_token.clone();
    match credentials {
        Some(McpCredentials::Bearer(token)) => bearer = Some(token.clone()),
        Some(McpCredentials::Headers(extra)) => {
            for (name, value) in extra {
                add(name, value)?;
            }
        }
        // Consumed by the OAuth flow, which supplies a bearer token instead.
        Some(McpCredentials::OAuthRedirect(_)) | None => {}
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(http.url.clone());
    config.custom_headers = headers;
    config.retry_config = Arc::new(BoundedRetry(http.stream_retry));
    if let Some(token) = bearer {
        config = config.auth_header(token);
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn config(token: Option<&str>) -> HttpConfig {
        HttpConfig {
            url: "http://127.0.0.1:9/mcp".into(),
            headers: BTreeMap::from([("X-Team".to_owned(), "platform".to_owned())]),
            bearer_token: token.map(str::to_owned),
            ..HttpConfig::default()
        }
    }

    #[test]
    fn credentials_win_over_the_configured_token() {
        let plain = http_config("s", &config(Some("configured")), None).unwrap();
        assert_eq!(plain.auth_header.as_deref(), Some("configured"));
        assert_eq!(plain.custom_headers.len(), 1);

        let resolved = http_config(
            "s",
            &config(Some("configured")),
            Some(&McpCredentials::bearer("resolved")),
        )
        .unwrap();
        assert_eq!(resolved.auth_header.as_deref(), Some("resolved"));

        let keyed = http_config(
            "s",
            &config(None),
            Some(&McpCredentials::header("X-Api-Key", "k")),
        )
        .unwrap();
        assert_eq!(keyed.auth_header, None);
        assert_eq!(keyed.custom_headers.len(), 2);
    }

    #[test]
    fn invalid_headers_are_configuration_errors() {
        let mut bad = config(None);
        bad.headers.insert("bad header".into(), "x".into());
        assert!(matches!(
            http_config("s", &bad, None),
            Err(McpError::InvalidConfig { .. })
        ));
    }
}
