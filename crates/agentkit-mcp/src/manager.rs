//! [`McpServerManager`]: the servers, their connections, the merged catalog
//! and the auth requests in flight.
//!
//! Each registered server has one slot holding its current connection, if
//! any. Connecting happens under the slot's async lock, so concurrent calls
//! to a disconnected server wait for one connect instead of starting one
//! each. A connection is never repaired: a call that finds it closed (the
//! process crashed, the session ended) replaces it once, and reports the
//! server unavailable if that fails too. The last tool list a server
//! reported stays in the catalog across such crashes, so the model can keep
//! calling its tools; only an explicit disconnect removes them.

use crate::auth::{AuthResolution, McpAuthResponder, McpCredentials};
use crate::catalog::{CatalogEvents, CatalogState, McpToolSource};
use crate::config::McpServerConfig;
use crate::connection::{CallError, Connection};
use crate::convert::{self, RemoteTool};
use crate::discovery::{McpPrompt, McpResource, list_tools};
use crate::error::McpError;
use agentkit_core::{Item, Part, ToolCallId};
use agentkit_tools_core::{
    AuthOperation, AuthRequest, CatalogSnapshot, ToolContext, ToolError, ToolResult,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use tokio::task::AbortHandle;
use tracing::Instrument;

/// Manages MCP servers: registers them, connects them, exposes their tools
/// as one [`ToolSource`](agentkit_tools_core::ToolSource), and handles
/// their auth requests.
///
/// Cloning gives another handle to the same manager. The servers are shut
/// down (each stdio server with its whole process group) when the last
/// handle and the last [`McpToolSource`] are dropped, or earlier with
/// [`disconnect`](Self::disconnect).
#[derive(Clone)]
pub struct McpServerManager {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    weak: Weak<Inner>,
    servers: Mutex<Vec<Arc<Server>>>,
    catalog: Mutex<CatalogState>,
    pending_auth: Mutex<BTreeMap<String, AuthRequest>>,
    responder: Mutex<Option<Arc<dyn McpAuthResponder>>>,
}

/// One registered server.
struct Server {
    config: McpServerConfig,
    credentials: Mutex<Option<McpCredentials>>,
    /// `Some(reason)` after the host refused to authenticate.
    refused: Mutex<Option<Option<String>>>,
    slot: tokio::sync::Mutex<Option<Arc<Connection>>>,
    /// The live connection's id, readable without the async lock.
    live: Mutex<Option<Arc<Connection>>>,
    /// The last tool list the server reported.
    tools: Mutex<Vec<RemoteTool>>,
    resources: Mutex<Vec<McpResource>>,
    prompts: Mutex<Vec<McpPrompt>>,
    refresher: Mutex<Option<AbortHandle>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(task) = self.refresher.get_mut().ok().and_then(Option::take) {
            task.abort();
        }
    }
}

/// What the manager knows about one server.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ServerStatus {
    /// The name it was registered under.
    pub name: String,
    /// `true` while a session is open.
    pub connected: bool,
    /// The process id (and process group id) of a stdio server's process.
    pub pid: Option<u32>,
    /// The name the server gave itself in the handshake.
    pub server_name: Option<String>,
    /// The version the server gave itself in the handshake.
    pub server_version: Option<String>,
    /// The negotiated MCP protocol version.
    pub protocol_version: Option<String>,
    /// The server's instructions for the model, if it sent any.
    pub instructions: Option<String>,
    /// The server's own names of its tools (as last listed).
    pub tools: Vec<String>,
}

impl McpServerManager {
    /// A manager with no servers.
    pub fn new() -> Self {
        Self {
            inner: Arc::new_cyclic(|weak| Inner {
                weak: weak.clone(),
                servers: Mutex::new(Vec::new()),
                catalog: Mutex::new(CatalogState::new()),
                pending_auth: Mutex::new(BTreeMap::new()),
                responder: Mutex::new(None),
            }),
        }
    }

    /// Registers a server; it connects on [`connect`](Self::connect),
    /// [`connect_all`](Self::connect_all) or its first tool call.
    pub fn register(&self, config: McpServerConfig) -> Result<(), McpError> {
        if config.name.is_empty() {
            return Err(McpError::InvalidConfig {
                server: config.name,
                message: "the name is empty".into(),
            });
        }
        let mut servers = self.inner.servers.lock().expect("servers lock");
        if servers.iter().any(|s| s.config.name == config.name) {
            return Err(McpError::AlreadyRegistered(config.name));
        }
        tracing::debug!(server = %config.name, "registered MCP server");
        servers.push(Arc::new(Server {
            config,
            credentials: Mutex::new(None),
            refused: Mutex::new(None),
            slot: tokio::sync::Mutex::new(None),
            live: Mutex::new(None),
            tools: Mutex::new(Vec::new()),
            resources: Mutex::new(Vec::new()),
            prompts: Mutex::new(Vec::new()),
            refresher: Mutex::new(None),
        }));
        Ok(())
    }

    /// The names of the registered servers, in registration order.
    pub fn servers(&self) -> Vec<String> {
        self.inner
            .servers
            .lock()
            .expect("servers lock")
            .iter()
            .map(|s| s.config.name.clone())
            .collect()
    }

    /// Connects a server (initialize plus discovery, within its connect
    /// timeout) unless it is connected already, and publishes its tools.
    pub async fn connect(&self, name: &str) -> Result<ServerStatus, McpError> {
        let server = self.inner.server(name)?;
        self.inner
            .connection(&server, AuthOperation::Connect)
            .await?;
        Ok(status_of(&server))
    }

    /// Connects every registered server concurrently. Each server's outcome
    /// is reported on its own; one failing never fails the others.
    pub async fn connect_all(&self) -> Vec<(String, Result<ServerStatus, McpError>)> {
        let names = self.servers();
        let attempts = names.iter().map(|name| self.connect(name));
        let results = futures::future::join_all(attempts).await;
        names.into_iter().zip(results).collect()
    }

    /// Closes a server's session and removes its tools from the catalog.
    /// Bounded in time even when the server does not answer: the transport
    /// gets a short grace period, then a stdio server's process group is
    /// killed.
    pub async fn disconnect(&self, name: &str) -> Result<(), McpError> {
        let server = self.inner.server(name)?;
        let connection = {
            let mut slot = server.slot.lock().await;
            server.live.lock().expect("live lock").take();
            slot.take()
        };
        if let Some(task) = server.refresher.lock().expect("refresher lock").take() {
            task.abort();
        }
        if let Some(connection) = connection {
            tracing::info!(server = name, "disconnecting MCP server");
            connection.close().await;
        }
        server.tools.lock().expect("tools lock").clear();
        server.resources.lock().expect("resources lock").clear();
        server.prompts.lock().expect("prompts lock").clear();
        self.inner.rebuild_catalog();
        Ok(())
    }

    /// Disconnects a server and forgets it; its name can be registered
    /// again.
    pub async fn remove(&self, name: &str) -> Result<(), McpError> {
        self.disconnect(name).await?;
        self.inner
            .servers
            .lock()
            .expect("servers lock")
            .retain(|s| s.config.name != name);
        self.inner
            .pending_auth
            .lock()
            .expect("pending auth lock")
            .retain(|_, request| request.provider != name);
        Ok(())
    }

    /// Disconnects every server, concurrently.
    pub async fn disconnect_all(&self) {
        let names = self.servers();
        futures::future::join_all(names.iter().map(|name| self.disconnect(name))).await;
    }

    /// The tools of every connected server as one tool source, for
    /// `AgentBuilder::add_tool_source` or a `ToolFederation`.
    pub fn source(&self) -> McpToolSource {
        McpToolSource {
            manager: self.inner.clone(),
        }
    }

    /// The current catalog (what [`source`](Self::source) returns now).
    pub fn snapshot(&self) -> CatalogSnapshot {
        self.inner.snapshot()
    }

    /// Catalog changes from now on.
    pub fn subscribe(&self) -> CatalogEvents {
        self.inner.catalog.lock().expect("catalog lock").subscribe()
    }

    /// What the manager knows about a server.
    pub fn status(&self, name: &str) -> Result<ServerStatus, McpError> {
        let server = self.inner.server(name)?;
        Ok(status_of(&server))
    }

    /// The resources a server offered when it was last connected.
    pub fn resources(&self, name: &str) -> Result<Vec<McpResource>, McpError> {
        let server = self.inner.server(name)?;
        let resources = server.resources.lock().expect("resources lock").clone();
        Ok(resources)
    }

    /// The prompts a server offered when it was last connected.
    pub fn prompts(&self, name: &str) -> Result<Vec<McpPrompt>, McpError> {
        let server = self.inner.server(name)?;
        let prompts = server.prompts.lock().expect("prompts lock").clone();
        Ok(prompts)
    }

    /// The last lines a stdio server wrote to stderr (empty for HTTP
    /// servers and servers not connected).
    pub fn stderr_tail(&self, name: &str) -> Result<Vec<String>, McpError> {
        let server = self.inner.server(name)?;
        let live = server.live.lock().expect("live lock").clone();
        Ok(live.map(|c| c.stderr_tail()).unwrap_or_default())
    }

    /// Calls a server's tool by its own name (not the exposed
    /// `mcp_<server>_<tool>` name), outside any agent loop. The same path
    /// the source's tools take: deadline, cancellation, reconnect, auth.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        self.inner
            .call_tool(server, tool, arguments, None, ctx)
            .await
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

    /// Fetches a prompt of a server (connecting it if needed), within the
    /// server's call timeout, as transcript items (user and assistant
    /// messages).
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

    /// Answers an auth request. Provided credentials are stored for the
    /// request's server and the current session is dropped, so the next
    /// call (or [`connect`](Self::connect)) reconnects with them. A refusal
    /// makes calls to the server fail until credentials are given.
    /// Resolving answers every pending request of the same server.
    pub async fn resolve_auth(&self, resolution: AuthResolution) -> Result<(), McpError> {
        let request = resolution.request();
        let known = self
            .inner
            .pending_auth
            .lock()
            .expect("pending auth lock")
            .contains_key(&request.id);
        if !known {
            return Err(McpError::UnknownAuthRequest(request.id.clone()));
        }
        let server = self.inner.server(&request.provider)?;
        self.inner.apply_resolution(&server, resolution).await;
        Ok(())
    }

    /// Sets a server's credentials directly, without a pending request (for
    /// hosts that know them in advance). The next call reconnects with them.
    pub async fn set_credentials(
        &self,
        name: &str,
        credentials: McpCredentials,
    ) -> Result<(), McpError> {
        let server = self.inner.server(name)?;
        self.inner.store_credentials(&server, credentials).await;
        Ok(())
    }

    /// Auth requests waiting for [`resolve_auth`](Self::resolve_auth).
    pub fn pending_auth(&self) -> Vec<AuthRequest> {
        self.inner
            .pending_auth
            .lock()
            .expect("pending auth lock")
            .values()
            .cloned()
            .collect()
    }

    /// Registers a responder asked first whenever a server wants
    /// credentials; what it cannot answer surfaces as `AuthRequired`. It is
    /// asked while the server's connect is in progress, so it must answer
    /// by returning a resolution, not by calling back into the manager.
    pub fn set_auth_responder(&self, responder: Arc<dyn McpAuthResponder>) {
        *self.inner.responder.lock().expect("responder lock") = Some(responder);
    }
}

impl Default for McpServerManager {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for McpServerManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServerManager")
            .field("servers", &self.servers())
            .field("revision", &self.snapshot().revision)
            .finish()
    }
}

fn status_of(server: &Server) -> ServerStatus {
    let live = server.live.lock().expect("live lock").clone();
    let live = live.filter(|c| !c.is_closed());
    let info = live.as_ref().map(|c| c.server_info.clone());
    let field = |path: &[&str]| {
        let mut value = info.as_ref()?;
        for key in path {
            value = value.get(*key)?;
        }
        value.as_str().map(str::to_owned)
    };
    ServerStatus {
        name: server.config.name.clone(),
        connected: live.is_some(),
        pid: live.as_ref().and_then(|c| c.pid()),
        server_name: field(&["serverInfo", "name"]),
        server_version: field(&["serverInfo", "version"]),
        protocol_version: field(&["protocolVersion"]),
        instructions: field(&["instructions"]),
        tools: server
            .tools
            .lock()
            .expect("tools lock")
            .iter()
            .map(|t| t.name.clone())
            .collect(),
    }
}

impl Inner {
    fn server(&self, name: &str) -> Result<Arc<Server>, McpError> {
        self.servers
            .lock()
            .expect("servers lock")
            .iter()
            .find(|s| s.config.name == name)
            .cloned()
            .ok_or_else(|| McpError::UnknownServer(name.to_owned()))
    }

    pub(crate) fn snapshot(&self) -> CatalogSnapshot {
        self.catalog.lock().expect("catalog lock").snapshot()
    }

    fn rebuild_catalog(&self) {
        // The catalog lock is taken first and held while the lists are
        // read, so two rebuilds racing (a refresh and a connect) cannot
        // publish an older view after a newer one.
        let mut catalog = self.catalog.lock().expect("catalog lock");
        let lists: Vec<(String, Vec<RemoteTool>)> = self
            .servers
            .lock()
            .expect("servers lock")
            .iter()
            .map(|s| {
                let tools = s.tools.lock().expect("tools lock").clone();
                (s.config.name.clone(), tools)
            })
            .collect();
        catalog.rebuild(&lists, &self.weak);
    }

    /// The server's open connection, connecting (once) if there is none or
    /// it is closed. Auth failures are built for `operation`.
    async fn connection(
        &self,
        server: &Arc<Server>,
        operation: AuthOperation,
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
        let mut asked_responder = false;
        loop {
            let credentials = server.credentials.lock().expect("credentials lock").clone();
            let span = tracing::info_span!("mcp.connect", server = name);
            match Connection::open(&server.config, credentials.as_ref())
                .instrument(span)
                .await
            {
                Ok(connection) => {
                    let connection = Arc::new(connection);
                    self.adopt(server, &connection);
                    *slot = Some(connection.clone());
                    return Ok(connection);
                }
                Err(McpError::AuthRequired(mut request)) => {
                    request.operation = operation.clone();
                    if !asked_responder && self.ask_responder(server, &request).await {
                        asked_responder = true;
                        continue;
                    }
                    return Err(self.auth_failure(server, *request));
                }
                Err(err) => {
                    tracing::warn!(server = name, %err, "MCP connect failed");
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

    /// Asks the registered responder; `true` when it provided credentials
    /// worth a retry.
    async fn ask_responder(&self, server: &Arc<Server>, request: &AuthRequest) -> bool {
        let responder = self.responder.lock().expect("responder lock").clone();
        let Some(responder) = responder else {
            return false;
        };
        match responder.respond(request).await {
            Some(AuthResolution::Provided { credentials, .. }) => {
                tracing::info!(server = %server.config.name, "auth responder provided credentials");
                *server.credentials.lock().expect("credentials lock") = Some(credentials);
                true
            }
            Some(AuthResolution::Refused { reason, .. }) => {
                tracing::info!(server = %server.config.name, "auth responder refused");
                *server.refused.lock().expect("refused lock") = Some(reason);
                false
            }
            None => false,
        }
    }

    /// The error for an unanswered auth request: recorded as pending, or
    /// a refusal when the responder just refused.
    fn auth_failure(&self, server: &Server, request: AuthRequest) -> McpError {
        if let Some(reason) = server.refused.lock().expect("refused lock").clone() {
            return McpError::AuthRefused {
                server: server.config.name.clone(),
                reason,
            };
        }
        tracing::info!(
            server = %server.config.name,
            request = %request.id,
            challenge = ?request.challenge,
            "MCP server requires authentication"
        );
        self.pending_auth
            .lock()
            .expect("pending auth lock")
            .insert(request.id.clone(), request.clone());
        McpError::AuthRequired(Box::new(request))
    }

    async fn apply_resolution(&self, server: &Arc<Server>, resolution: AuthResolution) {
        let name = server.config.name.clone();
        self.pending_auth
            .lock()
            .expect("pending auth lock")
            .retain(|_, request| request.provider != name);
        match resolution {
            AuthResolution::Provided { credentials, .. } => {
                self.store_credentials(server, credentials).await;
            }
            AuthResolution::Refused { reason, .. } => {
                tracing::info!(server = %name, "host refused authentication");
                *server.refused.lock().expect("refused lock") = Some(reason);
            }
        }
    }

    async fn store_credentials(&self, server: &Arc<Server>, credentials: McpCredentials) {
        *server.credentials.lock().expect("credentials lock") = Some(credentials);
        *server.refused.lock().expect("refused lock") = None;
        // The open session (if any) was authenticated with the old
        // credentials; the next call opens a new one.
        let old = {
            let mut slot = server.slot.lock().await;
            server.live.lock().expect("live lock").take();
            slot.take()
        };
        if let Some(old) = old {
            old.close().await;
        }
    }

    /// Forgets a connection that failed, unless it was already replaced.
    async fn discard(&self, server: &Server, failed: &Arc<Connection>) {
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

    /// A tool call: connect if needed, call with deadline and cancellation,
    /// reconnect once if the session turned out closed, map the outcome.
    pub(crate) async fn call_tool(
        &self,
        server_name: &str,
        tool: &str,
        input: Value,
        call_id: Option<ToolCallId>,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let span = tracing::info_span!(
            "mcp.call_tool",
            server = server_name,
            tool,
            call_id = call_id
                .as_ref()
                .map(|id| id.to_string())
                .unwrap_or_default()
        );
        async move {
            let server = self
                .server(server_name)
                .map_err(McpError::into_tool_error)?;
            let arguments = match input {
                Value::Object(map) => Some(map),
                Value::Null => None,
                other => {
                    return Err(ToolError::InvalidInput(format!(
                        "MCP tool arguments must be a JSON object, got {other}"
                    )));
                }
            };
            if ctx.cancellation.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            let operation = AuthOperation::InvokeTool {
                tool: tool.to_owned(),
                call_id,
            };
            let deadline = server.config.call_timeout;
            let mut retried = false;
            loop {
                // Reconnecting can take the whole connect timeout; the turn
                // may be cancelled meanwhile.
                let connection = tokio::select! {
                    connection = self.connection(&server, operation.clone()) => {
                        connection.map_err(McpError::into_tool_error)?
                    }
                    _ = ctx.cancellation.cancelled() => return Err(ToolError::Cancelled),
                };
                let outcome = connection
                    .call_tool(tool, arguments.clone(), deadline, &ctx.cancellation)
                    .await;
                return match outcome {
                    Ok(result) => Ok(convert::tool_result(server_name, tool, &result)),
                    Err(CallError::NotSent(why)) => {
                        self.discard(&server, &connection).await;
                        if retried {
                            Err(ToolError::Unavailable(format!(
                                "MCP server {server_name}: {why}, and reconnecting did not help"
                            )))
                        } else {
                            retried = true;
                            continue;
                        }
                    }
                    Err(CallError::Lost) => {
                        // Not retried: the server may have run the call.
                        self.discard(&server, &connection).await;
                        Err(ToolError::Unavailable(format!(
                            "MCP server {server_name} closed the session during the call; \
                             it will be reconnected on the next call"
                        )))
                    }
                    Err(CallError::Broken(why)) => {
                        // Not retried either: an HTTP request may have
                        // reached the server before the exchange broke.
                        self.discard(&server, &connection).await;
                        Err(ToolError::Unavailable(format!(
                            "MCP server {server_name}: {why}; \
                             it will be reconnected on the next call"
                        )))
                    }
                    Err(CallError::Timeout(after)) => {
                        tracing::warn!(?after, "MCP tool call hit its deadline; cancelled");
                        Err(ToolError::Timeout(after))
                    }
                    Err(CallError::Cancelled) => Err(ToolError::Cancelled),
                    Err(CallError::Auth(challenge)) => {
                        self.discard(&server, &connection).await;
                        let request =
                            crate::auth::auth_request(server_name, operation.clone(), &challenge);
                        if !retried && self.ask_responder(&server, &request).await {
                            retried = true;
                            continue;
                        }
                        Err(self.auth_failure(&server, request).into_tool_error())
                    }
                    Err(CallError::Rejected(message)) => Err(ToolError::ExecutionFailed(format!(
                        "MCP server {server_name} rejected the call: {message}"
                    ))),
                    Err(CallError::Protocol(message)) => Err(ToolError::ExecutionFailed(format!(
                        "MCP server {server_name}: {message}"
                    ))),
                };
            }
        }
        .instrument(span)
        .await
    }

    /// A request other than a tool call (resources, prompts): connect if
    /// needed, run it within the call timeout, reconnect once if the
    /// session turned out closed. Failures are manager errors, since the
    /// host, not the model, asked.
    async fn request<F, Fut>(
        &self,
        server_name: &str,
        operation: AuthOperation,
        run: F,
    ) -> Result<Value, McpError>
    where
        F: Fn(Arc<Connection>, std::time::Duration) -> Fut,
        Fut: std::future::Future<Output = Result<Value, CallError>>,
    {
        let server = self.server(server_name)?;
        let limit = server.config.call_timeout;
        let failed = |message: String| McpError::Protocol {
            server: server_name.to_owned(),
            message,
        };
        let mut retried = false;
        loop {
            let connection = self.connection(&server, operation.clone()).await?;
            return match run(connection.clone(), limit).await {
                Ok(value) => Ok(value),
                Err(CallError::NotSent(_)) if !retried => {
                    self.discard(&server, &connection).await;
                    retried = true;
                    continue;
                }
                Err(CallError::Auth(challenge)) => {
                    self.discard(&server, &connection).await;
                    let request =
                        crate::auth::auth_request(server_name, operation.clone(), &challenge);
                    if !retried && self.ask_responder(&server, &request).await {
                        retried = true;
                        continue;
                    }
                    Err(self.auth_failure(&server, request))
                }
                Err(CallError::Timeout(after)) => {
                    Err(failed(format!("no answer within {after:?}")))
                }
                Err(err @ (CallError::NotSent(_) | CallError::Lost | CallError::Broken(_))) => {
                    self.discard(&server, &connection).await;
                    Err(failed(format!("{err:?}")))
                }
                Err(CallError::Cancelled) => Err(failed("cancelled".into())),
                Err(CallError::Rejected(message) | CallError::Protocol(message)) => {
                    Err(failed(message))
                }
            };
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
