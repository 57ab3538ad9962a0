//! Input logs written by earlier versions of the format: a version 2 log
//! (one `Poll` input before every decision of the core) still replays, and
//! gives what the same session gives live today.

use agentkit_core::Item;
use agentkit_loop::replay::{INPUT_LOG_VERSION, Input, InputLog, ReplayError};
use agentkit_loop::{Agent, AgentEvent, LoopObserver, SessionConfig};
use agentkit_testkit::{Approvals, EchoTool, ScriptedModel, ScriptedTurn, run_to_finish};
use agentkit_tools_core::ToolRegistry;
use serde_json::json;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<AgentEvent>>>);

impl LoopObserver for Seen {
    fn handle_event(&self, event: AgentEvent) {
        self.0.lock().unwrap().push(event);
    }
}

/// A round of one call, a round of two, a message typed during the first
/// round (injected at its after-tools point) and an answer; recorded from
/// the start.
async fn session() -> (InputLog, Vec<Item>, Vec<AgentEvent>) {
    let seen = Seen::default();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({ "text": "one" })),
        ScriptedTurn::new()
            .say_chunks(&["Two", " more."])
            .call("c2", "echo", json!({ "text": "two" }))
            .call("c3", "echo", json!({ "text": "three" }))
            .finish(agentkit_core::FinishReason::ToolCall),
        ScriptedTurn::text("Done."),
    ]);
    let agent = Agent::builder()
        .model(model)
        .add_tool_source(ToolRegistry::new().with(EchoTool::new()))
        .observer(seen.clone())
        .input(vec![Item::user("echo three times")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("versions")).await.unwrap();
    driver.record_inputs();
    seen.0.lock().unwrap().clear();
    driver.soft_interrupts().push_text("and say done");
    run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    let log = driver.take_input_log().unwrap();
    let events = seen.0.lock().unwrap().clone();
    (log, driver.transcript().to_vec(), events)
}

/// The JSON lines of `items` and `events`, compared as the replay
/// chapter promises: byte for byte.
fn lines<T: serde::Serialize>(values: &[T]) -> Vec<String> {
    values
        .iter()
        .map(|v| serde_json::to_string(v).unwrap())
        .collect()
}

/// `input-log-v2.jsonl` was recorded from [`session`] by the build that
/// wrote version 2 (one `Poll` before every decision).
const V2: &str = include_str!("fixtures/input-log-v2.jsonl");

#[tokio::test]
async fn a_version_2_log_replays_to_what_the_session_gives_today() {
    let (log, transcript, events) = session().await;
    assert_eq!(log.header.version, INPUT_LOG_VERSION);
    agentkit_testkit::check_replay(&log, &transcript, &events).unwrap();

    let old = InputLog::from_json_lines(V2).unwrap();
    assert_eq!(old.header.version, 2);
    let replayed = old.replay().unwrap();
    assert_eq!(lines(&replayed.transcript), lines(&transcript));
    assert_eq!(lines(&replayed.events), lines(&events));
    // Both logs yield to the host at the same points, and version 3 has
    // the same inputs but for the polls it implies.
    let new = log.replay().unwrap();
    let kinds = |log: &InputLog, at: &[usize]| -> Vec<String> {
        at.iter()
            .map(|&i| serde_json::to_value(&log.inputs[i]).unwrap()["input"].to_string())
            .collect()
    };
    assert_eq!(replayed.yields.len(), new.yields.len());
    assert_eq!(
        kinds(&old, &replayed.yields),
        ["\"poll\"", "\"poll\"", "\"poll\""],
        "version 2 yields at a poll"
    );
    assert_eq!(
        kinds(&log, &new.yields),
        ["\"queued\"", "\"queued\"", "\"queued\""],
        "version 3 yields at the queue's answer, which implies the poll"
    );
    let not_poll = |log: &InputLog| -> Vec<Input> {
        log.inputs
            .iter()
            .filter(|i| !matches!(i, Input::Poll))
            .cloned()
            .collect()
    };
    assert_eq!(not_poll(&old), not_poll(&log));
    let polls = |log: &InputLog| log.len() - not_poll(log).len();
    assert_eq!((polls(&old), polls(&log)), (17, 9));

    // Forking a version 2 log at a yield gives the state the live
    // session had there.
    let at = replayed.yields[0] + 1;
    let fork = old.fork_at(at).unwrap();
    let live = log.fork_at(new.yields[0] + 1).unwrap();
    assert_eq!(
        serde_json::to_value(&fork).unwrap(),
        serde_json::to_value(&live).unwrap()
    );
}

#[test]
fn versions_outside_2_to_3_are_refused_by_number() {
    for version in [1, 4] {
        let text = V2.replacen("{\"version\":2,", &format!("{{\"version\":{version},"), 1);
        assert_eq!(
            InputLog::from_json_lines(&text).unwrap_err(),
            ReplayError::Version { found: version }
        );
    }
}
