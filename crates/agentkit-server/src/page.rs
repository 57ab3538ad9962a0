//! The chat page: a single HTML file with its script, served at `GET /`.
//!
//! It is a plain AG-UI frontend (no framework, no build step) so a person
//! can talk to a served agent with nothing but a browser: streamed answers,
//! tool calls and their results, approve/deny buttons, messages typed while
//! the agent works, cancel, and the conversation back after a reload. It
//! needs no routes of its own: it speaks the same endpoints as any client.

use axum::http::header;
use axum::response::IntoResponse;

/// The page's source, embedded at build time.
const PAGE: &str = include_str!("page.html");

/// `GET /`: the page. It holds no secret, so it needs no token; the token
/// is typed into the page (or given as `#token=...`, which browsers never
/// send to the server) and kept in the browser's local storage.
pub(crate) async fn page() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        PAGE,
    )
}
