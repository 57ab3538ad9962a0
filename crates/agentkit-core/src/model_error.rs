//! The one error a model call ends in, from the HTTP layer up to the loop.
//!
//! Hosts need two answers from a failed model call: what happened (so they
//! can tell the user something useful) and whether trying again could help
//! (so a loop can back off instead of giving up). [`ModelErrorKind`] answers
//! both; [`ModelError`] adds the HTTP status, the provider's own words and
//! code, and how long the provider asked us to wait.
//!
//! The type lives here, below both the HTTP layer (`agentkit-http`, which
//! produces it) and the loop (`agentkit-loop`, which reacts to it), so no
//! adapter translates one error into another. Classifying a failed response
//! lives here too, because OpenAI, Anthropic, Google and the compatible
//! servers all wrap their errors in a few known JSON envelopes.
//!
//! ```
//! use agentkit_core::{ModelError, ModelErrorKind};
//!
//! let err = ModelError::from_response(402, r#"{"error":{"message":"Insufficient Balance"}}"#);
//! assert_eq!(err.kind, ModelErrorKind::QuotaExceeded);
//! assert!(!err.is_retryable());
//! assert_eq!(err.to_string(), "quota exceeded (HTTP 402): Insufficient Balance");
//! ```

use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// What kind of failure a [`ModelError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// Too many requests (HTTP 429).
    RateLimited,
    /// The provider is overloaded (HTTP 529, `overloaded_error`).
    Overloaded,
    /// Missing or wrong credentials (HTTP 401/403, `invalid_api_key`,
    /// Gemini's `API_KEY_INVALID`), wherever it was reported.
    Authentication,
    /// The account cannot pay for the request: out of credit or quota,
    /// billing limit reached (`insufficient_quota`,
    /// `billing_hard_limit_reached`, Anthropic's `billing_error`, HTTP 402).
    /// Not retried: the same account gets the same answer until someone
    /// adds credit.
    QuotaExceeded,
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
    /// event-stream line, event or whole answer larger than the HTTP
    /// layer's `SseLimits` permit): decoding stopped rather than buffer without bound. Not
    /// retried; the same server would likely send the same again.
    LimitExceeded,
    /// Anything else.
    Other,
}

impl ModelErrorKind {
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
            Self::QuotaExceeded => "quota exceeded",
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

impl fmt::Display for ModelErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A failed model call: what kind, the provider's words, and what a retry
/// needs to know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind}{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
#[non_exhaustive]
pub struct ModelError {
    /// What kind of failure.
    pub kind: ModelErrorKind,
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

impl ModelError {
    /// An error of this kind with our own message.
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
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
        Self::new(ModelErrorKind::Protocol, message)
    }

    /// The request was cancelled by the caller.
    pub fn cancelled() -> Self {
        Self::new(ModelErrorKind::Cancelled, "the request was cancelled")
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
        let (message, codes) = error_details(body);
        let message = message.unwrap_or_else(|| {
            let trimmed = body.trim();
            if trimmed.is_empty() {
                format!("the provider answered HTTP {status} with an empty body")
            } else {
                truncate(trimmed, 2_000)
            }
        });
        let kind = classify(status, &codes, &message);
        Self {
            kind,
            message,
            status: Some(status),
            provider_code: codes.into_iter().next(),
            retry_after: None,
            attempts: 1,
        }
    }

    /// Classifies an error object sent inside a stream (an SSE `error` event
    /// or a chunk carrying `{"error": ...}`), which has no HTTP status of its
    /// own.
    pub fn from_stream_error(body: &str) -> Self {
        let (message, codes) = error_details(body);
        let message = message.unwrap_or_else(|| truncate(body.trim(), 2_000));
        let kind = match classify(0, &codes, &message) {
            // Without a status, an unrecognised code says only that the
            // provider gave up mid-answer: treat it as the server's failure.
            ModelErrorKind::Other => ModelErrorKind::Server,
            kind => kind,
        };
        Self {
            kind,
            message,
            status: None,
            provider_code: codes.into_iter().next(),
            retry_after: None,
            attempts: 1,
        }
    }
}

/// Pulls the message and the machine-readable codes out of the usual error
/// envelopes: `{"error": {"message", "code" | "type"}}` (OpenAI, Anthropic,
/// the compatible servers), `{"error": {"code": 400, "status", "details":
/// [{"reason"}]}}` (Google), `{"error": "text"}`, `{"message": ...}`, or a
/// list of those (some gateways wrap it). The codes come most precise
/// first: a string `code`, `type`, Google's `reason` and `status`, a
/// numeric `code`.
fn error_details(body: &str) -> (Option<String>, Vec<String>) {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return (None, Vec::new());
    };
    let value = match &value {
        Value::Array(items) => items.first().cloned().unwrap_or(Value::Null),
        _ => value,
    };
    let error = value.get("error").unwrap_or(&value);
    if let Value::String(text) = error {
        return (Some(text.clone()), Vec::new());
    }
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    };
    let reasons = error
        .get("details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|detail| text(detail.get("reason")));
    let number = error
        .get("code")
        .and_then(Value::as_u64)
        .map(|n| n.to_string());
    let codes = text(error.get("code"))
        .into_iter()
        .chain(text(error.get("type")))
        .chain(reasons)
        .chain(text(error.get("status")))
        .chain(number)
        .collect();
    (message, codes)
}

fn classify(status: u16, codes: &[String], message: &str) -> ModelErrorKind {
    use ModelErrorKind as K;
    for code in codes {
        match code.as_str() {
            "overloaded_error" | "overloaded" | "UNAVAILABLE" => return K::Overloaded,
            "rate_limit_error"
            | "rate_limit_exceeded"
            | "too_many_requests"
            | "RESOURCE_EXHAUSTED" => {
                return K::RateLimited;
            }
            "insufficient_quota"
            | "billing_hard_limit_reached"
            | "billing_hard_limit"
            | "billing_not_active"
            | "billing_error"
            | "insufficient_balance"
            | "payment_required" => return K::QuotaExceeded,
            "authentication_error"
            | "permission_error"
            | "invalid_api_key"
            | "invalid_authentication"
            | "account_deactivated"
            | "API_KEY_INVALID"
            | "UNAUTHENTICATED"
            | "PERMISSION_DENIED" => {
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
            "api_error" | "server_error" | "internal_error" | "INTERNAL" => return K::Server,
            _ => {}
        }
    }
    // Gateways and smaller servers say it in words only.
    let lower = message.to_ascii_lowercase();
    let mentions = |needles: &[&str]| needles.iter().any(|needle| lower.contains(needle));
    if status == 402 || mentions(QUOTA_WORDS) {
        return K::QuotaExceeded;
    }
    if mentions(BAD_KEY_WORDS) {
        return K::Authentication;
    }
    if mentions_context_length(&lower) && !matches!(status, 401 | 403 | 429 | 500..=599) {
        return K::ContextLengthExceeded;
    }
    match status {
        401 | 403 => K::Authentication,
        408 => K::Transport,
        429 => K::RateLimited,
        529 => K::Overloaded,
        500..=599 => K::Server,
        400..=499 => K::InvalidRequest,
        _ if codes.iter().any(|c| c == "invalid_request_error") => K::InvalidRequest,
        _ => K::Other,
    }
}

/// How providers word an account out of credit or quota.
const QUOTA_WORDS: &[&str] = &[
    "insufficient_quota",
    "exceeded your current quota",
    "billing",
    "insufficient balance",
    "credit balance is too low",
    "out of credits",
];

/// How providers word a wrong key.
const BAD_KEY_WORDS: &[&str] = &[
    "invalid api key",
    "incorrect api key",
    "api key not valid",
    "invalid x-api-key",
    "invalid_api_key",
];

/// `lower`: the message in lower case.
fn mentions_context_length(lower: &str) -> bool {
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
            let err = ModelError::from_response(status, body);
            assert_eq!(err.kind, ModelErrorKind::Overloaded);
            assert_eq!(err.message, "Overloaded");
            assert_eq!(err.provider_code.as_deref(), Some("overloaded_error"));
            assert!(err.is_retryable());
        }
    }

    #[test]
    fn server_error_with_503_or_529_is_overload() {
        let body = r#"{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error","param":null,"code":null}}"#;
        for (status, kind) in [
            (503, ModelErrorKind::Overloaded),
            (529, ModelErrorKind::Overloaded),
            (500, ModelErrorKind::Server),
        ] {
            let err = ModelError::from_response(status, body);
            assert_eq!(err.kind, kind, "status {status}");
            assert_eq!(err.provider_code.as_deref(), Some("server_error"));
        }
    }

    #[test]
    fn context_length_is_recognised_by_code_and_by_wording() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert_eq!(
            ModelError::from_response(400, openai).kind,
            ModelErrorKind::ContextLengthExceeded
        );
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        let err = ModelError::from_response(400, anthropic);
        assert_eq!(err.kind, ModelErrorKind::ContextLengthExceeded);
        assert!(!err.is_retryable());
    }

    #[test]
    fn status_decides_when_the_body_says_nothing() {
        let cases = [
            (401, ModelErrorKind::Authentication),
            (403, ModelErrorKind::Authentication),
            (404, ModelErrorKind::InvalidRequest),
            (429, ModelErrorKind::RateLimited),
            (502, ModelErrorKind::Server),
            (529, ModelErrorKind::Overloaded),
        ];
        for (status, kind) in cases {
            let err = ModelError::from_response(status, "<html>nope</html>");
            assert_eq!(err.kind, kind, "status {status}");
            assert_eq!(err.message, "<html>nope</html>");
            assert_eq!(err.status, Some(status));
        }
        assert!(
            ModelError::from_response(500, "")
                .message
                .contains("empty body")
        );
    }

    #[test]
    fn plain_string_errors_and_long_bodies() {
        let err = ModelError::from_response(400, r#"{"error":"model 'x' not found"}"#);
        assert_eq!(err.message, "model 'x' not found");
        let long = "é".repeat(3_000);
        let err = ModelError::from_response(500, &long);
        assert!(err.message.len() <= 2_004);
    }

    #[test]
    fn stream_errors_without_a_code_are_server_failures() {
        let err = ModelError::from_stream_error(r#"{"error":{"message":"boom"}}"#);
        assert_eq!(err.kind, ModelErrorKind::Server);
        assert_eq!(err.status, None);
        let err = ModelError::from_stream_error(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(err.kind, ModelErrorKind::Overloaded);
    }

    /// Quota, billing and credential failures, wherever they arrive: a
    /// retry sends the same request from the same account and fails the
    /// same way. One row per shape seen from a real provider.
    #[test]
    fn quota_billing_and_key_failures_are_never_retryable() {
        use ModelErrorKind as K;
        let responses: &[(u16, &str, ModelErrorKind)] = &[
            // OpenAI: out of credit, sent as a 429 like a rate limit.
            (
                429,
                r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
                K::QuotaExceeded,
            ),
            (
                400,
                r#"{"error":{"message":"Billing hard limit has been reached","type":"invalid_request_error","param":null,"code":"billing_hard_limit_reached"}}"#,
                K::QuotaExceeded,
            ),
            (
                429,
                r#"{"error":{"message":"Your account is not active, please check your billing details on our website.","type":"billing_not_active","param":null,"code":"billing_not_active"}}"#,
                K::QuotaExceeded,
            ),
            // Anthropic: no credit left, as a 400.
            (
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}"#,
                K::QuotaExceeded,
            ),
            (
                402,
                r#"{"type":"error","error":{"type":"billing_error","message":"billing issue"}}"#,
                K::QuotaExceeded,
            ),
            // DeepSeek: 402 Payment Required.
            (
                402,
                r#"{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}"#,
                K::QuotaExceeded,
            ),
            // OpenAI: a wrong key.
            (
                401,
                r#"{"error":{"message":"Incorrect API key provided: sk-abc. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
                K::Authentication,
            ),
            // Gemini: a wrong key is a 400 INVALID_ARGUMENT.
            (
                400,
                r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}"#,
                K::Authentication,
            ),
            (
                403,
                r#"{"error":{"code":403,"message":"Method doesn't allow unregistered callers.","status":"PERMISSION_DENIED"}}"#,
                K::Authentication,
            ),
            // Gemini's per-minute quota is a rate limit: retrying later helps.
            (
                429,
                r#"{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}"#,
                K::RateLimited,
            ),
        ];
        for (status, body, kind) in responses {
            let err = ModelError::from_response(*status, body);
            assert_eq!(err.kind, *kind, "HTTP {status}: {body}");
            assert_eq!(err.is_retryable(), *kind == K::RateLimited, "{body}");
        }
        let streamed: &[(&str, ModelErrorKind)] = &[
            // Responses API `error` event: code at the top level.
            (
                r#"{"type":"error","code":"insufficient_quota","message":"You exceeded your current quota, please check your plan and billing details.","param":null,"sequence_number":2}"#,
                K::QuotaExceeded,
            ),
            // Responses API `response.failed`, as the adapter forwards it.
            (
                r#"{"error":{"code":"insufficient_quota","message":"You exceeded your current quota."}}"#,
                K::QuotaExceeded,
            ),
            (
                r#"{"error":{"code":"billing_hard_limit_reached","message":"Billing hard limit has been reached"}}"#,
                K::QuotaExceeded,
            ),
            // Chat Completions chunk carrying an error.
            (
                r#"{"error":{"message":"Incorrect API key provided: sk-***.","type":"invalid_request_error","code":"invalid_api_key"}}"#,
                K::Authentication,
            ),
            // A gateway's words only, no code.
            (
                r#"{"error":{"message":"Invalid API key"}}"#,
                K::Authentication,
            ),
            (
                r#"{"error":{"message":"insufficient_quota: you have run out of credits"}}"#,
                K::QuotaExceeded,
            ),
            // Anthropic `event: error`.
            (
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
                K::Authentication,
            ),
            (
                r#"{"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low"}}"#,
                K::QuotaExceeded,
            ),
        ];
        for (body, kind) in streamed {
            let err = ModelError::from_stream_error(body);
            assert_eq!(err.kind, *kind, "{body}");
            assert!(!err.is_retryable(), "{body}");
        }
    }

    #[test]
    fn display_names_kind_status_and_message() {
        let err = ModelError::from_response(429, r#"{"error":{"message":"slow down"}}"#);
        assert_eq!(err.to_string(), "rate limited (HTTP 429): slow down");
    }
}
