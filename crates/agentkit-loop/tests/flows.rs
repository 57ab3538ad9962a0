//! One transcript snapshot per host flow, through the real driver with a
//! scripted model.

mod support;

use agentkit_core::{CancellationController, FinishReason, Item, ItemKind, validate_transcript};
use agentkit_loop::{
    Agent, LoopDriver, LoopError, LoopInterrupt, LoopMutator, LoopSnapshot, LoopStep,
    MutationContext, SessionConfig, TranscriptView,
};
use agentkit_testkit::{ScriptedModel, ScriptedSession, ScriptedTurn, assert_transcript_snapshot};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::*;

type Driver = LoopDriver<ScriptedSession>;

async fn start(model: &ScriptedModel, input: &str) -> Driver {
    Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .transcript(vec![Item::system("be brief")])
        .input(vec![Item::user(input)])
        .build()
        .unwrap()
        .start(SessionConfig::new("s"))
        .await
        .unwrap()
}

/// Runs to `Finished`, passing through cooperative pauses; panics on approvals.
async fn run_to_finish(driver: &mut Driver) -> (agentkit_loop::TurnResult, usize) {
    let run = agentkit_testkit::run_to_finish(
        driver,
        agentkit_testkit::Approvals::decide(|p| panic!("unexpected approval {p:?}")),
    )
    .await
    .unwrap();
    (run.result, run.pauses)
}

fn transcript(driver: &Driver) -> Vec<Item> {
    let items = driver.transcript().to_vec();
    validate_transcript(&items).expect("the transcript stays valid");
    items
}

#[tokio::test]
async fn plain_reply() {
    let model = ScriptedModel::new([ScriptedTurn::new()
        .say_chunks(&["Hel", "lo"])
        .finish(FinishReason::Completed)]);
    let mut driver = start(&model, "hi").await;
    let (result, pauses) = run_to_finish(&mut driver).await;
    assert_eq!(pauses, 0);
    assert_eq!(result.finish_reason, FinishReason::Completed);
    assert_eq!(result.items.len(), 1);
    assert_transcript_snapshot!(&transcript(&driver));
    // The next next() asks for input.
    assert!(matches!(
        driver.next().await.unwrap(),
        LoopStep::Interrupt(LoopInterrupt::AwaitingInput(_))
    ));
}

/// An answer carries `agentkit.finish_reason` only when its content does
/// not say why it ended; `Item::finish_reason` reads both forms.
#[tokio::test]
async fn an_answer_keeps_a_finish_reason_its_content_does_not_say() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({ "text": "hi" })),
        ScriptedTurn::new()
            .say_chunks(&["The answer is"])
            .finish(FinishReason::MaxTokens),
    ]);
    let mut driver = start(&model, "go").await;
    let (result, _) = run_to_finish(&mut driver).await;
    assert_eq!(result.finish_reason, FinishReason::MaxTokens);
    let answers: Vec<Item> = transcript(&driver)
        .into_iter()
        .filter(|item| item.kind == ItemKind::Assistant)
        .collect();
    assert_eq!(answers.len(), 2);
    let stored = |item: &Item| serde_json::to_value(item).unwrap()["finish_reason"].clone();
    assert_eq!(stored(&answers[0]), json!(null), "implied by the call");
    assert_eq!(answers[0].finish_reason(), Some(FinishReason::ToolCall));
    assert_eq!(stored(&answers[1]), json!("max_tokens"));
    assert_eq!(answers[1].finish_reason(), Some(FinishReason::MaxTokens));
    assert!(answers.iter().all(|item| item.metadata.is_empty()));
}

#[tokio::test]
async fn one_tool_round() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({ "text": "hi" })),
        ScriptedTurn::text("done"),
    ]);
    let mut driver = start(&model, "go").await;
    let (result, pauses) = run_to_finish(&mut driver).await;
    assert_eq!(pauses, 1);
    assert_eq!(result.items.len(), 3, "call, result, answer");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1]
            .transcript
            .read()
            .last()
            .unwrap()
            .tool_results()
            .next()
            .unwrap()
            .output
            .to_text(),
        "echo: hi"
    );
    assert_eq!(requests[0].available_tools.len(), 3);
    assert_transcript_snapshot!(&transcript(&driver));
}

#[tokio::test]
async fn three_rounds_in_one_turn() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({ "text": "1" })),
        ScriptedTurn::tool_call("c2", "echo", json!({ "text": "2" })),
        ScriptedTurn::tool_call("c3", "echo", json!({ "text": "3" })),
        ScriptedTurn::text("done"),
    ]);
    let mut driver = start(&model, "go").await;
    let (result, pauses) = run_to_finish(&mut driver).await;
    assert_eq!(pauses, 3);
    assert_eq!(result.turn_id.as_str(), "turn-3");
    assert_transcript_snapshot!(&transcript(&driver));
}

#[tokio::test]
async fn approve() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "danger", json!({})),
        ScriptedTurn::text("ok"),
    ]);
    let mut driver = danger_driver(&model, runs.clone(), false).await;
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) = driver.next().await.unwrap()
    else {
        panic!("expected an approval")
    };
    assert!(LoopInterrupt::ApprovalRequest(pending.clone()).is_blocking());
    assert_eq!(pending.request.request_kind, "danger.write");
    assert_eq!(pending.request.id.as_str(), "approval:c1");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "nothing runs before approval"
    );
    pending.approve(&mut driver).unwrap();
    run_to_finish(&mut driver).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_transcript_snapshot!(&transcript(&driver));
}

#[tokio::test]
async fn deny_with_reason() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "danger", json!({})),
        ScriptedTurn::text("ok"),
    ]);
    let mut driver = danger_driver(&model, runs.clone(), false).await;
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) = driver.next().await.unwrap()
    else {
        panic!("expected an approval")
    };
    pending
        .deny_with_reason(&mut driver, "not on a Friday")
        .unwrap();
    run_to_finish(&mut driver).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let items = transcript(&driver);
    let result = items.iter().flat_map(Item::tool_results).next().unwrap();
    assert!(result.is_error);
    assert!(result.output.to_text().contains("not on a Friday"));
    assert_transcript_snapshot!(&items);
}

#[tokio::test]
async fn three_approvals_approve_deny_auto() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .call("a", "danger", json!({ "kinds": ["write"] }))
            .call("b", "danger", json!({ "kinds": ["delete"] }))
            .call("c", "danger", json!({ "kinds": ["read"] }))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("ok"),
    ]);
    let mut driver = danger_driver(&model, runs.clone(), false).await;
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(first)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    assert_eq!(first.call.id.as_str(), "a", "surfaced in emission order");
    first.approve(&mut driver).unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(second)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    assert_eq!(second.call.id.as_str(), "b");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "no tool runs until every approval is resolved"
    );
    second.deny(&mut driver).unwrap();
    run_to_finish(&mut driver).await;
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "a (approved) and c (auto) ran"
    );
    assert_transcript_snapshot!(&transcript(&driver));
}

#[tokio::test]
async fn after_tool_result_with_and_without_submit() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({ "text": "1" })),
        ScriptedTurn::tool_call("c2", "echo", json!({ "text": "2" })),
        ScriptedTurn::text("done"),
    ]);
    let mut driver = start(&model, "go").await;
    let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(info)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    assert!(!LoopInterrupt::AfterToolResult(info.clone()).is_blocking());
    assert_eq!(info.transcript_len, 4);
    info.submit(&mut driver, vec![Item::user("also: be concise")])
        .unwrap();
    // Second pause: ignored.
    let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    run_to_finish(&mut driver).await;
    let second_request = &model.requests()[1];
    assert_eq!(
        second_request
            .transcript
            .read()
            .last()
            .unwrap()
            .text_content(),
        "also: be concise"
    );
    assert_transcript_snapshot!(&transcript(&driver));
}

#[tokio::test]
async fn awaiting_input_without_preload_then_after_finish() {
    let model = ScriptedModel::new([ScriptedTurn::text("one"), ScriptedTurn::text("two")]);
    let agent = Agent::builder().model(model.clone()).build().unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    assert!(model.requests().is_empty(), "no model call without input");
    request
        .submit(&mut driver, vec![Item::user("first")])
        .unwrap();
    run_to_finish(&mut driver).await;
    let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    request
        .submit(&mut driver, vec![Item::user("second")])
        .unwrap();
    run_to_finish(&mut driver).await;
    assert_transcript_snapshot!(&transcript(&driver));
}

#[tokio::test]
async fn one_agent_starts_many_sessions() {
    let model = ScriptedModel::new([ScriptedTurn::text("a"), ScriptedTurn::text("b")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(vec![Item::user("hi")])
        .build()
        .unwrap();
    let mut one = agent.start(SessionConfig::new("one")).await.unwrap();
    let mut two = agent.start(SessionConfig::new("two")).await.unwrap();
    run_to_finish(&mut one).await;
    run_to_finish(&mut two).await;
    assert_eq!(one.transcript().len(), 2);
    assert_eq!(two.transcript().len(), 2);
    assert_eq!(two.session_id().as_str(), "two");
}

#[tokio::test(start_paused = true)]
async fn cancellation_mid_stream_keeps_partial_text_and_driver_usable() {
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .say("partial")
            .delay(Duration::from_secs(60))
            .say("never")
            .finish(FinishReason::Completed),
        ScriptedTurn::text("recovered"),
    ]);
    let controller = CancellationController::new();
    let agent = Agent::builder()
        .model(model.clone())
        .cancellation(controller.handle())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let canceller = {
        let controller = controller.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            controller.interrupt();
        })
    };
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!()
    };
    canceller.await.unwrap();
    assert_eq!(result.finish_reason, FinishReason::Cancelled);
    assert_eq!(result.metadata["agentkit.interrupted"], json!(true));
    assert_eq!(
        result.metadata["agentkit.interrupt_reason"],
        json!("user_cancelled")
    );
    let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    request
        .submit(&mut driver, vec![Item::user("again")])
        .unwrap();
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!()
    };
    assert_eq!(
        result.finish_reason,
        FinishReason::Completed,
        "a fresh checkpoint is not cancelled"
    );
    assert_transcript_snapshot!(&transcript(&driver));
}

#[tokio::test(start_paused = true)]
async fn cancellation_mid_tool_answers_every_open_call() {
    let model = ScriptedModel::new([ScriptedTurn::new()
        .call("c1", "echo", json!({ "text": "fast" }))
        .call("c2", "slow", json!({ "ms": 60_000 }))
        .call("c3", "echo", json!({ "text": "never" }))
        .finish(FinishReason::ToolCall)]);
    let controller = CancellationController::new();
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .cancellation(controller.handle())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        controller.interrupt();
    });
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!()
    };
    canceller.await.unwrap();
    assert_eq!(result.finish_reason, FinishReason::Cancelled);
    let items = transcript(&driver);
    let results: Vec<_> = items.iter().flat_map(Item::tool_results).collect();
    assert_eq!(results.len(), 3);
    assert!(!results[0].is_error);
    assert!(results[1].is_error && results[2].is_error);
    assert_transcript_snapshot!(&items);
}

struct DropOldToolOutput;

#[async_trait::async_trait]
impl LoopMutator for DropOldToolOutput {
    fn name(&self) -> &str {
        "redact"
    }

    async fn mutate(
        &self,
        _ctx: &MutationContext,
        transcript: TranscriptView,
    ) -> Result<Option<Vec<Item>>, agentkit_loop::MutateError> {
        let mut items = transcript.to_vec();
        let mut changed = false;
        for item in items.iter_mut().filter(|i| i.kind == ItemKind::Tool) {
            for part in &mut item.parts {
                if let agentkit_core::Part::ToolResult(result) = part
                    && result.output.to_text().contains("secret")
                {
                    result.output = "[redacted]".into();
                    changed = true;
                }
            }
        }
        Ok(changed.then_some(items))
    }
}

struct BreakPairing;

#[async_trait::async_trait]
impl LoopMutator for BreakPairing {
    fn name(&self) -> &str {
        "breaker"
    }

    async fn mutate(
        &self,
        _ctx: &MutationContext,
        transcript: TranscriptView,
    ) -> Result<Option<Vec<Item>>, agentkit_loop::MutateError> {
        let mut items = transcript.to_vec();
        items.retain(|i| i.kind != ItemKind::Tool);
        Ok(Some(items))
    }
}

#[tokio::test]
async fn mutator_rewrite_is_seen_by_the_next_model_call() {
    let events = EventLog::default();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({ "text": "secret" })),
        ScriptedTurn::text("done"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .mutator(DropOldToolOutput)
        .observer(events.clone())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    run_to_finish(&mut driver).await;
    let seen = model.requests()[1].transcript.to_vec();
    assert_eq!(
        seen.last()
            .unwrap()
            .tool_results()
            .next()
            .unwrap()
            .output
            .to_text(),
        "[redacted]"
    );
    let names = events.names();
    assert!(names.contains(&"mutation_finished".to_owned()));
    use agentkit_loop::MutationPoint::*;
    let dirty: Vec<(agentkit_loop::MutationPoint, bool)> = events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            agentkit_loop::AgentEvent::MutationFinished { point, dirty, .. } => {
                Some((*point, *dirty))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        dirty,
        vec![
            (BeforeModelCall, false),
            (AfterToolResult, true),
            (BeforeModelCall, false),
            (AfterTurnEnded, false)
        ],
        "dirty after the tool round, clean before each model call and after the turn"
    );
    assert_transcript_snapshot!(&transcript(&driver));
}

#[tokio::test]
async fn a_mutator_that_breaks_pairing_is_an_error() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({})),
        ScriptedTurn::text("x"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .mutator(BreakPairing)
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let err = driver.next().await.unwrap_err();
    assert!(
        matches!(err, LoopError::Mutator { ref mutator, .. } if mutator == "breaker"),
        "{err}"
    );
    validate_transcript(&driver.transcript().to_vec()).expect("the rejected rewrite was not kept");
}

#[tokio::test]
async fn snapshot_to_json_and_resume_with_a_pending_approval() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "danger", json!({ "x": 1 })),
        ScriptedTurn::text("ok"),
    ]);
    let mut driver = danger_driver(&model, runs.clone(), false).await;
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(_)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    let json = serde_json::to_string(&driver.snapshot()).unwrap();
    drop(driver);

    let snapshot: LoopSnapshot = serde_json::from_str(&json).unwrap();
    assert_eq!(snapshot.pending_approvals().count(), 1);
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry().with(Danger { runs: runs.clone() }))
        .permissions(DangerNeedsApproval)
        .build()
        .unwrap();
    let mut resumed = agent
        .resume(SessionConfig::new("s"), snapshot.clone())
        .await
        .unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) =
        resumed.next().await.unwrap()
    else {
        panic!("the pending approval is surfaced again")
    };
    assert_eq!(pending.call.id.as_str(), "c1");
    pending.approve(&mut resumed).unwrap();
    run_to_finish(&mut resumed).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_transcript_snapshot!(&transcript(&resumed));

    // Refused: unknown version, missing tool, tampered arguments.
    let mut old = snapshot.clone();
    old.version = 99;
    let err = agent
        .resume(SessionConfig::new("s"), old)
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("version 99"), "{err}");
    let without_tool = Agent::builder().model(model.clone()).build().unwrap();
    let err = without_tool
        .resume(SessionConfig::new("s"), snapshot.clone())
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("no longer available"), "{err}");
    let mut tampered = snapshot;
    tampered.round[0].arguments_hash = "fnv1a64:0".into();
    let err = agent
        .resume(SessionConfig::new("s"), tampered)
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("no longer matches"), "{err}");
}

#[tokio::test]
async fn a_snapshots_next_turn_id_is_the_id_the_driver_gives_its_next_model_call() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({ "text": "a" })),
        ScriptedTurn::text("done"),
    ]);
    let events = EventLog::default();
    let mut driver = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .observer(events.clone())
        .input(vec![Item::user("go")])
        .build()
        .unwrap()
        .start(SessionConfig::new("s"))
        .await
        .unwrap();
    let before = driver.snapshot().next_turn_id();
    // The tool round pauses for the host once, then the answer finishes.
    let step = driver.next().await.unwrap();
    assert!(
        matches!(step, LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))),
        "{step:?}"
    );
    let step = driver.next().await.unwrap();
    assert!(matches!(step, LoopStep::Finished(_)), "{step:?}");
    let started: Vec<_> = events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            agentkit_loop::AgentEvent::ModelCallStarted { turn_id, .. } => Some(turn_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(started.len(), 2, "a tool round, then the answer");
    assert_eq!(started[0], before);
    let after = driver.snapshot().next_turn_id();
    assert!(!started.contains(&after), "{after} was used already");
    assert_eq!(after.as_str(), "turn-2");
}
