//! Failures in plain words, for the model and the user.
//!
//! rmcp's errors print the types they wrap (`Transport
//! [rmcp::transport::worker::WorkerTransport<…>] error: Client error: …`).
//! Such text means nothing to a model and little to a user, and it changes
//! with every rmcp release. [`describe`] walks an error's chain of causes
//! and keeps the deepest one that reads as words ("Connection refused (os
//! error 111)", "connection closed: initialize response"); the full chain
//! goes to `tracing` at debug level, where whoever debugs the client can
//! read it.

use rmcp::service::{ClientInitializeError, ServiceError};
use std::error::Error;

/// What the model or user is told when no cause reads as words.
const FALLBACK: &str = "the MCP client failed internally (details in the debug log)";

/// The longest description kept; longer ones are cut at a word boundary.
const MAX_LEN: usize = 200;

/// The deepest cause of `err` that is plain words, shortened.
pub(crate) fn describe(err: &(dyn Error + 'static)) -> String {
    tracing::debug!(error = ?err, "MCP failure, in full");
    let mut plain = None;
    let mut current = Some(err);
    while let Some(cause) = current {
        let text = cause.to_string();
        if is_plain(&text) {
            plain = Some(text);
        }
        current = next_cause(cause);
    }
    plain.map_or_else(|| FALLBACK.to_owned(), |text| shorten(text.trim()))
}

/// The cause of `err`: its `source()`, except for the rmcp errors that
/// hold their transport's error without declaring it as their source.
fn next_cause<'a>(err: &'a (dyn Error + 'static)) -> Option<&'a (dyn Error + 'static)> {
    match err.downcast_ref::<ClientInitializeError>() {
        Some(ClientInitializeError::TransportError { error, .. }) => return Some(error),
        Some(ClientInitializeError::ConnectionClosed(_)) => return None,
        _ => {}
    }
    if let Some(ServiceError::TransportSend(error)) = err.downcast_ref::<ServiceError>() {
        return Some(error);
    }
    err.source()
}

/// Text, not a type name: no Rust paths, no generic brackets, no crate names.
pub(crate) fn is_plain(text: &str) -> bool {
    let text = text.trim();
    !text.is_empty()
        && !text.contains("::")
        && !text.contains("rmcp")
        && !text.contains("reqwest")
        && !text.contains("hyper")
}

fn shorten(text: &str) -> String {
    if text.len() <= MAX_LEN {
        return text.to_owned();
    }
    let mut end = MAX_LEN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text[..end].rfind(' ').unwrap_or(end);
    format!("{}…", &text[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with a library-style message and an optional cause.
    #[derive(Debug)]
    struct Wrapper(&'static str, Option<Box<dyn Error + Send + Sync>>);

    impl std::fmt::Display for Wrapper {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)?;
            if let Some(cause) = &self.1 {
                write!(f, ": {cause}")?;
            }
            Ok(())
        }
    }

    impl Error for Wrapper {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|e| e as &(dyn Error + 'static))
        }
    }

    #[test]
    fn the_deepest_plain_cause_is_kept() {
        let refused = std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "Connection refused (os error 111)",
        );
        let chain = Wrapper(
            "Transport [rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::Client>>] error",
            Some(Box::new(Wrapper(
                "Client error: error sending request for url (http://127.0.0.1:9/mcp)",
                Some(Box::new(refused)),
            ))),
        );
        assert_eq!(describe(&chain), "Connection refused (os error 111)");
        let typed_only = Wrapper("rmcp::service::ServiceError::UnexpectedResponse", None);
        assert_eq!(describe(&typed_only), FALLBACK);
        let long = Wrapper(Box::leak("word ".repeat(100).into_boxed_str()), None);
        let short = describe(&long);
        assert!(short.len() <= MAX_LEN + '…'.len_utf8() && short.ends_with('…'));
    }
}
