//! A stop reaches the server: however a caller gives up on an MCP call in
//! flight (the turn is interrupted, a task manager's timeout fires, the
//! call's future is simply dropped), the server is sent
//! `notifications/cancelled`.
//!
//! The server is `tests/fixtures/stubborn.mjs`, a real process built on the
//! official TypeScript SDK: its `hang` tool never answers, and it writes to
//! stderr when a call starts and when its cancellation arrives, with the
//! wall-clock time in milliseconds. The tests compare that time with the
//! moment the caller gave up. The target is 100 ms; the tests
//! assert a loose 2 s bound (the machine is shared and busy) and print the
//! measured time.

mod common;

use agentkit_core::{CancellationController, Item, validate_transcript};
use agentkit_loop::{
    Agent, AgentBuilder, ConcurrentTaskManager, LoopStep, SessionConfig, SimpleTaskManager,
    TaskManager,
};
use agentkit_mcp::{McpServerConfig, McpServerManager};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tools_core::{ToolContext, ToolError};
use common::{fixtures_dir, within};
use serde_json::json;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The loose bound asserted on every measured delay.
const BOUND: Duration = Duration::from_secs(2);

fn stubborn(name: &str) -> McpServerConfig {
    McpServerConfig::stdio(name, "node")
        .arg(fixtures_dir().join("stubborn.mjs").to_string_lossy())
        .cwd(fixtures_dir())
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// The wall-clock millisecond of the first stderr line starting with
/// `prefix` (`hang started` or `cancelled request`), once it is there.
async fn server_time(manager: &McpServerManager, server: &str, prefix: &str) -> u128 {
    within(10, &format!("the server logging {prefix:?}"), async {
        loop {
            let lines = manager.stderr_tail(server).unwrap();
            if let Some(line) = lines.iter().find(|l| l.starts_with(prefix)) {
                let after = line.split(" at ").nth(1).expect("a time stamp");
                let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
                return digits.parse().expect("milliseconds");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
}

fn assert_prompt(what: &str, from_ms: u128, seen_ms: u128) {
    let delay = Duration::from_millis(seen_ms.saturating_sub(from_ms) as u64);
    eprintln!("{what}: the server saw notifications/cancelled after {delay:?}");
    assert!(delay < BOUND, "{what}: took {delay:?}");
}

/// An agent whose model calls the stubborn server's `hang` tool once.
fn hanging_agent(manager: &McpServerManager) -> AgentBuilder<ScriptedModel> {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "mcp_stubborn_hang", json!({})),
        ScriptedTurn::text("after the hang"),
    ]);
    Agent::builder()
        .model(model)
        .add_tool_source(manager.source())
        .permissions(agentkit_tools_core::AllowAllPermissions)
        .input(vec![Item::user("hang, please")])
}

async fn connected(name: &str) -> McpServerManager {
    let manager = McpServerManager::new();
    manager.register(stubborn(name)).unwrap();
    manager
        .connect(name)
        .await
        .expect("the stubborn server connects");
    manager
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_call_future_cancels_it_on_the_server() {
    within(60, "the dropped-future test", async {
        let manager = connected("stubborn").await;
        // The caller's own timeout, far shorter than the call's deadline:
        // the future is dropped mid-call, with no `select!` of ours involved.
        let gave_up = tokio::time::timeout(
            Duration::from_millis(300),
            manager.call_tool("stubborn", "hang", json!({}), ToolContext::new("drop-1")),
        )
        .await;
        let dropped_at = now_ms();
        assert!(gave_up.is_err(), "hang never answers");
        let seen = server_time(&manager, "stubborn", "cancelled request").await;
        assert_prompt("dropped future", dropped_at, seen);
        // The session is fine afterwards.
        let pong = manager
            .call_tool("stubborn", "ping", json!({}), ToolContext::new("drop-2"))
            .await
            .unwrap();
        assert_eq!(pong.output.to_text(), "pong");
    })
    .await;
}

/// A direct call with a cancellation: `ToolContext::new(..).with_cancellation(..)`
/// is all it takes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupting_a_direct_call_cancels_it_on_the_server() {
    within(60, "the direct interrupt test", async {
        let manager = connected("stubborn").await;
        let controller = CancellationController::new();
        let ctx = ToolContext::new("direct-1").with_cancellation(controller.handle().checkpoint());
        let call = tokio::spawn({
            let manager = manager.clone();
            async move { manager.call_tool("stubborn", "hang", json!({}), ctx).await }
        });
        server_time(&manager, "stubborn", "hang started").await;
        let interrupted_at = now_ms();
        controller.interrupt();
        let outcome = within(5, "the call ending", call).await.unwrap();
        assert_eq!(outcome, Err(ToolError::Cancelled));
        let seen = server_time(&manager, "stubborn", "cancelled request").await;
        assert_prompt("direct interrupt", interrupted_at, seen);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupting_the_loop_cancels_the_call_on_the_server() {
    within(60, "the loop interrupt test", async {
        let manager = connected("stubborn").await;
        let controller = CancellationController::new();
        let agent = hanging_agent(&manager)
            .cancellation(controller.handle())
            .build()
            .unwrap();
        let mut driver = agent.start(SessionConfig::new("mcp-cancel")).await.unwrap();
        let interrupter = tokio::spawn({
            let manager = manager.clone();
            async move {
                server_time(&manager, "stubborn", "hang started").await;
                let at = now_ms();
                controller.interrupt();
                at
            }
        });
        let step = within(10, "next() after the interrupt", driver.next()).await;
        let interrupted_at = interrupter.await.unwrap();
        assert!(
            matches!(step, Ok(LoopStep::Finished(_) | LoopStep::Interrupt(_))),
            "{step:?}"
        );
        validate_transcript(&driver.transcript().to_vec()).unwrap();
        let seen = server_time(&manager, "stubborn", "cancelled request").await;
        assert_prompt("loop interrupt", interrupted_at, seen);
    })
    .await;
}

async fn task_manager_timeout_cancels(task_manager: impl TaskManager + 'static, what: &str) {
    let manager = connected("stubborn").await;
    let agent = hanging_agent(&manager)
        .task_manager(task_manager)
        .build()
        .unwrap();
    let mut driver = agent
        .start(SessionConfig::new("mcp-timeout"))
        .await
        .unwrap();
    within(10, "next() after the timeout", driver.next())
        .await
        .unwrap();
    let items = driver.transcript().to_vec();
    validate_transcript(&items).unwrap();
    let result = items.iter().flat_map(Item::tool_results).next().unwrap();
    assert!(result.is_error, "{what}: the timeout is an error result");
    let started = server_time(&manager, "stubborn", "hang started").await;
    let seen = server_time(&manager, "stubborn", "cancelled request").await;
    // The task manager gives up 400 ms after the call started.
    assert_prompt(what, started + 400, seen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_simple_task_manager_timeout_cancels_the_call_on_the_server() {
    within(60, "the simple task manager test", async {
        task_manager_timeout_cancels(
            SimpleTaskManager::new().with_timeout(Duration::from_millis(400)),
            "simple task manager timeout",
        )
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_task_manager_timeout_cancels_the_call_on_the_server() {
    within(60, "the concurrent task manager test", async {
        task_manager_timeout_cancels(
            ConcurrentTaskManager::new(2).with_timeout(Duration::from_millis(400)),
            "concurrent task manager timeout",
        )
        .await;
    })
    .await;
}

/// The host drops a `next()` future in the middle of the tool round (its
/// own timeout, a `select!` that took another branch): the call is cancelled
/// on the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_next_cancels_the_call_on_the_server() {
    within(60, "the dropped next() test", async {
        let manager = connected("stubborn").await;
        let agent = hanging_agent(&manager).build().unwrap();
        let mut driver = agent.start(SessionConfig::new("mcp-drop")).await.unwrap();
        let dropped_at = tokio::select! {
            step = driver.next() => panic!("hang never answers, got {step:?}"),
            _ = server_time(&manager, "stubborn", "hang started") => now_ms(),
        };
        // `next()` was dropped when `select!` returned.
        let seen = server_time(&manager, "stubborn", "cancelled request").await;
        assert_prompt("dropped next()", dropped_at, seen);
    })
    .await;
}
