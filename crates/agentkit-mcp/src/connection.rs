//! One live session with one server: open it, call tools on it, close it.
//!
//! A [`Connection`] is created whole (transport up, initialize done, tools,
//! resources and prompts discovered) or not at all, within the server's
//! connect timeout. It is shared by concurrent calls behind an `Arc` and
//! never repaired in place: when it dies, the manager replaces it with a
//! fresh one. Calls race the server's answer against their deadline and the
//! turn's cancellation, and whichever of those fires first sends MCP
//! `notifications/cancelled`, so the server can stop working on an answer
//! nobody will read. A guard on the call sends it too when the call's
//! future is dropped before the answer came (a caller's timeout, an
//! aborted task).

use crate::auth::{Challenge, McpCredentials};
use crate::config::{McpServerConfig, McpTransport};
use crate::discovery::{Discovery, discover};
use crate::elicitation::{self, ElicitationHandler};
use crate::error::McpError;
use crate::events::McpServerEvent;
use crate::framing::{Garbled, StdioLines, next_violation};
use crate::http::{http_config, init_challenge, service_challenge};
use crate::notices::{InOrder, Notices};
use crate::process::{self, ServerProcess};
use crate::progress::ProgressRoutes;
use agentkit_tools_core::ToolContext;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, ElicitRequestParams, ElicitResult, ElicitationCapability,
    FormElicitationCapability, GetPromptRequestParams, GetPromptResponse, Implementation,
    ReadResourceRequestParams, RequestId, ServerResult, UrlElicitationCapability,
};
use rmcp::service::{Peer, RequestContext, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, serve_client};
use serde_json::Value;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// How long a cancellation notice or a graceful close may take before we
/// stop being polite.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(2);

/// The key rmcp puts in the data of the error it answers a call with when
/// the call's stream closed before the answer.
const TRANSPORT_CLOSED_MARKER: &str = "io.modelcontextprotocol/transportClosed";

static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

/// Answers the server's requests to the client (sampling, elicitation,
/// roots). Its notifications are handled where the transport reads them,
/// in the order the server sent them (`notices::InOrder`): rmcp would run
/// each on a task of its own.
#[derive(Clone)]
struct Handler {
    server: String,
    hooks: Hooks,
    askers: std::sync::Arc<crate::asking::CallAskers>,
}

/// What the host set on the manager for servers' requests to the client,
/// fixed for a connection's life (its capabilities are announced once).
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    pub(crate) elicitation: Option<std::sync::Arc<dyn ElicitationHandler>>,
    /// The host's roots (see `roots.rs`).
    pub(crate) roots: std::sync::Arc<crate::roots::Roots>,
    pub(crate) sampling: Option<std::sync::Arc<dyn crate::sampling::SamplingHandler>>,
    /// Elicitation goes to the tool call that caused it, when it can ask.
    pub(crate) elicit_in_calls: bool,
    /// Where notifications for the host go (resource updates, list
    /// changes, log messages).
    pub(crate) events: Option<tokio::sync::broadcast::Sender<McpServerEvent>>,
}

impl ClientHandler for Handler {
    // Deprecated in rmcp (SEP-2577); see `sampling.rs`.
    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        crate::sampling::answer(&self.server, self.hooks.sampling.as_deref(), params).await
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let params = serde_json::to_value(&request).unwrap_or(Value::Null);
        let token = context
            .meta
            .get_progress_token()
            .map(|token| token.0.to_string());
        let caller = if self.hooks.elicit_in_calls {
            self.askers.find(token.as_deref())
        } else {
            None
        };
        let answer = match (
            caller,
            &self.hooks.elicitation,
            elicitation::request_from(&self.server, &params),
        ) {
            (Some((call_id, sink, open)), _, Some(request)) => {
                tracing::debug!(server = %self.server, %call_id, "elicitation/create for a call in flight");
                // The call's deadline stops while the user answers.
                let _asking = crate::asking::Asking::new(open);
                let answer = sink
                    .ask(call_id, elicitation::question_from(&request))
                    .await;
                elicitation::result_for(&request, elicitation::response_from(answer))
            }
            (None, Some(handler), Some(request)) => {
                tracing::debug!(server = %self.server, "elicitation/create");
                let response = handler.elicit(request.clone()).await;
                elicitation::result_for(&request, response)
            }
            _ => serde_json::json!({ "action": "decline" }),
        };
        serde_json::from_value(answer)
            .map_err(|err| rmcp::ErrorData::internal_error(err.to_string(), None))
    }

    #[allow(deprecated)] // roots: see roots.rs
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        self.hooks.roots.list_result()
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.roots = self.hooks.roots.capability();
        if self.hooks.elicitation.is_some() || self.hooks.elicit_in_calls {
            capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::new().with_schema_validation(true))
                    .with_url(UrlElicitationCapability::new()),
            );
        }
        if self.hooks.sampling.is_some() {
            capabilities.sampling = Some(Default::default());
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("agentkit-mcp", env!("CARGO_PKG_VERSION")),
        )
        // rmcp's `LATEST` is a revision without the handshake; inside an
        // `initialize` request only revisions that have it make sense.
        .with_protocol_version(crate::protocol::announced())
    }
}

/// A live session.
pub(crate) struct Connection {
    pub(crate) id: u64,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    peer: Peer<RoleClient>,
    process: Option<ServerProcess>,
    pub(crate) discovery: Discovery,
    /// Signalled by every `notifications/tools/list_changed`.
    pub(crate) tools_changed: std::sync::Arc<Notify>,
    /// The server's name, version and negotiated protocol, as MCP JSON.
    pub(crate) server_info: Value,
    /// Lines the server wrote that were not JSON-RPC (stdio only).
    garbled: std::sync::Arc<Garbled>,
    /// Progress sinks of the calls in flight.
    progress: std::sync::Arc<ProgressRoutes>,
    /// The calls in flight that can ask their host.
    askers: std::sync::Arc<crate::asking::CallAskers>,
}

/// Why a call produced no result.
#[derive(Debug)]
pub(crate) enum CallError {
    /// The session was already closed; the request never left.
    NotSent(String),
    /// The session closed while the call was in flight; the server may or
    /// may not have run it.
    Lost,
    /// The deadline passed; cancellation was sent.
    Timeout(Duration),
    /// The turn was cancelled; cancellation was sent.
    Cancelled,
    /// The server wants credentials.
    Auth(Challenge),
    /// The transport failed to carry the request (connection refused,
    /// reset, session gone); the session is not to be trusted any more.
    Broken(String),
    /// The server answered with a JSON-RPC error.
    Rejected {
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
    },
    /// Anything else that broke the exchange.
    Protocol(String),
}

/// In plain words, for the host's own requests (resources, prompts).
impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::NotSent(why) => write!(f, "the request could not be sent: {why}"),
            CallError::Lost => f.write_str("the session closed before the answer came"),
            CallError::Timeout(after) => write!(f, "no answer within {after:?}"),
            CallError::Cancelled => f.write_str("cancelled"),
            CallError::Auth(_) => f.write_str("the server wants credentials"),
            CallError::Broken(why) => write!(f, "the connection broke: {why}"),
            CallError::Rejected { message, .. } => write!(f, "the server refused: {message}"),
            CallError::Protocol(message) => f.write_str(message),
        }
    }
}

impl Connection {
    /// Connects and discovers, all within `config.connect_timeout`.
    pub(crate) async fn open(
        config: &McpServerConfig,
        credentials: Option<&McpCredentials>,
        hooks: Hooks,
    ) -> Result<Connection, McpError> {
        let server = config.name.as_str();
        let started_at = tokio::time::Instant::now();
        let tools_changed = std::sync::Arc::new(Notify::new());
        let progress = std::sync::Arc::new(ProgressRoutes::default());
        let askers = std::sync::Arc::new(crate::asking::CallAskers::default());
        let notices = Notices {
            server: server.to_owned(),
            progress: progress.clone(),
            events: hooks.events.clone(),
            tools_changed: tools_changed.clone(),
        };
        let handler = Handler {
            server: server.to_owned(),
            hooks,
            askers: askers.clone(),
        };
        let garbled = std::sync::Arc::new(Garbled::default());
        let timed_out = || McpError::ConnectTimeout {
            server: server.to_owned(),
            after: config.connect_timeout,
        };
        let (service, process) = match &config.transport {
            McpTransport::Stdio(stdio) => {
                let spawned = process::spawn(server, stdio).map_err(|err| McpError::Spawn {
                    server: server.to_owned(),
                    message: format!("{}: {}", stdio.command, crate::plain::describe(&err)),
                })?;
                let process = spawned.process;
                let started = tokio::time::timeout(
                    config.connect_timeout,
                    serve_client(
                        handler,
                        InOrder::new(
                            StdioLines::new(spawned.stdout, spawned.stdin, garbled.clone()),
                            notices,
                        ),
                    ),
                )
                .await;
                // On every failure `process` is dropped here, which ends
                // the whole process group.
                match started {
                    Err(_) => return Err(timed_out()),
                    Ok(Err(err)) => {
                        process.stderr.settle(Duration::from_millis(500)).await;
                        return Err(McpError::Connect {
                            server: server.to_owned(),
                            message: format!(
                                "{}{}",
                                crate::plain::describe(&err),
                                process.stderr.describe()
                            ),
                        });
                    }
                    Ok(Ok(service)) => (service, Some(process)),
                }
            }
            McpTransport::Http(http) => {
                agentkit_http::install_tls_provider();
                let transport = InOrder::new(
                    StreamableHttpClientTransport::from_config(http_config(
                        server,
                        http,
                        credentials,
                    )?),
                    notices,
                );
                let started =
                    tokio::time::timeout(config.connect_timeout, serve_client(handler, transport))
                        .await;
                match started {
                    Err(_) => return Err(timed_out()),
                    Ok(Err(err)) => {
                        return Err(match init_challenge(&err) {
                            Some(challenge) => {
                                McpError::AuthRequired(Box::new(crate::auth::auth_request(
                                    server,
                                    crate::AuthOperation::Connect,
                                    &challenge,
                                )))
                            }
                            None => McpError::Connect {
                                server: server.to_owned(),
                                message: crate::plain::describe(&err),
                            },
                        });
                    }
                    Ok(Ok(service)) => (service, None),
                }
            }
        };
        let peer = service.peer().clone();
        if let Some(info) = peer.peer_info() {
            let version = &info.protocol_version;
            if !crate::protocol::supported(version) {
                // `service` and `process` are dropped: the session ends.
                return Err(McpError::UnsupportedProtocolVersion {
                    server: server.to_owned(),
                    version: version.to_string(),
                });
            }
        }
        let server_info = peer
            .peer_info()
            .and_then(|info| serde_json::to_value(&*info).ok())
            .unwrap_or(Value::Null);
        let connection = Connection {
            id: NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed),
            service: Mutex::new(Some(service)),
            peer,
            process,
            discovery: Discovery::default(),
            tools_changed,
            server_info,
            garbled,
            progress,
            askers,
        };
        // Whatever is left of the connect timeout covers discovery, so a
        // server that initializes but never lists its tools still fails in
        // time.
        let left = config.connect_timeout.saturating_sub(started_at.elapsed());
        connection
            .discover(server, left, config.connect_timeout)
            .await
    }

    /// Runs discovery on a freshly opened connection within `limit`.
    async fn discover(
        mut self,
        server: &str,
        limit: Duration,
        connect_timeout: Duration,
    ) -> Result<Connection, McpError> {
        match tokio::time::timeout(limit, discover(server, &self.peer)).await {
            Ok(Ok(discovery)) => {
                self.discovery = discovery;
                Ok(self)
            }
            Ok(Err(err)) => Err(self.failure(server, err, crate::AuthOperation::Connect)),
            Err(_) => Err(McpError::ConnectTimeout {
                server: server.to_owned(),
                after: connect_timeout,
            }),
        }
    }

    fn failure(
        &self,
        server: &str,
        err: ServiceError,
        operation: crate::AuthOperation,
    ) -> McpError {
        if let Some(challenge) = service_challenge(&err) {
            return McpError::AuthRequired(Box::new(crate::auth::auth_request(
                server, operation, &challenge,
            )));
        }
        let tail = self
            .process
            .as_ref()
            .map(|p| p.stderr.describe())
            .unwrap_or_default();
        McpError::Protocol {
            server: server.to_owned(),
            message: format!("{}{tail}", crate::plain::describe(&err)),
        }
    }

    /// The peer, for requests made outside a call (refreshes).
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    /// `true` when the session can no longer carry requests.
    pub(crate) fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
            || self.process.as_ref().is_some_and(ServerProcess::has_exited)
    }

    /// The server process's id, for stdio servers.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.process.as_ref().and_then(ServerProcess::pid)
    }

    /// The last lines the server wrote to stderr.
    pub(crate) fn stderr_tail(&self) -> Vec<String> {
        self.process
            .as_ref()
            .map(|p| p.stderr.lines())
            .unwrap_or_default()
    }

    /// Calls `tool`, racing the answer against `deadline` and `cancel`.
    pub(crate) async fn call_tool(
        &self,
        tool: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        deadline: Duration,
        ctx: &ToolContext,
    ) -> Result<Value, CallError> {
        let cancel = &ctx.cancellation;
        if self.is_closed() {
            return Err(CallError::NotSent("the session is closed".into()));
        }
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // Subscribed before sending: a broken line from now on may be the
        // answer this call waits for.
        let mut garbled = self.garbled.subscribe();
        // A call that can ask its host is where the server's elicitation
        // for it goes (see `asking.rs`): listed before the request is
        // sent, since the server may ask before `send` returns.
        let asker = ctx.questions.can_ask().then(|| {
            self.askers
                .enter(ctx.call_id.clone(), ctx.questions.clone())
        });
        // No rmcp timeout: the deadline below also covers the turn's
        // cancellation, and both send the cancellation notice themselves.
        let handle = match self
            .peer
            .send_request_with_option(request, Default::default())
            .await
        {
            Ok(handle) => handle,
            Err(ServiceError::TransportClosed) => {
                return Err(CallError::NotSent("the session is closed".into()));
            }
            Err(err) => return Err(classify(err)),
        };
        // rmcp gives every request a progress token; the server's notices
        // for it go to the call's sink until the call ends, including
        // those that beat this registration (see `ProgressRoutes`).
        let token = handle.progress_token.0.to_string();
        if let Some(asker) = &asker {
            asker.sent_as(token.clone());
        }
        let _route = self.progress.route(token, &ctx.progress);
        // From here on the request is the server's business: whatever ends
        // this future early (deadline, cancellation, or a caller dropping
        // it: a task manager's timeout, an aborted task, a dropped `next()`)
        // tells the server to stop, through the guard.
        let mut in_flight = InFlight {
            peer: self.peer.clone(),
            request_id: Some(handle.id.clone()),
        };
        let answer = tokio::select! {
            answer = handle.await_response() => answer,
            () = crate::asking::deadline_outside_questions(
                deadline,
                asker.as_ref().map(|asker| asker.open_questions()),
            ) => {
                in_flight.cancel(format!("deadline of {deadline:?} passed")).await;
                return Err(CallError::Timeout(deadline));
            }
            _ = cancel.cancelled() => {
                in_flight.cancel("the turn was cancelled".into()).await;
                return Err(CallError::Cancelled);
            }
            what = next_violation(&mut garbled) => {
                in_flight.cancel(what.clone()).await;
                return Err(CallError::Protocol(what));
            }
        };
        in_flight.disarm();
        match answer {
            Ok(ServerResult::CallToolResult(result)) => serde_json::to_value(&result)
                .map_err(|err| CallError::Protocol(crate::plain::describe(&err))),
            Ok(other) => Err(CallError::Protocol(format!(
                "expected a tools/call result, got {}",
                serde_json::to_value(&other)
                    .map(|v| v.to_string())
                    .unwrap_or_else(|_| "something else".into())
            ))),
            Err(ServiceError::TransportClosed) => Err(CallError::Lost),
            Err(err) => Err(classify(err)),
        }
    }

    /// Runs a host request within `limit`, ending it early (as a timeout
    /// would) when the server writes a line that is not JSON-RPC.
    async fn guarded<T>(
        &self,
        limit: Duration,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<Result<T, ServiceError>, CallError> {
        let mut garbled = self.garbled.subscribe();
        tokio::select! {
            answer = tokio::time::timeout(limit, request) => {
                answer.map_err(|_| CallError::Timeout(limit))
            }
            what = next_violation(&mut garbled) => Err(CallError::Protocol(what)),
        }
    }

    /// A host request (`request` made on [`peer`](Self::peer)) within
    /// `limit`, its answer as MCP JSON.
    pub(crate) async fn host_request<T: serde::Serialize>(
        &self,
        limit: Duration,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<Value, CallError> {
        if self.is_closed() {
            return Err(CallError::NotSent("the session is closed".into()));
        }
        match self.guarded(limit, request).await {
            Err(err) => Err(err),
            Ok(Err(ServiceError::TransportClosed)) => Err(CallError::Lost),
            Ok(Err(err)) => Err(classify(err)),
            Ok(Ok(result)) => serde_json::to_value(&result)
                .map_err(|err| CallError::Protocol(crate::plain::describe(&err))),
        }
    }

    /// `true` when the server announced `capability` (`resources`,
    /// `prompts`, ...) in the handshake; `sub` names a flag inside it
    /// (`subscribe`), `None` asks only for the capability.
    pub(crate) fn offers(&self, capability: &str, sub: Option<&str>) -> bool {
        let capabilities = self
            .peer
            .peer_info()
            .and_then(|info| serde_json::to_value(&info.capabilities).ok())
            .unwrap_or(Value::Null);
        let offered = capabilities.get(capability).filter(|v| !v.is_null());
        match sub {
            None => offered.is_some(),
            Some(flag) => offered
                .and_then(|v| v.get(flag))
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }

    /// `resources/read`, within `limit`, as MCP JSON.
    pub(crate) async fn read_resource(
        &self,
        uri: &str,
        limit: Duration,
    ) -> Result<Value, CallError> {
        let params = ReadResourceRequestParams::new(uri);
        self.host_request(limit, self.peer.read_resource(params))
            .await
    }

    /// `prompts/get`, within `limit`, as MCP JSON.
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        limit: Duration,
    ) -> Result<Value, CallError> {
        let mut params = GetPromptRequestParams::new(name);
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        match self.guarded(limit, self.peer.get_prompt_once(params)).await {
            Err(err) => Err(err),
            Ok(Err(err)) => Err(classify(err)),
            Ok(Ok(GetPromptResponse::Complete(result))) => serde_json::to_value(&result)
                .map_err(|err| CallError::Protocol(crate::plain::describe(&err))),
            Ok(Ok(_)) => Err(CallError::Protocol(
                "the server asked for more input before answering; not supported".into(),
            )),
        }
    }

    /// Ends the session: closes the transport politely, then makes sure a
    /// child process (and its group) is gone. Bounded even when the server
    /// ignores us.
    pub(crate) async fn close(&self) {
        tracing::debug!(
            connection = self.id,
            pid = self.pid(),
            "closing MCP session"
        );
        let service = self.service.lock().expect("service lock").take();
        if let Some(mut service) = service {
            let _ = service.close_with_timeout(CONTROL_TIMEOUT).await;
        }
        if let Some(process) = &self.process {
            process.shutdown(Duration::from_millis(500)).await;
        }
    }
}

/// A tool call the server is working on. Dropped while armed (the caller
/// gave up on the answer without saying so), it sends
/// `notifications/cancelled` from a task of its own, since `Drop` cannot
/// wait; the caller's timeout or abort then costs the server no more work.
struct InFlight {
    peer: Peer<RoleClient>,
    /// `None` once the call is answered or its cancellation was sent.
    request_id: Option<RequestId>,
}

impl InFlight {
    /// The call got its answer: nothing to cancel any more.
    fn disarm(&mut self) {
        self.request_id = None;
    }

    /// Sends the cancellation now and waits (boundedly) until it left.
    async fn cancel(&mut self, reason: String) {
        if let Some(request_id) = self.request_id.take() {
            send_cancel(&self.peer, request_id, reason).await;
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let Some(request_id) = self.request_id.take() else {
            return;
        };
        // Without a runtime (the whole runtime is shutting down) there is
        // no transport left to carry the notice either.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            send_cancel(&peer, request_id, "the caller stopped waiting".into()).await;
        });
    }
}

async fn send_cancel(peer: &Peer<RoleClient>, request_id: RequestId, reason: String) {
    tracing::debug!(%request_id, %reason, "sending notifications/cancelled");
    let notice = peer.notify_cancelled(CancelledNotificationParam::new(
        Some(request_id),
        Some(reason),
    ));
    match tokio::time::timeout(CONTROL_TIMEOUT, notice).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => tracing::debug!(%err, "could not send notifications/cancelled"),
        Err(_) => tracing::debug!("sending notifications/cancelled timed out"),
    }
}

fn classify(err: ServiceError) -> CallError {
    if let Some(challenge) = service_challenge(&err) {
        return CallError::Auth(challenge);
    }
    match err {
        // rmcp answers a call whose response stream broke for good with
        // an error of its own making, marked as such: the session is gone,
        // the server did not reject anything.
        ServiceError::McpError(data)
            if data
                .data
                .as_ref()
                .and_then(|d| d.get(TRANSPORT_CLOSED_MARKER))
                .is_some() =>
        {
            tracing::debug!(message = %data.message, "response stream closed for good");
            CallError::Lost
        }
        ServiceError::McpError(data) => CallError::Rejected {
            code: data.code.0,
            message: data.message.into_owned(),
        },
        ServiceError::TransportClosed => CallError::Lost,
        ServiceError::TransportSend(error) => CallError::Broken(crate::plain::describe(&error)),
        other => CallError::Protocol(crate::plain::describe(&other)),
    }
}
