//! Background and detached tool calls: answered at once in their round,
//! their real results delivered later as notification items at safe points,
//! cancellable by id, and reported as lost after a resume.

mod support;

use agentkit_core::{FinishReason, Item, ItemKind, validate_transcript};
use agentkit_loop::{
    Agent, AgentEvent, ConcurrentTaskManager, LoopInterrupt, LoopStep, SessionConfig,
    SimpleTaskManager, TaskRouting,
};
use agentkit_testkit::{Approvals, ScriptedModel, ScriptedTurn, run_to_finish};
use agentkit_tool_shell::{ShellConfig, shell_tools};
use serde_json::json;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use support::*;

fn notifications(items: &[Item]) -> Vec<&Item> {
    items
        .iter()
        .filter(|i| i.metadata.get("agentkit.notification") == Some(&json!("background_task")))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_background_call_is_answered_at_once_and_its_result_arrives_later() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "slow", json!({ "ms": 1_000 })),
        ScriptedTurn::text("started it"),
        ScriptedTurn::text("the slow thing is done"),
    ]);
    let events = EventLog::default();
    let mut driver = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .task_manager(SimpleTaskManager::new().with_routing(|request| {
            if &*request.tool_name == "slow" {
                TaskRouting::Background
            } else {
                TaskRouting::Foreground
            }
        }))
        .observer(events.clone())
        .input(vec![Item::user("go")])
        .build()
        .unwrap()
        .start(SessionConfig::new("s"))
        .await
        .unwrap();
    // Taken before any task exists (the driver makes its task list on
    // first use): it must see the task started later.
    let early = driver.background_tasks();
    let started = Instant::now();
    let run = run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    assert_eq!(
        run.result.items.last().unwrap().text_content(),
        "started it"
    );
    let immediate = agentkit_testkit::results_by_call(&run.transcript)["c1"].clone();
    assert!(
        immediate.output.to_text().contains("task-1"),
        "{immediate:?}"
    );
    assert_eq!(driver.background_tasks().list().len(), 1, "still running");
    assert_eq!(early.list().len(), 1, "the early handle sees it too");
    assert!(notifications(&run.transcript).is_empty());

    // The task finishes while the host waits for the user; the host hears
    // of it and lets the driver deliver its events.
    tokio::time::timeout(Duration::from_secs(60), early.undelivered())
        .await
        .expect("the finished task is announced");
    assert!(driver.background_tasks().list().is_empty());
    assert!(
        !events.names().contains(&"task_finished".to_owned()),
        "delivered by the driver, not from the task"
    );
    let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    assert_eq!(
        events
            .names()
            .iter()
            .filter(|n| *n == "task_finished")
            .count(),
        1
    );
    request
        .submit(&mut driver, vec![Item::user("and?")])
        .unwrap();
    let run = run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    assert_eq!(run.result.finish_reason, FinishReason::Completed);
    let transcript = driver.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    let notes = notifications(&transcript);
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].kind, ItemKind::Context);
    assert!(notes[0].text_content().contains("task-1"));
    assert!(notes[0].text_content().contains("slept 1000ms"));
    // The model saw the user's question, then the notification.
    let seen = model.requests()[2].transcript.to_vec();
    let texts: Vec<String> = seen.iter().rev().take(2).map(Item::text_content).collect();
    assert!(texts[0].contains("Background task task-1"));
    assert_eq!(texts[1], "and?");
    // ToolResultReceived fired for the immediate answer and the real result.
    let received = events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolResultReceived { result } if result.call_id.as_str() == "c1"))
        .count();
    assert_eq!(received, 2);
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[tokio::test(start_paused = true)]
async fn a_finished_task_continues_the_turn_when_the_model_would_finish() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "slow", json!({ "ms": 100 })),
        // The model takes longer than the task.
        ScriptedTurn::new()
            .delay(Duration::from_millis(500))
            .say("waiting")
            .finish(FinishReason::Completed),
        ScriptedTurn::text("got the result"),
    ]);
    let mut driver = start_go(
        Agent::builder()
            .model(model.clone())
            .add_tool_source(registry())
            .task_manager(SimpleTaskManager::new().with_routing(|_| TaskRouting::Background)),
    )
    .await;
    let run = run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    assert_eq!(
        run.result.items.last().unwrap().text_content(),
        "got the result",
        "point B: the result arrived, so the turn went on"
    );
    assert_eq!(notifications(&run.transcript).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn detach_after_waits_then_moves_the_call_to_the_background() {
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .call("quick", "slow", json!({ "ms": 50 }))
            .call("long", "slow", json!({ "ms": 5_000 }))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("ok"),
    ]);
    let mut driver = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .task_manager(
            ConcurrentTaskManager::new(2)
                .with_routing(|_| TaskRouting::DetachAfter(Duration::from_millis(200))),
        )
        .input(vec![Item::user("go")])
        .build()
        .unwrap()
        .start(SessionConfig::new("s"))
        .await
        .unwrap();
    let run = run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    let results = agentkit_testkit::results_by_call(&run.transcript);
    assert_eq!(
        results["quick"].output.to_text(),
        "slept 50ms",
        "finished in time"
    );
    assert!(
        results["long"]
            .output
            .to_text()
            .contains("now runs in the background as task task-"),
        "{:?}",
        results["long"]
    );
    let tasks = driver.background_tasks().list();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].call_id.as_str(), "long");
}

#[tokio::test]
async fn a_background_shell_command_is_cancelled_by_id_and_its_process_killed() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call(
            "c1",
            "shell_exec",
            json!({ "command": "sleep 30; touch finished.txt" }),
        ),
        ScriptedTurn::text("running"),
        ScriptedTurn::text("noted"),
    ]);
    let events = EventLog::default();
    let mut driver = Agent::builder()
        .model(model.clone())
        .add_tool_source(shell_tools(ShellConfig::new(dir.path())))
        .permissions(agentkit_tools_core::AllowAllPermissions)
        .task_manager(SimpleTaskManager::new().with_routing(|_| TaskRouting::Background))
        .observer(events.clone())
        .input(vec![Item::user("run it")])
        .build()
        .unwrap()
        .start(SessionConfig::new("s"))
        .await
        .unwrap();
    run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    let tasks = driver.background_tasks();
    let running = tasks.list();
    assert_eq!(running.len(), 1);
    let cancelled_at = Instant::now();
    assert!(tasks.cancel(&running[0].task_id));
    while !tasks.list().is_empty() {
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(10),
            "not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The cancellation and the finished task reach the observers at the
    // driver's next step, in that order.
    tasks.undelivered().await;
    let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    let names = events.names();
    let tasks_events: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| n.starts_with("task_"))
        .collect();
    assert_eq!(
        tasks_events,
        ["task_started", "task_cancelled", "task_finished"]
    );
    // The result reaches the model with the next input.
    request
        .submit(&mut driver, vec![Item::user("status?")])
        .unwrap();
    run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    let transcript = driver.transcript().to_vec();
    let notes = notifications(&transcript);
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].metadata["agentkit.is_error"], json!(true));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !dir.path().join("finished.txt").exists(),
        "the command's process group was killed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_task_running_at_snapshot_time_is_reported_as_lost_after_resume() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "slow", json!({ "ms": 60_000 })),
        ScriptedTurn::text("started"),
        ScriptedTurn::text("I see it was lost"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(registry())
        .task_manager(SimpleTaskManager::new().with_routing(|_| TaskRouting::Background))
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    let snapshot = driver.snapshot();
    assert_eq!(snapshot.background.len(), 1);
    assert!(snapshot.background[0].result.is_none());
    drop(driver);
    let json = serde_json::to_string(&snapshot).unwrap();
    let mut resumed = agent
        .resume(
            SessionConfig::new("s"),
            serde_json::from_str(&json).unwrap(),
        )
        .await
        .unwrap();
    let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = resumed.next().await.unwrap()
    else {
        panic!()
    };
    request
        .submit(&mut resumed, vec![Item::user("status?")])
        .unwrap();
    run_to_finish(&mut resumed, Approvals::ApproveAll)
        .await
        .unwrap();
    let transcript = resumed.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    let notes = notifications(&transcript);
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].text_content().contains("lost"),
        "{}",
        notes[0].text_content()
    );
}

/// Records, at each `ToolStarted`, how many tasks the runtime holds and
/// which calls the session's background list shows: a store's recorder
/// writes its mark at that instant, so a call spawned before it could run,
/// and be killed, unmarked.
#[derive(Clone, Default)]
struct TasksAtStart {
    tasks: Arc<OnceLock<agentkit_loop::BackgroundTasks>>,
    seen: Arc<Mutex<Vec<(String, usize, usize)>>>,
}

impl agentkit_loop::LoopObserver for TasksAtStart {
    fn handle_event(&self, event: AgentEvent) {
        if let AgentEvent::ToolStarted { call_id, .. } = event {
            let listed = self.tasks.get().expect("set before the first step").list();
            let spawned = tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks();
            self.seen
                .lock()
                .unwrap()
                .push((call_id.to_string(), spawned, listed.len()));
        }
    }
}

#[tokio::test(start_paused = true)]
async fn background_and_detached_calls_are_reported_started_before_they_are_spawned() {
    for (routing, listed) in [
        (TaskRouting::Background, 1),
        // Still waited for by its round: not listed yet.
        (TaskRouting::DetachAfter(Duration::from_millis(200)), 0),
    ] {
        let model = ScriptedModel::new([
            ScriptedTurn::new()
                .call("first", "slow", json!({ "ms": 1_000 }))
                .call("second", "slow", json!({ "ms": 1_000 }))
                .finish(FinishReason::ToolCall),
            ScriptedTurn::text("ok"),
        ]);
        let observer = TasksAtStart::default();
        let mut driver = Agent::builder()
            .model(model)
            .add_tool_source(registry())
            .task_manager(ConcurrentTaskManager::new(2).with_routing(move |_| routing))
            .observer(observer.clone())
            .input(vec![Item::user("go")])
            .build()
            .unwrap()
            .start(SessionConfig::new("s"))
            .await
            .unwrap();
        let _ = observer.tasks.set(driver.background_tasks());
        // The test body is not a task: the runtime holds only the calls'.
        let before = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks();
        run_to_finish(&mut driver, Approvals::ApproveAll)
            .await
            .unwrap();
        let seen = observer.seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            vec![
                ("first".to_owned(), before, 0),
                ("second".to_owned(), before + 1, listed),
            ],
            "{routing:?}: each call's task is spawned only after its start was reported"
        );
    }
}
