//! Property test: random schedules of model turns, tool failures, approvals,
//! stream errors, cancellations and soft-interrupt pushes from another task.
//! After every step the transcript is valid, and every pushed message is in
//! the transcript exactly once or still queued. Each schedule is recorded
//! as an input log, and replaying the log (after a round trip through JSON
//! lines) reproduces the transcript and every event (the tools' progress
//! included) byte for byte.

mod support;

use agentkit_core::ApprovalId;
use agentkit_core::{
    CancellationController, FinishReason, Item, ItemKind, ToolResultPart, open_tool_calls,
    validate_transcript,
};
use agentkit_loop::{
    Agent, ConcurrentTaskManager, LoopError, LoopInterrupt, LoopStep, ModelError, ModelErrorKind,
    SessionConfig, SoftInterruptHandle,
};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tools_core::{
    ApprovalReason, ApprovalRequest, Tool, ToolContext, ToolError, ToolRequest, ToolResult,
    ToolSpec,
};
use proptest::prelude::*;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;
use support::*;

/// Always fails.
struct Fails;

#[async_trait::async_trait]
impl Tool for Fails {
    fn spec(&self) -> Arc<ToolSpec> {
        spec("fails")
    }

    async fn invoke(
        &self,
        _request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        Err(ToolError::ExecutionFailed("disk full".into()))
    }
}

/// Pauses mid-run for an approval (as a sub-agent does for its child's
/// call), then answers with the host's decision when run again.
struct Pauses;

#[async_trait::async_trait]
impl Tool for Pauses {
    fn spec(&self) -> Arc<ToolSpec> {
        spec("pauses")
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        match ctx.resume {
            Some(resume) => Ok(ToolResult::new(format!("resumed: {:?}", resume.decision))),
            None => Err(ToolError::NeedsApproval(Box::new(ApprovalRequest {
                task_id: None,
                call_id: None,
                id: ApprovalId::new(format!("inner-{}", request.call_id)),
                request_kind: "custom.inner".into(),
                reason: ApprovalReason::PolicyRequiresConfirmation,
                summary: "an inner step".into(),
                metadata: Default::default(),
            }))),
        }
    }
}

#[derive(Clone, Debug)]
enum CallPlan {
    Echo,
    Slow(u64),
    Fails,
    Danger,
    Panics,
    Pauses,
}

#[derive(Clone, Debug)]
enum TurnPlan {
    Text,
    Tools(Vec<CallPlan>),
    BeginError,
    StreamError,
}

#[derive(Clone, Debug)]
struct Push {
    after_ms: u64,
    urgent: bool,
}

#[derive(Clone, Debug)]
struct Case {
    turns: Vec<TurnPlan>,
    pushes: Vec<Push>,
    approvals: Vec<bool>,
    cancel_at_step: Option<usize>,
    submit_at_pause: Vec<bool>,
    concurrent: bool,
}

fn call_plan() -> impl Strategy<Value = CallPlan> {
    prop_oneof![
        3 => Just(CallPlan::Echo),
        2 => (1u64..40).prop_map(CallPlan::Slow),
        1 => Just(CallPlan::Fails),
        2 => Just(CallPlan::Danger),
        1 => Just(CallPlan::Panics),
        1 => Just(CallPlan::Pauses),
    ]
}

fn turn_plan() -> impl Strategy<Value = TurnPlan> {
    prop_oneof![
        2 => Just(TurnPlan::Text),
        5 => proptest::collection::vec(call_plan(), 1..=4).prop_map(TurnPlan::Tools),
        1 => Just(TurnPlan::BeginError),
        1 => Just(TurnPlan::StreamError),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec(turn_plan(), 1..8),
        proptest::collection::vec(
            (0u64..120, any::<bool>()).prop_map(|(after_ms, urgent)| Push { after_ms, urgent }),
            0..4,
        ),
        proptest::collection::vec(any::<bool>(), 8),
        proptest::option::weighted(0.25, 0usize..12),
        proptest::collection::vec(any::<bool>(), 8),
        any::<bool>(),
    )
        .prop_map(
            |(turns, pushes, approvals, cancel_at_step, submit_at_pause, concurrent)| Case {
                turns,
                pushes,
                approvals,
                cancel_at_step,
                submit_at_pause,
                concurrent,
            },
        )
}

fn script(turns: &[TurnPlan]) -> Vec<ScriptedTurn> {
    let mut ids = 0;
    turns
        .iter()
        .map(|plan| match plan {
            TurnPlan::Text => ScriptedTurn::new()
                .say_chunks(&["ok", "ay"])
                .finish(FinishReason::Completed),
            TurnPlan::BeginError => {
                ScriptedTurn::failing(ModelError::new(ModelErrorKind::Server, "500"))
            }
            TurnPlan::StreamError => ScriptedTurn::new()
                .say("half")
                .fail(ModelError::new(ModelErrorKind::Protocol, "cut")),
            TurnPlan::Tools(calls) => {
                let mut turn = ScriptedTurn::new().say("working");
                for call in calls {
                    ids += 1;
                    let id = format!("call-{ids}");
                    turn = match call {
                        CallPlan::Echo => turn.call(&id, "echo", json!({ "text": id })),
                        CallPlan::Slow(ms) => turn.call(&id, "slow", json!({ "ms": ms })),
                        CallPlan::Fails => turn.call(&id, "fails", json!({})),
                        CallPlan::Danger => turn.call(&id, "danger", json!({})),
                        CallPlan::Panics => turn.call(&id, "panics", json!({})),
                        CallPlan::Pauses => turn.call(&id, "pauses", json!({})),
                    };
                }
                turn.finish(FinishReason::ToolCall)
            }
        })
        .collect()
}

/// The transcript is valid; while an approval is pending, the calls of the
/// open round (all in the last assistant item) may still lack results.
fn check_valid(items: &[Item], paused_for_approval: bool) -> Result<(), String> {
    let open = open_tool_calls(items);
    if !paused_for_approval || open.is_empty() {
        return validate_transcript(items).map_err(|e| e.to_string());
    }
    let last = items
        .iter()
        .rposition(|i| i.kind == ItemKind::Assistant)
        .ok_or("open calls without an assistant item")?;
    if let Some(stray) = open
        .iter()
        .find(|id| !items[last].tool_calls().any(|c| &c.id == *id))
    {
        return Err(format!(
            "call {stray} is open but not part of the current round"
        ));
    }
    let mut completed = items.to_vec();
    completed.extend(
        open.into_iter()
            .map(|id| Item::tool_result(ToolResultPart::success(id, "pending"))),
    );
    validate_transcript(&completed).map_err(|e| e.to_string())
}

/// Every pushed id is in the transcript exactly once, or still queued.
fn check_pushes(pushed: &[u64], items: &[Item], queue: &SoftInterruptHandle) -> Result<(), String> {
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for item in items.iter().filter(|i| i.kind == ItemKind::User) {
        if let Some(ids) = item
            .metadata
            .get("agentkit.soft_interrupt_ids")
            .and_then(|v| v.as_array())
        {
            for id in ids {
                *seen.entry(id.as_u64().unwrap()).or_default() += 1;
            }
        }
    }
    let pending: Vec<u64> = queue.pending().iter().map(|m| m.id).collect();
    for id in pushed {
        let count =
            seen.get(id).copied().unwrap_or(0) + pending.iter().filter(|p| *p == id).count();
        if count != 1 {
            return Err(format!(
                "message {id} appears {count} times (transcript {seen:?}, pending {pending:?})"
            ));
        }
    }
    Ok(())
}

/// Wraps a tool and records the calls whose `invoke` returned.
struct Recording<T> {
    inner: T,
    ran: Arc<std::sync::Mutex<Vec<String>>>,
}

#[async_trait::async_trait]
impl<T: agentkit_tools_core::Tool> agentkit_tools_core::Tool for Recording<T> {
    fn spec(&self) -> Arc<agentkit_tools_core::ToolSpec> {
        self.inner.spec()
    }

    async fn invoke(
        &self,
        request: agentkit_tools_core::ToolRequest,
        ctx: agentkit_tools_core::ToolContext,
    ) -> Result<agentkit_tools_core::ToolResult, agentkit_tools_core::ToolError> {
        let call_id = request.call_id.to_string();
        // A report from the call's own task, on its way through the core.
        ctx.report_progress(agentkit_tools_core::ToolProgress::new(format!(
            "running {call_id}"
        )));
        let outcome = self.inner.invoke(request, ctx).await;
        if outcome.is_ok() {
            self.ran.lock().unwrap().push(call_id);
        }
        outcome
    }
}

/// A call whose tool really ran to completion is never answered with a
/// stub (skipped, cancelled, interrupted): its real result is kept. A call
/// that paused for an approval is never answered with the pause itself.
fn check_ran(ran: &[String], items: &[Item]) -> Result<(), String> {
    for result in items.iter().flat_map(Item::tool_results) {
        let kind = result
            .metadata
            .get("agentkit.error_kind")
            .and_then(|v| v.as_str());
        if kind == Some("needs_approval") {
            return Err(format!(
                "call {} was answered with its pause",
                result.call_id
            ));
        }
        if ran.iter().any(|id| id == result.call_id.as_str())
            && matches!(kind, Some("skipped" | "cancelled" | "interrupted"))
        {
            return Err(format!(
                "call {} ran but is reported as {kind:?}",
                result.call_id
            ));
        }
    }
    Ok(())
}

async fn run_case(case: Case) -> Result<(), String> {
    let model = ScriptedModel::new(script(&case.turns));
    let controller = CancellationController::new();
    let ran = Arc::new(std::sync::Mutex::new(Vec::new()));
    let tools = agentkit_tools_core::ToolRegistry::new()
        .with(Recording {
            inner: Echo,
            ran: ran.clone(),
        })
        .with(Recording {
            inner: Slow,
            ran: ran.clone(),
        })
        .with(Panics)
        .with(Pauses)
        .with(Danger {
            runs: Arc::new(AtomicUsize::new(0)),
        })
        .with(Fails);
    let events = EventLog::default();
    let mut builder = Agent::builder()
        .model(model.clone())
        .observer(events.clone())
        .add_tool_source(tools)
        .permissions(DangerNeedsApproval)
        .cancellation(controller.handle())
        .input(vec![Item::user("start")]);
    if case.concurrent {
        builder = builder.task_manager(ConcurrentTaskManager::new(3));
    }
    let agent = builder.build().unwrap();
    let mut driver = agent.start(SessionConfig::new("prop")).await.unwrap();
    driver.record_inputs();
    // Events before the recording began are not replayed.
    events.0.lock().unwrap().clear();
    let queue = driver.soft_interrupts();
    // The runtime has one thread, so the pusher only runs while the driver
    // awaits: the ids recorded so far are exact at every check.
    let pushed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let pusher = {
        let (queue, pushed) = (queue.clone(), pushed.clone());
        let pushes = case.pushes.clone();
        tokio::spawn(async move {
            for push in pushes {
                tokio::time::sleep(Duration::from_millis(push.after_ms)).await;
                let item = Item::user(format!("typed at {}", push.after_ms));
                let id = if push.urgent {
                    queue.push_urgent(item)
                } else {
                    queue.push(item)
                };
                pushed.lock().unwrap().push(id);
            }
        })
    };
    let mut approvals = case.approvals.iter().cycle();
    let mut submits = case.submit_at_pause.iter().cycle();
    for step in 0..200 {
        if case.cancel_at_step == Some(step) {
            controller.interrupt();
        }
        let outcome = driver.next().await;
        let items = driver.transcript().to_vec();
        let at_approval = matches!(
            outcome,
            Ok(LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(_)))
        );
        check_valid(&items, at_approval).map_err(|e| format!("step {step}: {e}"))?;
        check_ran(&ran.lock().unwrap(), &items).map_err(|e| format!("step {step}: {e}"))?;
        let ids = pushed.lock().unwrap().clone();
        check_pushes(&ids, &items, &queue).map_err(|e| format!("step {step}: {e}"))?;
        match outcome {
            Ok(LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending))) => {
                if *approvals.next().unwrap() {
                    pending.approve(&mut driver).unwrap();
                } else {
                    pending.deny_with_reason(&mut driver, "no").unwrap();
                }
            }
            Ok(LoopStep::Interrupt(LoopInterrupt::AfterToolResult(info))) => {
                if *submits.next().unwrap() {
                    info.submit(&mut driver, vec![Item::user("host note")])
                        .unwrap();
                }
            }
            Ok(LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request))) => {
                if model.remaining() == 0 {
                    break;
                }
                request
                    .submit(&mut driver, vec![Item::user("more")])
                    .unwrap();
            }
            Ok(LoopStep::Finished(_)) => {}
            Ok(LoopStep::Interrupt(other)) => {
                return Err(format!("step {step}: unexpected pause {other:?}"));
            }
            Err(LoopError::Model(_)) if model.remaining() == 0 => break,
            Err(LoopError::Model(_)) => {}
            Err(other) => return Err(format!("step {step}: unexpected error {other}")),
        }
    }
    // Let every push land, then check once more with the final queue.
    pusher.await.unwrap();
    let items = driver.transcript().to_vec();
    let ids = pushed.lock().unwrap().clone();
    if ids.len() != case.pushes.len() {
        return Err(format!(
            "{} of {} pushes happened",
            ids.len(),
            case.pushes.len()
        ));
    }
    check_valid(&items, false)?;
    check_ran(&ran.lock().unwrap(), &items)?;
    check_pushes(&ids, &items, &queue)?;
    check_replay(&mut driver, &events)
}

/// Replaying the recorded inputs into a fresh core, with no model, tools
/// or clock, gives the same transcript and the same core events, byte for
/// byte.
fn check_replay<S: agentkit_loop::ModelSession>(
    driver: &mut agentkit_loop::LoopDriver<S>,
    events: &EventLog,
) -> Result<(), String> {
    let log = driver.take_input_log().ok_or("no input log")?;
    // Progress a tool reports from its own task included.
    agentkit_testkit::check_replay(
        &log,
        &driver.transcript().to_vec(),
        &events.0.lock().unwrap(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn random_schedules_keep_the_transcript_valid_and_lose_nothing(case in case()) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
        let outcome = runtime.block_on(run_case(case));
        prop_assert!(outcome.is_ok(), "{}", outcome.unwrap_err());
    }
}
