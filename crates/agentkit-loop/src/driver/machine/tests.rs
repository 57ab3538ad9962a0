//! The core alone: no runtime, no clock, no model, no tools. Each test
//! feeds events in the order it wants, so every interleaving is exact.

use super::log::item_id;
use super::*;
use agentkit_core::{FinishReason, Part, ToolCallPart};
use agentkit_tools_core::ApprovalDecision;

#[test]
fn item_ids_are_written_like_format_would() {
    for index in [0, 7, 10, 99, 12_345, u64::MAX] {
        assert_eq!(item_id(index).as_str(), format!("item-{index}"));
        assert_eq!(turn_id(index).as_str(), format!("turn-{index}"));
    }
}

fn core(parallel: usize) -> DriverCore {
    let settings = CoreSettings {
        max_model_calls: 5,
        parallel,
        has_mutators: false,
        observe_events: true,
        observe_items: false,
    };
    let mut core = DriverCore::new(SessionId::new("s"), settings, None);
    core.pending_input.push(Item::user("go"));
    core
}

fn call(id: &str) -> ToolCallPart {
    ToolCallPart::new(id, "t", serde_json::json!({}))
}

/// Polls, telling the core the queue is empty whenever it asks.
/// The step a yield hands the host.
fn step(action: Action) -> Option<LoopStep> {
    match action {
        Action::Yield(yielded) => Some(yielded.into_step()),
        _ => None,
    }
}

fn poll(core: &mut DriverCore) -> Action {
    let action = core.poll();
    then(core, action)
}

/// `action`, or when it asks the queue, the action the empty queue's
/// answer implies.
fn then(core: &mut DriverCore, mut action: Action) -> Action {
    loop {
        match action {
            Action::TakeQueued { .. } => action = core.on_queued(None),
            action => return action,
        }
    }
}

/// Polls while the core starts calls; the calls it started, in order.
fn start_all(core: &mut DriverCore) -> Vec<super::StartCall> {
    let first = poll(core);
    start_from(core, first)
}

/// The calls the core starts from `first` on (the action an input
/// implied), polling after each, in order.
fn start_from(core: &mut DriverCore, first: Action) -> Vec<super::StartCall> {
    let mut started = Vec::new();
    let mut action = first;
    while let Action::StartTool(call) = action {
        started.push(call);
        action = poll(core);
    }
    assert!(!started.is_empty(), "a call starts");
    started
}

/// Polls to the model call and answers it with `calls`, which pass the
/// preflight; the action the last verdict implies.
fn answer_with(core: &mut DriverCore, calls: Vec<ToolCallPart>) -> Action {
    assert!(matches!(poll(core), Action::CallModel(_)));
    let count = calls.len();
    for call in calls {
        core.on_model_tool_call(call);
    }
    core.on_model_finished(FinishReason::ToolCall, MetadataMap::new())
        .unwrap();
    let Action::Preflight(unchecked) = core.poll() else {
        panic!("the preflight comes first")
    };
    assert_eq!(unchecked.len(), count);
    let last = unchecked.end - 1;
    for index in unchecked {
        let next = core.on_checked(index, Verdict::Ready, None);
        assert_eq!(
            next.is_some(),
            index == last,
            "the last verdict implies a poll"
        );
        if let Some(next) = next {
            return next;
        }
    }
    unreachable!()
}

fn done(call_id: &ToolCallId, text: &str) -> ToolOutcome {
    ToolOutcome::of(call_id, Ok(ToolResult::new(text)))
}

fn results(core: &DriverCore) -> Vec<(String, Option<String>)> {
    core.log.with(|items| {
        items
            .iter()
            .flat_map(|i| i.parts.iter())
            .filter_map(Part::as_tool_result)
            .map(|r| {
                let kind = r.metadata.get(agentkit_core::keys::ERROR_KIND);
                (
                    r.call_id.to_string(),
                    kind.and_then(|k| k.as_str()).map(str::to_owned),
                )
            })
            .collect()
    })
}

#[test]
fn an_urgent_message_keeps_a_finished_later_call() {
    let mut core = core(4);
    let first = answer_with(&mut core, vec![call("a"), call("b"), call("c")]);
    let started = start_from(&mut core, first);
    assert_eq!(started.len(), 3);
    assert!(matches!(poll(&mut core), Action::AwaitTools { .. }));
    // b finishes first; it waits for a.
    core.on_tool_done(1, &"b".into(), done(&"b".into(), "b done"));
    assert!(matches!(poll(&mut core), Action::AwaitTools { .. }));
    assert!(results(&core).is_empty(), "b waits for a");
    core.on_urgent_queued();
    let Action::TakeQueued { follow_ups: false } = core.poll() else {
        panic!("the between-tools point takes the urgent messages")
    };
    let next = core.on_queued(Some(QueuedMessages {
        item: Item::user("stop"),
        messages: Vec::new(),
    }));
    let Some(LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))) = step(then(&mut core, next))
    else {
        panic!()
    };
    assert_eq!(
        results(&core),
        [
            ("a".into(), Some("skipped".into())),
            ("b".into(), None),
            ("c".into(), Some("skipped".into())),
        ]
    );
    // A late completion of a skipped call is ignored.
    core.on_tool_done(0, &"a".into(), done(&"a".into(), "late"));
    assert_eq!(results(&core).len(), 3);
}

#[test]
fn lost_calls_are_answered_as_interrupted_in_order() {
    let mut core = core(2);
    let first = answer_with(&mut core, vec![call("a"), call("b"), call("c")]);
    let started = start_from(&mut core, first);
    assert_eq!(started.len(), 2, "bounded by the parallelism");
    core.on_tool_done(1, &"b".into(), done(&"b".into(), "b done"));
    core.on_calls_lost();
    // a is answered as interrupted, b keeps its result, c still runs.
    let next = start_all(&mut core);
    assert_eq!(next.iter().map(|s| s.index).collect::<Vec<_>>(), [2]);
    assert_eq!(
        results(&core),
        [("a".into(), Some("interrupted".into())), ("b".into(), None)]
    );
}

#[test]
fn the_step_limit_ends_the_turn() {
    let mut core = core(1);
    for round in 0..5 {
        let first = answer_with(&mut core, vec![call(&format!("c{round}"))]);
        let _ = start_from(&mut core, first);
        let id = ToolCallId::new(format!("c{round}"));
        core.on_tool_done(0, &id, done(&id, "x"));
        assert!(matches!(poll(&mut core), Action::Yield(_)));
    }
    let Some(LoopStep::Finished(result)) = step(poll(&mut core)) else {
        panic!()
    };
    assert_eq!(result.finish_reason, FinishReason::StepLimit);
    core.log
        .with(|items| agentkit_core::validate_items(items))
        .unwrap();
}

#[test]
fn a_call_paused_for_approval_waits_for_its_siblings_then_runs_again() {
    let mut core = core(2);
    let first = answer_with(&mut core, vec![call("a"), call("b")]);
    let started = start_from(&mut core, first);
    assert_eq!(started.len(), 2);
    let request = agentkit_tools_core::ApprovalRequest {
        task_id: None,
        call_id: None,
        id: agentkit_core::ApprovalId::new("inner"),
        request_kind: "filesystem.write".into(),
        reason: agentkit_tools_core::ApprovalReason::PolicyRequiresConfirmation,
        summary: "child writes".into(),
        metadata: MetadataMap::new(),
    };
    core.on_tool_done(
        0,
        &"a".into(),
        ToolOutcome::of(
            &"a".into(),
            Err(ToolError::NeedsApproval(Box::new(request))),
        ),
    );
    // b still runs: the approval is not shown yet.
    assert!(matches!(poll(&mut core), Action::AwaitTools { .. }));
    core.on_tool_done(1, &"b".into(), done(&"b".into(), "b done"));
    let Some(LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending))) = step(poll(&mut core))
    else {
        panic!()
    };
    assert_eq!(pending.call.id.as_str(), "a");
    assert_eq!(pending.request.call_id.as_ref().unwrap().as_str(), "a");
    // A denial runs the call again too, with the answer.
    core.resolve_approval("a".into(), ApprovalDecision::deny_with_reason("no"))
        .unwrap();
    let again = start_all(&mut core);
    let resume = again[0].resume.as_ref().unwrap();
    assert_eq!(resume.decision, ApprovalDecision::deny_with_reason("no"));
    assert!(again[0].approval.is_none());
    core.on_tool_done(0, &"a".into(), done(&"a".into(), "child went on"));
    assert!(matches!(
        step(poll(&mut core)),
        Some(LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)))
    ));
    assert_eq!(results(&core), [("a".into(), None), ("b".into(), None)]);
}

#[test]
fn a_turn_keeps_its_items_when_a_mutator_rewrites_the_log() {
    let mut core = core(1);
    let first = answer_with(&mut core, vec![call("a")]);
    let _ = start_from(&mut core, first);
    core.on_tool_done(0, &"a".into(), done(&"a".into(), "a done"));
    assert!(matches!(poll(&mut core), Action::Yield(_)));
    let appended: Vec<Item> = core.log.with(|items| items.range(1..).to_vec());
    // A compaction drops the round from the log mid-turn.
    core.replace_transcript(vec![Item::user("summary")]);
    assert!(matches!(poll(&mut core), Action::CallModel(_)));
    let part = agentkit_core::PartId::new("p");
    core.on_model_delta(agentkit_core::Delta::BeginPart {
        part_id: part.clone(),
        kind: agentkit_core::PartKind::Text,
    })
    .unwrap();
    core.on_model_delta(agentkit_core::Delta::AppendText {
        part_id: part.clone(),
        chunk: "done".into(),
    })
    .unwrap();
    core.on_model_delta(agentkit_core::Delta::CommitPart { part_id: part })
        .unwrap();
    core.on_model_finished(FinishReason::Completed, MetadataMap::new())
        .unwrap();
    let Some(LoopStep::Finished(result)) = step(poll(&mut core)) else {
        panic!()
    };
    assert_eq!(result.items.len(), 3);
    assert_eq!(
        result.items[..2],
        appended[..],
        "as appended, not as rewritten"
    );
    assert_eq!(result.items[2].text_content(), "done");
    let last = core.log.with(|items| items.last().cloned());
    assert_eq!(last.as_ref(), Some(&result.items[2]));
}

#[test]
fn repeated_ids_get_fresh_ones() {
    let mut core = core(1);
    let _ = answer_with(&mut core, vec![call("x"), call("x"), call("x_2")]);
    let ids: Vec<String> = core
        .round_calls()
        .iter()
        .map(|c| c.call.id.to_string())
        .collect();
    assert_eq!(ids, ["x", "x_2", "x_2_2"]);
}

// ----- time: simulated, handed in as data ---------------------------------

fn secs(s: u64) -> std::time::Duration {
    std::time::Duration::from_secs(s)
}

/// Starts the round's one call as a detach-after call at `now`.
fn start_detaching(core: &mut DriverCore, first: Action, wait: u64, now: u64) {
    let started = start_from(core, first);
    assert_eq!(started.len(), 1);
    core.on_routed(
        0,
        Routed::DetachAfter {
            task_id: "task-1".into(),
            wait: secs(wait),
            now: secs(now),
        },
    );
}

fn result_text(core: &DriverCore, index: usize) -> String {
    core.log.with(|items| {
        items
            .iter()
            .flat_map(|i| i.parts.iter())
            .filter_map(Part::as_tool_result)
            .nth(index)
            .map(|r| r.output.to_text())
            .unwrap_or_default()
    })
}

#[test]
fn a_detach_after_call_is_detached_when_its_deadline_passes_and_not_before() {
    let mut core = core(1);
    let first = answer_with(&mut core, vec![call("a")]);
    assert_eq!(core.poll_timeout(), None, "no timer before the call starts");
    start_detaching(&mut core, first, 5, 100);
    assert!(matches!(poll(&mut core), Action::AwaitTools { .. }));
    assert_eq!(
        core.poll_timeout(),
        Some(secs(105)),
        "the core asks to be woken"
    );
    // Woken early (a spurious wake-up): nothing happens.
    core.on_timeout(secs(104));
    assert!(matches!(poll(&mut core), Action::AwaitTools { .. }));
    core.on_timeout(secs(105));
    let Action::Detach { index: 0, task_id } = poll(&mut core) else {
        panic!("the core asks the shell to detach the task")
    };
    assert_eq!(task_id, "task-1");
    assert_eq!(
        core.poll_timeout(),
        None,
        "a fired timer is not asked for again"
    );
    let next = core.on_detached(0, true);
    assert!(matches!(
        step(then(&mut core, next)),
        Some(LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)))
    ));
    let text = result_text(&core, 0);
    assert!(text.contains("did not finish within 5.0 s"), "{text}");
    assert!(text.contains("task task-1"), "{text}");
    // The task's late outcome does not answer the call a second time.
    core.on_tool_done(0, &"a".into(), done(&"a".into(), "late"));
    assert_eq!(results(&core).len(), 1);
    agentkit_core::validate_transcript(&core.log.to_vec()).unwrap();
}

#[test]
fn a_call_that_wins_the_race_with_its_deadline_keeps_its_real_result() {
    let mut core = core(1);
    let first = answer_with(&mut core, vec![call("a")]);
    start_detaching(&mut core, first, 5, 0);
    core.on_timeout(secs(9));
    assert!(matches!(poll(&mut core), Action::Detach { index: 0, .. }));
    // The task had finished already: the shell could not detach it.
    assert!(matches!(
        core.on_detached(0, false),
        Action::AwaitTools { .. }
    ));
    core.on_tool_done(0, &"a".into(), done(&"a".into(), "real"));
    assert!(matches!(poll(&mut core), Action::Yield(_)));
    assert_eq!(result_text(&core, 0), "real");
}

#[test]
fn a_call_finishing_before_its_deadline_needs_no_timer() {
    let mut core = core(1);
    let first = answer_with(&mut core, vec![call("a")]);
    start_detaching(&mut core, first, 5, 0);
    core.on_tool_done(0, &"a".into(), done(&"a".into(), "quick"));
    assert_eq!(core.poll_timeout(), None);
    // A timeout after the round closed changes nothing.
    core.on_timeout(secs(60));
    assert!(matches!(poll(&mut core), Action::Yield(_)));
    assert_eq!(result_text(&core, 0), "quick");
}

#[test]
fn a_background_call_is_answered_at_once_naming_its_task() {
    let mut core = core(1);
    let first = answer_with(&mut core, vec![call("a")]);
    let _ = start_from(&mut core, first);
    core.on_routed(
        0,
        Routed::Background {
            task_id: "task-7".into(),
        },
    );
    assert_eq!(core.poll_timeout(), None);
    assert!(matches!(poll(&mut core), Action::Yield(_)));
    let text = result_text(&core, 0);
    assert!(
        text.contains("runs in the background as task task-7"),
        "{text}"
    );
}

#[test]
fn timer_inputs_replay_into_the_same_transcript() {
    let mut core = core(2);
    core.recording = Some(Vec::new());
    let start = core.log.to_vec();
    let first = answer_with(&mut core, vec![call("a"), call("b")]);
    let _ = start_from(&mut core, first);
    core.on_routed(
        0,
        Routed::DetachAfter {
            task_id: "task-1".into(),
            wait: secs(3),
            now: secs(1),
        },
    );
    assert!(matches!(poll(&mut core), Action::AwaitTools { .. }));
    core.on_tool_done(1, &"b".into(), done(&"b".into(), "b done"));
    core.on_timeout(secs(4));
    assert!(matches!(poll(&mut core), Action::Detach { .. }));
    let next = core.on_detached(0, true);
    assert!(matches!(then(&mut core, next), Action::Yield(_)));
    let inputs = core.recording.take().unwrap();
    assert!(inputs.contains(&Input::Timeout { now: secs(4) }));
    // Through JSON, as the log is stored.
    let inputs: Vec<Input> = inputs
        .iter()
        .map(|i| serde_json::from_str(&serde_json::to_string(i).unwrap()).unwrap())
        .collect();
    let mut fresh = self::core(2);
    assert_eq!(fresh.log.to_vec(), start);
    for input in inputs {
        let _ = fresh.apply(input, crate::replay::INPUT_LOG_VERSION);
    }
    assert_eq!(fresh.log.to_vec(), core.log.to_vec());
    assert!(result_text(&fresh, 0).contains("within 3.0 s"));
}

#[test]
fn a_started_call_says_when_the_next_poll_would_only_wait() {
    // One at a time: each start is followed by a wait.
    let mut core = core(1);
    let first = answer_with(&mut core, vec![call("a"), call("b")]);
    let Action::StartTool(a) = first else {
        panic!("the last verdict starts the first call")
    };
    assert_eq!(a.index, 0);
    assert!(a.then_await);
    assert!(matches!(poll(&mut core), Action::AwaitTools { .. }));
    // Two at a time, three calls: the first start is followed by the
    // second, the second by a wait.
    let mut core = self::core(2);
    let first = answer_with(&mut core, vec![call("a"), call("b"), call("c")]);
    let Action::StartTool(a) = first else {
        panic!()
    };
    assert!(!a.then_await, "b starts beside a");
    let Action::StartTool(b) = poll(&mut core) else {
        panic!()
    };
    assert_eq!(b.index, 1);
    assert!(b.then_await, "the parallelism is full");
    assert!(matches!(poll(&mut core), Action::AwaitTools { .. }));
    // b finishes: c starts, and nothing is left to start beside it.
    core.on_tool_done(1, &"b".into(), done(&"b".into(), "b done"));
    let Action::StartTool(c) = poll(&mut core) else {
        panic!()
    };
    assert!(c.then_await);
    assert!(matches!(poll(&mut core), Action::AwaitTools { .. }));
}

/// An action is moved at every poll, a step at every transition and a
/// call's state when the call starts and when it is answered: they stay
/// small enough to be moved without a `memcpy` call, which the compiler
/// makes for moves over 128 bytes (a `LoopStep` is 176 bytes, a usage
/// report 80, an approval request 128: none travels inline).
#[cfg(target_pointer_width = "64")]
#[test]
fn actions_and_steps_stay_small() {
    assert!(
        std::mem::size_of::<Action>() <= 128,
        "{}",
        std::mem::size_of::<Action>()
    );
    assert!(
        std::mem::size_of::<Step>() <= 128,
        "{}",
        std::mem::size_of::<Step>()
    );
    // A call's state is replaced when it starts and when it is answered.
    assert!(
        std::mem::size_of::<super::state::CallState>() <= 128,
        "{}",
        std::mem::size_of::<super::state::CallState>()
    );
}
