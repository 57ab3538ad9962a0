//! Every stop path keeps real results: urgent messages, cancellation and a
//! dropped `next()` under the concurrent task manager, panics in every trait
//! method the driver calls, untrusted tool-call ids, cancellation while an
//! approval is pending, abandoning a turn, and soft-interrupt handles across
//! a resume. Time is tokio's paused clock, so every schedule is reproducible.

mod support;

use agentkit_core::{
    CancellationController, FinishReason, Item, ItemKind, Part, ToolCallPart, ToolResultPart,
    validate_transcript,
};
use agentkit_loop::{
    Agent, AgentEvent, ConcurrentTaskManager, InvalidStateReason, LoopError, LoopInterrupt,
    LoopMutator, LoopObserver, LoopStep, ModelError, ModelErrorKind, MutationContext,
    SessionConfig, SoftInterruptPoint, TranscriptView,
};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tools_core::{
    PermissionChecker, PermissionDecision, PermissionRequest, Tool, ToolContext, ToolError,
    ToolRequest, ToolResult, ToolSpec,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::*;

/// Sleeps `input.ms` (paused clock) and counts how often each call id ran.
#[derive(Clone, Default)]
struct CountingSlow {
    runs: Arc<Mutex<HashMap<String, usize>>>,
}

#[async_trait::async_trait]
impl Tool for CountingSlow {
    fn spec(&self) -> Arc<ToolSpec> {
        spec("slow")
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        *self
            .runs
            .lock()
            .unwrap()
            .entry(request.call_id.to_string())
            .or_default() += 1;
        let ms = request.input["ms"].as_u64().unwrap_or(10);
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(ms)) => Ok(ToolResult::new(format!("slept {ms}ms"))),
            _ = ctx.cancellation.cancelled() => Err(ToolError::Cancelled),
        }
    }
}

/// `[slow 3 s, echo, slow 3 s]` in one answer, then a closing text.
fn three_calls() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedTurn::new()
            .call("a", "slow", json!({ "ms": 3000 }))
            .call("b", "echo", json!({ "text": "x" }))
            .call("c", "slow", json!({ "ms": 3000 }))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("done"),
    ])
}

use agentkit_testkit::{error_kind, results_by_call as results};

async fn concurrent_driver(
    model: &ScriptedModel,
    slow: CountingSlow,
    events: EventLog,
    cancellation: Option<&CancellationController>,
) -> agentkit_loop::LoopDriver<agentkit_testkit::ScriptedSession> {
    let mut builder = Agent::builder()
        .model(model.clone())
        .add_tool_source(
            agentkit_tools_core::ToolRegistry::new()
                .with(Echo)
                .with(slow),
        )
        .task_manager(ConcurrentTaskManager::new(4))
        .observer(events)
        .input(vec![Item::user("go")]);
    if let Some(controller) = cancellation {
        builder = builder.cancellation(controller.handle());
    }
    builder
        .build()
        .unwrap()
        .start(SessionConfig::new("s"))
        .await
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn urgent_message_keeps_results_of_calls_that_finished() {
    let model = three_calls();
    let events = EventLog::default();
    let mut driver = concurrent_driver(&model, CountingSlow::default(), events.clone(), None).await;
    let queue = driver.soft_interrupts();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        queue.push_urgent(Item::user("stop, do this instead"));
    });
    let step = driver.next().await.unwrap();
    assert!(matches!(
        step,
        LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))
    ));
    let transcript = driver.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    let results = results(&transcript);
    assert_eq!(results["b"].output.to_text(), "echo: x", "echo really ran");
    assert!(!results["b"].is_error);
    assert_eq!(error_kind(&results["a"]), Some("skipped"));
    assert_eq!(error_kind(&results["c"]), Some("skipped"));
    let skipped: Vec<usize> = events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::SoftInterruptInjected {
                point: SoftInterruptPoint::BetweenTools,
                skipped_tools,
                ..
            } => Some(*skipped_tools),
            _ => None,
        })
        .collect();
    assert_eq!(skipped, vec![2], "exactly the unfinished calls are skipped");
}

#[tokio::test(start_paused = true)]
async fn cancellation_keeps_results_of_calls_that_finished() {
    let model = three_calls();
    let controller = CancellationController::new();
    let mut driver = concurrent_driver(
        &model,
        CountingSlow::default(),
        EventLog::default(),
        Some(&controller),
    )
    .await;
    let cancel = controller.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.interrupt();
    });
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!("the turn should end")
    };
    assert_eq!(result.finish_reason, FinishReason::Cancelled);
    let transcript = driver.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    let results = results(&transcript);
    assert_eq!(results["b"].output.to_text(), "echo: x");
    assert_eq!(error_kind(&results["a"]), Some("cancelled"));
    assert_eq!(error_kind(&results["c"]), Some("cancelled"));
}

#[tokio::test(start_paused = true)]
async fn dropped_next_loses_nothing_and_runs_nothing_twice() {
    let model = three_calls();
    let slow = CountingSlow::default();
    let mut driver = concurrent_driver(&model, slow.clone(), EventLog::default(), None).await;
    let dropped = tokio::time::timeout(Duration::from_millis(200), driver.next()).await;
    assert!(dropped.is_err(), "next() was still running the round");
    // The round goes on: echo's finished result is kept, the slow calls
    // that were still running are answered as interrupted, not run again.
    let step = driver.next().await.unwrap();
    assert!(matches!(
        step,
        LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))
    ));
    let transcript = driver.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    let results = results(&transcript);
    assert_eq!(results["b"].output.to_text(), "echo: x");
    assert_eq!(error_kind(&results["a"]), Some("interrupted"));
    assert_eq!(error_kind(&results["c"]), Some("interrupted"));
    let runs = slow.runs.lock().unwrap().clone();
    assert_eq!(runs.get("a"), Some(&1));
    assert_eq!(runs.get("c"), Some(&1));
}

#[tokio::test(start_paused = true)]
async fn snapshot_after_a_dropped_next_reports_running_calls_as_interrupted() {
    let model = three_calls();
    let slow = CountingSlow::default();
    let registry = || {
        agentkit_tools_core::ToolRegistry::new()
            .with(Echo)
            .with(slow.clone())
    };
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .task_manager(ConcurrentTaskManager::new(4))
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let _ = tokio::time::timeout(Duration::from_millis(200), driver.next()).await;
    let snapshot = driver.snapshot();
    drop(driver);
    let mut resumed = agent
        .resume(SessionConfig::new("s"), snapshot)
        .await
        .unwrap();
    resumed.next().await.unwrap();
    let transcript = resumed.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    let results = results(&transcript);
    assert_eq!(
        results["b"].output.to_text(),
        "echo: x",
        "finished result kept"
    );
    assert_eq!(error_kind(&results["a"]), Some("interrupted"));
    assert_eq!(error_kind(&results["c"]), Some("interrupted"));
    assert_eq!(
        slow.runs.lock().unwrap().get("a"),
        Some(&1),
        "not run twice"
    );
}

/// A tool whose every trait method can be told to panic.
struct Explosive {
    in_proposed_requests: bool,
}

#[async_trait::async_trait]
impl Tool for Explosive {
    fn spec(&self) -> Arc<ToolSpec> {
        spec("explosive")
    }

    fn proposed_requests(&self, _input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        if self.in_proposed_requests {
            panic!("proposed_requests exploded");
        }
        Ok(vec![PermissionRequest::custom("boom", "boom", json!({}))])
    }

    async fn invoke(&self, _r: ToolRequest, _c: ToolContext) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::new("fine"))
    }
}

struct PanickingChecker;

impl PermissionChecker for PanickingChecker {
    fn evaluate(&self, _request: &PermissionRequest) -> PermissionDecision {
        panic!("the checker exploded")
    }
}

struct PanickingMutator;

#[async_trait::async_trait]
impl LoopMutator for PanickingMutator {
    fn name(&self) -> &str {
        "panicky"
    }

    async fn mutate(
        &self,
        _ctx: &MutationContext,
        _transcript: TranscriptView,
    ) -> Result<Option<Vec<Item>>, agentkit_loop::MutateError> {
        panic!("the mutator exploded")
    }
}

struct PanickingObserver;

impl LoopObserver for PanickingObserver {
    fn handle_event(&self, _event: AgentEvent) {
        panic!("the observer exploded")
    }
}

fn explosive_agent(
    model: &ScriptedModel,
    in_proposed_requests: bool,
) -> agentkit_loop::AgentBuilder<ScriptedModel> {
    Agent::builder().model(model.clone()).add_tool_source(
        agentkit_tools_core::ToolRegistry::new().with(Explosive {
            in_proposed_requests,
        }),
    )
}

fn explosive_model() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedTurn::tool_call("e1", "explosive", json!({})),
        ScriptedTurn::text("after"),
    ])
}

#[tokio::test]
async fn a_panic_in_proposed_requests_becomes_an_error_result() {
    let model = explosive_model();
    let mut driver = start_go(explosive_agent(&model, true)).await;
    driver.next().await.unwrap();
    let transcript = driver.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    let result = &results(&transcript)["e1"];
    assert!(result.is_error);
    assert!(result.output.to_text().contains("panicked"), "{result:?}");
}

#[tokio::test]
async fn a_panic_in_the_permission_checker_becomes_an_error_result() {
    let model = explosive_model();
    let mut driver = start_go(explosive_agent(&model, false).permissions(PanickingChecker)).await;
    driver.next().await.unwrap();
    let transcript = driver.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    assert!(results(&transcript)["e1"].is_error);
}

#[tokio::test]
async fn a_panic_in_a_mutator_is_a_typed_error_and_the_driver_stays_usable() {
    let model = explosive_model();
    let mut driver = start_go(explosive_agent(&model, false).mutator(PanickingMutator)).await;
    let err = driver.next().await.unwrap_err();
    match err {
        LoopError::Mutator { mutator, error } => {
            assert_eq!(mutator, "panicky");
            assert!(matches!(error, agentkit_loop::MutatorError::Panicked(_)));
        }
        other => panic!("unexpected {other:?}"),
    }
    validate_transcript(&driver.transcript().to_vec()).unwrap();
}

#[tokio::test]
async fn a_panicking_observer_never_unwinds_out_of_next() {
    let model = ScriptedModel::new([ScriptedTurn::text("hello")]);
    let mut driver = start_go(
        Agent::builder()
            .model(model.clone())
            .observer(PanickingObserver),
    )
    .await;
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!()
    };
    assert_eq!(result.finish_reason, FinishReason::Completed);
}

#[tokio::test]
async fn repeated_tool_call_ids_are_made_unique() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("dup", "echo", json!({ "text": "1" })),
        ScriptedTurn::new()
            .call("dup", "echo", json!({ "text": "2" }))
            .call("dup", "echo", json!({ "text": "3" }))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("done"),
    ]);
    let mut driver = start_go(
        Agent::builder()
            .model(model.clone())
            .add_tool_source(registry()),
    )
    .await;
    let transcript = run_to_end(&mut driver, 10).await;
    let outputs: Vec<String> = transcript
        .iter()
        .flat_map(|i| i.parts.iter())
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some(r.output.to_text()),
            _ => None,
        })
        .collect();
    assert_eq!(outputs, ["echo: 1", "echo: 2", "echo: 3"]);
    let renamed: Vec<_> = transcript
        .iter()
        .flat_map(Item::tool_calls)
        .filter(|c| c.id.as_str() != "dup")
        .collect();
    assert_eq!(renamed.len(), 2);
    for call in renamed {
        assert_eq!(call.metadata["agentkit.original_call_id"], json!("dup"));
        assert!(
            call.id
                .as_str()
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{} fits every provider's id pattern",
            call.id
        );
    }
}

/// The starting transcript's call ids are collected once and shared by the
/// agent's sessions: each session still renames a repeated one, and a
/// session's own calls do not reach the others.
#[tokio::test]
async fn call_ids_of_the_starting_transcript_are_not_reused() {
    let model = ScriptedModel::per_session([
        ScriptedTurn::tool_call("old", "echo", json!({ "text": "1" })),
        ScriptedTurn::tool_call("new", "echo", json!({ "text": "2" })),
        ScriptedTurn::text("done"),
    ]);
    let agent = Agent::builder()
        .model(model)
        .add_tool_source(registry())
        .transcript(vec![
            Item::user("before"),
            Item::new(
                ItemKind::Assistant,
                vec![Part::ToolCall(ToolCallPart::new("old", "echo", json!({})))],
            ),
            Item::tool_result(ToolResultPart::success("old", "echo: 0")),
        ])
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    for session in ["a", "b"] {
        let mut driver = agent.start(SessionConfig::new(session)).await.unwrap();
        while !matches!(driver.next().await.unwrap(), LoopStep::Finished(_)) {}
        let transcript = driver.transcript().to_vec();
        validate_transcript(&transcript).unwrap();
        let ids: Vec<&str> = transcript
            .iter()
            .flat_map(Item::tool_calls)
            .map(|c| c.id.as_str())
            .collect();
        // "new" is new to each session, though the other one used it.
        assert_eq!(ids, ["old", "old_2", "new"], "session {session}");
    }
}

#[tokio::test]
async fn cancelling_while_an_approval_is_pending_ends_the_turn() {
    let model = ScriptedModel::new([ScriptedTurn::tool_call("d1", "danger", json!({}))]);
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = CancellationController::new();
    let mut driver = start_go(
        Agent::builder()
            .model(model.clone())
            .add_tool_source(registry().with(Danger { runs: runs.clone() }))
            .permissions(DangerNeedsApproval)
            .cancellation(controller.handle()),
    )
    .await;
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(_)) = driver.next().await.unwrap()
    else {
        panic!("expected an approval")
    };
    controller.interrupt();
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!("the cancelled turn should end")
    };
    assert_eq!(result.finish_reason, FinishReason::Cancelled);
    let transcript = driver.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    assert_eq!(error_kind(&results(&transcript)["d1"]), Some("cancelled"));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // The driver is usable: the next step asks for input.
    assert!(matches!(
        driver.next().await.unwrap(),
        LoopStep::Interrupt(LoopInterrupt::AwaitingInput(_))
    ));
}

#[tokio::test]
async fn abandoning_a_turn_after_an_unfixable_model_error() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({ "text": "x" })),
        ScriptedTurn::failing(ModelError::new(
            ModelErrorKind::ContextLengthExceeded,
            "too long",
        )),
        ScriptedTurn::text("fresh start"),
    ]);
    let events = EventLog::default();
    let mut driver = start_go(
        Agent::builder()
            .model(model.clone())
            .add_tool_source(registry())
            .observer(events.clone()),
    )
    .await;
    driver.next().await.unwrap();
    driver.soft_interrupts().push_text("typed meanwhile");
    let err = driver.next().await.unwrap_err();
    assert!(matches!(err, LoopError::Model(_)));
    let result = driver.abandon_turn("context too long").unwrap();
    assert_eq!(result.finish_reason, FinishReason::Error);
    assert_eq!(
        result.metadata["agentkit.abandon_reason"],
        json!("context too long")
    );
    validate_transcript(&driver.transcript().to_vec()).unwrap();
    assert_eq!(
        driver.soft_interrupts().pending().len(),
        1,
        "queued messages are kept"
    );
    assert!(
        events
            .0
            .lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, AgentEvent::TurnFinished { result } if result.finish_reason == FinishReason::Error))
    );
    // The queued message becomes the next input.
    let LoopStep::Finished(next) = driver.next().await.unwrap() else {
        panic!()
    };
    assert_eq!(next.items.last().unwrap().text_content(), "fresh start");
    // Nothing to abandon now.
    assert!(matches!(
        driver.abandon_turn("again"),
        Err(LoopError::InvalidState(
            InvalidStateReason::NoTurnInProgress
        ))
    ));
}

#[tokio::test]
async fn a_handle_taken_before_a_snapshot_keeps_working_after_resume() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("d1", "danger", json!({})),
        ScriptedTurn::text("done"),
    ]);
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry().with(Danger { runs }))
        .permissions(DangerNeedsApproval)
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let handle = driver.soft_interrupts();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(_)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    let snapshot = driver.snapshot();
    drop(driver);
    let mut resumed = agent
        .resume(SessionConfig::new("s"), snapshot)
        .await
        .unwrap();
    handle.push_text("pushed to the old handle");
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) =
        resumed.next().await.unwrap()
    else {
        panic!("the approval is surfaced again")
    };
    pending.approve(&mut resumed).unwrap();
    resumed.next().await.unwrap();
    let transcript = resumed.transcript().to_vec();
    assert!(
        transcript
            .iter()
            .any(|i| i.kind == ItemKind::User && i.text_content() == "pushed to the old handle"),
        "the message pushed to the old handle was injected"
    );
}
