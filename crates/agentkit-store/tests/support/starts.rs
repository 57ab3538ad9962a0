//! A call runs only once a resume would know it started: the store holds
//! either the answer that asked for it among the items written after the
//! checkpoint (recovery interrupts every open call of those), or the call's
//! `ToolStarted` mark (needed when the checkpoint already holds the answer:
//! a call approved between two steps). Each backend's test passes a probe
//! reading its tables over a connection of its own.

use super::tools::MarkProbe;
use agentkit_core::{FinishReason, Item};
use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SimpleTaskManager, TaskRouting};
use agentkit_store::{NewSession, SessionLease, SessionStore};
use agentkit_testkit::{AskFor, ScriptedModel, ScriptedTurn};
use agentkit_tools_core::ToolRegistry;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the store holds about one call of the probed session, read while
/// the call runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartKnown {
    /// An item stored after the checkpoint holds the call.
    pub in_appended_answer: bool,
    /// The call's `ToolStarted` mark is stored.
    pub marked: bool,
    /// The checkpoint lists the call as a background task (resumed as
    /// lost): a background call may first run after the step's checkpoint.
    pub in_checkpoint_tasks: bool,
}

impl StartKnown {
    /// A resume would know the call started.
    pub fn any(self) -> bool {
        self.in_appended_answer || self.marked || self.in_checkpoint_tasks
    }
}

/// The session the probe reads.
pub const PROBED: &str = "probed";

/// Reads the stored rows of session [`PROBED`] the way recovery does:
/// `items` are the item rows from the checkpoint's length on (JSON), `marks`
/// the journal (JSON), `snapshot` the checkpoint (JSON).
pub fn start_known(
    call_id: &str,
    items: &[String],
    marks: &[String],
    snapshot: Option<&str>,
) -> StartKnown {
    let in_appended_answer = items.iter().any(|json| {
        serde_json::from_str::<Item>(json)
            .unwrap()
            .tool_calls()
            .any(|call| call.id.as_str() == call_id)
    });
    let wanted = json!({ "mark": "tool_started", "call_id": call_id });
    let marked = marks
        .iter()
        .any(|json| serde_json::from_str::<serde_json::Value>(json).unwrap() == wanted);
    let in_checkpoint_tasks = snapshot.is_some_and(|json| {
        serde_json::from_str::<agentkit_loop::LoopSnapshot>(json)
            .unwrap()
            .background
            .iter()
            .any(|task| task.task.call_id.as_str() == call_id)
    });
    StartKnown {
        in_appended_answer,
        marked,
        in_checkpoint_tasks,
    }
}

/// Three calls: `inline` and `background` asked for by a fresh answer (run
/// at once: the answer's row is their start, no mark is written), then
/// `approved`, which the host approves after the checkpoint stored its
/// answer (its mark is the start). The probe blocks the runtime, so a
/// queued write cannot land while it looks: run on a current-thread
/// runtime.
pub async fn calls_run_only_once_their_start_is_stored(
    store: Arc<dyn SessionStore>,
    probe: impl Fn(&str) -> StartKnown + Send + Sync + 'static,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let probe = move |call_id: &str| {
        let known = probe(call_id);
        log.lock().unwrap().push((call_id.to_owned(), known));
        known.any()
    };
    let lease = SessionLease::create(store, NewSession::new().with_id(PROBED))
        .await
        .unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .call("inline", "probe", json!({}))
            .call("background", "probe", json!({}))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::tool_call("approved", "probe", json!({ "ask": true })),
        ScriptedTurn::text("done"),
    ]);
    let agent = lease
        .record(
            Agent::builder()
                .model(model)
                .add_tool_source(ToolRegistry::new().with(MarkProbe {
                    probe: Arc::new(probe),
                }))
                .permissions(AskFor::kinds("probe."))
                .task_manager(SimpleTaskManager::new().with_routing(|request| {
                    if request.call_id.as_str() == "background" {
                        TaskRouting::Background
                    } else {
                        TaskRouting::Foreground
                    }
                }))
                .input(vec![Item::user("probe them")]),
        )
        .build()
        .unwrap();
    let mut session = lease.open(&agent).await.unwrap();
    loop {
        match session.next().await.unwrap() {
            LoopStep::Finished(_) => break,
            // The pause after each round.
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
            LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) => {
                assert_eq!(pending.call.id.as_str(), "approved");
                pending.approve(&mut session).unwrap();
            }
            other => panic!("{other:?}"),
        }
    }
    // The background call runs on in its own task.
    let waited = Instant::now();
    while seen.lock().unwrap().len() < 3 {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "the background call never ran"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    let known = |in_appended_answer, marked| StartKnown {
        in_appended_answer,
        marked,
        in_checkpoint_tasks: false,
    };
    // The background call's task may first run before or after the step's
    // checkpoint: its row, or the checkpoint's task list, tells; never a
    // mark.
    let background = seen.remove(1);
    assert_eq!(background.0, "background");
    assert!(background.1.any() && !background.1.marked, "{background:?}");
    assert_eq!(
        seen,
        [
            ("approved".to_owned(), known(false, true)),
            ("inline".to_owned(), known(true, false)),
        ]
    );
    session.close().await.unwrap();
}
