//! What a request can fail with, as a typed error and as an HTTP answer.
//!
//! Every variant maps to one status code and a JSON body
//! `{"error": "<code>", "message": "..."}`; the code is stable, the message
//! is for people.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A request the server refused or could not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// No `Authorization: Bearer` header, or a token no tenant has (401).
    #[error("a valid bearer token is required")]
    Unauthorized,
    /// No such session for this tenant (404). Another tenant's session
    /// answers the same: its existence is not revealed.
    #[error("no session `{0}`")]
    NotFound(String),
    /// The request is malformed (400).
    #[error("{0}")]
    BadRequest(String),
    /// The session is not in a state that allows this (409): a run is
    /// already going, an approval is pending, nothing to resume.
    #[error("{0}")]
    Conflict(String),
    /// Another replica holds the session's lease (503, retry later).
    #[error("session `{0}` is served by another replica")]
    Busy(String),
    /// Another replica, which advertised the URL `holder`, holds the
    /// session's lease. The server forwards the request there; this error
    /// reaches a client (503, retry later) only when the holder cannot be
    /// reached.
    #[error("session `{thread}` is served by the replica at {holder}")]
    HeldElsewhere {
        /// The session's thread id.
        thread: String,
        /// The holder's advertised URL.
        holder: String,
    },
    /// The session store failed (500).
    #[error("session store: {0}")]
    Store(#[from] agentkit_store::StoreError),
    /// The agent could not be built or started (500).
    #[error("agent: {0}")]
    Agent(String),
}

impl ServerError {
    /// The HTTP status this error answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            ServerError::Unauthorized => StatusCode::UNAUTHORIZED,
            ServerError::NotFound(_) => StatusCode::NOT_FOUND,
            ServerError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ServerError::Conflict(_) => StatusCode::CONFLICT,
            ServerError::Busy(_) | ServerError::HeldElsewhere { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ServerError::Store(_) | ServerError::Agent(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable code in the JSON body.
    pub fn code(&self) -> &'static str {
        match self {
            ServerError::Unauthorized => "unauthorized",
            ServerError::NotFound(_) => "not_found",
            ServerError::BadRequest(_) => "bad_request",
            ServerError::Conflict(_) => "conflict",
            ServerError::Busy(_) | ServerError::HeldElsewhere { .. } => "busy",
            ServerError::Store(_) => "store",
            ServerError::Agent(_) => "agent",
        }
    }
}

impl IntoResponse for ServerError {
    fn into_response(self) -> Response {
        let body = Json(json!({ "error": self.code(), "message": self.to_string() }));
        let mut response = (self.status(), body).into_response();
        let headers = response.headers_mut();
        match self {
            ServerError::Unauthorized => {
                headers.insert(
                    axum::http::header::WWW_AUTHENTICATE,
                    axum::http::HeaderValue::from_static("Bearer"),
                );
            }
            // The other replica's lease is renewed while it runs; retrying
            // soon finds the session resting, or the lease expired.
            ServerError::Busy(_) => {
                headers.insert(
                    axum::http::header::RETRY_AFTER,
                    axum::http::HeaderValue::from_static("1"),
                );
            }
            ServerError::HeldElsewhere { holder, .. } => {
                headers.insert(
                    axum::http::header::RETRY_AFTER,
                    axum::http::HeaderValue::from_static("1"),
                );
                if let Some((name, value)) = crate::forward::holder_header(&holder) {
                    headers.insert(name, value);
                }
            }
            _ => {}
        }
        response
    }
}
