//! The ACP server: the connection's handlers and the live sessions.
//!
//! [`AcpServer`] answers `initialize` (protocol v1; `loadSession` when a
//! [`SessionLoader`] is set), `session/new` and `session/load` (building one
//! agent per session through the host's factory), `session/prompt` and
//! `session/cancel` (handed to the session's task, see the `session`
//! module). Slow work never runs inside the connection's dispatch loop: it is
//! spawned, so a `session/cancel` is read while a turn runs.

use crate::commands::{CommandCall, Commands, SlashCommand};
use crate::session::{Drive, Prompt, SessionHandle};
#[cfg(feature = "store")]
use crate::updates::replay_round;
use crate::updates::{KindFn, UpdateSink, prompt_item, replay};
use crate::{
    AcpError, BoxError, EditorFiles, SessionLoader, SessionModes, StoredSession, ToolKind,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Client, ConnectTo, Error};
use agentkit_core::CancellationController;
use agentkit_loop::{AgentBuilder, LoopDriver, ModelAdapter, SessionConfig};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What the host's factory is told about a session it builds an agent for.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionRequest {
    /// The session's id.
    pub session_id: String,
    /// The working directory the editor gave (absolute): the root for file
    /// tools, where to look for `AGENTS.md`.
    pub cwd: PathBuf,
    /// `true` for `session/load`: the server sets the stored transcript
    /// itself, the factory should not add starting items.
    pub loaded: bool,
    /// The MCP servers the editor wants the agent to use in this session
    /// (ACP clients send their configured servers here); connect them with
    /// `agentkit-mcp` and add them as a tool source.
    pub mcp_servers: Vec<EditorMcpServer>,
    /// The editor's files, when it announced `fs.readTextFile` or
    /// `fs.writeTextFile`: read and write through them so edits land in
    /// its buffers (check each path first; see [`EditorFiles`]). `None`:
    /// use the disk.
    pub editor_files: Option<EditorFiles>,
}

/// An MCP server the editor passes to a session.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EditorMcpServer {
    /// A server to start as a child process speaking MCP on stdio.
    Stdio {
        /// Its name in the editor's configuration.
        name: String,
        /// The program.
        command: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables, `(name, value)`.
        env: Vec<(String, String)>,
    },
    /// A server reached over streamable HTTP.
    Http {
        /// Its name in the editor's configuration.
        name: String,
        /// The endpoint.
        url: String,
        /// Extra request headers, `(name, value)`.
        headers: Vec<(String, String)>,
    },
}

impl EditorMcpServer {
    /// The stdio and HTTP servers of an ACP request; other transports
    /// (SSE, MCP over ACP) are not offered to the factory.
    fn from_acp(servers: Vec<acp::McpServer>) -> Vec<Self> {
        servers
            .into_iter()
            .filter_map(|server| match server {
                acp::McpServer::Stdio(stdio) => Some(EditorMcpServer::Stdio {
                    name: stdio.name,
                    command: stdio.command,
                    args: stdio.args,
                    env: stdio.env.into_iter().map(|v| (v.name, v.value)).collect(),
                }),
                acp::McpServer::Http(http) => Some(EditorMcpServer::Http {
                    name: http.name,
                    url: http.url,
                    headers: http
                        .headers
                        .into_iter()
                        .map(|h| (h.name, h.value))
                        .collect(),
                }),
                _ => None,
            })
            .collect()
    }
}

/// What [`AcpServer::on_session_closed`] calls.
type CloseHook = dyn Fn(&str) + Send + Sync;

type Factory<M> = dyn Fn(&SessionRequest) -> Result<AgentBuilder<M>, BoxError> + Send + Sync;

/// Serves agentkit agents to an ACP client (an editor) over one connection.
///
/// The factory returns an [`AgentBuilder`] per session, configured for its
/// working directory; the server adds its own cancellation controller and
/// update observer, and the stored transcript for loaded sessions, then
/// builds and starts it.
///
/// ```no_run
/// use agentkit_acp::AcpServer;
/// use agentkit_loop::Agent;
/// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
///
/// # async fn run() -> Result<(), agentkit_acp::AcpError> {
/// let model = ScriptedModel::new([ScriptedTurn::text("Hello from agentkit.")]);
/// AcpServer::new(move |_session| Ok(Agent::builder().model(model.clone())))
///     .agent_info("my-agent", "0.1.0")
///     .serve_stdio()
///     .await
/// # }
/// ```
pub struct AcpServer<M: ModelAdapter> {
    factory: Arc<Factory<M>>,
    loader: Option<Arc<dyn SessionLoader>>,
    #[cfg(feature = "store")]
    store: Option<crate::store::StoreConfig>,
    kinds: KindFn,
    modes: Option<SessionModes>,
    commands: Option<Commands>,
    plan_tool: Option<Arc<str>>,
    on_close: Option<Arc<CloseHook>>,
    name: String,
    version: String,
}

impl<M: ModelAdapter> AcpServer<M>
where
    LoopDriver<M::Session>: Send,
{
    /// A server whose sessions' agents come from `factory`.
    pub fn new(
        factory: impl Fn(&SessionRequest) -> Result<AgentBuilder<M>, BoxError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            factory: Arc::new(factory),
            loader: None,
            #[cfg(feature = "store")]
            store: None,
            kinds: Arc::new(ToolKind::guess),
            modes: None,
            commands: None,
            plan_tool: None,
            on_close: None,
            name: "agentkit".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }

    /// The name and version reported in `initialize`.
    pub fn agent_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// Called with a session's id once the editor closed it
    /// (`session/close`) and its agent stopped: where a host lets go of
    /// what it keeps per session (the session's directory among the MCP
    /// roots, say). Sessions ending with the connection are not reported.
    pub fn on_session_closed(mut self, hook: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_close = Some(Arc::new(hook));
        self
    }

    /// Where `session/load` finds stored sessions; also turns on the
    /// `loadSession` capability.
    pub fn session_loader(mut self, loader: impl SessionLoader) -> Self {
        self.loader = Some(Arc::new(loader));
        self
    }

    /// Keeps every session in `store` (feature `store`): new sessions are
    /// created and saved at every step, `session/load` resumes a stored
    /// one exactly where it stopped (a pending approval included) and
    /// replays its transcript. Turns on the `loadSession` capability and
    /// takes precedence over a [`SessionLoader`].
    ///
    /// One process drives a session at a time (a lease, see
    /// [`AcpServer::session_lease_ttl`]); loading a session another
    /// process holds fails.
    #[cfg(feature = "store")]
    pub fn session_store(mut self, store: Arc<dyn agentkit_store::SessionStore>) -> Self {
        let lease_ttl = self
            .store
            .as_ref()
            .map_or(agentkit_store::DEFAULT_LEASE_TTL, |config| config.lease_ttl);
        self.store = Some(crate::store::StoreConfig { store, lease_ttl });
        self
    }

    /// How long a stored session's lease lasts without renewal (default
    /// [`agentkit_store::DEFAULT_LEASE_TTL`]): after a crash, the session
    /// can be loaded elsewhere once it expired. Call after
    /// [`AcpServer::session_store`].
    #[cfg(feature = "store")]
    pub fn session_lease_ttl(mut self, ttl: std::time::Duration) -> Self {
        if let Some(config) = self.store.as_mut() {
            config.lease_ttl = ttl;
        }
        self
    }

    fn can_load(&self) -> bool {
        #[cfg(feature = "store")]
        if self.store.is_some() {
            return true;
        }
        self.loader.is_some()
    }

    /// Offers `modes` in every session (`session/new` and `session/load`
    /// answer with them, `session/set_mode` switches): each approval
    /// request the current mode approves is given without asking the
    /// editor.
    pub fn session_modes(mut self, modes: SessionModes) -> Self {
        self.modes = Some(modes);
        self
    }

    /// Offers `commands` in every session (an `available_commands_update`
    /// once it is open) and runs a prompt that is one of them (`/name
    /// args`, alone) through `run` instead of the model: the text it
    /// returns is the agent's answer and the turn ends (`end_turn`); an
    /// error is the prompt's JSON-RPC error. See [`SlashCommand`].
    pub fn slash_commands(
        mut self,
        commands: Vec<SlashCommand>,
        run: impl Fn(&CommandCall) -> Result<String, BoxError> + Send + Sync + 'static,
    ) -> Self {
        self.commands = Some(Commands {
            list: commands,
            run: Arc::new(run),
        });
        self
    }

    /// Sends every call of the tool `name` as the session's `plan` (its
    /// input `{"todos": [{"content", "status", "priority"}]}`, statuses
    /// `pending`, `in_progress`, `completed`), so the editor shows the
    /// agent's todo list.
    pub fn plan_tool(mut self, name: impl Into<String>) -> Self {
        self.plan_tool = Some(Arc::from(name.into()));
        self
    }

    /// Replaces the name-based guess of each tool's ACP kind.
    pub fn tool_kinds(mut self, kinds: impl Fn(&str) -> ToolKind + Send + Sync + 'static) -> Self {
        self.kinds = Arc::new(kinds);
        self
    }

    /// Serves one editor on this process's stdin and stdout until the
    /// editor closes the connection.
    pub async fn serve_stdio(self) -> Result<(), AcpError> {
        self.serve_transport(agent_client_protocol::Stdio::new())
            .await
    }

    /// Serves one editor over a pair of byte streams (newline-delimited
    /// JSON-RPC), e.g. a socket or a child's pipes.
    pub async fn serve<W, R>(self, outgoing: W, incoming: R) -> Result<(), AcpError>
    where
        W: futures::AsyncWrite + Send + 'static,
        R: futures::AsyncRead + Send + 'static,
    {
        self.serve_transport(agent_client_protocol::ByteStreams::new(outgoing, incoming))
            .await
    }

    async fn serve_transport(
        self,
        transport: impl ConnectTo<agent_client_protocol::Agent> + 'static,
    ) -> Result<(), AcpError> {
        let state = Arc::new(State {
            server: self,
            sessions: Mutex::new(HashMap::new()),
            counter: AtomicU64::new(0),
            client_fs: Mutex::new(acp::FileSystemCapabilities::new()),
            elicitation: Mutex::new(None),
        });
        let (s1, s2, s3, s4, s5, s6, s7, s8) = (
            state.clone(),
            state.clone(),
            state.clone(),
            state.clone(),
            state.clone(),
            state.clone(),
            state.clone(),
            state.clone(),
        );
        let served = agent_client_protocol::Agent
            .v1()
            .name(state.server.name.clone())
            .on_receive_request(
                async move |request: acp::InitializeRequest, responder, _cx| {
                    responder.respond(s1.initialize(&request))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: acp::NewSessionRequest, responder, cx| {
                    let state = s2.clone();
                    cx.clone().spawn(async move {
                        let result = state.new_session(request, cx.clone()).await;
                        let opened = result.as_ref().ok().map(|r| r.session_id.clone());
                        responder.respond_with_result(result)?;
                        state.advertise_commands(opened, &cx)
                    })
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: acp::LoadSessionRequest, responder, cx| {
                    let state = s3.clone();
                    cx.clone().spawn(async move {
                        let id = request.session_id.clone();
                        let result = state.load_session(request, cx.clone()).await;
                        let opened = result.is_ok().then_some(id);
                        responder.respond_with_result(result)?;
                        state.advertise_commands(opened, &cx)
                    })
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: acp::PromptRequest, responder, cx| {
                    s4.prompt(request, responder, &cx)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: acp::SetSessionModeRequest, responder, cx| {
                    responder.respond_with_result(s6.set_mode(&request, &cx))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: acp::ListSessionsRequest, responder, cx| {
                    let state = s7.clone();
                    cx.spawn(
                        async move { responder.respond_with_result(state.list(request).await) },
                    )
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: acp::CloseSessionRequest, responder, cx| {
                    let state = s8.clone();
                    cx.spawn(async move {
                        responder.respond_with_result(state.close(&request.session_id).await)
                    })
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_notification(
                async move |notification: acp::CancelNotification, _cx| {
                    s5.cancel(&notification.session_id);
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .connect_to(transport)
            .await
            .map_err(|err| AcpError::Connection(err.to_string()));
        // The editor is gone: end every session (a stored one is saved and
        // its lease given up, so another process can load it at once).
        let sessions: Vec<SessionHandle> = state
            .sessions
            .lock()
            .expect("sessions lock")
            .drain()
            .map(|(_, handle)| handle)
            .collect();
        let closing = futures::future::join_all(sessions.into_iter().map(SessionHandle::shut_down));
        if tokio::time::timeout(SHUTDOWN_GRACE, closing).await.is_err() {
            tracing::warn!("sessions did not end within {SHUTDOWN_GRACE:?} of the connection");
        }
        served
    }
}

/// How long the sessions get to end after the connection closed.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

struct State<M: ModelAdapter> {
    server: AcpServer<M>,
    sessions: Mutex<HashMap<String, SessionHandle>>,
    counter: AtomicU64,
    /// What the editor announced in `initialize`.
    client_fs: Mutex<acp::FileSystemCapabilities>,
    /// What the editor announced it can ask its user (`initialize`'s
    /// `clientCapabilities.elicitation`): tools' questions go there.
    elicitation: Mutex<Option<acp::ElicitationCapabilities>>,
}

impl<M: ModelAdapter> State<M>
where
    LoopDriver<M::Session>: Send,
{
    fn initialize(&self, request: &acp::InitializeRequest) -> acp::InitializeResponse {
        *self.client_fs.lock().expect("client capabilities lock") =
            request.client_capabilities.fs.clone();
        *self.elicitation.lock().expect("elicitation lock") =
            request.client_capabilities.elicitation.clone();
        #[cfg_attr(not(feature = "store"), allow(unused_mut))]
        let mut sessions =
            acp::SessionCapabilities::new().close(acp::SessionCloseCapabilities::new());
        #[cfg(feature = "store")]
        if self.server.store.is_some() {
            sessions = sessions.list(acp::SessionListCapabilities::new());
        }
        let capabilities = acp::AgentCapabilities::new()
            .load_session(self.server.can_load())
            .session_capabilities(sessions)
            .prompt_capabilities(acp::PromptCapabilities::new().embedded_context(true));
        acp::InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .agent_info(acp::Implementation::new(
                self.server.name.clone(),
                self.server.version.clone(),
            ))
    }

    /// The editor's files for a session, as it announced them.
    fn editor_files(&self, session_id: &str, cx: &ConnectionTo<Client>) -> Option<EditorFiles> {
        let fs = self.client_fs.lock().expect("client capabilities lock");
        EditorFiles::offered(cx.clone(), session_id, &fs)
    }

    fn fresh_id(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        format!("agentkit-{}-{nanos:x}-{n}", std::process::id())
    }

    async fn new_session(
        &self,
        request: acp::NewSessionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<acp::NewSessionResponse, Error> {
        let session_id = self.fresh_id();
        let servers = EditorMcpServer::from_acp(request.mcp_servers);
        #[cfg(feature = "store")]
        if let Some(config) = &self.server.store {
            self.open_stored(config, &session_id, request.cwd, servers, false, cx)
                .await
                .map_err(to_rpc_error)?;
            return Ok(acp::NewSessionResponse::new(session_id).modes(self.mode_state()));
        }
        self.open(&session_id, request.cwd, servers, None, cx)
            .await
            .map_err(to_rpc_error)?;
        Ok(acp::NewSessionResponse::new(session_id).modes(self.mode_state()))
    }

    async fn load_session(
        &self,
        request: acp::LoadSessionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<acp::LoadSessionResponse, Error> {
        let session_id = request.session_id.0.to_string();
        #[cfg(feature = "store")]
        if let Some(config) = &self.server.store {
            let servers = EditorMcpServer::from_acp(request.mcp_servers);
            let snapshot = self
                .open_stored(config, &session_id, request.cwd, servers, true, cx.clone())
                .await
                .map_err(|err| match err {
                    AcpError::UnknownSession(id) => acp::Error::session_not_found(id).into(),
                    other => to_rpc_error(other),
                })?;
            replay(&cx, &session_id, &snapshot.transcript, &self.server.kinds)?;
            replay_round(&cx, &session_id, &snapshot.round)?;
            return Ok(acp::LoadSessionResponse::new().modes(self.mode_state()));
        }
        let Some(loader) = &self.server.loader else {
            return Err(Error::method_not_found());
        };
        let stored = loader
            .load(&session_id)
            .await
            .map_err(|source| {
                to_rpc_error(AcpError::Load {
                    session_id: session_id.clone(),
                    source,
                })
            })?
            .ok_or_else(|| Error::from(acp::Error::session_not_found(session_id.clone())))?;
        replay(&cx, &session_id, stored.transcript(), &self.server.kinds)?;
        let servers = EditorMcpServer::from_acp(request.mcp_servers);
        self.open(&session_id, request.cwd, servers, Some(stored), cx)
            .await
            .map_err(to_rpc_error)?;
        Ok(acp::LoadSessionResponse::new().modes(self.mode_state()))
    }

    /// Answers `session/list` from the session store; without one the
    /// capability is not offered and the method is not found.
    async fn list(
        &self,
        request: acp::ListSessionsRequest,
    ) -> Result<acp::ListSessionsResponse, Error> {
        #[cfg(feature = "store")]
        if let Some(config) = &self.server.store {
            return crate::store::list(config, &request)
                .await
                .map_err(|err| match err {
                    AcpError::BadCursor(_) => Error::invalid_params().data(err.to_string()),
                    other => to_rpc_error(other),
                });
        }
        let _ = request;
        Err(Error::method_not_found())
    }

    /// The modes a new or loaded session offers, in their default.
    fn mode_state(&self) -> Option<acp::SessionModeState> {
        let modes = self.server.modes.as_ref()?;
        Some(modes.state(modes.default_mode()))
    }

    /// Handles `session/set_mode`, and tells the editor the mode changed.
    fn set_mode(
        &self,
        request: &acp::SetSessionModeRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<acp::SetSessionModeResponse, Error> {
        let sessions = self.sessions.lock().expect("sessions lock");
        let Some(session) = sessions.get(request.session_id.0.as_ref()) else {
            return Err(acp::Error::session_not_found(request.session_id.0.to_string()).into());
        };
        if !session.set_mode(&request.mode_id.0) {
            return Err(Error::invalid_params().data(format!("no mode {:?}", request.mode_id.0)));
        }
        cx.send_notification(acp::SessionNotification::new(
            request.session_id.clone(),
            acp::SessionUpdate::CurrentModeUpdate(acp::CurrentModeUpdate::new(
                request.mode_id.clone(),
            )),
        ))?;
        Ok(acp::SetSessionModeResponse::new())
    }

    /// The host's builder for a session, with the server's cancellation
    /// controller added, and its update observer (for the caller to add
    /// last).
    fn prepare(
        &self,
        request: SessionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<Prepared<M>, AcpError> {
        let builder = (self.server.factory)(&request).map_err(|source| AcpError::Setup {
            session_id: request.session_id.clone(),
            source,
        })?;
        let cancel = CancellationController::new();
        let updates = Arc::new(UpdateSink::new(
            cx.clone(),
            &request.session_id,
            self.server.kinds.clone(),
            self.server.plan_tool.clone(),
        ));
        let builder = builder.cancellation(cancel.handle());
        Ok(Prepared {
            builder,
            cancel,
            updates,
        })
    }

    /// Starts a session's task and registers it.
    fn register(
        &self,
        session_id: &str,
        driver: impl Drive,
        prepared: (CancellationController, Arc<UpdateSink>),
        cx: ConnectionTo<Client>,
    ) {
        let (cancel, updates) = prepared;
        let elicitation = self.elicitation.lock().expect("elicitation lock").clone();
        let handle = SessionHandle::spawn(
            driver,
            cancel,
            cx,
            updates,
            self.server.modes.clone(),
            elicitation,
        );
        self.sessions
            .lock()
            .expect("sessions lock")
            .insert(session_id.to_owned(), handle);
    }

    /// Builds, starts and registers a session's agent.
    async fn open(
        &self,
        session_id: &str,
        cwd: PathBuf,
        mcp_servers: Vec<EditorMcpServer>,
        stored: Option<StoredSession>,
        cx: ConnectionTo<Client>,
    ) -> Result<(), AcpError> {
        let request = SessionRequest {
            session_id: session_id.to_owned(),
            cwd,
            loaded: stored.is_some(),
            mcp_servers,
            editor_files: self.editor_files(session_id, &cx),
        };
        let Prepared {
            mut builder,
            cancel,
            updates,
        } = self.prepare(request, &cx)?;
        if let Some(StoredSession::Transcript(items)) = &stored {
            builder = builder.transcript(items.clone());
        }
        let agent = builder.observer_arc(updates.clone()).build()?;
        let config = SessionConfig::new(session_id);
        let driver = match stored {
            Some(StoredSession::Snapshot(snapshot)) => agent.resume(config, *snapshot).await?,
            _ => agent.start(config).await?,
        };
        self.register(session_id, driver, (cancel, updates), cx);
        Ok(())
    }

    /// Creates (or, `loaded`, leases) a session of the store, opens it and
    /// registers it; returns its transcript for the replay.
    #[cfg(feature = "store")]
    async fn open_stored(
        &self,
        config: &crate::store::StoreConfig,
        session_id: &str,
        cwd: PathBuf,
        mcp_servers: Vec<EditorMcpServer>,
        loaded: bool,
        cx: ConnectionTo<Client>,
    ) -> Result<agentkit_loop::LoopSnapshot, AcpError> {
        use agentkit_store::{NewSession, SessionLease, StoreError};
        let failed = |err: StoreError| match err {
            StoreError::NotFound(id) => AcpError::UnknownSession(id.to_string()),
            StoreError::Loop(err) => AcpError::Loop(err),
            other => AcpError::Load {
                session_id: session_id.to_owned(),
                source: Box::new(other),
            },
        };
        let id = agentkit_core::SessionId::new(session_id);
        if !loaded {
            config
                .store
                .create(NewSession::new().with_id(id.clone()).with_cwd(cwd.clone()))
                .await
                .map_err(failed)?;
        }
        let lease = SessionLease::acquire_with_ttl(config.store.clone(), &id, config.lease_ttl)
            .await
            .map_err(failed)?;
        let request = SessionRequest {
            session_id: session_id.to_owned(),
            cwd,
            loaded,
            mcp_servers,
            editor_files: self.editor_files(session_id, &cx),
        };
        let Prepared {
            builder,
            cancel,
            updates,
        } = self.prepare(request, &cx)?;
        let agent = crate::store::observed(&lease, builder, updates.clone()).build()?;
        let session = lease
            .open_with(&agent, SessionConfig::new(session_id))
            .await
            .map_err(failed)?;
        let snapshot = session.snapshot();
        self.register(session_id, session, (cancel, updates), cx);
        Ok(snapshot)
    }

    /// Tells the editor the commands of a session that just opened.
    fn advertise_commands(
        &self,
        opened: Option<acp::SessionId>,
        cx: &ConnectionTo<Client>,
    ) -> Result<(), Error> {
        match (opened, &self.server.commands) {
            (Some(id), Some(commands)) => {
                cx.send_notification(acp::SessionNotification::new(id, commands.update()))
            }
            _ => Ok(()),
        }
    }

    fn prompt(
        &self,
        request: acp::PromptRequest,
        responder: agent_client_protocol::v1::Responder<acp::PromptResponse>,
        cx: &ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let id = request.session_id.0.as_ref();
        let command = self.server.commands.as_ref().and_then(|commands| {
            let call = commands.parse(id, &request.prompt)?;
            Some((commands.run.clone(), call))
        });
        if let Some((run, call)) = command
            && self
                .sessions
                .lock()
                .expect("sessions lock")
                .contains_key(id)
        {
            return match run(&call) {
                Ok(answer) => {
                    cx.send_notification(acp::SessionNotification::new(
                        request.session_id.clone(),
                        acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(
                            acp::ContentBlock::Text(acp::TextContent::new(answer)),
                        )),
                    ))?;
                    responder.respond(acp::PromptResponse::new(acp::StopReason::EndTurn))
                }
                Err(err) => responder.respond_with_error(
                    Error::internal_error().data(format!("/{}: {err}", call.name)),
                ),
            };
        }
        let sessions = self.sessions.lock().expect("sessions lock");
        let Some(session) = sessions.get(request.session_id.0.as_ref()) else {
            return responder.respond_with_error(
                acp::Error::session_not_found(request.session_id.0.to_string()).into(),
            );
        };
        session.prompt(Prompt {
            item: prompt_item(&request.prompt),
            responder,
        })
    }

    /// Handles `session/close`: the running turn is cancelled, the agent
    /// stopped (a stored session saved and its lease given up), then the
    /// host is told.
    async fn close(&self, session_id: &acp::SessionId) -> Result<acp::CloseSessionResponse, Error> {
        let id = session_id.0.to_string();
        let handle = self.sessions.lock().expect("sessions lock").remove(&id);
        let Some(handle) = handle else {
            return Err(acp::Error::session_not_found(id).into());
        };
        handle.shut_down().await;
        if let Some(hook) = &self.server.on_close {
            hook(&id);
        }
        Ok(acp::CloseSessionResponse::new())
    }

    fn cancel(&self, session_id: &acp::SessionId) {
        if let Some(session) = self
            .sessions
            .lock()
            .expect("sessions lock")
            .get(session_id.0.as_ref())
        {
            session.cancel();
        }
    }
}

/// A session's agent builder before it is built.
struct Prepared<M: ModelAdapter> {
    builder: AgentBuilder<M>,
    cancel: CancellationController,
    updates: Arc<UpdateSink>,
}

fn to_rpc_error(err: AcpError) -> Error {
    Error::internal_error().data(serde_json::Value::from(err.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_mcp_servers_reach_the_factory_as_plain_data() {
        let servers = vec![
            acp::McpServer::Stdio(
                acp::McpServerStdio::new("everything", "/usr/bin/node")
                    .args(vec!["server.js".into()])
                    .env(vec![acp::EnvVariable::new("TOKEN", "t")]),
            ),
            acp::McpServer::Http(
                acp::McpServerHttp::new("remote", "http://127.0.0.1:9/mcp")
                    .headers(vec![acp::HttpHeader::new("Authorization", "Bearer x")]),
            ),
        ];
        assert_eq!(
            EditorMcpServer::from_acp(servers),
            [
                EditorMcpServer::Stdio {
                    name: "everything".into(),
                    command: "/usr/bin/node".into(),
                    args: vec!["server.js".into()],
                    env: vec![("TOKEN".into(), "t".into())],
                },
                EditorMcpServer::Http {
                    name: "remote".into(),
                    url: "http://127.0.0.1:9/mcp".into(),
                    headers: vec![("Authorization".into(), "Bearer x".into())],
                },
            ]
        );
    }
}
