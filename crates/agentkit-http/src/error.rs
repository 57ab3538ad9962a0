//! The one error type every provider call ends in.
//!
//! Hosts need two answers from a failed model call: what happened (so they can
//! tell the user something useful) and whether trying again could help (so a
//! loop can back off instead of giving up). [`ProviderErrorKind`] answers
//! both; [`ProviderError`] adds the HTTP status and the provider's own words.
//! Classifying a failed response lives here too, because OpenAI, Anthropic
//! and the compatible servers all wrap their errors in the same
//! `{"error": {"type" | "code", "message"}}` shape.

use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// What kind of failure a [`ProviderError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProviderErrorKind {
    /// Too many requests (HTTP 429).
    RateLimited,
    /// The provider is overloaded (HTTP 529, `overloaded_error`).
    Overloaded,
    /// Missing or wrong credentials (HTTP 401/403).
    Authentication,
    /// The request was refused as malformed (HTTP 400, 404, 422 ...).
    InvalidRequest,
    /// The prompt does not fit the model's context window.
    ContextLengthExceeded,
    /// The provider failed (HTTP 5xx).
    Server,
    /// The connection failed or was cut.
    Transport,
    /// The provider went silent for longer than the idle timeout: no byte
    /// arrived, not even an SSE comment or keep-alive.
    Timeout,
    /// The provider's answer could not be understood (malformed or
    /// truncated stream).
    Protocol,
    /// The caller cancelled the request.
    Cancelled,
    /// The provider sent more than a cap allows in one piece (an
    /// event-stream line or event larger than [`SseLimits`](crate::SseLimits)
    /// permits): decoding stopped rather than buffer without bound. Not
    /// retried; the same server would likely send the same again.
    LimitExceeded,
    /// Anything else.
    Other,
}

impl ProviderErrorKind {
    /// `true` when the same request may succeed later.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Self::RateLimited | Self::Overloaded | Self::Server | Self::Transport | Self::Timeout
        )
    }

    fn label(self) -> &'static str {
        match self {
            Self::RateLimited => "rate limited",
            Self::Overloaded => "overloaded",
            Self::Authentication => "authentication failed",
            Self::InvalidRequest => "invalid request",
            Self::ContextLengthExceeded => "context length exceeded",
            Self::Server => "server error",
            Self::Transport => "transport error",
            Self::Timeout => "timed out",
            Self::Protocol => "protocol error",
            Self::Cancelled => "cancelled",
            Self::LimitExceeded => "limit exceeded",
            Self::Other => "error",
        }
    }
}

impl fmt::Display for ProviderErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A failed provider call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind}{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
#[non_exhaustive]
pub struct ProviderError {
    /// What kind of failure.
    pub kind: ProviderErrorKind,
    /// The provider's own message when it sent one, ours otherwise.
    pub message: String,
    /// The HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// The provider's machine-readable error type or code
    /// (`overloaded_error`, `context_length_exceeded` ...), when it sent one.
    pub provider_code: Option<String>,
    /// How long the provider asked us to wait (`Retry-After`).
    pub retry_after: Option<Duration>,
    /// How many requests were made before giving up (1 without retries).
    pub attempts: u32,
}

impl ProviderError {
    /// An error of this kind with our own message.
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            provider_code: None,
            retry_after: None,
            attempts: 1,
        }
    }

    /// A protocol error: the provider sent something we cannot use.
    pub fn protocol(message: impl Into<String>) -> Self {
        Self::new(ProviderErrorKind::Protocol, message)
    }

    /// The request was cancelled by the caller.
    pub fn cancelled() -> Self {
        Self::new(ProviderErrorKind::Cancelled, "the request was cancelled")
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Sets the provider's error code.
    pub fn with_provider_code(mut self, code: impl Into<String>) -> Self {
        self.provider_code = Some(code.into());
        self
    }

    /// `true` when the same request may succeed later.
    pub fn is_retryable(&self) -> bool {
        self.kind.is_retryable()
    }

    /// Classifies a non-success HTTP response from its status and body.
    ///
    /// The body's `error.type` / `error.code` wins over the status when it is
    /// more precise (an `overloaded_error` sent with status 500 is still
    /// overload); a context-length complaint is recognised by code or wording
    /// because providers report it as a plain 400.
    pub fn from_response(status: u16, body: &str) -> Self {
        let (message, code) = error_details(body);
        let message = message.unwrap_or_else(|| {
            let trimmed = body.trim();
            if trimmed.is_empty() {
                format!("the provider answered HTTP {status} with an empty body")
            } else {
                truncate(trimmed, 2_000)
            }
        });
        let kind = classify(status, code.as_deref(), &message);
        Self {
            kind,
            message,
            status: Some(status),
            provider_code: code,
            retry_after: None,
            attempts: 1,
        }
    }

    /// Classifies an error object sent inside a stream (an SSE `error` event
    /// or a chunk carrying `{"error": ...}`), which has no HTTP status of its
    /// own.
    pub fn from_stream_error(body: &str) -> Self {
        let (message, code) = error_details(body);
        let message = message.unwrap_or_else(|| truncate(body.trim(), 2_000));
        let kind = match classify(0, code.as_deref(), &message) {
            // Without a status, an unrecognised code says only that the
            // provider gave up mid-answer: treat it as the server's failure.
            ProviderErrorKind::Other => ProviderErrorKind::Server,
            kind => kind,
        };
        Self {
            kind,
            message,
            status: None,
            provider_code: code,
            retry_after: None,
            attempts: 1,
        }
    }
}

/// Pulls `(message, code)` out of the usual error envelopes:
/// `{"error": {"message", "type" | "code"}}`, `{"error": "text"}`,
/// `{"message": ...}`, or a list of those (some gateways wrap it).
fn error_details(body: &str) -> (Option<String>, Option<String>) {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return (None, None);
    };
    let value = match &value {
        Value::Array(items) => items.first().cloned().unwrap_or(Value::Null),
        _ => value,
    };
    let error = value.get("error").unwrap_or(&value);
    if let Value::String(text) = error {
        return (Some(text.clone()), None);
    }
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let as_code = |v: &Value| match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    // OpenAI puts the precise reason in `code` and a broad class in `type`;
    // Anthropic has only `type`. Prefer the precise one.
    let code = error
        .get("code")
        .and_then(as_code)
        .or_else(|| error.get("type").and_then(as_code));
    (message, code)
}

fn classify(status: u16, code: Option<&str>, message: &str) -> ProviderErrorKind {
    use ProviderErrorKind as K;
    if let Some(code) = code {
        match code {
            "overloaded_error" | "overloaded" => return K::Overloaded,
            "rate_limit_error" | "rate_limit_exceeded" | "too_many_requests" => {
                return K::RateLimited;
            }
            "authentication_error" | "permission_error" | "invalid_api_key" => {
                return K::Authentication;
            }
            "context_length_exceeded" | "string_above_max_length" => {
                return K::ContextLengthExceeded;
            }
            // OpenAI answers an overload as 503 (or a gateway as 529) with a
            // plain `server_error`: the status is the precise part there.
            "api_error" | "server_error" | "internal_error" if matches!(status, 503 | 529) => {
                return K::Overloaded;
            }
            "api_error" | "server_error" | "internal_error" => return K::Server,
            _ => {}
        }
    }
    if mentions_context_length(message) && !matches!(status, 401 | 403 | 429 | 500..=599) {
        return K::ContextLengthExceeded;
    }
    match status {
        401 | 403 => K::Authentication,
        408 => K::Transport,
        429 => K::RateLimited,
        529 => K::Overloaded,
        500..=599 => K::Server,
        400..=499 => K::InvalidRequest,
        _ if code == Some("invalid_request_error") => K::InvalidRequest,
        _ => K::Other,
    }
}

fn mentions_context_length(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    [
        "context length",
        "context_length",
        "context window",
        "maximum context",
        "prompt is too long",
        "too many tokens",
        "exceeds the context",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_overload_is_overloaded_whatever_the_status() {
        let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        for status in [500, 529] {
            let err = ProviderError::from_response(status, body);
            assert_eq!(err.kind, ProviderErrorKind::Overloaded);
            assert_eq!(err.message, "Overloaded");
            assert_eq!(err.provider_code.as_deref(), Some("overloaded_error"));
            assert!(err.is_retryable());
        }
    }

    #[test]
    fn server_error_with_503_or_529_is_overload() {
        let body = r#"{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error","param":null,"code":null}}"#;
        for (status, kind) in [
            (503, ProviderErrorKind::Overloaded),
            (529, ProviderErrorKind::Overloaded),
            (500, ProviderErrorKind::Server),
        ] {
            let err = ProviderError::from_response(status, body);
            assert_eq!(err.kind, kind, "status {status}");
            assert_eq!(err.provider_code.as_deref(), Some("server_error"));
        }
    }

    #[test]
    fn context_length_is_recognised_by_code_and_by_wording() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert_eq!(
            ProviderError::from_response(400, openai).kind,
            ProviderErrorKind::ContextLengthExceeded
        );
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        let err = ProviderError::from_response(400, anthropic);
        assert_eq!(err.kind, ProviderErrorKind::ContextLengthExceeded);
        assert!(!err.is_retryable());
    }

    #[test]
    fn status_decides_when_the_body_says_nothing() {
        let cases = [
            (401, ProviderErrorKind::Authentication),
            (403, ProviderErrorKind::Authentication),
            (404, ProviderErrorKind::InvalidRequest),
            (429, ProviderErrorKind::RateLimited),
            (502, ProviderErrorKind::Server),
            (529, ProviderErrorKind::Overloaded),
        ];
        for (status, kind) in cases {
            let err = ProviderError::from_response(status, "<html>nope</html>");
            assert_eq!(err.kind, kind, "status {status}");
            assert_eq!(err.message, "<html>nope</html>");
            assert_eq!(err.status, Some(status));
        }
        assert!(
            ProviderError::from_response(500, "")
                .message
                .contains("empty body")
        );
    }

    #[test]
    fn plain_string_errors_and_long_bodies() {
        let err = ProviderError::from_response(400, r#"{"error":"model 'x' not found"}"#);
        assert_eq!(err.message, "model 'x' not found");
        let long = "é".repeat(3_000);
        let err = ProviderError::from_response(500, &long);
        assert!(err.message.len() <= 2_004);
    }

    #[test]
    fn stream_errors_without_a_code_are_server_failures() {
        let err = ProviderError::from_stream_error(r#"{"error":{"message":"boom"}}"#);
        assert_eq!(err.kind, ProviderErrorKind::Server);
        assert_eq!(err.status, None);
        let err = ProviderError::from_stream_error(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(err.kind, ProviderErrorKind::Overloaded);
    }

    #[test]
    fn display_names_kind_status_and_message() {
        let err = ProviderError::from_response(429, r#"{"error":{"message":"slow down"}}"#);
        assert_eq!(err.to_string(), "rate limited (HTTP 429): slow down");
    }
}
