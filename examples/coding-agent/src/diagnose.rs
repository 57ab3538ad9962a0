//! Errors of the model call in words a user can act on.
//!
//! The provider's error says what went wrong on the wire; some failures
//! have a likely cause the program can name: nothing listens at the base
//! URL, the base URL lacks its `/v1`, or a local server closed the stream
//! without an answer because the prompt filled its context (llama.cpp
//! answers an over-long prompt with `200` and an empty stream).

use agentkit_loop::{LoopError, ModelError, ModelErrorKind, ModelSession};
use agentkit_store::{Session, StoreError};

/// What the diagnosis knows about the request that failed.
#[derive(Clone, Debug, Default)]
pub struct Request<'a> {
    /// The server's base URL, when one is configured.
    pub base_url: Option<&'a str>,
    /// The model's context window in tokens.
    pub window: usize,
    /// The estimated size of the prompt in tokens.
    pub prompt_tokens: usize,
}

/// A failed step in words: the likely cause when there is one to name,
/// then the error itself as a detail (none when the cause says it all).
pub fn describe<S: ModelSession>(
    error: &StoreError,
    driver: &Session<S>,
    base_url: Option<&str>,
    window: usize,
) -> (String, Option<String>) {
    let Some(model) = model_error(error) else {
        return (error.to_string(), None);
    };
    let items = driver.transcript().to_vec();
    let request = Request {
        base_url,
        window,
        prompt_tokens: agentkit_compaction::estimate_tokens(&items),
    };
    match explain(model, &request) {
        Some(cause) if model.kind == ModelErrorKind::Transport => (cause, None),
        Some(cause) => (cause, Some(error.to_string())),
        None => (error.to_string(), None),
    }
}

/// The model error inside a step's error, if that is what it is.
pub fn model_error(error: &StoreError) -> Option<&ModelError> {
    match error {
        StoreError::Loop(LoopError::Model(error)) => Some(error),
        _ => None,
    }
}

/// One sentence saying what probably went wrong, when the error has a
/// cause worth naming; `None` leaves the error as it is.
pub fn explain(error: &ModelError, request: &Request<'_>) -> Option<String> {
    let url = request.base_url.map(|u| u.trim_end_matches('/'));
    match error.kind {
        ModelErrorKind::Transport if refused(&error.message) => Some(match url {
            Some(url) => format!(
                "cannot connect to {url}: connection refused (is the server running, at that address?)"
            ),
            None => "cannot connect to the provider: connection refused".into(),
        }),
        _ if error.status == Some(404) => {
            let url = url?;
            if url.ends_with("/v1") {
                return Some(format!(
                    "{url} answered 404 Not Found: check the base URL and the model name"
                ));
            }
            Some(format!(
                "{url} answered 404 Not Found: OpenAI-compatible servers serve under /v1; \
                 try OPENAI_BASE_URL={url}/v1"
            ))
        }
        ModelErrorKind::Protocol | ModelErrorKind::Other
            if request.prompt_tokens * 10 >= request.window * 8 =>
        {
            Some(format!(
                "the server ended the answer before it began, and the prompt (~{} tokens) is near \
                 the context size ({} tokens): it was probably too long. /compact or /clear, or \
                 give the server a larger context",
                request.prompt_tokens, request.window
            ))
        }
        _ => None,
    }
}

fn refused(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("connection refused") || message.contains("could not connect")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(kind: ModelErrorKind, status: Option<u16>, message: &str) -> ModelError {
        let mut error = ModelError::new(kind, message);
        error.status = status;
        error
    }

    #[test]
    fn causes_are_named() {
        let local = |prompt_tokens| Request {
            base_url: Some("http://127.0.0.1:8080"),
            window: 4096,
            prompt_tokens,
        };
        let refused = error(
            ModelErrorKind::Transport,
            None,
            "could not connect: tcp connect error: Connection refused (os error 111)",
        );
        assert_eq!(
            explain(&refused, &local(10)).unwrap(),
            "cannot connect to http://127.0.0.1:8080: connection refused (is the server \
             running, at that address?)"
        );
        let not_found = error(ModelErrorKind::InvalidRequest, Some(404), "Not Found");
        assert!(
            explain(&not_found, &local(10))
                .unwrap()
                .contains("try OPENAI_BASE_URL=http://127.0.0.1:8080/v1")
        );
        let empty = error(ModelErrorKind::Protocol, None, "the stream ended early");
        assert!(
            explain(&empty, &local(3900))
                .unwrap()
                .contains("probably too long")
        );
        assert_eq!(explain(&empty, &local(100)), None);
        let other = error(ModelErrorKind::Server, Some(500), "boom");
        assert_eq!(explain(&other, &local(10)), None);
    }
}
