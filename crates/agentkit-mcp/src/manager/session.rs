//! Opening a server's connection, replacing a dead one, and following its
//! `tools/list_changed` notifications.
//!
//! The server's async gate is held for the whole connect, so calls racing
//! to a disconnected server share one connect; the phase moves through
//! `Connecting` (or `Reconnecting`) to `Ready` or `Failed`. A connection that failed is
//! discarded only if it is still the current one: a call that noticed a
//! crash late must not throw away the fresh connection another call made.

use super::state::{Live, Phase};
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
        if let Some(reason) = server.state().refused.clone() {
            return Err(McpError::AuthRefused {
                server: name.to_owned(),
                reason,
            });
        }
        let _gate = server.gate.lock().await;
        let dead = {
            let mut state = server.state();
            match state.connection() {
                Some(connection) if !connection.is_closed() => return Ok(connection.clone()),
                Some(_) => {
                    tracing::warn!(server = name, "MCP session closed; reconnecting");
                    state.enter(Phase::Reconnecting)
                }
                None => state.enter(Phase::Connecting),
            }
        };
        if let Some(old) = dead {
            // Closing a dead session only reaps what is left of it.
            old.close().await;
        }
        // Whatever way this connect ends (a verdict, waiting for
        // credentials, or its future dropped), it is not in progress after.
        let _attempt = Attempt(server);
        loop {
            #[allow(unused_mut)]
            let mut credentials = server.state().credentials.clone();
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
                    let connection = Arc::new(connection);
                    self.adopt(server, &connection);
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
                    server.state().enter(Phase::Failed(err.clone()));
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
        let tools = follow_tool_changes(
            self.weak.clone(),
            Arc::downgrade(server),
            Arc::downgrade(connection),
            connection.tools_changed.clone(),
        );
        let lists = super::resources::follow_list_changes(
            self.weak.clone(),
            Arc::downgrade(server),
            Arc::downgrade(connection),
            self.events.subscribe(),
        );
        let task = tokio::spawn(async move {
            futures::join!(tools, lists);
        });
        let renew: Vec<String> = {
            let mut state = server.state();
            state.offered.tools = discovery.tools.clone();
            state.offered.resources = discovery.resources.clone();
            state.offered.prompts = discovery.prompts.clone();
            // Only a connect moves to `Ready`, and connects hold the gate:
            // no session is left behind here.
            let replaced = state.enter(Phase::Ready(Live {
                connection: connection.clone(),
                refresher: task.abort_handle(),
            }));
            debug_assert!(replaced.is_none(), "a connect replaced an open session");
            state.subscriptions.iter().cloned().collect()
        };
        self.rebuild_catalog();
        super::resources::renew_subscriptions(
            &server.config.name,
            connection,
            renew,
            server.config.call_timeout,
        );
    }

    /// Forgets a connection that failed, unless it was already replaced.
    pub(super) async fn discard(&self, server: &Server, failed: &Arc<Connection>) {
        let gate = server.gate.lock().await;
        let old = {
            let mut state = server.state();
            if state.is_current(failed) {
                state.enter(Phase::Closed)
            } else {
                None
            }
        };
        drop(gate);
        if let Some(old) = old {
            old.close().await;
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
        {
            let mut state = server.state();
            if !state.is_current(connection) {
                return;
            }
            state.offered.tools = tools;
        }
        self.rebuild_catalog();
    }
}

/// Ends a connect attempt: a phase still `Connecting` or `Reconnecting`
/// (no verdict: waiting for credentials, or the future was dropped) goes
/// back to `Closed`.
struct Attempt<'a>(&'a Server);

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        self.0.state().connect_ended();
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
