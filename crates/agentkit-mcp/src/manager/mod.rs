//! [`McpServerManager`]: the servers, their connections, the merged catalog
//! and the auth requests in flight.
//!
//! Each registered server keeps everything that changes while it runs as
//! one value (`state::Runtime`: its connection's phase, what it offered,
//! credentials, subscriptions) behind one lock. Connecting happens under a
//! separate async gate, so concurrent calls to a disconnected server wait
//! for one connect instead of starting one each. A connection is never repaired: a call that finds it closed (the
//! process crashed, the session ended) replaces it once, and reports the
//! server unavailable if that fails too. The last tool list a server
//! reported stays in the catalog across such crashes, so the model can keep
//! calling its tools; only an explicit disconnect removes them.
//!
//! This module holds the public surface and the shared state; `session`
//! opens, replaces and follows connections, `calls` runs requests on them,
//! and `credentials` deals with auth requests and their answers.

mod calls;
mod credentials;
// Resource subscriptions are legacy-only in rmcp (the 2026 revision
// replaces them with `subscriptions/listen`); the revisions this client
// speaks still have them.
#[allow(deprecated)]
mod resources;
mod session;
mod state;
mod status;

pub use status::{ServerState, ServerStatus};

use crate::auth::{AuthResolution, McpAuthResponder, McpCredentials};
use crate::catalog::{CatalogEvents, CatalogState, McpToolSource};
use crate::config::McpServerConfig;
use crate::convert::RemoteTool;
use crate::discovery::{McpPrompt, McpResource};
use crate::elicitation::ElicitationHandler;
use crate::error::McpError;
use crate::events::{McpEvents, McpServerEvent};
use crate::sampling::SamplingHandler;
use agentkit_tools_core::{
    AuthOperation, AuthRequest, CatalogSnapshot, ToolContext, ToolError, ToolResult,
};
use serde_json::Value;
use state::{Phase, Runtime};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Manages MCP servers: registers them, connects them, exposes their tools
/// as one [`ToolSource`](agentkit_tools_core::ToolSource), and handles
/// their auth requests.
///
/// Cloning gives another handle to the same manager. The servers are shut
/// down (each stdio server with its whole process group) when the last
/// handle and the last [`McpToolSource`] are dropped, or earlier with
/// [`disconnect`](Self::disconnect).
///
/// Register servers, connect them (or let the first tool call do it), and
/// hand [`source`](Self::source) to the agent
/// (`AgentBuilder::add_tool_source`). A server that fails to connect is
/// reported with a typed [`McpError`] and keeps its slot; the others work.
/// The crate docs show a session with a real server, its tools and auth.
///
/// ```
/// use agentkit_mcp::{McpError, McpServerConfig, McpServerManager, ServerState};
/// use agentkit_tools_core::ToolSource;
/// use std::time::Duration;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let manager = McpServerManager::new();
/// manager.register(
///     McpServerConfig::stdio("missing", "no-such-mcp-server-binary")
///         .connect_timeout(Duration::from_secs(10)),
/// )?;
/// // Names are unique.
/// let again = manager.register(McpServerConfig::stdio("missing", "other"));
/// assert!(matches!(again, Err(McpError::AlreadyRegistered(_))));
/// assert_eq!(manager.servers(), ["missing"]);
///
/// // Registered, not yet connected.
/// assert!(matches!(manager.status("missing")?.state, ServerState::Disconnected));
/// for (name, outcome) in manager.connect_all().await {
///     match outcome {
///         Ok(status) => println!("{name}: {} tools", status.tools.len()),
///         // The program does not exist: a typed error, and the slot stays.
///         Err(err) => {
///             assert!(matches!(err, McpError::Spawn { .. }), "{err}");
///             assert!(matches!(manager.status(&name)?.state, ServerState::Failed(_)));
///         }
///     }
/// }
/// // No server connected, so the agent would see no MCP tools (yet).
/// assert!(manager.source().snapshot().names().is_empty());
/// # Ok::<(), McpError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct McpServerManager {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    weak: Weak<Inner>,
    servers: Mutex<Vec<Arc<Server>>>,
    catalog: Mutex<CatalogState>,
    /// Unanswered auth requests, oldest first.
    pending_auth: Mutex<Vec<AuthRequest>>,
    responder: Mutex<Option<Arc<dyn McpAuthResponder>>>,
    /// Answers servers' `elicitation/create`; `None` declines them.
    elicitation: Mutex<Option<Arc<dyn ElicitationHandler>>>,
    /// The roots offered to servers (`set_roots`).
    roots: Arc<crate::roots::Roots>,
    /// Answers servers' `sampling/createMessage`; `None` refuses them.
    sampling: Mutex<Option<Arc<dyn SamplingHandler>>>,
    /// Servers' notifications for the host.
    events: tokio::sync::broadcast::Sender<McpServerEvent>,
    /// Whether resources and prompts are offered to the model as tools.
    resource_tools: std::sync::atomic::AtomicBool,
    /// Whether elicitation goes to the tool call that caused it.
    elicit_in_calls: std::sync::atomic::AtomicBool,
}

/// One registered server.
struct Server {
    config: McpServerConfig,
    /// Held (asynchronously) for a whole connect, so calls racing to a
    /// disconnected server share one connect.
    gate: tokio::sync::Mutex<()>,
    /// Everything that changes while the server runs, as one value; never
    /// held across an await.
    runtime: Mutex<Runtime>,
    /// The OAuth flow, for servers configured with OAuth.
    #[cfg(feature = "oauth")]
    oauth: crate::oauth::OAuthFlow,
}

impl Server {
    fn new(config: McpServerConfig) -> Self {
        Self {
            config,
            gate: tokio::sync::Mutex::new(()),
            runtime: Mutex::new(Runtime::new()),
            #[cfg(feature = "oauth")]
            oauth: crate::oauth::OAuthFlow::default(),
        }
    }

    /// The server's runtime state, locked (briefly: never across an
    /// await).
    fn state(&self) -> MutexGuard<'_, Runtime> {
        self.runtime.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl McpServerManager {
    /// A manager with no servers.
    pub fn new() -> Self {
        Self {
            inner: Arc::new_cyclic(|weak| Inner {
                weak: weak.clone(),
                servers: Mutex::new(Vec::new()),
                catalog: Mutex::new(CatalogState::new()),
                pending_auth: Mutex::new(Vec::new()),
                responder: Mutex::new(None),
                elicitation: Mutex::new(None),
                roots: Arc::default(),
                sampling: Mutex::new(None),
                events: tokio::sync::broadcast::channel(crate::events::EVENT_BUFFER).0,
                resource_tools: Default::default(),
                elicit_in_calls: Default::default(),
            }),
        }
    }

    /// Another handle on the manager behind `inner`.
    pub(crate) fn from_inner(inner: Arc<Inner>) -> Self {
        Self { inner }
    }

    /// Offers each server's resources and prompts to the model as tools
    /// (`mcp_<server>_read_resource`, `mcp_<server>_get_prompt`, listing
    /// what the server offers in their descriptions), or stops offering
    /// them. Off by default: MCP meant resources and prompts for the host.
    /// The catalog changes at once for servers already connected.
    pub fn set_resource_tools(&self, on: bool) {
        self.inner
            .resource_tools
            .store(on, std::sync::atomic::Ordering::Relaxed);
        self.inner.rebuild_catalog();
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
        servers.push(Arc::new(Server::new(config)));
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
        Ok(self.inner.status(&server))
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
        let gate = server.gate.lock().await;
        let connection = server.state().enter(Phase::Closed);
        if let Some(connection) = connection {
            tracing::info!(server = name, "disconnecting MCP server");
            connection.close().await;
        }
        {
            let mut state = server.state();
            state.offered = Default::default();
            state.subscriptions.clear();
        }
        drop(gate);
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
            .retain(|request| request.provider != name);
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

    /// What servers tell the host from now on: updates of subscribed
    /// resources, changed resource and prompt lists, log messages. Each
    /// call gives an independent stream.
    pub fn events(&self) -> McpEvents {
        McpEvents {
            receiver: self.inner.events.subscribe(),
        }
    }

    /// What the manager knows about a server.
    pub fn status(&self, name: &str) -> Result<ServerStatus, McpError> {
        let server = self.inner.server(name)?;
        Ok(self.inner.status(&server))
    }

    /// The resources a server offered when it was last connected.
    pub fn resources(&self, name: &str) -> Result<Vec<McpResource>, McpError> {
        let server = self.inner.server(name)?;
        let resources = server.state().offered.resources.clone();
        Ok(resources)
    }

    /// The prompts a server offered when it was last connected.
    pub fn prompts(&self, name: &str) -> Result<Vec<McpPrompt>, McpError> {
        let server = self.inner.server(name)?;
        let prompts = server.state().offered.prompts.clone();
        Ok(prompts)
    }

    /// The last lines a stdio server wrote to stderr (empty for HTTP
    /// servers and servers not connected).
    pub fn stderr_tail(&self, name: &str) -> Result<Vec<String>, McpError> {
        let server = self.inner.server(name)?;
        let live = server.state().connection().cloned();
        Ok(live.map(|c| c.stderr_tail()).unwrap_or_default())
    }

    /// Calls a server's tool by its own name (not the exposed
    /// `mcp_<server>_<tool>` name), outside any agent loop. The same path
    /// the source's tools take: deadline, cancellation, reconnect, auth.
    ///
    /// The context needs no more than a call id, plus a cancellation when
    /// the host wants to be able to stop the call. Interrupting it, or
    /// simply dropping the returned future, sends the server
    /// `notifications/cancelled`.
    ///
    /// Here against the MCP reference server, installed by `cargo xtask
    /// fixtures`:
    ///
    /// ```
    /// use agentkit_core::CancellationController;
    /// use agentkit_mcp::{McpServerConfig, McpServerManager};
    /// use agentkit_tools_core::ToolContext;
    /// use serde_json::json;
    ///
    /// # let entry = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    /// # assert!(std::path::Path::new(entry).is_file(), "{entry} is missing: run `cargo xtask fixtures` first");
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let manager = McpServerManager::new();
    /// manager.register(McpServerConfig::stdio("everything", "node").arg(entry).arg("stdio"))?;
    /// let stop = CancellationController::new();
    /// let ctx = ToolContext::new("call-1").with_cancellation(stop.handle().checkpoint());
    /// // Elsewhere: `stop.interrupt()` ends the call and cancels it on the server.
    /// let result = manager
    ///     .call_tool("everything", "echo", json!({ "message": "hi" }), ctx)
    ///     .await?;
    /// assert_eq!(result.output.to_text(), "Echo: hi");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
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

    /// Answers an auth request. Resolving answers every pending request of
    /// the same server.
    ///
    /// Provided credentials are stored for the request's server, the
    /// session opened with the old ones (if any) is closed, and the server
    /// is connected with the new ones right away, so its tools join the
    /// catalog (the loop reports `ToolCatalogChanged` at its next model
    /// call) even if it never connected before. The connect's failure is
    /// returned (the credentials are kept either way): a wrong token comes
    /// back as a fresh [`McpError::AuthRequired`].
    ///
    /// A refusal makes calls to the server fail until credentials are
    /// given.
    ///
    /// ```no_run
    /// use agentkit_mcp::{AuthResolution, McpCredentials, McpError, McpServerConfig, McpServerManager};
    ///
    /// # async fn run() -> Result<(), McpError> {
    /// let manager = McpServerManager::new();
    /// manager.register(McpServerConfig::http("remote", "https://example.com/mcp"))?;
    /// if let Err(McpError::AuthRequired(request)) = manager.connect("remote").await {
    ///     // The server is registered and waits: `status("remote")?.state`
    ///     // is `ServerState::NeedsAuth(request)` until the host answers.
    ///     let token = "..."; // from a login page, a secret store, a person
    ///     manager
    ///         .resolve_auth(AuthResolution::provided(*request, McpCredentials::bearer(token)))
    ///         .await?;
    ///     // Connected now; its tools are in `manager.snapshot()`.
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn resolve_auth(&self, resolution: AuthResolution) -> Result<(), McpError> {
        let request = resolution.request();
        let known = self
            .inner
            .pending_auth
            .lock()
            .expect("pending auth lock")
            .iter()
            .any(|pending| pending.id == request.id);
        if !known {
            return Err(McpError::UnknownAuthRequest(request.id.clone()));
        }
        let server = self.inner.server(&request.provider)?;
        let provided = matches!(resolution, AuthResolution::Provided { .. });
        self.inner.apply_resolution(&server, resolution).await?;
        if provided {
            self.inner
                .connection(&server, AuthOperation::Connect)
                .await?;
        }
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

    /// Auth requests waiting for [`resolve_auth`](Self::resolve_auth),
    /// oldest first. Only the latest 16 of each server are kept: a model
    /// retrying a call must not grow this list without bound.
    pub fn pending_auth(&self) -> Vec<AuthRequest> {
        self.inner
            .pending_auth
            .lock()
            .expect("pending auth lock")
            .clone()
    }

    /// Sets who answers servers' `elicitation/create` requests (form and
    /// URL modes). Set it before servers connect: the capability is
    /// announced in the handshake, so servers connected earlier keep
    /// seeing a client without it (and their requests are declined).
    /// Form answers get the schema's defaults and are checked against it
    /// before they are sent (see [`complete_form`](crate::complete_form)).
    pub fn set_elicitation_handler(&self, handler: Arc<dyn ElicitationHandler>) {
        *self.inner.elicitation.lock().expect("elicitation lock") = Some(handler);
    }

    /// Routes a server's `elicitation/create` to the tool call of that
    /// server it belongs to, when the call can ask its host: inside the
    /// agent loop the question pauses that call alone as a
    /// `LoopInterrupt::Question` and the host's answer resumes it (see the
    /// `elicitation` rules in the crate docs for how a request is tied to
    /// a call). Requests that belong to no such call go to the
    /// [handler](Self::set_elicitation_handler), or are declined. Like the
    /// handler, set it before servers connect: it turns on the capability.
    ///
    /// ```
    /// use agentkit_mcp::McpServerManager;
    ///
    /// let manager = McpServerManager::new();
    /// manager.route_elicitation_to_calls(true);
    /// ```
    pub fn route_elicitation_to_calls(&self, on: bool) {
        self.inner
            .elicit_in_calls
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Sets the roots offered to servers (a coding agent's workspace), and
    /// tells the connected servers they changed
    /// (`notifications/roots/list_changed`). Set them before servers
    /// connect: the `roots` capability is announced in the handshake, so
    /// servers connected before roots were first set see a client without
    /// it until they reconnect.
    ///
    /// ```
    /// use agentkit_mcp::{McpRoot, McpServerManager};
    ///
    /// # async fn run() {
    /// let manager = McpServerManager::new();
    /// manager
    ///     .set_roots(vec![McpRoot::directory("/home/ada/project").name("project")])
    ///     .await;
    /// # }
    /// ```
    pub async fn set_roots(&self, roots: Vec<crate::McpRoot>) {
        if !self.inner.roots.set(roots) {
            return;
        }
        let live: Vec<_> = self
            .inner
            .servers
            .lock()
            .expect("servers lock")
            .iter()
            .filter_map(|server| {
                let connection = server.state().connection()?.clone();
                Some((server.config.name.clone(), connection))
            })
            .collect();
        for (name, connection) in live {
            crate::roots::notify_changed(&name, connection).await;
        }
    }

    /// Sets who answers servers' `sampling/createMessage` requests (the
    /// host's model, after the host's approval; see [`SamplingHandler`]).
    /// Without one, sampling is not announced and servers' requests are
    /// refused. Like elicitation, set it before servers connect.
    pub fn set_sampling_handler(&self, handler: Arc<dyn SamplingHandler>) {
        *self.inner.sampling.lock().expect("sampling lock") = Some(handler);
    }

    /// Registers a responder asked whenever any server wants credentials
    /// and has no responder of its own (see
    /// [`set_server_auth_responder`](Self::set_server_auth_responder)).
    ///
    /// A responder is a credentials provider: on a `401` or `403` (at
    /// connect or in the middle of a call) it is asked once, and the
    /// connect or call is retried once with what it returns, so a token it
    /// refreshed is picked up without any error reaching the model. Only
    /// when it has no answer, refuses, or its credentials fail too does the
    /// request surface as `AuthRequired` for the host. It is asked while
    /// the server's connect is in progress, so it must answer by returning
    /// a resolution, not by calling back into the manager.
    pub fn set_auth_responder(&self, responder: Arc<dyn McpAuthResponder>) {
        *self.inner.responder.lock().expect("responder lock") = Some(responder);
    }

    /// Registers a responder for one server, asked instead of the
    /// manager-wide one (same rules as
    /// [`set_auth_responder`](Self::set_auth_responder)): each server can
    /// have its own token source.
    pub fn set_server_auth_responder(
        &self,
        name: &str,
        responder: Arc<dyn McpAuthResponder>,
    ) -> Result<(), McpError> {
        let server = self.inner.server(name)?;
        server.state().responder = Some(responder);
        Ok(())
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

impl Inner {
    fn status(&self, server: &Server) -> ServerStatus {
        let pending = self.pending_auth.lock().expect("pending auth lock").clone();
        status::status_of(server, &pending)
    }

    fn server(&self, name: &str) -> Result<Arc<Server>, McpError> {
        self.servers
            .lock()
            .expect("servers lock")
            .iter()
            .find(|s| s.config.name == name)
            .cloned()
            .ok_or_else(|| McpError::UnknownServer(name.to_owned()))
    }

    /// What new connections answer servers' requests with.
    pub(crate) fn hooks(&self) -> crate::connection::Hooks {
        crate::connection::Hooks {
            elicitation: self.elicitation.lock().expect("elicitation lock").clone(),
            roots: self.roots.clone(),
            sampling: self.sampling.lock().expect("sampling lock").clone(),
            events: Some(self.events.clone()),
            elicit_in_calls: self
                .elicit_in_calls
                .load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    pub(crate) fn snapshot(&self) -> CatalogSnapshot {
        self.catalog.lock().expect("catalog lock").snapshot()
    }

    fn rebuild_catalog(&self) {
        // The catalog lock is taken first and held while the lists are
        // read, so two rebuilds racing (a refresh and a connect) cannot
        // publish an older view after a newer one.
        let mut catalog = self.catalog.lock().expect("catalog lock");
        let offer_host_tools = self
            .resource_tools
            .load(std::sync::atomic::Ordering::Relaxed);
        let lists: Vec<(String, Vec<RemoteTool>)> = self
            .servers
            .lock()
            .expect("servers lock")
            .iter()
            .map(|s| {
                let state = s.state();
                let mut tools = state.offered.tools.clone();
                if offer_host_tools {
                    tools.extend(crate::resource_tools::host_tools(
                        &s.config.name,
                        &state.offered.resources,
                        &state.offered.prompts,
                    ));
                }
                (s.config.name.clone(), tools)
            })
            .collect();
        catalog.rebuild(&lists, &self.weak);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<T: Send>(_: &T) {}
    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn the_manager_and_its_futures_can_move_between_threads() {
        assert_send_sync::<McpServerManager>();
        assert_send_sync::<McpToolSource>();
        let manager = McpServerManager::new();
        assert_send(&manager.connect("x"));
        assert_send(&manager.connect_all());
        assert_send(&manager.disconnect("x"));
        assert_send(&manager.call_tool("x", "t", Value::Null, ToolContext::detached()));
        assert_send(&manager.read_resource("x", "u"));
        assert_send(&manager.get_prompt("x", "p", Default::default()));
        assert_send(&manager.list_resources("x"));
        assert_send(&manager.list_resource_templates("x"));
        assert_send(&manager.subscribe_resource("x", "u"));
        assert_send(&manager.unsubscribe_resource("x", "u"));
        assert_send(&manager.list_prompts("x"));
        assert_send(&manager.set_credentials("x", McpCredentials::bearer("t")));
    }

    #[test]
    fn pending_auth_requests_are_bounded_per_server() {
        let manager = McpServerManager::new();
        for name in ["a", "b"] {
            manager
                .register(McpServerConfig::http(name, "http://127.0.0.1:9/mcp"))
                .unwrap();
        }
        let a = manager.inner.server("a").unwrap();
        let b = manager.inner.server("b").unwrap();
        let challenge = crate::auth::Challenge::default();
        let first_b = crate::auth::auth_request("b", AuthOperation::Connect, &challenge);
        manager.inner.auth_failure(&b, first_b.clone());
        let mut issued = Vec::new();
        for _ in 0..20 {
            let request = crate::auth::auth_request("a", AuthOperation::Connect, &challenge);
            issued.push(request.id.clone());
            let err = manager.inner.auth_failure(&a, request);
            assert!(matches!(err, McpError::AuthRequired(_)));
        }
        let pending = manager.pending_auth();
        assert_eq!(pending.len(), 17, "16 of a, 1 of b");
        assert_eq!(pending[0], first_b, "other servers' requests are kept");
        let kept: Vec<&String> = pending[1..].iter().map(|r| &r.id).collect();
        assert_eq!(
            kept,
            issued[4..].iter().collect::<Vec<_>>(),
            "the newest 16"
        );
    }

    #[test]
    fn registration_rules() {
        let manager = McpServerManager::new();
        assert!(matches!(
            manager.register(McpServerConfig::stdio("", "true")),
            Err(McpError::InvalidConfig { .. })
        ));
        manager
            .register(McpServerConfig::stdio("a", "true"))
            .unwrap();
        manager
            .register(McpServerConfig::http("b", "http://127.0.0.1:9/mcp"))
            .unwrap();
        assert_eq!(manager.servers(), ["a", "b"]);
        assert_eq!(
            manager.status("c").unwrap_err(),
            McpError::UnknownServer("c".into())
        );
        let status = manager.status("a").unwrap();
        assert!(!status.connected && status.tools.is_empty());
        assert_eq!(status.state, ServerState::Disconnected);
        assert_eq!(manager.snapshot().revision, 0);
    }
}
