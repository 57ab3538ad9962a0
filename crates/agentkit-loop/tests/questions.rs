//! A running call asking its host a question (`ToolContext::ask`): the
//! question pauses that call alone as `LoopInterrupt::Question` once the
//! round's other calls have run, the answer resumes the same call (it is not
//! run again), form content is checked against the schema with its defaults
//! filled in, a turn's cancellation and a resume after a crash leave a valid
//! transcript, and replay reproduces the session. Time is tokio's paused
//! clock.

mod support;

use agentkit_core::{CancellationController, FinishReason, Item, validate_transcript};
use agentkit_loop::{
    Agent, ConcurrentTaskManager, InvalidStateReason, LoopDriver, LoopError, LoopInterrupt,
    LoopStep, PendingQuestion, SessionConfig,
};
use agentkit_testkit::{ScriptedModel, ScriptedSession, ScriptedTurn, error_kind, results_by_call};
use agentkit_tools_core::{
    HostAnswer, HostQuestion, QuestionKind, Tool, ToolContext, ToolError, ToolRegistry,
    ToolRequest, ToolResult, ToolSpec,
};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::*;

/// Asks whom to greet, then greets; counts its runs.
#[derive(Clone, Default)]
struct Greet {
    runs: Arc<AtomicUsize>,
}

fn schema() -> Value {
    json!({ "type": "object", "properties": {
        "name": { "type": "string" },
        "greeting": { "type": "string", "default": "Hello" }
    }, "required": ["name"] })
}

#[async_trait::async_trait]
impl Tool for Greet {
    fn spec(&self) -> Arc<ToolSpec> {
        spec("greet")
    }

    async fn invoke(&self, _r: ToolRequest, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let answer = ctx
            .ask(HostQuestion::form("Whom should I greet?", schema()).from_source("greeter"))
            .await;
        Ok(ToolResult::new(match answer {
            HostAnswer::Accept(form) => format!(
                "{}, {}!",
                form["greeting"].as_str().unwrap_or("?"),
                form["name"].as_str().unwrap_or("?")
            ),
            HostAnswer::Decline => "declined".to_owned(),
            _ => "cancelled".to_owned(),
        }))
    }
}

/// Sleeps `input.ms` on the paused clock.
struct Slow;

#[async_trait::async_trait]
impl Tool for Slow {
    fn spec(&self) -> Arc<ToolSpec> {
        spec("slow")
    }

    async fn invoke(&self, r: ToolRequest, _ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let ms = r.input["ms"].as_u64().unwrap_or(10);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(ToolResult::new(format!("slept {ms}ms")))
    }
}

/// `[greet, slow 3 s]` in one answer, then a closing text.
fn model() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedTurn::new()
            .call("g", "greet", json!({}))
            .call("s", "slow", json!({ "ms": 3000 }))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("done"),
    ])
}

fn agent(greet: &Greet, cancellation: Option<&CancellationController>) -> Agent<ScriptedModel> {
    let mut builder = Agent::builder()
        .model(model())
        .add_tool_source(ToolRegistry::new().with(greet.clone()).with(Slow))
        .task_manager(ConcurrentTaskManager::new(4))
        .input(vec![Item::user("go")]);
    if let Some(controller) = cancellation {
        builder = builder.cancellation(controller.handle());
    }
    builder.build().unwrap()
}

fn form(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

async fn question(driver: &mut LoopDriver<ScriptedSession>) -> PendingQuestion {
    match driver.next().await.unwrap() {
        LoopStep::Interrupt(LoopInterrupt::Question(pending)) => pending,
        other => panic!("expected a question, got {other:?}"),
    }
}

/// Runs past `AfterToolResult` to the end of the turn; the transcript.
async fn finish(driver: &mut LoopDriver<ScriptedSession>) -> Vec<Item> {
    loop {
        match driver.next().await.unwrap() {
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
            LoopStep::Finished(_) => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    let transcript = driver.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    transcript
}

#[tokio::test(start_paused = true)]
async fn an_accepted_answer_resumes_the_same_call_after_the_others_ran() {
    let greet = Greet::default();
    let mut driver = agent(&greet, None)
        .start(SessionConfig::new("s"))
        .await
        .unwrap();
    driver.record_inputs();
    let pending = question(&mut driver).await;
    assert_eq!(pending.call.id.as_str(), "g");
    assert_eq!(pending.question.source, "greeter");
    assert!(matches!(pending.question.kind, QuestionKind::Form { .. }));
    // Blocking: next() refuses to go on while the question is open.
    assert!(matches!(
        driver.next().await,
        Err(LoopError::InvalidState(
            InvalidStateReason::QuestionPending { .. }
        ))
    ));
    // Content the schema refuses is not delivered; the question stays open.
    let refused = pending
        .clone()
        .accept(&mut driver, form(json!({ "name": 7 })));
    let Err(LoopError::InvalidState(InvalidStateReason::InvalidAnswer { call_id, error })) =
        refused
    else {
        panic!("expected a typed refusal, got {refused:?}")
    };
    assert_eq!(call_id.as_str(), "g");
    assert_eq!(
        error,
        agentkit_tools_core::FormError::WrongType {
            field: "name".into(),
            expected: "string".into()
        }
    );
    pending
        .accept(&mut driver, form(json!({ "name": "Ada" })))
        .unwrap();
    let transcript = finish(&mut driver).await;
    let results = results_by_call(&transcript);
    assert_eq!(
        results["g"].output.to_text(),
        "Hello, Ada!",
        "default filled in"
    );
    assert_eq!(
        results["s"].output.to_text(),
        "slept 3000ms",
        "the other call ran on"
    );
    assert_eq!(greet.runs.load(Ordering::SeqCst), 1, "not run again");
    // The recorded inputs replay to the same transcript.
    let log = driver.take_input_log().unwrap();
    let replay = agentkit_loop::replay::InputLog::from_json_lines(&log.to_json_lines())
        .unwrap()
        .replay()
        .unwrap();
    assert_eq!(replay.transcript, transcript);
}

#[tokio::test(start_paused = true)]
async fn decline_and_cancel_reach_the_call() {
    for (decline, expected) in [(true, "declined"), (false, "cancelled")] {
        let greet = Greet::default();
        let mut driver = agent(&greet, None)
            .start(SessionConfig::new("s"))
            .await
            .unwrap();
        let pending = question(&mut driver).await;
        if decline {
            pending.decline(&mut driver).unwrap();
        } else {
            pending.cancel(&mut driver).unwrap();
        }
        let transcript = finish(&mut driver).await;
        assert_eq!(results_by_call(&transcript)["g"].output.to_text(), expected);
        assert_eq!(greet.runs.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_turn_while_a_question_is_open_answers_it_as_cancelled() {
    let greet = Greet::default();
    let controller = CancellationController::new();
    let mut driver = agent(&greet, Some(&controller))
        .start(SessionConfig::new("s"))
        .await
        .unwrap();
    let pending = question(&mut driver).await;
    controller.interrupt();
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!("the cancelled turn should end")
    };
    assert_eq!(result.finish_reason, FinishReason::Cancelled);
    let transcript = driver.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    let results = results_by_call(&transcript);
    assert_eq!(error_kind(&results["g"]), Some("cancelled"));
    assert_eq!(results["s"].output.to_text(), "slept 3000ms");
    // The stale handle is refused; the driver is usable.
    assert!(matches!(
        pending.decline(&mut driver),
        Err(LoopError::InvalidState(
            InvalidStateReason::NoSuchQuestion { .. }
        ))
    ));
    assert!(matches!(
        driver.next().await.unwrap(),
        LoopStep::Interrupt(LoopInterrupt::AwaitingInput(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_session_resumed_from_a_snapshot_with_an_open_question_answers_it_as_interrupted() {
    let greet = Greet::default();
    let agent = agent(&greet, None);
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let pending = question(&mut driver).await;
    let snapshot = driver.snapshot();
    let saved = serde_json::to_value(&snapshot).unwrap().to_string();
    assert!(
        saved.contains("Whom should I greet?"),
        "the question is in the snapshot"
    );
    // The process "crashes": the waiting call is gone with it.
    drop(driver);
    let mut resumed = agent
        .resume(SessionConfig::new("s"), snapshot)
        .await
        .unwrap();
    let transcript = finish(&mut resumed).await;
    let results = results_by_call(&transcript);
    assert_eq!(error_kind(&results["g"]), Some("interrupted"));
    assert_eq!(results["s"].output.to_text(), "slept 3000ms");
    assert_eq!(greet.runs.load(Ordering::SeqCst), 1, "not run again");
    assert!(matches!(
        pending.decline(&mut resumed),
        Err(LoopError::InvalidState(
            InvalidStateReason::NoSuchQuestion { .. }
        ))
    ));
}

#[tokio::test]
async fn outside_a_loop_nobody_is_asked() {
    let greet = Greet::default();
    let result = greet
        .invoke(
            ToolRequest::new("g", "greet", json!({})),
            ToolContext::new("g"),
        )
        .await
        .unwrap();
    assert_eq!(result.output.to_text(), "declined");
}
