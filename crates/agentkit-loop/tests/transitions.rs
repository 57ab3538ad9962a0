//! Invalid transitions, regressions, observers and drop safety.

mod support;

use agentkit_core::{FinishReason, Item, ToolCallId, validate_transcript};
use agentkit_loop::{
    Agent, AgentEvent, ConcurrentTaskManager, LoopDriver, LoopError, LoopInterrupt, LoopStep,
    ModelError, ModelErrorKind, SessionConfig, SimpleTaskManager,
};
use agentkit_testkit::{ScriptedModel, ScriptedSession, ScriptedTurn};
use agentkit_tools_core::ApprovalDecision;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::*;

type Driver = LoopDriver<ScriptedSession>;

async fn finish(driver: &mut Driver) -> agentkit_loop::TurnResult {
    agentkit_testkit::run_to_finish(
        driver,
        agentkit_testkit::Approvals::decide(|p| panic!("unexpected approval {p:?}")),
    )
    .await
    .unwrap()
    .result
}

#[test]
fn build_without_a_model_fails() {
    let err = Agent::<ScriptedModel>::builder().build().err().unwrap();
    assert!(matches!(err, LoopError::Config(_)));
}

#[tokio::test]
async fn next_with_an_unresolved_approval_is_invalid_state() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "danger", json!({})),
        ScriptedTurn::text("ok"),
    ]);
    let mut driver = danger_driver(&model, Arc::default(), false).await;
    assert!(matches!(
        driver.next().await.unwrap(),
        LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(_))
    ));
    let err = driver.next().await.unwrap_err();
    assert!(matches!(err, LoopError::InvalidState(_)), "{err}");
    // Still resolvable afterwards.
    driver
        .resolve_approval_for(ToolCallId::new("c1"), ApprovalDecision::Approve)
        .unwrap();
    finish(&mut driver).await;
}

#[tokio::test]
async fn resolving_without_a_pending_approval_is_invalid_state() {
    let model = ScriptedModel::new([ScriptedTurn::text("ok")]);
    let mut driver = danger_driver(&model, Arc::default(), false).await;
    let err = driver
        .resolve_approval_for(ToolCallId::new("c1"), ApprovalDecision::Approve)
        .unwrap_err();
    assert!(matches!(err, LoopError::InvalidState(_)));
}

#[tokio::test]
async fn resolving_an_unknown_call_or_twice_is_invalid_state() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "danger", json!({})),
        ScriptedTurn::text("ok"),
    ]);
    let mut driver = danger_driver(&model, Arc::default(), false).await;
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(_)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    let err = driver
        .resolve_approval_for(ToolCallId::new("nope"), ApprovalDecision::Approve)
        .unwrap_err();
    assert!(matches!(err, LoopError::InvalidState(_)));
    driver
        .resolve_approval_for(ToolCallId::new("c1"), ApprovalDecision::Approve)
        .unwrap();
    let err = driver
        .resolve_approval_for(ToolCallId::new("c1"), ApprovalDecision::deny())
        .unwrap_err();
    assert!(matches!(err, LoopError::InvalidState(_)));
}

#[tokio::test]
async fn approving_under_the_concurrent_manager_keeps_the_result() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .call("a", "danger", json!({}))
            .call("b", "echo", json!({ "text": "b" }))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("ok"),
    ]);
    let mut driver = danger_driver(&model, runs.clone(), true).await;
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    pending.approve(&mut driver).unwrap();
    finish(&mut driver).await;
    let items = driver.transcript().to_vec();
    validate_transcript(&items).unwrap();
    let results: Vec<_> = items.iter().flat_map(Item::tool_results).collect();
    assert_eq!(results.len(), 2);
    assert_eq!(
        results[0].call_id.as_str(),
        "a",
        "results appended in call order"
    );
    assert!(!results[0].is_error);
    assert!(results[0].output.to_text().starts_with("did"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_tool_becomes_an_error_result_under_both_managers() {
    for concurrent in [false, true] {
        let model = ScriptedModel::new([
            ScriptedTurn::new()
                .call("p", "panics", json!({}))
                .call("e", "echo", json!({ "text": "x" }))
                .finish(FinishReason::ToolCall),
            ScriptedTurn::text("ok"),
        ]);
        let builder = Agent::builder()
            .model(model.clone())
            .add_tool_source(registry())
            .input(vec![Item::user("go")]);
        let builder = if concurrent {
            builder.task_manager(ConcurrentTaskManager::new(2))
        } else {
            builder.task_manager(SimpleTaskManager::new())
        };
        let mut driver = builder
            .build()
            .unwrap()
            .start(SessionConfig::new("s"))
            .await
            .unwrap();
        finish(&mut driver).await;
        let items = driver.transcript().to_vec();
        validate_transcript(&items).unwrap();
        let results: Vec<_> = items.iter().flat_map(Item::tool_results).collect();
        assert!(results[0].is_error);
        assert!(
            results[0].output.to_text().contains("the tool exploded"),
            "{:?}",
            results[0]
        );
        assert_eq!(results[1].output.to_text(), "echo: x");
    }
}

#[tokio::test(start_paused = true)]
async fn a_hanging_tool_times_out() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("h", "slow", json!({ "ms": 3_600_000 })),
        ScriptedTurn::text("ok"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .task_manager(ConcurrentTaskManager::new(2).with_timeout(Duration::from_secs(5)))
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    finish(&mut driver).await;
    let items = driver.transcript().to_vec();
    let result = items.iter().flat_map(Item::tool_results).next().unwrap();
    assert!(result.is_error);
    assert_eq!(result.metadata["agentkit.error_kind"], json!("timeout"));
}

#[tokio::test]
async fn a_tool_proposing_two_requests_is_asked_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "danger", json!({ "kinds": ["write", "delete"] })),
        ScriptedTurn::text("ok"),
    ]);
    let mut driver = danger_driver(&model, runs.clone(), false).await;
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    assert_eq!(
        pending.request.metadata["request_kinds"],
        json!(["danger.write", "danger.delete"])
    );
    pending.approve(&mut driver).unwrap();
    let step = driver.next().await.unwrap();
    assert!(
        matches!(step, LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))),
        "no second approval: {step:?}"
    );
    finish(&mut driver).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn unknown_tools_and_model_errors_leave_the_transcript_valid() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "no_such_tool", json!({})),
        ScriptedTurn::failing(
            ModelError::new(ModelErrorKind::RateLimited, "slow down").with_status(429),
        ),
        ScriptedTurn::new()
            .say("half")
            .fail(ModelError::new(ModelErrorKind::Protocol, "cut")),
        ScriptedTurn::text("finally"),
    ]);
    let events = EventLog::default();
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .observer(events.clone())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    let err = driver.next().await.unwrap_err();
    assert!(
        matches!(&err, LoopError::Model(e) if e.kind == ModelErrorKind::RateLimited && e.is_retryable())
    );
    let len = driver.transcript().len();
    let err = driver.next().await.unwrap_err();
    assert!(matches!(&err, LoopError::Model(e) if e.kind == ModelErrorKind::Protocol));
    assert_eq!(
        driver.transcript().len(),
        len,
        "a failed stream appends nothing"
    );
    let result = finish(&mut driver).await;
    assert_eq!(result.items.last().unwrap().text_content(), "finally");
    let items = driver.transcript().to_vec();
    validate_transcript(&items).unwrap();
    let first = items.iter().flat_map(Item::tool_results).next().unwrap();
    assert_eq!(first.metadata["agentkit.error_kind"], json!("not_found"));
    assert_eq!(
        events.names().iter().filter(|n| *n == "run_failed").count(),
        2
    );
}

#[tokio::test]
async fn observers_see_the_taxonomy_and_every_item_once_in_order() {
    let events = EventLog::default();
    let items = ItemLog::default();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({ "text": "x" })),
        ScriptedTurn::text("done"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .observer(events.clone())
        .transcript_observer(items.clone())
        .transcript(vec![Item::system("sys")])
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    finish(&mut driver).await;
    assert_eq!(
        events.names(),
        [
            "run_started",
            "input_accepted",
            "model_call_started",
            "tool_call_requested",
            "tool_started",
            "tool_result_received",
            "model_call_started",
            "content_delta",
            "content_delta",
            "content_delta",
            "turn_finished",
        ]
    );
    let seen = items.0.lock().unwrap().clone();
    let transcript = driver.transcript().to_vec();
    // The preloaded system item is passive; everything appended after it is observed once.
    assert_eq!(seen.len(), transcript.len() - 1);
    for (index, item) in &seen {
        assert_eq!(&transcript[*index], item);
    }
    assert!(seen.windows(2).all(|w| w[0].0 < w[1].0));
    let finished = events
        .0
        .lock()
        .unwrap()
        .iter()
        .any(|e| matches!(e, AgentEvent::TurnFinished { .. }));
    assert!(finished);
}

#[tokio::test]
async fn dropping_next_mid_tool_loses_no_call() {
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .call("c1", "echo", json!({ "text": "a" }))
            .call("c2", "slow", json!({ "ms": 60_000 }))
            .call("c3", "echo", json!({ "text": "c" }))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("done"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    // Give up on next() while the slow tool runs.
    let timed_out = tokio::time::timeout(Duration::from_millis(200), driver.next()).await;
    assert!(timed_out.is_err());
    let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    finish(&mut driver).await;
    let items = driver.transcript().to_vec();
    validate_transcript(&items).unwrap();
    let results: Vec<_> = items.iter().flat_map(Item::tool_results).collect();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0].output.to_text(), "echo: a");
    assert_eq!(
        results[1].metadata["agentkit.error_kind"],
        json!("interrupted")
    );
    assert_eq!(
        results[2].output.to_text(),
        "echo: c",
        "calls not started yet still run"
    );
}

#[tokio::test]
async fn catalog_changes_are_reported_at_the_next_model_call() {
    use agentkit_tools_core::{CatalogSnapshot, Tool, ToolSource};
    use std::sync::Mutex;

    struct Switchable(Mutex<CatalogSnapshot>);
    impl ToolSource for Switchable {
        fn name(&self) -> &str {
            "switchable"
        }
        fn snapshot(&self) -> CatalogSnapshot {
            self.0.lock().unwrap().clone()
        }
    }
    let source = Arc::new(Switchable(Mutex::new(CatalogSnapshot::new(
        0,
        vec![Arc::new(Echo) as Arc<dyn Tool>],
    ))));
    let events = EventLog::default();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({})),
        ScriptedTurn::text("done"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(source.clone())
        .observer(events.clone())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    *source.0.lock().unwrap() =
        CatalogSnapshot::new(1, vec![Arc::new(Echo) as Arc<dyn Tool>, Arc::new(Slow)]);
    finish(&mut driver).await;
    let change = events
        .0
        .lock()
        .unwrap()
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolCatalogChanged { change } => Some(change.clone()),
            _ => None,
        })
        .expect("a catalog change event");
    assert_eq!(change.added, vec!["slow"]);
    assert_eq!(model.requests()[1].available_tools.len(), 2);
}

struct WhoAmI;

#[async_trait::async_trait]
impl agentkit_tools_core::Tool for WhoAmI {
    fn spec(&self) -> Arc<agentkit_tools_core::ToolSpec> {
        spec("whoami")
    }

    async fn invoke(
        &self,
        _request: agentkit_tools_core::ToolRequest,
        ctx: agentkit_tools_core::ToolContext,
    ) -> Result<agentkit_tools_core::ToolResult, agentkit_tools_core::ToolError> {
        Ok(agentkit_tools_core::ToolResult::new(format!(
            "{} {} {}",
            ctx.session_id, ctx.turn_id, ctx.call_id
        )))
    }
}

#[tokio::test]
async fn tools_see_their_call_session_and_turn() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c7", "whoami", json!({})),
        ScriptedTurn::text("ok"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry().with(WhoAmI))
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("sess")).await.unwrap();
    finish(&mut driver).await;
    let items = driver.transcript().to_vec();
    let result = items.iter().flat_map(Item::tool_results).next().unwrap();
    assert_eq!(result.output.to_text(), "sess turn-0 c7");
}

#[tokio::test]
async fn next_turn_cache_overrides_the_session_default_once() {
    use agentkit_loop::{PromptCacheRequest, PromptCacheRetention};
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({})),
        ScriptedTurn::tool_call("c2", "echo", json!({})),
        ScriptedTurn::text("ok"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let session_default =
        PromptCacheRequest::automatic().with_retention(PromptCacheRetention::Short);
    let mut driver = agent
        .start(SessionConfig::new("s").with_cache(session_default.clone()))
        .await
        .unwrap();
    let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    let once = PromptCacheRequest::disabled().with_key("one-off");
    driver.set_next_turn_cache(once.clone()).unwrap();
    finish(&mut driver).await;
    let caches: Vec<_> = model.requests().iter().map(|r| r.cache.clone()).collect();
    assert_eq!(
        caches,
        vec![
            Some(session_default.clone()),
            Some(once),
            Some(session_default)
        ]
    );
}

#[tokio::test]
async fn a_failed_call_keeps_its_one_off_cache_request_for_the_retry() {
    use agentkit_loop::PromptCacheRequest;
    let model = ScriptedModel::new([
        ScriptedTurn::failing(ModelError::new(ModelErrorKind::Overloaded, "busy")),
        ScriptedTurn::text("ok"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let once = PromptCacheRequest::automatic().with_key("k");
    driver.set_next_turn_cache(once.clone()).unwrap();
    assert!(driver.next().await.is_err());
    finish(&mut driver).await;
    let caches: Vec<_> = model.requests().iter().map(|r| r.cache.clone()).collect();
    assert_eq!(caches, vec![Some(once.clone()), Some(once)]);
}

/// A model whose stream notices the interrupt first: it issues it and
/// reports `Cancelled` in the same poll, before the driver's own check.
struct RacingModel(agentkit_core::CancellationController);
struct RacingSession(agentkit_core::CancellationController);
struct RacingTurn(agentkit_core::CancellationController, bool);

#[async_trait::async_trait]
impl agentkit_loop::ModelAdapter for RacingModel {
    type Session = RacingSession;
    async fn start_session(&self, _config: SessionConfig) -> Result<RacingSession, ModelError> {
        Ok(RacingSession(self.0.clone()))
    }
}

#[async_trait::async_trait]
impl agentkit_loop::ModelSession for RacingSession {
    type Turn = RacingTurn;
    async fn begin_turn(
        &mut self,
        _request: agentkit_loop::TurnRequest,
    ) -> Result<RacingTurn, ModelError> {
        Ok(RacingTurn(self.0.clone(), false))
    }
}

impl agentkit_loop::ModelTurn for RacingTurn {
    fn poll_next_event(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<Option<agentkit_loop::ModelTurnEvent>, ModelError>> {
        if !self.1 {
            self.1 = true;
            return std::task::Poll::Ready(Ok(Some(agentkit_loop::ModelTurnEvent::Delta(
                agentkit_core::Delta::BeginPart {
                    part_id: "p".into(),
                    kind: agentkit_core::PartKind::Text,
                },
            ))));
        }
        self.0.interrupt();
        std::task::Poll::Ready(Err(ModelError::new(
            ModelErrorKind::Cancelled,
            "the request was aborted",
        )))
    }
}

#[tokio::test]
async fn an_adapter_reporting_the_cancellation_first_still_ends_the_turn_as_cancelled() {
    let controller = agentkit_core::CancellationController::new();
    let agent = Agent::builder()
        .model(RacingModel(controller.clone()))
        .cancellation(controller.handle())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!()
    };
    assert_eq!(result.finish_reason, FinishReason::Cancelled);
    validate_transcript(&driver.transcript().to_vec()).unwrap();
}
