//! Soft interrupts injected at points B, C and D.

mod support;

use agentkit_core::{FinishReason, Item, validate_transcript};
use agentkit_loop::{
    Agent, AgentEvent, ConcurrentTaskManager, LoopInterrupt, LoopStep, SessionConfig,
    SoftInterruptPoint,
};
use agentkit_testkit::{ScriptedModel, ScriptedTurn, assert_transcript_snapshot};
use serde_json::json;
use std::time::Duration;
use support::*;

fn injections(events: &EventLog) -> Vec<(SoftInterruptPoint, usize, String)> {
    events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::SoftInterruptInjected {
                point,
                item,
                skipped_tools,
                ..
            } => Some((*point, *skipped_tools, item.text_content())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn point_b_continues_the_turn_instead_of_finishing() {
    let model = ScriptedModel::new([
        ScriptedTurn::text("first answer"),
        ScriptedTurn::text("with the follow-up"),
    ]);
    let events = EventLog::default();
    let agent = Agent::builder()
        .model(model.clone())
        .observer(events.clone())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let queue = driver.soft_interrupts();
    queue.push_text("also: ");
    queue.push_text("be concise");
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!()
    };
    assert_eq!(
        result.items.last().unwrap().text_content(),
        "with the follow-up"
    );
    assert_eq!(
        injections(&events),
        vec![(
            SoftInterruptPoint::TurnComplete,
            0,
            "also: be concise".to_owned()
        )]
    );
    assert!(queue.is_empty());
    assert_transcript_snapshot!(&driver.transcript().to_vec());
}

#[tokio::test]
async fn point_d_comes_before_host_input_at_the_same_pause() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({ "text": "x" })),
        ScriptedTurn::text("done"),
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
    driver.soft_interrupts().push_text("typed during the tool");
    let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(info)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    info.submit(&mut driver, vec![Item::user("submitted at the pause")])
        .unwrap();
    let LoopStep::Finished(_) = driver.next().await.unwrap() else {
        panic!()
    };
    let seen = model.requests()[1].transcript.to_vec();
    let texts: Vec<String> = seen.iter().rev().take(2).map(Item::text_content).collect();
    assert_eq!(texts, ["submitted at the pause", "typed during the tool"]);
    assert_eq!(injections(&events)[0].0, SoftInterruptPoint::AfterTools);
    assert_transcript_snapshot!(&driver.transcript().to_vec());
}

#[tokio::test(start_paused = true)]
async fn point_c_urgent_skips_the_remaining_calls() {
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .call("c1", "slow", json!({ "ms": 100 }))
            .call("c2", "slow", json!({ "ms": 100 }))
            .call("c3", "echo", json!({ "text": "never" }))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("stopped"),
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
    let queue = driver.soft_interrupts();
    let pusher = tokio::spawn(async move {
        // During the first call: it finishes, the second and third are skipped.
        tokio::time::sleep(Duration::from_millis(50)).await;
        queue.push_urgent(Item::user("stop, don't touch the tests"));
    });
    let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    pusher.await.unwrap();
    let items = driver.transcript().to_vec();
    validate_transcript(&items).unwrap();
    let results: Vec<_> = items.iter().flat_map(Item::tool_results).collect();
    assert_eq!(results.len(), 3);
    assert!(!results[0].is_error);
    assert!(results[1].is_error && results[2].is_error);
    assert_eq!(results[1].metadata["agentkit.error_kind"], json!("skipped"));
    assert_eq!(
        injections(&events),
        vec![(
            SoftInterruptPoint::BetweenTools,
            2,
            "stop, don't touch the tests".to_owned()
        )]
    );
    assert_eq!(
        items.last().unwrap().text_content(),
        "stop, don't touch the tests"
    );
    assert_transcript_snapshot!(&items);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn point_c_urgent_during_parallel_execution() {
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .call("c1", "echo", json!({ "text": "quick" }))
            .call("c2", "slow", json!({ "ms": 60_000 }))
            .call("c3", "slow", json!({ "ms": 60_000 }))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("stopped"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .task_manager(ConcurrentTaskManager::new(3))
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let queue = driver.soft_interrupts();
    let pusher = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        queue.push_urgent(Item::user("stop"));
    });
    let step = tokio::time::timeout(Duration::from_secs(30), driver.next())
        .await
        .expect("not stuck")
        .unwrap();
    assert!(
        matches!(step, LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))),
        "{step:?}"
    );
    pusher.await.unwrap();
    let items = driver.transcript().to_vec();
    validate_transcript(&items).unwrap();
    let results: Vec<_> = items.iter().flat_map(Item::tool_results).collect();
    assert_eq!(
        results
            .iter()
            .map(|r| r.call_id.as_str())
            .collect::<Vec<_>>(),
        ["c1", "c2", "c3"]
    );
    assert!(!results[0].is_error);
    assert!(results[1].is_error && results[2].is_error);
    assert_transcript_snapshot!(&items);
}

#[tokio::test]
async fn a_stream_error_keeps_the_queue_and_a_snapshot_carries_it() {
    let model = ScriptedModel::new([
        ScriptedTurn::failing(agentkit_loop::ModelError::new(
            agentkit_loop::ModelErrorKind::Server,
            "boom",
        )),
        ScriptedTurn::text("answer"),
        ScriptedTurn::text("answer to the queued message"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let id = driver.soft_interrupts().push_text("kept");
    assert!(driver.next().await.is_err());
    assert_eq!(
        driver.soft_interrupts().pending()[0].id,
        id,
        "nothing typed is lost"
    );
    let snapshot = driver.snapshot();
    assert_eq!(snapshot.soft_interrupts.len(), 1);
    let mut resumed = agent
        .resume(SessionConfig::new("s"), snapshot)
        .await
        .unwrap();
    assert_eq!(resumed.soft_interrupts().pending().len(), 1);
    let LoopStep::Finished(result) = resumed.next().await.unwrap() else {
        panic!()
    };
    assert_eq!(
        result.items.last().unwrap().text_content(),
        "answer to the queued message"
    );
    assert!(resumed.soft_interrupts().is_empty());
}

#[tokio::test]
async fn point_d_without_host_submit_merges_three_messages() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({ "text": "x" })),
        ScriptedTurn::text("done"),
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
    let queue = driver.soft_interrupts();
    queue.push_text("one. ");
    queue.push_text("two. ");
    queue.push_text("three.");
    let LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    let LoopStep::Finished(_) = driver.next().await.unwrap() else {
        panic!()
    };
    assert_eq!(
        injections(&events),
        vec![(
            SoftInterruptPoint::AfterTools,
            0,
            "one. two. three.".to_owned()
        )]
    );
    let seen = model.requests()[1].transcript.to_vec();
    assert_eq!(seen.last().unwrap().text_content(), "one. two. three.");
    assert_eq!(
        seen.last().unwrap().parts.len(),
        3,
        "one user item, three parts in push order"
    );
    assert_transcript_snapshot!(&driver.transcript().to_vec());
}

#[tokio::test(start_paused = true)]
async fn cancellation_keeps_the_queue_for_the_next_turn() {
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .say("thinking")
            .delay(Duration::from_secs(60))
            .finish(FinishReason::Completed),
        ScriptedTurn::text("answering the queued message"),
    ]);
    let controller = agentkit_core::CancellationController::new();
    let agent = Agent::builder()
        .model(model.clone())
        .cancellation(controller.handle())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    let queue = driver.soft_interrupts();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        queue.push_text("typed before the cancel");
        controller.interrupt();
    });
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!()
    };
    canceller.await.unwrap();
    assert_eq!(result.finish_reason, FinishReason::Cancelled);
    assert_eq!(
        driver.soft_interrupts().pending().len(),
        1,
        "cancellation keeps queued messages"
    );
    // Idle with a queued message: it becomes the next turn's input.
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!()
    };
    assert_eq!(
        result.items.last().unwrap().text_content(),
        "answering the queued message"
    );
    assert!(driver.soft_interrupts().is_empty());
    assert_transcript_snapshot!(&driver.transcript().to_vec());
}

#[tokio::test]
async fn urgent_with_no_tool_running_is_a_normal_message() {
    let model = ScriptedModel::new([
        ScriptedTurn::text("answer"),
        ScriptedTurn::text("follow-up"),
    ]);
    let events = EventLog::default();
    let agent = Agent::builder()
        .model(model.clone())
        .observer(events.clone())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    driver
        .soft_interrupts()
        .push_urgent(Item::user("urgent, but nothing to skip"));
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!()
    };
    assert_eq!(result.items.last().unwrap().text_content(), "follow-up");
    assert_eq!(
        injections(&events),
        vec![(
            SoftInterruptPoint::TurnComplete,
            0,
            "urgent, but nothing to skip".to_owned()
        )]
    );
}

#[tokio::test]
async fn the_queue_is_made_when_first_asked_and_saved_messages_still_arrive() {
    let model = ScriptedModel::new([
        ScriptedTurn::text("first"),
        ScriptedTurn::text("answer to the saved message"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    assert!(matches!(
        driver.next().await.unwrap(),
        LoopStep::Finished(_)
    ));
    let saved = driver.generation();
    let untouched = driver.snapshot();
    assert_eq!(untouched.soft_queue_id, None, "nobody asked: no queue");
    assert_eq!(driver.generation(), saved, "looking makes no queue");

    let queue = driver.soft_interrupts();
    assert_eq!(driver.generation(), saved, "an empty queue changes nothing");
    queue.push_text("typed before the save");
    let mut snapshot = driver.snapshot();
    assert!(snapshot.soft_queue_id.is_some());
    assert_eq!(snapshot.soft_interrupts.len(), 1);
    // Another process: the queue the id named does not exist there.
    snapshot.soft_queue_id = None;
    let json = serde_json::to_string(&snapshot).unwrap();
    drop((driver, queue));
    let mut resumed = agent
        .resume(
            SessionConfig::new("s"),
            serde_json::from_str(&json).unwrap(),
        )
        .await
        .unwrap();
    let LoopStep::Finished(result) = resumed.next().await.unwrap() else {
        panic!()
    };
    assert_eq!(
        result.items.last().unwrap().text_content(),
        "answer to the saved message"
    );
    assert!(resumed.soft_interrupts().is_empty());
}
