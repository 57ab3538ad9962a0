//! Opening a server's connection, replacing a dead one, and following its
//! `tools/list_changed` notifications.
//!
//! The slot's async lock is held for the whole connect, so calls racing to
//! a disconnected server share one connect. A connection that failed is
//! discarded only if it is still the current one: a call that noticed a
//! crash late must not throw away the fresh connection another call made.

use super::{Inner, Server};
use crate::connection::Connection;
use crate::convert::RemoteTool;
use crate::discovery::list_tools;
use crate::error::McpError;
use agentkit_tools_core::AuthOperation;
use std::sync::{Arc, Weak};
use tracing::Instrument;

impl Inner {
    /// The server's open connection, connecting (once) if there is none or
    /// it is closed. Auth failures are built for `operation`.
    pub(super) async fn connection(
        &self,
        server: &Arc<Server>,
        operation: AuthOperation,
    ) -> Result<Arc<Connection>, McpError> {
        self.connection_asking(server, operation, &mut false).await
    }

    /// [`connection`](Self::connection) for an operation that may already
    /// have asked the responder: `asked` is shared by every attempt of one
    /// operation, so the responder is asked at most once per operation.
    pub(super) async fn connection_asking(
        &self,
        server: &Arc<Server>,
        operation: AuthOperation,
        asked: &mut bool,
    ) -> Result<Arc<Connection>, McpError> {
        let name = server.config.name.as_str();
        if let Some(reason) = server.refused.lock().expect("refused lock").clone() {
            return Err(McpError::AuthRefused {
                server: name.to_owned(),
                reason,
            });
        }
        let mut slot = server.slot.lock().await;
        if let Some(connection) = slot.as_ref() {
            if !connection.is_closed() {
                return Ok(connection.clone());
            }
            tracing::warn!(server = name, "MCP session closed; reconnecting");
            if let Some(old) = slot.take() {
                // Closing a dead session only reaps what is left of it.
                old.close().await;
            }
        }
        loop {
            #[allow(unused_mut)]
            let mut credentials = server.credentials.lock().expect("credentials lock").clone();
            #[cfg(feature = "oauth")]
            if let Some(token) = server.oauth.access_token().await {
                credentials = Some(crate::auth::McpCredentials::Bearer(token));
            }
            let span = tracing::info_span!("mcp.connect", server = name);
            match Connection::open(&server.config, credentials.as_ref(), self.hooks())
                .instrument(span)
                .await
            {
                Ok(connection) => {
                    server.last_error.lock().expect("last error lock").take();
                    let connection = Arc::new(connection);
                    self.adopt(server, &connection);
                    *slot = Some(connection.clone());
                    return Ok(connection);
                }
                Err(McpError::AuthRequired(mut request)) => {
                    request.operation = operation.clone();
                    if !*asked {
                        *asked = true;
                        if self.ask_responder(server, &request).await {
                            continue;
                        }
                    }
                    return Err(self.surface_auth(server, *request).await);
                }
                Err(err) => {
                    tracing::warn!(server = name, %err, "MCP connect failed");
                    *server.last_error.lock().expect("last error lock") = Some(err.clone());
                    return Err(err);
                }
            }
        }
    }

    /// Publishes a new connection's discovery and starts following its
    /// `tools/list_changed` notifications.
    fn adopt(&self, server: &Arc<Server>, connection: &Arc<Connection>) {
        let discovery = &connection.discovery;
        tracing::info!(
            server = %server.config.name,
            tools = discovery.tools.len(),
            resources = discovery.resources.len(),
            prompts = discovery.prompts.len(),
            "MCP server connected"
        );
        *server.tools.lock().expect("tools lock") = discovery.tools.clone();
        *server.resources.lock().expect("resources lock") = discovery.resources.clone();
        *server.prompts.lock().expect("prompts lock") = discovery.prompts.clone();
        *server.live.lock().expect("live lock") = Some(connection.clone());
        self.rebuild_catalog();
        let renew: Vec<String> = server
            .subscriptions
            .lock()
            .expect("subscriptions lock")
            .iter()
            .cloned()
            .collect();
        super::resources::renew_subscriptions(
            &server.config.name,
            connection,
            renew,
            server.config.call_timeout,
        );

        let task = tokio::spawn(follow_tool_changes(
            self.weak.clone(),
            Arc::downgrade(server),
            Arc::downgrade(connection),
            connection.tools_changed.clone(),
        ));
        if let Some(old) = server
            .refresher
            .lock()
            .expect("refresher lock")
            .replace(task.abort_handle())
        {
            old.abort();
        }
    }

    /// Forgets a connection that failed, unless it was already replaced.
    pub(super) async fn discard(&self, server: &Server, failed: &Arc<Connection>) {
        let mut slot = server.slot.lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, failed)) {
            slot.take();
            {
                let mut live = server.live.lock().expect("live lock");
                if live.as_ref().is_some_and(|c| Arc::ptr_eq(c, failed)) {
                    live.take();
                }
            }
            drop(slot);
            failed.close().await;
        }
    }

    /// A refreshed tool list from `connection`; ignored when that
    /// connection is no longer the server's current one.
    fn tools_refreshed(
        &self,
        server: &Server,
        connection: &Arc<Connection>,
        tools: Vec<RemoteTool>,
    ) {
        let current = server
            .live
            .lock()
            .expect("live lock")
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, connection));
        if !current {
            return;
        }
        *server.tools.lock().expect("tools lock") = tools;
        self.rebuild_catalog();
    }
}

/// Re-lists a server's tools whenever it says they changed, for as long as
/// its connection lives.
async fn follow_tool_changes(
    manager: Weak<Inner>,
    server: Weak<Server>,
    connection: Weak<Connection>,
    changed: Arc<tokio::sync::Notify>,
) {
    loop {
        changed.notified().await;
        let (Some(manager), Some(server), Some(connection)) =
            (manager.upgrade(), server.upgrade(), connection.upgrade())
        else {
            return;
        };
        let limit = server.config.connect_timeout;
        match tokio::time::timeout(limit, list_tools(connection.peer())).await {
            Ok(Ok(tools)) => manager.tools_refreshed(&server, &connection, tools),
            Ok(Err(err)) => {
                tracing::warn!(server = %server.config.name, %err, "refreshing tools failed")
            }
            Err(_) => tracing::warn!(server = %server.config.name, "refreshing tools timed out"),
        }
        if connection.is_closed() {
            return;
        }
    }
}
