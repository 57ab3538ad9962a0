//! The host's side of resources and prompts: list, read, subscribe, get.
//!
//! These are the host's requests, not the model's, so they fail
//! with [`McpError`]s: a server that never announced the feature gets
//! nothing sent and answers [`McpError::Unsupported`], a JSON-RPC error
//! from the server is [`McpError::Rejected`] with its code. Each runs
//! within the server's call timeout, connecting it first if needed.
//!
//! Subscriptions are remembered per server and renewed when a crashed
//! server is reconnected, so the host's
//! [`McpServerEvent::ResourceUpdated`](crate::McpServerEvent) stream keeps
//! flowing across reconnects.

use super::McpServerManager;
use crate::convert;
use crate::discovery::{McpPrompt, McpResource, McpResourceTemplate, from_json_list};
use crate::error::McpError;
use crate::events::McpServerEvent;
use agentkit_core::{Item, Part};
use agentkit_tools_core::AuthOperation;
use rmcp::RoleClient;
use rmcp::model::{SubscribeRequestParams, UnsubscribeRequestParams};
use rmcp::service::{Peer, ServiceError};
use serde_json::Value;
use std::collections::BTreeMap;

/// What resource requests need: the capability, and its name in errors.
const RESOURCES: (&str, Option<&str>, &str) = ("resources", None, "resources");
/// What subscriptions need.
const SUBSCRIPTIONS: (&str, Option<&str>, &str) =
    ("resources", Some("subscribe"), "resource subscriptions");

impl McpServerManager {
    /// Checks that `server` (connecting it if needed) announced
    /// `capability` (and its flag `sub`); `feature` names it in the error.
    async fn ensure_offered(
        &self,
        server: &str,
        capability: &str,
        sub: Option<&str>,
        feature: &str,
    ) -> Result<(), McpError> {
        let slot = self.inner.server(server)?;
        let connection = self.inner.connection(&slot, AuthOperation::Connect).await?;
        if connection.offers(capability, sub) {
            Ok(())
        } else {
            Err(McpError::Unsupported {
                server: server.to_owned(),
                feature: feature.to_owned(),
            })
        }
    }

    /// A request on the server's peer that needs `capability` (and its
    /// flag `sub`; `feature` names it in the error), run like any host
    /// request: connect if needed, within the call timeout, typed errors.
    async fn offered_request<F, Fut, T>(
        &self,
        server: &str,
        (capability, sub, feature): (&str, Option<&str>, &str),
        run: F,
    ) -> Result<Value, McpError>
    where
        F: Fn(Peer<RoleClient>) -> Fut,
        Fut: std::future::Future<Output = Result<T, ServiceError>>,
        T: serde::Serialize,
    {
        self.ensure_offered(server, capability, sub, feature)
            .await?;
        let operation = AuthOperation::Other {
            description: format!("MCP {feature}"),
        };
        self.inner
            .request(server, operation, |connection, limit| {
                let request = run(connection.peer().clone());
                async move { connection.host_request(limit, request).await }
            })
            .await
    }

    /// The server's resources, listed now (every page); the list
    /// [`resources`](Self::resources) returns is updated too.
    pub async fn list_resources(&self, server: &str) -> Result<Vec<McpResource>, McpError> {
        let list = self
            .offered_request(server, RESOURCES, |peer| async move {
                peer.list_all_resources().await
            })
            .await?;
        let resources: Vec<McpResource> = from_json_list(list);
        let slot = self.inner.server(server)?;
        slot.state().offered.resources = resources.clone();
        self.inner.rebuild_catalog();
        Ok(resources)
    }

    /// The server's resource templates, listed now (every page).
    pub async fn list_resource_templates(
        &self,
        server: &str,
    ) -> Result<Vec<McpResourceTemplate>, McpError> {
        let list = self
            .offered_request(server, RESOURCES, |peer| async move {
                peer.list_all_resource_templates().await
            })
            .await?;
        Ok(from_json_list(list))
    }

    /// Reads a resource of a server (connecting it if needed), within the
    /// server's call timeout. Each content entry becomes a file part named
    /// by its URI.
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<Vec<Part>, McpError> {
        let operation = AuthOperation::ReadResource {
            uri: uri.to_owned(),
        };
        let result = self
            .inner
            .request(server, operation, |connection, limit| async move {
                connection.read_resource(uri, limit).await
            })
            .await?;
        Ok(convert::resource_contents(&result))
    }

    /// Asks the server to tell when a resource changes: each change arrives
    /// on [`events`](Self::events) as
    /// [`McpServerEvent::ResourceUpdated`](crate::McpServerEvent::ResourceUpdated).
    /// The subscription is renewed when the server is reconnected, until
    /// [`unsubscribe_resource`](Self::unsubscribe_resource) or
    /// [`disconnect`](Self::disconnect).
    pub async fn subscribe_resource(&self, server: &str, uri: &str) -> Result<(), McpError> {
        self.offered_request(server, SUBSCRIPTIONS, |peer| {
            let params = SubscribeRequestParams::new(uri);
            async move { peer.subscribe(params).await }
        })
        .await?;
        let slot = self.inner.server(server)?;
        slot.state().subscriptions.insert(uri.to_owned());
        Ok(())
    }

    /// Ends a subscription made with
    /// [`subscribe_resource`](Self::subscribe_resource).
    pub async fn unsubscribe_resource(&self, server: &str, uri: &str) -> Result<(), McpError> {
        let slot = self.inner.server(server)?;
        slot.state().subscriptions.remove(uri);
        self.offered_request(server, SUBSCRIPTIONS, |peer| {
            let params = UnsubscribeRequestParams::new(uri);
            async move { peer.unsubscribe(params).await }
        })
        .await?;
        Ok(())
    }

    /// The server's prompts, listed now (every page); the list
    /// [`prompts`](Self::prompts) returns is updated too.
    pub async fn list_prompts(&self, server: &str) -> Result<Vec<McpPrompt>, McpError> {
        let list = self
            .offered_request(server, ("prompts", None, "prompts"), |peer| async move {
                peer.list_all_prompts().await
            })
            .await?;
        let prompts: Vec<McpPrompt> = from_json_list(list);
        let slot = self.inner.server(server)?;
        slot.state().offered.prompts = prompts.clone();
        self.inner.rebuild_catalog();
        Ok(prompts)
    }

    /// Fetches a prompt of a server (connecting it if needed), within the
    /// server's call timeout, as transcript items (user and assistant
    /// messages). A missing required argument comes back as the server's
    /// [`McpError::Rejected`].
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<Vec<Item>, McpError> {
        let operation = AuthOperation::GetPrompt {
            name: name.to_owned(),
        };
        let arguments: serde_json::Map<String, Value> = arguments
            .into_iter()
            .map(|(key, value)| (key, Value::String(value)))
            .collect();
        let arguments = (!arguments.is_empty()).then_some(arguments);
        let result = self
            .inner
            .request(server, operation, |connection, limit| {
                let arguments = arguments.clone();
                async move { connection.get_prompt(name, arguments, limit).await }
            })
            .await?;
        Ok(convert::prompt_items(&result))
    }
}

/// Re-lists a server's resources or prompts whenever it says they
/// changed, for as long as its connection lives, so the kept lists (and the
/// optional resource tools' descriptions) follow the server.
pub(super) async fn follow_list_changes(
    manager: std::sync::Weak<super::Inner>,
    server: std::sync::Weak<super::Server>,
    connection: std::sync::Weak<crate::connection::Connection>,
    mut events: tokio::sync::broadcast::Receiver<McpServerEvent>,
) {
    while let Some(event) = crate::events::next_event(&mut events).await {
        let (Some(manager), Some(server), Some(connection)) =
            (manager.upgrade(), server.upgrade(), connection.upgrade())
        else {
            return;
        };
        if connection.is_closed() {
            return;
        }
        let name = server.config.name.as_str();
        let resources = match &event {
            McpServerEvent::ResourcesChanged { server } if server == name => true,
            McpServerEvent::PromptsChanged { server } if server == name => false,
            _ => continue,
        };
        let peer = connection.peer().clone();
        let limit = server.config.call_timeout;
        let listed = if resources {
            connection
                .host_request(limit, async move { peer.list_all_resources().await })
                .await
        } else {
            connection
                .host_request(limit, async move { peer.list_all_prompts().await })
                .await
        };
        let list = match listed {
            Ok(list) => list,
            Err(err) => {
                tracing::warn!(server = name, %err, "re-listing after a change failed");
                continue;
            }
        };
        {
            let mut state = server.state();
            if !state.is_current(&connection) {
                return;
            }
            if resources {
                state.offered.resources = from_json_list(list);
            } else {
                state.offered.prompts = from_json_list(list);
            }
        }
        manager.rebuild_catalog();
    }
}

/// Renews a reconnected server's subscriptions, in the background: a
/// failure is logged, the connection stays.
pub(super) fn renew_subscriptions(
    server: &str,
    connection: &std::sync::Arc<crate::connection::Connection>,
    uris: Vec<String>,
    limit: std::time::Duration,
) {
    if uris.is_empty() {
        return;
    }
    let server = server.to_owned();
    let peer = connection.peer().clone();
    tokio::spawn(async move {
        for uri in uris {
            let renewal = peer.subscribe(SubscribeRequestParams::new(uri.clone()));
            match tokio::time::timeout(limit, renewal).await {
                Ok(Ok(_)) => tracing::debug!(%server, %uri, "resource subscription renewed"),
                Ok(Err(err)) => {
                    tracing::warn!(%server, %uri, %err, "renewing a resource subscription failed")
                }
                Err(_) => {
                    tracing::warn!(%server, %uri, "renewing a resource subscription timed out")
                }
            }
        }
    });
}
