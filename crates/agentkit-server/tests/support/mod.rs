//! A server on 127.0.0.1 over a SQLite file, an HTTP client that reads its
//! event streams, and the tools the tests give the agent.

#![allow(dead_code)]

use agentkit_loop::Agent;
use agentkit_server::AgentServer;
use agentkit_store::SqliteStore;
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tools_core::{
    PermissionRequest, ShellCommand, Tool, ToolContext, ToolError, ToolRegistry, ToolRequest,
    ToolResult, ToolSpec,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

pub const TOKEN_A: &str = "token-of-tenant-a";
pub const TOKEN_B: &str = "token-of-tenant-b";

/// Generous: a loaded 2-core machine can be slow, never this slow.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// `deploy`: a side effect, so the default permissions ask first. Counts
/// its runs.
#[derive(Clone)]
pub struct Deploy {
    spec: Arc<ToolSpec>,
    pub runs: Arc<AtomicUsize>,
}

impl Deploy {
    pub fn new() -> Self {
        let spec = ToolSpec::new("deploy", "Deploys the site.", json!({ "type": "object" }));
        Self {
            spec: Arc::new(spec.unwrap()),
            runs: Arc::default(),
        }
    }
}

#[async_trait::async_trait]
impl Tool for Deploy {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }
    fn proposed_requests(&self, _: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        Ok(vec![PermissionRequest::shell(ShellCommand::new(
            "make deploy",
        ))])
    }
    async fn invoke(&self, _: ToolRequest, _: ToolContext) -> Result<ToolResult, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(ToolResult::new("deployed"))
    }
}

/// `wait`: runs until the test opens the gate (or the turn is cancelled).
#[derive(Clone)]
pub struct Gate {
    spec: Arc<ToolSpec>,
    pub permits: Arc<Semaphore>,
}

impl Gate {
    pub fn new() -> Self {
        let spec = ToolSpec::new("wait", "Waits for the gate.", json!({ "type": "object" }));
        Self {
            spec: Arc::new(spec.unwrap()),
            permits: Arc::new(Semaphore::new(0)),
        }
    }

    pub fn open(&self) {
        self.permits.add_permits(1);
    }
}

#[async_trait::async_trait]
impl Tool for Gate {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }
    async fn invoke(&self, _: ToolRequest, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let permits = self.permits.clone();
        tokio::select! {
            permit = permits.acquire_owned() => {
                permit.expect("the semaphore stays open").forget();
                Ok(ToolResult::new("the gate opened"))
            }
            () = ctx.cancellation.cancelled() => Err(ToolError::Cancelled),
        }
    }
}

pub struct TestServer {
    pub url: String,
    pub model: ScriptedModel,
    pub deploy: Deploy,
    pub gate: Gate,
    pub http: reqwest::Client,
    pub server: AgentServer,
    pub dir: Arc<tempfile::TempDir>,
    serve: tokio::task::JoinHandle<()>,
}

/// A server with two tenants, the `deploy` and `wait` tools, and a model
/// playing `turns`.
pub async fn start(turns: Vec<ScriptedTurn>) -> TestServer {
    start_in(Arc::new(tempfile::tempdir().unwrap()), turns).await
}

/// The same, on the SQLite file of `dir` (another server's, after it stopped).
pub async fn start_in(dir: Arc<tempfile::TempDir>, turns: Vec<ScriptedTurn>) -> TestServer {
    start_with(dir, turns, |builder| builder).await
}

/// The same, with more settings.
pub async fn start_with(
    dir: Arc<tempfile::TempDir>,
    turns: Vec<ScriptedTurn>,
    configure: impl FnOnce(agentkit_server::ServerBuilder) -> agentkit_server::ServerBuilder,
) -> TestServer {
    let store = Arc::new(SqliteStore::open(dir.path().join("sessions.db")).unwrap());
    let model = ScriptedModel::new(turns);
    let (deploy, gate) = (Deploy::new(), Gate::new());
    let server = {
        let (model, deploy, gate) = (model.clone(), deploy.clone(), gate.clone());
        configure(AgentServer::builder())
            .store(store)
            .agent(move |_session| {
                Agent::builder()
                    .model(model.clone())
                    .add_tool_source(ToolRegistry::new().with(deploy.clone()).with(gate.clone()))
            })
            .tenant(TOKEN_A, "a")
            .tenant(TOKEN_B, "b")
            .build()
            .unwrap()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let router = server.router();
    let serve = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    TestServer {
        url,
        model,
        deploy,
        gate,
        http: http_client(),
        server,
        dir,
        serve,
    }
}

impl TestServer {
    /// Stops serving and hosting: every lease is given up.
    pub async fn stop(self) -> Arc<tempfile::TempDir> {
        self.serve.abort();
        self.server.shutdown().await;
        self.dir
    }
}

/// A server-sent event.
#[derive(Clone, Debug)]
pub struct Sse {
    pub id: Option<u64>,
    pub data: Value,
}

impl Sse {
    pub fn kind(&self) -> &str {
        self.data["type"].as_str().unwrap_or("")
    }
}

/// Reads events from a streaming response as they come.
pub struct Events {
    response: reqwest::Response,
    buffer: Vec<u8>,
    pub seen: Vec<Sse>,
}

impl Events {
    pub fn new(response: reqwest::Response) -> Self {
        assert!(
            response.status().is_success(),
            "the stream answered {}",
            response.status()
        );
        Self {
            response,
            buffer: Vec::new(),
            seen: Vec::new(),
        }
    }

    /// The next event, `None` at the end of the stream.
    pub async fn next(&mut self) -> Option<Sse> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let text = String::from_utf8(block).unwrap();
                let mut id = None;
                let mut data = String::new();
                for line in text.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().parse().unwrap());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                let event = Sse {
                    id,
                    data: serde_json::from_str(&data).unwrap(),
                };
                self.seen.push(event.clone());
                return Some(event);
            }
            let chunk = tokio::time::timeout(PATIENCE, self.response.chunk())
                .await
                .expect("the stream stalled")
                .unwrap()?;
            self.buffer.extend_from_slice(&chunk);
        }
    }

    /// Reads until an event of type `kind`, returning it.
    pub async fn until(&mut self, kind: &str) -> Sse {
        loop {
            let event = self
                .next()
                .await
                .unwrap_or_else(|| panic!("the stream ended before {kind}: {:#?}", self.types()));
            if event.kind() == kind {
                return event;
            }
        }
    }

    /// Reads to the end of the stream.
    pub async fn rest(&mut self) -> &[Sse] {
        while self.next().await.is_some() {}
        &self.seen
    }

    pub fn types(&self) -> Vec<&str> {
        self.seen.iter().map(Sse::kind).collect()
    }

    /// The events of type `kind` seen so far.
    pub fn of(&self, kind: &str) -> Vec<&Sse> {
        self.seen.iter().filter(|e| e.kind() == kind).collect()
    }
}

impl TestServer {
    /// `POST /agui` with a user message (and resume entries).
    pub async fn run(
        &self,
        token: &str,
        thread: &str,
        run: &str,
        body: Value,
    ) -> reqwest::Response {
        let mut input = json!({ "threadId": thread, "runId": run, "messages": [] });
        if let Some(object) = body.as_object() {
            for (key, value) in object {
                input[key] = value.clone();
            }
        }
        self.http
            .post(format!("{}/agui", self.url))
            .bearer_auth(token)
            .header("accept", "text/event-stream")
            .json(&input)
            .send()
            .await
            .unwrap()
    }

    /// `POST /agui` with one user message, as an event reader.
    pub async fn say(&self, token: &str, thread: &str, run: &str, text: &str) -> Events {
        let messages = json!({ "messages": [{ "id": format!("{run}-user"), "role": "user", "content": text }] });
        Events::new(self.run(token, thread, run, messages).await)
    }

    pub async fn get(&self, token: &str, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.url))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
    }

    pub async fn post(&self, token: &str, path: &str, body: Value) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.url))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap()
    }
}

impl Events {
    /// The data of the first event of type `kind` seen so far.
    pub fn until_seen(&self, kind: &str) -> Value {
        self.seen
            .iter()
            .find(|e| e.kind() == kind)
            .unwrap_or_else(|| panic!("no {kind} in {:?}", self.types()))
            .data
            .clone()
    }
}

impl TestServer {
    /// The status of a `POST /agui` with this body.
    pub async fn say_status(&self, token: &str, thread: &str, body: Value) -> u16 {
        self.run(token, thread, "refused", body)
            .await
            .status()
            .as_u16()
    }

    /// A GET of an event stream, resuming after `last` if given.
    pub async fn get_stream(
        &self,
        token: &str,
        path: &str,
        last: Option<u64>,
    ) -> reqwest::Response {
        let mut request = self
            .http
            .get(format!("{}{path}", self.url))
            .bearer_auth(token);
        if let Some(last) = last {
            request = request.header("last-event-id", last.to_string());
        }
        request.send().await.unwrap()
    }
}

impl TestServer {
    /// A GET answered with JSON.
    pub async fn get_json(&self, token: &str, path: &str) -> Value {
        self.get(token, path).await.json().await.unwrap()
    }
}

/// The contents of a loaded session's messages.
pub fn contents(session: &Value) -> Vec<String> {
    session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

/// A plain HTTP client. The workspace builds reqwest's rustls without a
/// crypto provider (no aws-lc-sys), so ring is installed first.
pub fn http_client() -> reqwest::Client {
    agentkit_http::install_tls_provider();
    reqwest::Client::new()
}
