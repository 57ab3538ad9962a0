//! One replica of an agent server on a shared PostgreSQL database, for the
//! failover test and the load test: run it twice on the same database.
//!
//! Configured by environment variables: `REPLICA_PG` (the connection
//! string), `REPLICA_TOKEN` (tenant `acme`'s bearer token), `REPLICA_LEASE_MS`
//! (the lease's time to live, default 10 000), `REPLICA_DIR` (where the
//! `job` tool leaves its marks), `REPLICA_PROVIDER` (optional: the base URL
//! of an OpenAI-compatible server, as the load test's local provider
//! server). It listens on a free port of 127.0.0.1 and prints
//! `listening on <address>` once ready.
//!
//! The agent: a model that answers a user message by calling `job`, and a
//! tool result with "The job is done." (in-process, or the provider at
//! `REPLICA_PROVIDER` through the real Chat Completions adapter); `job`
//! writes `started-<call id>-<pid>` into `REPLICA_DIR`, then runs until a
//! file `release` appears there (or the turn is cancelled).

use agentkit_core::ItemKind;
use agentkit_http::{HttpConfig, RetryPolicy};
use agentkit_loop::{Agent, ModelAdapter, ModelError, ModelSession, SessionConfig, TurnRequest};
use agentkit_provider_openai::{OpenAiAdapter, OpenAiConfig};
use agentkit_server::AgentServer;
use agentkit_store::PgStore;
use agentkit_testkit::{ScriptedModel, ScriptedTurn, ScriptedTurnStream};
use agentkit_tools_core::{
    Tool, ToolContext, ToolError, ToolRegistry, ToolRequest, ToolResult, ToolSpec,
};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Decides from the transcript: a user message gets a `job` call, a tool
/// result gets the final answer. Any replica answers the same way.
#[derive(Clone)]
struct JobModel;

struct JobSession;

#[async_trait::async_trait]
impl ModelAdapter for JobModel {
    type Session = JobSession;

    async fn start_session(&self, _config: SessionConfig) -> Result<JobSession, ModelError> {
        Ok(JobSession)
    }
}

#[async_trait::async_trait]
impl ModelSession for JobSession {
    type Turn = ScriptedTurnStream;

    async fn begin_turn(&mut self, request: TurnRequest) -> Result<ScriptedTurnStream, ModelError> {
        let (len, last) = {
            let transcript = request.transcript.read();
            (transcript.len(), transcript.last().map(|item| item.kind))
        };
        let turn = if last == Some(ItemKind::Tool) {
            ScriptedTurn::text("The job is done.")
        } else {
            ScriptedTurn::tool_call(&format!("call-{len}"), "job", json!({}))
        };
        let model = ScriptedModel::new([turn]).without_recording();
        let mut session = model
            .start_session(SessionConfig::new(request.session_id.clone()))
            .await?;
        session.begin_turn(request).await
    }
}

/// Leaves a mark when it starts, then runs until released.
struct Job {
    spec: Arc<ToolSpec>,
    dir: PathBuf,
}

#[async_trait::async_trait]
impl Tool for Job {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let mark = self.dir.join(format!(
            "started-{}-{}",
            request.call_id,
            std::process::id()
        ));
        std::fs::write(&mark, b"").map_err(|err| ToolError::ExecutionFailed(err.to_string()))?;
        while !self.dir.join("release").exists() {
            if ctx.cancellation.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(ToolResult::new("finished"))
    }
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::var("REPLICA_PROVIDER") {
        Ok(base_url) => {
            let config = OpenAiConfig::compatible(format!("{base_url}/v1"), "gpt-load")
                .with_http(HttpConfig::default().with_retry(RetryPolicy::none()));
            serve(OpenAiAdapter::new(config)?).await
        }
        Err(_) => serve(JobModel).await,
    }
}

/// Serves the agent with `model` until killed.
async fn serve<M>(model: M) -> Result<(), Box<dyn std::error::Error>>
where
    M: ModelAdapter + Clone + Send + Sync + 'static,
    M::Session: 'static,
{
    // Bound first: the leases this replica takes name the URL the others
    // forward requests for its sessions to. The accept queue holds a
    // thousand clients connecting at once (the load test).
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind((std::net::Ipv4Addr::LOCALHOST, 0).into())?;
    let listener = socket.listen(4096)?;
    let address = listener.local_addr()?;
    let store = PgStore::builder(&env("REPLICA_PG"))
        .max_connections(8)
        .lease_holder(format!("http://{address}"))
        .connect()
        .await?;
    let lease_ms: u64 = std::env::var("REPLICA_LEASE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = PathBuf::from(env("REPLICA_DIR"));
    let spec = Arc::new(ToolSpec::new(
        "job",
        "Runs the job.",
        json!({ "type": "object" }),
    )?);
    let server = AgentServer::builder()
        .store(Arc::new(store))
        .agent(move |_session| {
            let job = Job {
                spec: spec.clone(),
                dir: dir.clone(),
            };
            Agent::builder()
                .model(model.clone())
                .add_tool_source(ToolRegistry::new().with(job))
        })
        .tenant(env("REPLICA_TOKEN"), "acme")
        .lease_ttl(Duration::from_millis(lease_ms))
        .build()?;
    println!("listening on {address}");
    std::io::stdout().flush()?;
    server.serve(listener).await?;
    Ok(())
}
