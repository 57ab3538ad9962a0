//! The MCP phase of `cargo xtask soak --minutes N`: sessions one after
//! another, for N minutes, whose model calls tools of a real MCP server
//! process (the SDK-built `stubborn.mjs` fixture, over stdio) through
//! [`McpServerManager`] inside the agent loop. At random, a round calls the
//! never-answering `hang` tool and the soak SIGKILLs the server while that
//! call is in flight; the other rounds call `ping`.
//!
//! After every session: the transcript is valid (every tool call answered
//! exactly once), each killed call is answered with an error result (not
//! lost, not hung), every `ping` answered `pong` (the manager reconnected
//! after each kill, to a new process), and the final answer arrived. The
//! figures are printed for the reliability chapter.
//!
//! Ignored by default (it runs for minutes); `cargo xtask soak` runs it.
//! Without `AGENTKIT_SOAK_MCP_MINUTES` it runs a few sessions only.

mod common;

use agentkit_core::{Item, validate_transcript};
use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SessionConfig};
use agentkit_mcp::{McpServerConfig, McpServerManager};
use agentkit_testkit::{ScriptedModel, ScriptedTurn, SoakRng as Rng, soak_minutes};
use common::{fixtures_dir, within};
use serde_json::json;
use std::time::{Duration, Instant};

/// What the soak saw, summed over sessions.
#[derive(Default)]
struct Figures {
    sessions: u64,
    calls: u64,
    kills: u64,
}

/// Waits until the server process has a `hang` call in flight, then
/// SIGKILLs it. Returns the pid it killed.
async fn kill_mid_call(manager: &McpServerManager) -> u32 {
    loop {
        let status = manager.status("stubborn").unwrap();
        let in_flight = manager
            .stderr_tail("stubborn")
            .unwrap()
            .iter()
            .any(|line| line.starts_with("hang started"));
        if let (true, true, Some(pid)) = (status.connected, in_flight, status.pid) {
            let sent = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status()
                .unwrap();
            assert!(sent.success(), "kill -KILL {pid}");
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn run_session(rng: &mut Rng, manager: &McpServerManager, session: u64, seen: &mut Figures) {
    let rounds = 1 + rng.below(4);
    let plan: Vec<bool> = (0..rounds).map(|_| rng.below(2) == 0).collect();
    let mut turns: Vec<ScriptedTurn> = plan
        .iter()
        .enumerate()
        .map(|(round, &hang)| {
            let tool = if hang {
                "mcp_stubborn_hang"
            } else {
                "mcp_stubborn_ping"
            };
            ScriptedTurn::tool_call(&format!("call-{session}-{round}"), tool, json!({}))
        })
        .collect();
    turns.push(ScriptedTurn::text(&format!("done {session}")));
    let model = ScriptedModel::new(turns);
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(manager.source())
        .permissions(agentkit_tools_core::AllowAllPermissions)
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent
        .start(SessionConfig::new(format!("mcp-soak-{session}")))
        .await
        .unwrap();
    let mut killed = Vec::new();
    for &hang in &plan {
        let step = if hang {
            let (step, pid) = tokio::join!(driver.next(), kill_mid_call(manager));
            killed.push(pid);
            step
        } else {
            driver.next().await
        };
        let Ok(LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))) = step else {
            panic!("session {session}: unexpected {step:?}")
        };
    }
    let step = driver.next().await;
    let Ok(LoopStep::Finished(_)) = step else {
        panic!("session {session}: unexpected {step:?}")
    };
    let items = driver.transcript().to_vec();
    validate_transcript(&items)
        .unwrap_or_else(|e| panic!("session {session}: invalid transcript: {e}"));
    let results: Vec<_> = items.iter().flat_map(Item::tool_results).collect();
    assert_eq!(results.len(), plan.len(), "session {session}: a call lost");
    for (round, (result, &hang)) in results.iter().zip(&plan).enumerate() {
        assert_eq!(result.call_id.as_str(), format!("call-{session}-{round}"));
        if hang {
            assert!(result.is_error, "session {session}: killed call {result:?}");
            // Typed: the pipe closed, the server is unavailable.
            assert_eq!(
                result.metadata["agentkit.error_kind"], "unavailable",
                "session {session}: {result:?}"
            );
        } else {
            assert!(
                !result.is_error,
                "session {session}: ping failed {result:?}"
            );
            assert_eq!(result.output.to_text(), "pong");
        }
    }
    assert_eq!(
        items.last().unwrap().text_content(),
        format!("done {session}")
    );
    assert_eq!(model.remaining(), 0, "session {session}: turns unused");
    // Each kill ended its process; the manager never reuses one.
    if let Some(pid) = manager.status("stubborn").unwrap().pid {
        assert!(!killed.contains(&pid), "session {session}: a killed pid");
    }
    seen.sessions += 1;
    seen.calls += plan.len() as u64;
    seen.kills += killed.len() as u64;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes long; run by `cargo xtask soak --minutes N`"]
async fn soak_killed_mcp_servers() {
    let minutes = soak_minutes("AGENTKIT_SOAK_MCP_MINUTES", 0.05);
    let mut rng = Rng::from_env();
    let seed = rng.seed();
    println!("mcp soak: {minutes} min, seed {seed}");
    let manager = McpServerManager::new();
    manager
        .register(
            McpServerConfig::stdio("stubborn", "node")
                .arg(fixtures_dir().join("stubborn.mjs").to_string_lossy())
                .cwd(fixtures_dir())
                .call_timeout(Duration::from_secs(60)),
        )
        .unwrap();
    manager.connect("stubborn").await.expect("connects");
    let total = Duration::from_secs_f64(minutes * 60.0);
    let started = Instant::now();
    let mut seen = Figures::default();
    while started.elapsed() < total || seen.kills < 3 {
        let session = seen.sessions;
        within(120, "an MCP soak session", async {
            run_session(&mut rng, &manager, session, &mut seen).await
        })
        .await;
    }
    // The server answers after the last kill too.
    let pong = manager
        .call_tool(
            "stubborn",
            "ping",
            json!({}),
            agentkit_tools_core::ToolContext::new("mcp-soak-last"),
        )
        .await
        .expect("the manager reconnects after the last kill");
    assert_eq!(pong.output.to_text(), "pong");
    println!(
        "mcp soak: {} sessions in {:.1} min, {} MCP tool calls, {} MCP servers SIGKILLed mid-call (each call answered with an error, each reconnected)",
        seen.sessions,
        started.elapsed().as_secs_f64() / 60.0,
        seen.calls,
        seen.kills,
    );
    manager.disconnect("stubborn").await.ok();
}
