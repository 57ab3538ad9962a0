//! What servers tell the host outside any call: a subscribed resource
//! changed, a list changed, a log message.
//!
//! These arrive as MCP notifications on a server's session, at any time,
//! and concern the host, not the model: a resource viewer refreshes, a
//! prompt picker re-lists, a log pane shows the line. The manager passes
//! them on as [`McpServerEvent`]s through [`McpEvents`], a stream each
//! host component can take its own copy of
//! ([`McpServerManager::events`](crate::McpServerManager::events)). Log
//! messages also become tracing records (see `logging.rs`), so a host that
//! only wants them in its logs needs no subscriber.

use serde_json::Value;
use tokio::sync::broadcast;

/// How many events a slow subscriber may fall behind before the oldest
/// ones are skipped.
pub(crate) const EVENT_BUFFER: usize = 256;

/// Something a server told the host outside any call.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum McpServerEvent {
    /// A resource the host subscribed to
    /// ([`subscribe_resource`](crate::McpServerManager::subscribe_resource))
    /// changed; read it again to see how.
    ResourceUpdated {
        /// The server's name.
        server: String,
        /// The resource's URI.
        uri: String,
    },
    /// The server's list of resources changed
    /// ([`list_resources`](crate::McpServerManager::list_resources) fetches
    /// the new one).
    ResourcesChanged {
        /// The server's name.
        server: String,
    },
    /// The server's list of prompts changed
    /// ([`list_prompts`](crate::McpServerManager::list_prompts) fetches the
    /// new one).
    PromptsChanged {
        /// The server's name.
        server: String,
    },
    /// The server logged a message (`notifications/message`).
    Log(McpLogMessage),
}

/// One log message of a server.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct McpLogMessage {
    /// The server's name.
    pub server: String,
    /// MCP's level name: `debug`, `info`, `notice`, `warning`, `error`,
    /// `critical`, `alert` or `emergency`.
    pub level: String,
    /// The logger the server named, if any.
    pub logger: Option<String>,
    /// What the server logged: usually a string, any JSON value allowed.
    pub data: Value,
}

/// A stream of [`McpServerEvent`]s, from
/// [`McpServerManager::events`](crate::McpServerManager::events).
pub struct McpEvents {
    pub(crate) receiver: broadcast::Receiver<McpServerEvent>,
}

impl McpEvents {
    /// The next event; `None` once the manager is gone. A subscriber that
    /// falls more than 256 events behind skips the oldest ones.
    pub async fn recv(&mut self) -> Option<McpServerEvent> {
        next_event(&mut self.receiver).await
    }

    /// The next event if one is already waiting.
    pub fn try_recv(&mut self) -> Option<McpServerEvent> {
        waiting_event(&mut self.receiver)
    }
}

impl std::fmt::Debug for McpEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpEvents").finish_non_exhaustive()
    }
}

/// The next value of a broadcast, skipping what a slow receiver missed;
/// `None` once every sender is gone.
pub(crate) async fn next_event<T: Clone>(receiver: &mut broadcast::Receiver<T>) -> Option<T> {
    loop {
        match receiver.recv().await {
            Ok(event) => return Some(event),
            Err(broadcast::error::RecvError::Lagged(skipped)) => {
                tracing::debug!(skipped, "MCP event subscriber lagged");
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        }
    }
}

/// The next value of a broadcast if one is waiting, skipping what a slow
/// receiver missed.
pub(crate) fn waiting_event<T: Clone>(receiver: &mut broadcast::Receiver<T>) -> Option<T> {
    loop {
        match receiver.try_recv() {
            Ok(event) => return Some(event),
            Err(broadcast::error::TryRecvError::Lagged(_)) => continue,
            Err(_) => return None,
        }
    }
}
