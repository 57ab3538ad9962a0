//! Stdio framing: one JSON-RPC message per line, and a line that is not one
//! is reported instead of dropped.
//!
//! rmcp's stdio transport skips a line it cannot parse (and one longer than
//! its limit) with a debug log. The server's answer to the call in flight
//! is then never coming, and the call would sit until its deadline. This
//! transport reads the server's stdout itself, with the same bounded line
//! buffer, and publishes every broken line on a [`Garbled`] channel that
//! calls in flight race against, so they fail at once with an error naming
//! what the server wrote. Writing stays rmcp's.

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio::sync::watch;

/// How much of a broken line an error quotes.
const EXCERPT_CHARS: usize = 80;

/// The protocol violations of one session: each is a plain description of
/// a line the server wrote that was not JSON-RPC. Calls subscribe before
/// sending and fail when a new one arrives.
#[derive(Debug)]
pub(crate) struct Garbled(watch::Sender<Option<String>>);

impl Default for Garbled {
    fn default() -> Self {
        Garbled(watch::Sender::new(None))
    }
}

impl Garbled {
    fn report(&self, what: String) {
        tracing::warn!(target: "agentkit_mcp::protocol", "{what}");
        self.0.send_replace(Some(what));
    }

    /// A receiver that sees only violations from now on.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Option<String>> {
        self.0.subscribe()
    }
}

/// Waits for the next violation; never returns when there will be none.
pub(crate) async fn next_violation(receiver: &mut watch::Receiver<Option<String>>) -> String {
    loop {
        if receiver.changed().await.is_err() {
            return std::future::pending().await;
        }
        if let Some(what) = receiver.borrow_and_update().clone() {
            return what;
        }
    }
}

/// The client side of a stdio session.
pub(crate) struct StdioLines<R: AsyncRead, W: AsyncWrite> {
    read: BufReader<R>,
    /// The line being read; kept across cancelled reads.
    line: Vec<u8>,
    /// Skipping the rest of a line that was too long.
    discarding: bool,
    write: AsyncRwTransport<RoleClient, tokio::io::Empty, W>,
    garbled: Arc<Garbled>,
}

impl<R, W> StdioLines<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(crate) fn new(read: R, write: W, garbled: Arc<Garbled>) -> Self {
        StdioLines {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            write: AsyncRwTransport::new_client(tokio::io::empty(), write),
            garbled,
        }
    }

    /// Reads up to the next newline into `self.line`. `Ok(false)` at end of
    /// file; an oversized line is reported and skipped. Cancellation safe:
    /// bytes are moved into `self.line` and consumed with no await between.
    async fn read_line(&mut self) -> std::io::Result<bool> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(false);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let mut oversized = false;
            if self.discarding {
                self.discarding = newline.is_none();
            } else if self.line.len().saturating_add(take) > DEFAULT_MAX_LINE_LENGTH {
                self.line.clear();
                self.discarding = newline.is_none();
                oversized = true;
            } else {
                self.line.extend_from_slice(&available[..take]);
            }
            self.read.consume(take);
            if oversized {
                self.garbled.report(format!(
                    "the server wrote a line longer than {DEFAULT_MAX_LINE_LENGTH} bytes"
                ));
            } else if newline.is_some() && !self.discarding && !self.line.is_empty() {
                return Ok(true);
            }
        }
    }

    /// Parses the buffered line: a message, `None` for a line to skip
    /// silently (blank, or a notification rmcp does not model), or a
    /// violation reported on the channel.
    fn parse(&self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let error = match serde_json::from_slice(line) {
            Ok(message) => return Some(message),
            Err(error) => error,
        };
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(line)
            && value.get("id").is_none()
            && value
                .get("method")
                .is_some_and(serde_json::Value::is_string)
        {
            // An extension notification: nothing waits for it.
            tracing::debug!(%error, "skipping a notification this client does not model");
            return None;
        }
        let text = String::from_utf8_lossy(line);
        let excerpt: String = text.chars().take(EXCERPT_CHARS).collect();
        let more = if text.chars().count() > EXCERPT_CHARS {
            "..."
        } else {
            ""
        };
        self.garbled.report(format!(
            "the server wrote a line that is not JSON-RPC ({error}): {excerpt:?}{more}"
        ));
        None
    }
}

impl<R, W> Transport<RoleClient> for StdioLines<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.write.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            match self.read_line().await {
                Ok(true) => {}
                Ok(false) => return None,
                Err(error) => {
                    tracing::debug!(%error, "reading the server's stdout failed");
                    return None;
                }
            }
            let message = self.parse();
            self.line.clear();
            if let Some(message) = message {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.close().await
    }
}
