//! The server: its builder, the sessions it hosts, and its HTTP routes.
//!
//! | route | what |
//! | --- | --- |
//! | `GET /` | the chat page (no token needed; it holds none) |
//! | `POST /agui` | AG-UI: a `RunAgentInput` in, the run's events out (SSE) |
//! | `GET /sessions` | the tenant's sessions |
//! | `GET /sessions/{thread}` | one session: messages, pending approvals, queued messages |
//! | `GET /sessions/{thread}/events` | every event of the session (SSE); `Last-Event-ID` resumes |
//! | `POST /sessions/{thread}/messages` | a message typed while the agent works (`steer`, `urgent`, `follow_up`) |
//! | `POST /sessions/{thread}/cancel` | cancels the run, or the approval wait |

use crate::host::{self, Hosted, Phase, Queued};
use crate::hub::Hub;
use crate::stream::{Filter, sse};
use crate::tenant::{Tenant, Tenants};
use crate::translate::Translator;
use crate::{ServerError, agui};
use agentkit_core::{CancellationController, Item, SessionId};
use agentkit_loop::{AgentBuilder, DeliveryMode, ModelAdapter};
use agentkit_store::{EventLog, NewSession, SessionLease, SessionStore, StoreError};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, UNIX_EPOCH};

/// What the agent factory is told about the session it builds for.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SessionContext {
    /// The tenant the session belongs to.
    pub tenant: String,
    /// The session's thread id, as the client names it.
    pub thread_id: String,
}

type Launcher =
    Arc<dyn Fn(Stores, Tenant, SessionId, Limits) -> BoxFuture<'static, Launched> + Send + Sync>;

/// How long leases last, and how long a resting session keeps its lease.
#[derive(Clone, Copy, Debug)]
struct Limits {
    lease_ttl: Duration,
    idle_release: Duration,
}

/// The store, seen as sessions and as event logs.
#[derive(Clone)]
struct Stores {
    sessions: Arc<dyn SessionStore>,
    events: Arc<dyn EventLog>,
}
type Launched = Result<Arc<Hosted>, ServerError>;

/// Builds an [`AgentServer`].
///
/// ```
/// use agentkit_loop::Agent;
/// use agentkit_server::AgentServer;
/// use agentkit_store::SqliteStore;
/// use agentkit_testkit::{ScriptedModel, ScriptedTurn};
/// use std::sync::Arc;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let model = ScriptedModel::new([ScriptedTurn::text("Hello!")]);
/// let server = AgentServer::builder()
///     .store(Arc::new(SqliteStore::open_in_memory()?))
///     .agent(move |_session| Agent::builder().model(model.clone()))
///     .tenant("token-of-acme", "acme")
///     .build()?;
/// let app: axum::Router = server.router(); // serve it with axum::serve
/// # let _ = app;
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct ServerBuilder {
    store: Option<Stores>,
    launcher: Option<Launcher>,
    tenants: Tenants,
    tenant_errors: Vec<String>,
    lease_ttl: Option<Duration>,
    idle_release: Option<Duration>,
}

/// A server that cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// [`ServerBuilder::store`] was not called.
    #[error("no session store was set")]
    NoStore,
    /// [`ServerBuilder::agent`] was not called.
    #[error("no agent was set")]
    NoAgent,
    /// No tenant was added: nobody could use the server.
    #[error("no tenant was added")]
    NoTenant,
    /// A tenant's name or token is unusable.
    #[error("bad tenant: {0}")]
    BadTenant(String),
    /// The HTTP client that forwards requests to other replicas could not
    /// be built (no TLS backend).
    #[error("cannot build the forwarding client: {0}")]
    Forwarder(String),
}

impl ServerBuilder {
    /// Where sessions and their events are kept (required): a
    /// [`SqliteStore`](agentkit_store::SqliteStore) for one replica, a
    /// `PgStore` for several on one database.
    pub fn store<S: SessionStore + EventLog>(mut self, store: Arc<S>) -> Self {
        self.store = Some(Stores {
            sessions: store.clone(),
            events: store,
        });
        self
    }

    /// The agent (required): called once per hosted session with the
    /// builder to use. The server adds what it needs (the store's
    /// recorder, its event observer, a cancellation handle) and builds it.
    pub fn agent<M, F>(mut self, factory: F) -> Self
    where
        M: ModelAdapter + 'static,
        M::Session: 'static,
        F: Fn(&SessionContext) -> AgentBuilder<M> + Send + Sync + 'static,
    {
        let factory = Arc::new(factory);
        self.launcher = Some(Arc::new(move |store, tenant, id, limits| {
            let factory = factory.clone();
            Box::pin(async move { launch(factory.as_ref(), store, tenant, id, limits).await })
        }));
        self
    }

    /// Adds a tenant whose requests carry `Authorization: Bearer <token>`.
    /// Names are plain (letters, digits, `-`, `_`, `.`).
    pub fn tenant(mut self, token: impl Into<String>, name: impl Into<String>) -> Self {
        if let Err(err) = self.tenants.add(token.into(), name.into()) {
            self.tenant_errors.push(err);
        }
        self
    }

    /// How long a session's lease lasts unrenewed (default: the store's
    /// [`DEFAULT_LEASE_TTL`](agentkit_store::DEFAULT_LEASE_TTL)). Another
    /// replica can take a session over this long after this one died.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = Some(ttl);
        self
    }

    /// How long a session resting with nothing pending keeps its lease
    /// (default 30 s). After that this replica stops hosting it, so the
    /// next request for it is served by whichever replica it reaches; its
    /// event streams end and clients reconnect with `Last-Event-ID`.
    pub fn idle_release(mut self, after: Duration) -> Self {
        self.idle_release = Some(after);
        self
    }

    /// Builds the server.
    pub fn build(self) -> Result<AgentServer, BuildError> {
        if let Some(err) = self.tenant_errors.into_iter().next() {
            return Err(BuildError::BadTenant(err));
        }
        if self.tenants.is_empty() {
            return Err(BuildError::NoTenant);
        }
        let store = self.store.ok_or(BuildError::NoStore)?;
        Ok(AgentServer {
            inner: Arc::new(Inner {
                store: store.sessions.clone(),
                stores: store,
                launcher: self.launcher.ok_or(BuildError::NoAgent)?,
                tenants: self.tenants,
                limits: Limits {
                    lease_ttl: self.lease_ttl.unwrap_or(agentkit_store::DEFAULT_LEASE_TTL),
                    idle_release: self.idle_release.unwrap_or(Duration::from_secs(30)),
                },
                hosted: tokio::sync::Mutex::new(HashMap::new()),
                opening: std::sync::Mutex::new(HashMap::new()),
                // Replicas reach each other directly, never through a proxy
                // from the environment. reqwest is built without a rustls
                // provider (no aws-lc-sys): ring is installed first.
                forwarder: {
                    agentkit_http::install_tls_provider();
                    reqwest::Client::builder()
                        .no_proxy()
                        .connect_timeout(Duration::from_secs(5))
                        .build()
                        .map_err(|err| BuildError::Forwarder(err.to_string()))?
                },
                shut_down: AtomicBool::new(false),
            }),
        })
    }
}

async fn launch<M, F>(
    factory: &F,
    stores: Stores,
    tenant: Tenant,
    id: SessionId,
    limits: Limits,
) -> Launched
where
    M: ModelAdapter + 'static,
    M::Session: 'static,
    F: Fn(&SessionContext) -> AgentBuilder<M>,
{
    let thread_id = tenant.thread_of(&id).unwrap_or_default().to_owned();
    let lease = match SessionLease::acquire_with_ttl(stores.sessions, &id, limits.lease_ttl).await {
        Ok(lease) => lease,
        Err(StoreError::Busy { owner, .. }) => {
            return Err(match crate::forward::holder_of(&owner) {
                Some(holder) => ServerError::HeldElsewhere {
                    thread: thread_id,
                    holder: holder.to_owned(),
                },
                None => ServerError::Busy(thread_id),
            });
        }
        Err(StoreError::NotFound(_)) => return Err(ServerError::NotFound(thread_id)),
        Err(err) => return Err(err.into()),
    };
    // Read after the lease is ours: no one else appends now.
    let past = stores.events.events_after(&id, 0).await?;
    let hub = Arc::new(Hub::restore(
        thread_id.clone(),
        id.clone(),
        past,
        stores.events,
    ));
    let cancel = CancellationController::new();
    let context = SessionContext {
        tenant: tenant.name().to_owned(),
        thread_id,
    };
    let agent = lease
        .record(factory(&context))
        .observer(Translator::new(hub.clone()))
        .cancellation(cancel.handle())
        .build()
        .map_err(|err| ServerError::Agent(err.to_string()))?;
    let session = lease.open(&agent).await?;
    Ok(host::spawn(
        session,
        tenant,
        hub,
        cancel,
        limits.idle_release,
    ))
}

/// Serves agents over HTTP; see the crate docs.
#[derive(Clone)]
pub struct AgentServer {
    inner: Arc<Inner>,
}

struct Inner {
    stores: Stores,
    store: Arc<dyn SessionStore>,
    launcher: Launcher,
    tenants: Tenants,
    limits: Limits,
    hosted: tokio::sync::Mutex<HashMap<SessionId, Arc<Hosted>>>,
    /// One lock per session being opened: a session is opened once, and
    /// opening one (a lease, the store's reads) never waits for another
    /// (the load test's thousand sessions started one at a time before).
    opening: std::sync::Mutex<HashMap<SessionId, Arc<tokio::sync::Mutex<()>>>>,
    /// Sends requests on to the replica that holds their session.
    forwarder: reqwest::Client,
    /// Set by [`AgentServer::shutdown`] under the `hosted` lock: a session
    /// whose opening was in flight is closed again instead of being hosted
    /// after the drain (its lease would be held until the process exits).
    shut_down: AtomicBool,
}

impl AgentServer {
    /// A builder.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// Serves the routes on `listener` until the task is dropped or
    /// the listener fails.
    pub async fn serve(&self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        axum::serve(listener, self.router()).await
    }

    /// The routes, ready for `axum::serve` (or to nest in a larger app).
    pub fn router(&self) -> Router {
        Router::new()
            .route("/", get(crate::page::page))
            .route("/agui", post(run))
            .route("/sessions", get(list))
            .route("/sessions/{thread}", get(load))
            .route("/sessions/{thread}/events", get(events))
            .route("/sessions/{thread}/messages", post(message))
            .route("/sessions/{thread}/cancel", post(cancel))
            .with_state(self.inner.clone())
            // A request for a session another replica holds goes there.
            .layer(axum::middleware::from_fn({
                let client = self.inner.forwarder.clone();
                move |request, next| crate::forward::forward(client.clone(), request, next)
            }))
    }
}

impl AgentServer {
    /// Stops hosting every session: each is saved once it rests and its
    /// lease given up, so another replica can take it at once. Call it
    /// after the HTTP server stopped accepting requests.
    pub async fn shutdown(&self) {
        let hosted: Vec<Arc<Hosted>> = {
            let mut hosted = self.inner.hosted.lock().await;
            self.inner.shut_down.store(true, Ordering::Relaxed);
            hosted.drain().map(|(_, h)| h).collect()
        };
        for session in hosted {
            session.close().await;
        }
    }
}

impl Inner {
    /// The hosted session `id`, opened here if it is not yet.
    async fn host(&self, tenant: &Tenant, id: &SessionId) -> Result<Arc<Hosted>, ServerError> {
        let slot = {
            let mut opening = self.opening.lock().unwrap_or_else(|e| e.into_inner());
            opening.entry(id.clone()).or_default().clone()
        };
        let opened = {
            let _opening = slot.lock().await;
            self.open(tenant, id).await
        };
        // The last one through forgets the session's lock.
        let mut opening = self.opening.lock().unwrap_or_else(|e| e.into_inner());
        if Arc::strong_count(&slot) == 2 {
            opening.remove(id);
        }
        opened
    }

    /// [`host`](Self::host) once the session's opening lock is held.
    async fn open(&self, tenant: &Tenant, id: &SessionId) -> Result<Arc<Hosted>, ServerError> {
        if let Some(session) = self.hosted.lock().await.get(id)
            && session.phase() != Phase::Closed
            && session.tenant == *tenant
        {
            return Ok(session.clone());
        }
        let session =
            (self.launcher)(self.stores.clone(), tenant.clone(), id.clone(), self.limits).await?;
        let mut hosted = self.hosted.lock().await;
        // Written under this lock too: after a shutdown drained the map,
        // nothing is hosted any more (the lease goes back at once).
        if self.shut_down.load(Ordering::Relaxed) {
            drop(hosted);
            session.close().await;
            return Err(ServerError::Busy(id.as_str().to_owned()));
        }
        hosted.insert(id.clone(), session.clone());
        Ok(session)
    }

    /// The session of `thread` if it exists for `tenant` (404 otherwise).
    async fn existing(&self, tenant: &Tenant, thread: &str) -> Result<SessionId, ServerError> {
        let id = tenant.session_id(thread)?;
        match self.store.info(&id).await {
            Ok(_) => Ok(id),
            Err(StoreError::NotFound(_)) => Err(ServerError::NotFound(thread.to_owned())),
            Err(err) => Err(err.into()),
        }
    }
}

type AppState = State<Arc<Inner>>;

async fn run(
    State(inner): AppState,
    headers: HeaderMap,
    Json(input): Json<agui::RunAgentInput>,
) -> Result<Response, ServerError> {
    let tenant = inner.tenants.authenticate(&headers)?;
    let id = tenant.session_id(&input.thread_id)?;
    if input.run_id.is_empty() {
        return Err(ServerError::BadRequest("`runId` is required".into()));
    }
    match inner
        .store
        .create(NewSession::new().with_id(id.clone()))
        .await
    {
        Ok(_) | Err(StoreError::AlreadyExists(_)) => {}
        Err(err) => return Err(err.into()),
    }
    let hosted = inner.host(&tenant, &id).await?;
    let items = new_user_items(&input.messages, &inner.store, &id).await?;
    let from = hosted.hub.last_seq();
    hosted
        .run(input.run_id.clone(), items, input.resume)
        .await?;
    Ok(sse(hosted.hub.clone(), from, Filter::Run(input.run_id)).into_response())
}

/// The trailing user messages of a run request that the session does not
/// hold yet (AG-UI clients send the whole conversation every time).
async fn new_user_items(
    messages: &[agui::Message],
    store: &Arc<dyn SessionStore>,
    id: &SessionId,
) -> Result<Vec<Item>, ServerError> {
    let start = messages
        .iter()
        .rposition(|m| m.role != "user")
        .map_or(0, |i| i + 1);
    let trailing = &messages[start..];
    if trailing.is_empty() {
        return Ok(Vec::new());
    }
    let known: Vec<String> = store
        .load(id)
        .await?
        .items
        .iter()
        .filter_map(|item| item.id.as_ref().map(ToString::to_string))
        .collect();
    Ok(trailing
        .iter()
        .filter(|m| !known.contains(&m.id))
        .map(|m| Item::user(m.text()).with_id(m.id.clone()))
        .collect())
}

async fn list(State(inner): AppState, headers: HeaderMap) -> Result<Json<Value>, ServerError> {
    let tenant = inner.tenants.authenticate(&headers)?;
    let sessions: Vec<Value> = inner
        .store
        .list()
        .await?
        .into_iter()
        .filter_map(|info| {
            let thread = tenant.thread_of(&info.id)?;
            let millis = |t: std::time::SystemTime| {
                t.duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64)
            };
            Some(json!({
                "threadId": thread,
                "title": info.title,
                "itemCount": info.item_count,
                "createdAt": millis(info.created_at),
                "lastActivity": millis(info.last_activity),
            }))
        })
        .collect();
    Ok(Json(json!({ "sessions": sessions })))
}

async fn load(
    State(inner): AppState,
    headers: HeaderMap,
    Path(thread): Path<String>,
) -> Result<Json<Value>, ServerError> {
    let tenant = inner.tenants.authenticate(&headers)?;
    let id = inner.existing(&tenant, &thread).await?;
    // Hosting it brings a stored session back to where it stopped.
    let hosted = inner.host(&tenant, &id).await?;
    let stored = inner.store.load(&id).await?;
    let pending: Vec<Value> = hosted
        .pending()
        .into_iter()
        .map(|(call, tool, summary)| json!({ "toolCallId": call, "toolName": tool, "message": summary }))
        .collect();
    Ok(Json(json!({
        "threadId": thread,
        "title": stored.info.title,
        "messages": agui::messages_of(&stored.items),
        "pendingApprovals": pending,
        "queued": hosted.queued(),
        "running": hosted.hub.in_run(),
        "lastEventId": hosted.hub.last_seq(),
    })))
}

async fn events(
    State(inner): AppState,
    headers: HeaderMap,
    Path(thread): Path<String>,
) -> Result<Response, ServerError> {
    let tenant = inner.tenants.authenticate(&headers)?;
    let id = inner.existing(&tenant, &thread).await?;
    let hosted = inner.host(&tenant, &id).await?;
    let after = match headers.get("last-event-id") {
        None => 0,
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| ServerError::BadRequest("`Last-Event-ID` must be a number".into()))?,
    };
    Ok(sse(hosted.hub.clone(), after, Filter::All).into_response())
}

/// The body of `POST /sessions/{thread}/messages`.
#[derive(Deserialize)]
struct NewMessage {
    text: String,
    #[serde(default)]
    delivery: Option<String>,
}

async fn message(
    State(inner): AppState,
    headers: HeaderMap,
    Path(thread): Path<String>,
    Json(body): Json<NewMessage>,
) -> Result<Response, ServerError> {
    let tenant = inner.tenants.authenticate(&headers)?;
    let delivery = match body.delivery.as_deref() {
        None | Some("steer") => DeliveryMode::Steer,
        Some("urgent") => DeliveryMode::Urgent,
        Some("follow_up") => DeliveryMode::FollowUp,
        Some(other) => {
            return Err(ServerError::BadRequest(format!(
                "delivery `{other}` is not `steer`, `urgent` or `follow_up`"
            )));
        }
    };
    if body.text.trim().is_empty() {
        return Err(ServerError::BadRequest("the message is empty".into()));
    }
    let id = inner.existing(&tenant, &thread).await?;
    let hosted = inner.host(&tenant, &id).await?;
    let answer = match hosted.message(body.text, delivery).await? {
        Queued::Queued(id) => json!({ "queued": true, "id": id }),
        Queued::Started(run) => json!({ "queued": false, "runId": run }),
    };
    Ok((StatusCode::ACCEPTED, Json(answer)).into_response())
}

async fn cancel(
    State(inner): AppState,
    headers: HeaderMap,
    Path(thread): Path<String>,
) -> Result<StatusCode, ServerError> {
    let tenant = inner.tenants.authenticate(&headers)?;
    let id = inner.existing(&tenant, &thread).await?;
    let hosted = inner.host(&tenant, &id).await?;
    hosted.cancel();
    Ok(StatusCode::ACCEPTED)
}
