//! Offline example: MCP tools in an agent loop.
//!
//! 1. The MCP reference server (`@modelcontextprotocol/server-everything`,
//!    installed by `cargo xtask fixtures`) runs over stdio; a scripted model
//!    calls two of its tools through the loop, with a policy that trusts it.
//! 2. A protected MCP server on 127.0.0.1 answers 401 until it gets a bearer
//!    token. The host reads the auth request, fetches the token (here from a
//!    pretend secret store) and resolves it out of band; the loop never
//!    blocks on auth.
//!
//! Run it with `cargo run -p mcp-tools`.

mod protected_server;

use agentkit_core::{FinishReason, Item};
use agentkit_loop::{Agent, AgentEvent, LoopInterrupt, LoopObserver, LoopStep, SessionConfig};
use agentkit_mcp::{AuthResolution, McpCredentials, McpError, McpServerConfig, McpServerManager};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tools_core::{CompositePermissionChecker, McpServerPolicy, ToolSource};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

struct Print;

impl LoopObserver for Print {
    fn handle_event(&self, event: AgentEvent) {
        match event {
            AgentEvent::ToolCallRequested { call } => {
                println!("  call   {} {}", call.name, call.input)
            }
            AgentEvent::ToolResultReceived { result } => {
                let mark = if result.is_error { "error " } else { "result" };
                println!("  {mark} {}", result.output.to_text());
            }
            AgentEvent::TurnFinished { result } => {
                println!(
                    "  answer {}",
                    result
                        .items
                        .last()
                        .map(Item::text_content)
                        .unwrap_or_default()
                )
            }
            _ => {}
        }
    }
}

/// Runs one user turn to the end, answering cooperative pauses.
async fn run(agent: &Agent<ScriptedModel>, prompt: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut driver = agent.start(SessionConfig::new("mcp-tools")).await?;
    let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = driver.next().await? else {
        return Err("expected to be asked for input".into());
    };
    println!("> {prompt}");
    request.submit(&mut driver, vec![Item::user(prompt)])?;
    loop {
        match driver.next().await? {
            LoopStep::Finished(_) => break,
            LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) => {
                pending.approve(&mut driver)?
            }
            LoopStep::Interrupt(_) => {}
        }
    }
    agentkit_core::validate_transcript(&driver.transcript().to_vec())?;
    Ok(())
}

fn reference_server() -> Option<PathBuf> {
    let entry = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates/agentkit-mcp/tests/fixtures/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    entry.is_file().then_some(entry)
}

async fn reference_tools() -> Result<(), Box<dyn std::error::Error>> {
    println!("== tools from the MCP reference server, over stdio");
    let Some(entry) = reference_server() else {
        println!("(skipped: run `cargo xtask fixtures` to install the reference server)");
        return Ok(());
    };
    let manager = McpServerManager::new();
    manager.register(
        McpServerConfig::stdio("ref", "node")
            .arg(entry.to_string_lossy())
            .arg("stdio"),
    )?;
    let status = manager.connect("ref").await?;
    println!("connected: {} tools", status.tools.len());
    println!(
        "exposed as: {:?}",
        &manager.source().snapshot().names()[..3]
    );

    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .call(
                "c1",
                "mcp_ref_echo",
                json!({ "message": "hello from agentkit" }),
            )
            .call("c2", "mcp_ref_get-sum", json!({ "a": 2, "b": 3 }))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("The server echoed my message and says 2 + 3 = 5."),
    ]);
    let agent = Agent::builder()
        .model(model)
        .add_tool_source(manager.source())
        // MCP calls go through the permission checker like any tool.
        .permissions(
            CompositePermissionChecker::new()
                .with_policy(McpServerPolicy::new().trust_server("ref")),
        )
        .observer(Print)
        .build()?;
    run(&agent, "Echo a greeting and add 2 and 3.").await?;
    manager.disconnect_all().await;
    Ok(())
}

async fn protected_tools() -> Result<(), Box<dyn std::error::Error>> {
    println!("\n== a protected MCP server, with auth resolved out of band");
    let secret_store = "tickets-token-42";
    let (url, server) = protected_server::start(secret_store).await?;
    let manager = McpServerManager::new();
    manager.register(
        McpServerConfig::http("tickets", &url).connect_timeout(Duration::from_secs(10)),
    )?;

    match manager.connect("tickets").await {
        Err(McpError::AuthRequired(request)) => {
            println!(
                "auth required by {}: {}",
                request.provider,
                request.challenge.as_deref().unwrap_or("-")
            );
            println!(
                "scopes asked for: {:?}; fetching a token from the secret store",
                request.scopes
            );
            manager
                .resolve_auth(AuthResolution::provided(
                    *request,
                    McpCredentials::bearer(secret_store),
                ))
                .await?;
        }
        Ok(_) => println!("connected without credentials?"),
        Err(other) => return Err(other.into()),
    }
    let status = manager.connect("tickets").await?;
    println!("connected: {:?}", status.tools);

    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "mcp_tickets_open_tickets", json!({})),
        ScriptedTurn::text("There are two open tickets: #101 and #102."),
    ]);
    let agent = Agent::builder()
        .model(model)
        .add_tool_source(manager.source())
        .observer(Print)
        .build()?;
    run(&agent, "What tickets are open?").await?;
    manager.disconnect_all().await;
    server.abort();
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    reference_tools().await?;
    protected_tools().await?;
    Ok(())
}
