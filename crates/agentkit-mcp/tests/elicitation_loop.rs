//! Elicitation inside the agent loop, against the MCP reference server: a
//! server's `elicitation/create` during a tool call pauses that call alone
//! as `LoopInterrupt::Question` (a second call of the round runs on), the
//! host's answer resumes the same call (accept with content checked and
//! completed with the schema's defaults, decline, cancel, URL mode), content
//! that breaks the schema is refused with a typed error, a session resumed
//! from a snapshot taken at the question keeps a valid transcript, and
//! outside the loop, with no handler, the request is declined.

mod common;

use agentkit_core::{FinishReason, Item, validate_transcript};
use agentkit_loop::{
    Agent, ConcurrentTaskManager, InvalidStateReason, LoopDriver, LoopError, LoopInterrupt,
    LoopStep, PendingQuestion, SessionConfig,
};
use agentkit_mcp::{McpServerManager, exposed_tool_name};
use agentkit_testkit::{ScriptedModel, ScriptedSession, ScriptedTurn, error_kind, results_by_call};
use agentkit_tools_core::{
    AllowAllPermissions, QuestionKind, Tool, ToolContext, ToolError, ToolRegistry, ToolRequest,
    ToolResult, ToolSpec,
};
use common::{everything, within};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A local tool that sleeps a while: the round's other call.
struct Slow;

#[async_trait::async_trait]
impl Tool for Slow {
    fn spec(&self) -> Arc<ToolSpec> {
        Arc::new(ToolSpec::new("slow", "Sleeps.", json!({ "type": "object" })).unwrap())
    }

    async fn invoke(&self, _r: ToolRequest, _ctx: ToolContext) -> Result<ToolResult, ToolError> {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        Ok(ToolResult::new("slept"))
    }
}

/// Connected before the agent starts, so its elicitation tools (offered
/// only to a client that declares the capability) are in the catalog.
async fn manager() -> McpServerManager {
    manager_with(everything("everything")).await
}

async fn manager_with(config: agentkit_mcp::McpServerConfig) -> McpServerManager {
    let manager = McpServerManager::new();
    manager.register(config).unwrap();
    manager.route_elicitation_to_calls(true);
    let status = within(60, "connect", manager.connect("everything"))
        .await
        .unwrap();
    assert!(
        status.tools.iter().any(|t| t.contains("elicitation")),
        "{:?}",
        status.tools
    );
    manager
}

/// An agent whose model calls `tool` (with `arguments`) and `slow` in one
/// round, then answers.
fn agent(manager: &McpServerManager, tool: &str, arguments: Value) -> Agent<ScriptedModel> {
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .call("e", &exposed_tool_name("everything", tool), arguments)
            .call("s", "slow", json!({}))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("done"),
    ]);
    Agent::builder()
        .model(model)
        .add_tool_source(manager.source())
        .add_tool_source(ToolRegistry::new().with(Slow))
        .permissions(AllowAllPermissions)
        .task_manager(ConcurrentTaskManager::new(4))
        .input(vec![Item::user("go")])
        .build()
        .unwrap()
}

async fn question(driver: &mut LoopDriver<ScriptedSession>) -> PendingQuestion {
    match within(60, "the question", driver.next()).await.unwrap() {
        LoopStep::Interrupt(LoopInterrupt::Question(pending)) => pending,
        other => panic!("expected a question, got {other:?}"),
    }
}

/// Runs to the end of the turn; the results by call id.
async fn finish(
    driver: &mut LoopDriver<ScriptedSession>,
) -> std::collections::HashMap<String, agentkit_core::ToolResultPart> {
    loop {
        match within(60, "the turn", driver.next()).await.unwrap() {
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
            LoopStep::Finished(_) => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    let transcript = driver.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    results_by_call(&transcript)
}

fn content(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[tokio::test]
async fn an_accepted_form_resumes_the_call_with_its_defaults_while_the_other_call_ran() {
    let manager = manager().await;
    let agent = agent(&manager, "trigger-elicitation-request", json!({}));
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let pending = question(&mut driver).await;
    assert_eq!(pending.call.id.as_str(), "e");
    assert_eq!(pending.question.source, "everything");
    assert!(matches!(pending.question.kind, QuestionKind::Form { .. }));
    // `integer` must be an integer: refused, typed, and nothing is sent.
    let refused = pending.clone().accept(
        &mut driver,
        content(json!({ "name": "Ada", "integer": "many" })),
    );
    assert!(
        matches!(
            refused,
            Err(LoopError::InvalidState(
                InvalidStateReason::InvalidAnswer { .. }
            ))
        ),
        "{refused:?}"
    );
    pending
        .accept(
            &mut driver,
            content(json!({ "name": "Ada Lovelace", "check": true })),
        )
        .unwrap();
    let results = finish(&mut driver).await;
    let text = results["e"].output.to_text();
    assert!(text.contains("- Name: Ada Lovelace"), "{text}");
    // Not given by the host: the schema's defaults.
    assert!(text.contains("- Favorite Integer: 42"), "{text}");
    assert_eq!(results["s"].output.to_text(), "slept", "the other call ran");
    manager.disconnect_all().await;
}

/// The call's deadline measures the server, not the user: a question
/// answered after longer than the whole deadline still completes the call
/// (the clock stops while the question is open and runs on after it).
#[tokio::test]
async fn the_call_deadline_stops_while_the_user_answers() {
    let deadline = std::time::Duration::from_secs(4);
    let manager = manager_with(everything("everything").call_timeout(deadline)).await;
    let agent = agent(&manager, "trigger-elicitation-request", json!({}));
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let pending = question(&mut driver).await;
    // The user takes longer than the deadline to answer.
    tokio::time::sleep(deadline + std::time::Duration::from_secs(2)).await;
    pending
        .accept(&mut driver, content(json!({ "name": "Ada Lovelace" })))
        .unwrap();
    let results = finish(&mut driver).await;
    let text = results["e"].output.to_text();
    assert!(!results["e"].is_error, "{text}");
    assert!(text.contains("- Name: Ada Lovelace"), "{text}");
}

#[tokio::test]
async fn decline_and_cancel_reach_the_server() {
    for (decline, expected) in [(true, "declined"), (false, "cancelled")] {
        let manager = manager().await;
        let agent = agent(&manager, "trigger-elicitation-request", json!({}));
        let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
        let pending = question(&mut driver).await;
        if decline {
            pending.decline(&mut driver).unwrap();
        } else {
            pending.cancel(&mut driver).unwrap();
        }
        let text = finish(&mut driver).await["e"].output.to_text();
        assert!(text.contains(expected), "{text}");
        manager.disconnect_all().await;
    }
}

#[tokio::test]
async fn a_url_question_shows_its_url_and_an_accept_reaches_the_server() {
    let manager = manager().await;
    let agent = agent(
        &manager,
        "trigger-url-elicitation",
        json!({ "url": "https://example.com/consent", "elicitationId": "e-1" }),
    );
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let pending = question(&mut driver).await;
    assert_eq!(
        pending.question.kind,
        QuestionKind::Url {
            url: "https://example.com/consent".into(),
            id: "e-1".into()
        }
    );
    pending.accept(&mut driver, Map::new()).unwrap();
    let text = finish(&mut driver).await["e"].output.to_text();
    assert!(text.to_lowercase().contains("accept"), "{text}");
    manager.disconnect_all().await;
}

#[tokio::test]
async fn a_session_resumed_from_a_snapshot_at_the_question_stays_valid() {
    let manager = manager().await;
    let agent = agent(&manager, "trigger-elicitation-request", json!({}));
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let _pending = question(&mut driver).await;
    let snapshot = driver.snapshot();
    // The process "crashes": the call in flight is gone with it.
    drop(driver);
    let mut resumed = agent
        .resume(SessionConfig::new("s"), snapshot)
        .await
        .unwrap();
    let results = finish(&mut resumed).await;
    assert_eq!(error_kind(&results["e"]), Some("interrupted"));
    assert_eq!(results["s"].output.to_text(), "slept");
    manager.disconnect_all().await;
}

#[tokio::test]
async fn outside_the_loop_without_a_handler_the_request_is_declined() {
    let manager = manager().await;
    let result = within(
        60,
        "a call outside the loop",
        manager.call_tool(
            "everything",
            "trigger-elicitation-request",
            json!({}),
            ToolContext::new("c"),
        ),
    )
    .await
    .unwrap();
    assert!(result.output.to_text().contains("declined"), "{result:?}");
    manager.disconnect_all().await;
}
