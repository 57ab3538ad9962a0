//! One event path out of the loop: what a running call reports (progress),
//! what background tasks do (started, cancelled, finished) and the start
//! of a session enter the driver's core as inputs and leave through its one
//! outbox. Each arrives once, in order with the call's own events, while
//! the call runs; a panicking observer is skipped; and replaying the
//! recorded inputs reproduces the whole event sequence byte for byte.

mod support;

use agentkit_core::Item;
use agentkit_loop::replay::{Input, InputLog};
use agentkit_loop::{
    Agent, AgentEvent, ConcurrentTaskManager, LoopDriver, LoopInterrupt, LoopObserver, LoopStep,
    SessionConfig, SimpleTaskManager, TaskRouting,
};
use agentkit_testkit::{Approvals, ScriptedModel, ScriptedSession, ScriptedTurn, run_to_finish};
use agentkit_tools_core::{Tool, ToolContext, ToolError, ToolProgress, ToolRequest, ToolResult};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use support::*;

/// Reports "half way", waits until an observer saw that report (so the
/// report must reach observers while the call runs), reports "done" and
/// answers. Gives up with an error after a minute of waiting.
struct Progressing {
    seen: Arc<tokio::sync::Notify>,
}

#[async_trait::async_trait]
impl Tool for Progressing {
    fn spec(&self) -> Arc<agentkit_tools_core::ToolSpec> {
        spec("progressing")
    }

    async fn invoke(&self, _r: ToolRequest, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        ctx.report_progress(ToolProgress::new("half way").with_fraction(0.5));
        tokio::time::timeout(Duration::from_secs(60), self.seen.notified())
            .await
            .map_err(|_| ToolError::ExecutionFailed("the progress never reached anyone".into()))?;
        // Clamped to 1.0 on the way.
        ctx.report_progress(ToolProgress::new("done").with_fraction(7.0));
        Ok(ToolResult::new("ok"))
    }
}

/// `Slow` (sleeps `input.ms` or until cancelled), reporting before and
/// after.
struct Ticking;

#[async_trait::async_trait]
impl Tool for Ticking {
    fn spec(&self) -> Arc<agentkit_tools_core::ToolSpec> {
        spec("ticking")
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        ctx.report_progress(ToolProgress::new("begun"));
        let result = Slow.invoke(request, ctx.clone()).await?;
        ctx.report_progress(ToolProgress::new("ending"));
        Ok(result)
    }
}

/// Records every event, and wakes the `Progressing` tool when it sees its
/// first report.
#[derive(Clone, Default)]
struct Watching {
    events: EventLog,
    seen: Arc<tokio::sync::Notify>,
}

impl LoopObserver for Watching {
    fn handle_event(&self, event: AgentEvent) {
        if matches!(&event, AgentEvent::ToolProgress { progress, .. } if progress.message == "half way")
        {
            self.seen.notify_one();
        }
        self.events.handle_event(event);
    }
}

/// Panics at every event.
struct Exploding;

impl LoopObserver for Exploding {
    fn handle_event(&self, _event: AgentEvent) {
        panic!("the observer exploded");
    }
}

/// The events of call `id` (and its task) as short strings, in order.
fn of_call(events: &[AgentEvent], id: &str) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolStarted { call_id, .. } if call_id.as_str() == id => {
                Some("started".to_owned())
            }
            AgentEvent::ToolProgress { call_id, progress } if call_id.as_str() == id => {
                let fraction = progress.fraction.map(|f| format!(" {f}"));
                Some(format!(
                    "progress {}{}",
                    progress.message,
                    fraction.unwrap_or_default()
                ))
            }
            AgentEvent::TaskStarted { call_id, .. } if call_id.as_str() == id => {
                Some("task started".to_owned())
            }
            AgentEvent::TaskCancelled { call_id, .. } if call_id.as_str() == id => {
                Some("task cancelled".to_owned())
            }
            AgentEvent::TaskFinished { call_id, .. } if call_id.as_str() == id => {
                Some("task finished".to_owned())
            }
            AgentEvent::ToolResultReceived { result } if result.call_id.as_str() == id => {
                Some(format!("result {}", result.output.to_text()))
            }
            _ => None,
        })
        .collect()
}

/// The replay of the driver's input log gives the events `seen` since
/// the recording began, byte for byte.
fn assert_replay_reproduces(driver: &mut LoopDriver<ScriptedSession>, seen: &EventLog) {
    let log = driver.take_input_log().expect("recording");
    let transcript = driver.transcript().to_vec();
    agentkit_testkit::check_replay(&log, &transcript, &seen.0.lock().unwrap()).unwrap();
}

/// What the background task of call `id` did, the immediate answer of
/// its call left out (it races with the task's first report).
fn of_task(events: &[AgentEvent], id: &str) -> Vec<String> {
    let all = of_call(events, id);
    let immediate: Vec<&String> = all
        .iter()
        .filter(|e| e.starts_with("result The call runs in the background"))
        .collect();
    assert_eq!(immediate.len(), 1, "{all:?}");
    let at = all.iter().position(|e| e == immediate[0]).unwrap();
    assert!(at > all.iter().position(|e| e == "task started").unwrap());
    all.iter().filter(|e| *e != immediate[0]).cloned().collect()
}

/// While the session is idle, delivers what the background tasks report
/// (each time something is waiting) until call `id` has `wanted`.
async fn deliver_until(
    driver: &mut LoopDriver<ScriptedSession>,
    events: &EventLog,
    id: &str,
    wanted: &str,
) {
    let tasks = driver.background_tasks();
    while !of_call(&events.0.lock().unwrap(), id)
        .iter()
        .any(|e| e == wanted)
    {
        tokio::time::timeout(Duration::from_secs(60), tasks.undelivered())
            .await
            .expect("the task reports");
        assert!(matches!(
            driver.next().await.unwrap(),
            LoopStep::Interrupt(LoopInterrupt::AwaitingInput(_))
        ));
    }
}

/// The idle session asks for input: the host asks "and?" and runs the
/// turn to its end (a background task's result reaches the model).
async fn next_turn(driver: &mut LoopDriver<ScriptedSession>) {
    let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = driver.next().await.unwrap()
    else {
        panic!()
    };
    request.submit(driver, vec![Item::user("and?")]).unwrap();
    run_to_finish(driver, Approvals::ApproveAll).await.unwrap();
}

async fn recording(
    builder: agentkit_loop::AgentBuilder<ScriptedModel>,
    seen: &EventLog,
) -> LoopDriver<ScriptedSession> {
    let mut driver = start_go(builder).await;
    driver.record_inputs();
    // Events before the recording began are not replayed.
    seen.0.lock().unwrap().clear();
    driver
}

#[tokio::test(start_paused = true)]
async fn progress_reaches_observers_while_the_call_runs_once_in_order_and_replays() {
    // The concurrent manager runs each call as a task of its own.
    for concurrent in [false, true] {
        let watching = Watching::default();
        let model = ScriptedModel::new([
            ScriptedTurn::tool_call("p1", "progressing", json!({})),
            ScriptedTurn::text("done"),
        ]);
        let mut builder = Agent::builder()
            .model(model)
            .add_tool_source(registry().with(Progressing {
                seen: watching.seen.clone(),
            }))
            .observer(watching.clone());
        if concurrent {
            builder = builder.task_manager(ConcurrentTaskManager::new(2));
        }
        let mut driver = recording(builder, &watching.events).await;
        run_to_finish(&mut driver, Approvals::ApproveAll)
            .await
            .unwrap();
        let events = watching.events.0.lock().unwrap().clone();
        assert_eq!(
            of_call(&events, "p1"),
            [
                "started",
                "progress half way 0.5",
                "progress done 1",
                // Not the tool's timeout: the first report reached the
                // observer while the call was still running.
                "result ok",
            ]
        );
        assert_replay_reproduces(&mut driver, &watching.events);
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_observer_is_skipped_for_every_kind_of_event() {
    let watching = Watching::default();
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .call("p1", "progressing", json!({}))
            .call("b1", "ticking", json!({ "ms": 50 }))
            .finish(agentkit_core::FinishReason::ToolCall),
        ScriptedTurn::text("done"),
    ]);
    let builder = Agent::builder()
        .model(model)
        .add_tool_source(registry().with(Ticking).with(Progressing {
            seen: watching.seen.clone(),
        }))
        .task_manager(SimpleTaskManager::new().with_routing(|request| {
            if &*request.tool_name == "ticking" {
                TaskRouting::Background
            } else {
                TaskRouting::Foreground
            }
        }))
        // The exploding observer comes first: the next one still hears all.
        .observer(Exploding)
        .observer(watching.clone());
    let mut driver = start_go(builder).await;
    run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    deliver_until(&mut driver, &watching.events, "b1", "task finished").await;
    let events = watching.events.0.lock().unwrap().clone();
    assert!(matches!(events[0], AgentEvent::RunStarted { .. }));
    assert_eq!(
        of_call(&events, "p1"),
        [
            "started",
            "progress half way 0.5",
            "progress done 1",
            "result ok"
        ]
    );
    assert_eq!(
        of_task(&events, "b1"),
        [
            "started",
            "task started",
            "progress begun",
            "progress ending",
            "task finished",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn background_task_events_arrive_once_in_order_while_a_round_runs_and_replay() {
    let events = EventLog::default();
    let model = ScriptedModel::new([
        // b1 goes to the background and finishes while f1, in the next
        // round, still runs: its events arrive meanwhile.
        ScriptedTurn::tool_call("b1", "ticking", json!({ "ms": 100 })),
        ScriptedTurn::tool_call("f1", "ticking", json!({ "ms": 1_000 })),
        // c1 runs until the host cancels it.
        ScriptedTurn::tool_call("c1", "ticking", json!({ "ms": 600_000 })),
        ScriptedTurn::text("all started"),
        ScriptedTurn::text("noted"),
    ]);
    let builder = Agent::builder()
        .model(model)
        .add_tool_source(registry().with(Ticking))
        .task_manager(SimpleTaskManager::new().with_routing(|request| {
            if request.call_id.as_str() == "f1" {
                TaskRouting::Foreground
            } else {
                TaskRouting::Background
            }
        }))
        .observer(events.clone());
    let mut driver = recording(builder, &events).await;
    run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    let seen = events.0.lock().unwrap().clone();
    let f1_result = seen
        .iter()
        .position(
            |e| matches!(e, AgentEvent::ToolResultReceived { result } if result.call_id.as_str() == "f1"),
        )
        .unwrap();
    let b1_finished = seen
        .iter()
        .position(
            |e| matches!(e, AgentEvent::TaskFinished { call_id, .. } if call_id.as_str() == "b1"),
        )
        .expect("b1 finished while f1 ran");
    assert!(
        b1_finished < f1_result,
        "delivered while the round awaited f1"
    );
    assert_eq!(
        of_task(&seen, "b1"),
        [
            "started",
            "task started",
            "progress begun",
            "progress ending",
            "task finished",
            "result slept 100ms"
        ]
    );

    // The host cancels c1 while it waits for its user, once c1 began.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let tasks = driver.background_tasks();
    assert_eq!(tasks.list().len(), 1);
    assert!(tasks.cancel("task-2"));
    // The task's own end may come at the next step or a later one.
    deliver_until(&mut driver, &events, "c1", "task finished").await;
    next_turn(&mut driver).await;
    let c1 = of_task(&events.0.lock().unwrap(), "c1");
    assert_eq!(
        c1[..5],
        [
            "started",
            "task started",
            "progress begun",
            "task cancelled",
            "task finished"
        ]
    );
    assert!(c1[5].contains("cancelled"), "{c1:?}");
    assert_eq!(c1.len(), 6, "{c1:?}");
    assert_replay_reproduces(&mut driver, &events);
}

#[tokio::test]
async fn run_started_leaves_through_the_outbox_once_and_replays() {
    let events = EventLog::default();
    let agent = Agent::builder()
        .model(ScriptedModel::new([ScriptedTurn::text("hi")]))
        .observer(events.clone())
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    assert_eq!(events.names(), ["run_started"]);
    // Resuming is a start too.
    let snapshot = driver.snapshot();
    let _resumed = agent
        .resume(SessionConfig::new("s"), snapshot)
        .await
        .unwrap();
    assert_eq!(events.names(), ["run_started", "run_started"]);

    // Recorded as an input, it replays.
    driver.record_inputs();
    let mut log = driver.take_input_log().unwrap();
    log.inputs.push(Input::RunStarted);
    let log = InputLog::from_json_lines(&log.to_json_lines()).unwrap();
    assert_eq!(
        log.replay().unwrap().events,
        [AgentEvent::RunStarted {
            session_id: "s".into()
        }]
    );
}

/// Reports `input.n` progress events as fast as it can, then answers.
struct Chatty;

#[async_trait::async_trait]
impl Tool for Chatty {
    fn spec(&self) -> Arc<agentkit_tools_core::ToolSpec> {
        spec("chatty")
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let n = request.input["n"].as_u64().unwrap_or(0);
        for i in 0..n {
            ctx.report_progress(ToolProgress::new(format!("step {i}")));
        }
        Ok(ToolResult::new(format!("reported {n}")))
    }
}

#[tokio::test(start_paused = true)]
async fn progress_waiting_for_an_idle_host_is_bounded_and_nothing_else_is_dropped() {
    const REPORTED: usize = 5_000;
    let events = EventLog::default();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("b1", "chatty", json!({ "n": REPORTED })),
        ScriptedTurn::text("it runs"),
        ScriptedTurn::text("noted"),
    ]);
    let builder = Agent::builder()
        .model(model)
        .add_tool_source(registry().with(Chatty))
        .task_manager(SimpleTaskManager::new().with_routing(|_| TaskRouting::Background))
        .observer(events.clone());
    let mut driver = recording(builder, &events).await;
    run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    // The host waits for its user: the task reports everything and ends
    // while nothing calls `next()`.
    let tasks = driver.background_tasks();
    while !tasks.list().is_empty() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    deliver_until(&mut driver, &events, "b1", "task finished").await;
    let seen = events.0.lock().unwrap().clone();
    let b1 = of_task(&seen, "b1");
    let progress = b1.iter().filter(|e| e.starts_with("progress")).count();
    let dropped: Vec<(usize, u64)> = seen
        .iter()
        .enumerate()
        .filter_map(|(at, e)| match e {
            AgentEvent::ProgressDropped { count } => Some((at, *count)),
            _ => None,
        })
        .collect();
    // Some reports may have gone out while the round still ran; of those
    // that waited, at most the bound did.
    assert!(
        progress <= agentkit_loop::MAX_QUEUED_PROGRESS + 64,
        "{progress} delivered"
    );
    assert_eq!(dropped.len(), 1, "one count for the one idle stretch");
    assert_eq!(
        progress + dropped[0].1 as usize,
        REPORTED,
        "every report delivered or counted"
    );
    // The count stands where the first was dropped: after the last report
    // delivered, before the task's end.
    let last_report = seen
        .iter()
        .rposition(|e| matches!(e, AgentEvent::ToolProgress { .. }))
        .unwrap();
    assert!(dropped[0].0 > last_report);
    assert_eq!(
        b1[..3],
        ["started", "task started", "progress step 0"],
        "the oldest reports are kept"
    );
    assert_eq!(
        b1[b1.len() - 2..],
        [
            format!("progress step {}", progress - 1),
            "task finished".to_owned()
        ]
    );
    // The result reaches the model with the next turn.
    next_turn(&mut driver).await;
    let transcript = driver.transcript().to_vec();
    assert!(
        transcript.iter().any(|item| item
            .text_content()
            .contains(&format!("reported {REPORTED}"))),
        "{transcript:?}"
    );
    assert_replay_reproduces(&mut driver, &events);
}
