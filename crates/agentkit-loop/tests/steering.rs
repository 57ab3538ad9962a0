//! Steering the loop: the step limit, delivery modes of soft interrupts,
//! progress events, and typed invalid-state errors.

mod support;

use agentkit_core::{FinishReason, Item, ItemKind, validate_transcript};
use agentkit_loop::{
    Agent, AgentEvent, DeliveryMode, InvalidStateReason, LoopError, LoopInterrupt, LoopStep,
    SessionConfig, SoftInterruptPoint,
};
use agentkit_testkit::{Approvals, ScriptedModel, ScriptedTurn, run_to_finish};
use serde_json::json;
use std::sync::Arc;
use support::*;

#[tokio::test]
async fn the_step_limit_ends_a_runaway_turn_with_a_valid_transcript() {
    // A model that calls a tool forever.
    let model =
        ScriptedModel::new((0..10).map(|i| {
            ScriptedTurn::tool_call(&format!("c{i}"), "echo", json!({ "text": "again" }))
        }));
    let mut driver = start_go(
        Agent::builder()
            .model(model.clone())
            .add_tool_source(registry())
            .max_model_calls(3),
    )
    .await;
    let run = run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    assert_eq!(run.result.finish_reason, FinishReason::StepLimit);
    assert_eq!(run.result.metadata["agentkit.max_model_calls"], json!(3));
    assert_eq!(model.requests().len(), 3, "exactly three model calls");
    assert_eq!(model.remaining(), 7);
    // The next user turn gets a fresh budget.
    let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    request
        .submit(&mut driver, vec![Item::user("more")])
        .unwrap();
    let run = run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    assert_eq!(run.result.finish_reason, FinishReason::StepLimit);
    assert_eq!(model.requests().len(), 6);
}

#[tokio::test]
async fn a_follow_up_waits_for_the_end_of_the_work_and_a_steer_does_not() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({ "text": "x" })),
        ScriptedTurn::text("first answer"),
        ScriptedTurn::text("answer to the follow-up"),
    ]);
    let events = EventLog::default();
    let mut driver = start_go(
        Agent::builder()
            .model(model.clone())
            .add_tool_source(registry())
            .observer(events.clone()),
    )
    .await;
    let queue = driver.soft_interrupts();
    let follow = queue.push_follow_up(Item::user("then summarize"));
    let steer = queue.push_text("use tabs");
    let run = run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    assert_eq!(
        run.result.items.last().unwrap().text_content(),
        "answer to the follow-up"
    );
    let injections: Vec<(SoftInterruptPoint, Vec<(u64, DeliveryMode)>)> = events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::SoftInterruptInjected {
                point, messages, ..
            } => Some((
                *point,
                messages.iter().map(|m| (m.id, m.delivery)).collect(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        injections,
        vec![
            (
                SoftInterruptPoint::AfterTools,
                vec![(steer, DeliveryMode::Steer)]
            ),
            (
                SoftInterruptPoint::TurnComplete,
                vec![(follow, DeliveryMode::FollowUp)]
            ),
        ]
    );
    let users: Vec<String> = run
        .transcript
        .iter()
        .filter(|i| i.kind == ItemKind::User)
        .map(Item::text_content)
        .collect();
    assert_eq!(users, ["go", "use tabs", "then summarize"]);
}

#[tokio::test]
async fn invalid_states_are_typed() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "danger", json!({})),
        ScriptedTurn::text("ok"),
    ]);
    let mut driver = danger_driver(&model, Arc::default(), false).await;
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    assert_eq!(
        driver.next().await.unwrap_err(),
        LoopError::InvalidState(InvalidStateReason::ApprovalPending {
            call_id: "c1".into()
        })
    );
    assert_eq!(
        driver
            .resolve_approval_for(
                "nope".into(),
                agentkit_tools_core::ApprovalDecision::Approve
            )
            .unwrap_err(),
        LoopError::InvalidState(InvalidStateReason::NoSuchApproval {
            call_id: "nope".into()
        })
    );
    pending.clone().approve(&mut driver).unwrap();
    assert_eq!(
        pending.approve(&mut driver).unwrap_err(),
        LoopError::InvalidState(InvalidStateReason::NotAwaitingApproval {
            call_id: "c1".into()
        })
    );
    validate_transcript(&driver.transcript().to_vec()).ok();
}

#[tokio::test]
async fn the_output_schema_reaches_every_model_call() {
    let model = ScriptedModel::new([ScriptedTurn::text(r#"{"answer": 42}"#)]);
    let schema = agentkit_loop::OutputSchema::new(
        "answer",
        json!({ "type": "object", "properties": { "answer": { "type": "integer" } } }),
    );
    let mut driver = Agent::builder()
        .model(model.clone())
        .output_schema(schema.clone())
        .input(vec![Item::user("the answer?")])
        .build()
        .unwrap()
        .start(SessionConfig::new("s"))
        .await
        .unwrap();
    run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    let sent = model.requests()[0].output_schema.clone().unwrap();
    assert_eq!(*sent, schema);
}
