//! From the HTTP layer's errors to the loop's.
//!
//! `agentkit-http` cannot know the loop's types (it sits below it), so each
//! adapter translates. The kinds match one to one; status and `Retry-After`
//! travel along so the host can decide about retrying the turn.

use agentkit_http::{ProviderError, ProviderErrorKind};
use agentkit_loop::{ModelError, ModelErrorKind};

/// Converts an HTTP-layer error into the loop's error.
pub(crate) fn model_error(error: ProviderError) -> ModelError {
    let kind = match error.kind {
        ProviderErrorKind::RateLimited => ModelErrorKind::RateLimited,
        ProviderErrorKind::Overloaded => ModelErrorKind::Overloaded,
        // The loop has no kind of its own for an account out of credit; like
        // a wrong key, it needs the user to act and is never retried.
        ProviderErrorKind::Authentication | ProviderErrorKind::QuotaExceeded => {
            ModelErrorKind::Authentication
        }
        ProviderErrorKind::InvalidRequest => ModelErrorKind::InvalidRequest,
        ProviderErrorKind::ContextLengthExceeded => ModelErrorKind::ContextLengthExceeded,
        ProviderErrorKind::Server => ModelErrorKind::Server,
        ProviderErrorKind::Transport => ModelErrorKind::Transport,
        ProviderErrorKind::Timeout => ModelErrorKind::Timeout,
        ProviderErrorKind::Protocol => ModelErrorKind::Protocol,
        ProviderErrorKind::LimitExceeded => ModelErrorKind::LimitExceeded,
        ProviderErrorKind::Cancelled => ModelErrorKind::Cancelled,
        _ => ModelErrorKind::Other,
    };
    let mut model = ModelError::new(kind, error.message);
    model.status = error.status;
    model.retry_after = error.retry_after;
    model
}
