//! Rebuilding the driver's snapshot after a crash.
//!
//! The checkpoint is the driver's snapshot at the start or end of a
//! `next()` call. Items appended after it are in the item rows, and the
//! journal says what else changed ([`Mark`]): the pending input was sent, the
//! soft-interrupt queue was drained, a model call began. [`recover`] applies
//! both to the checkpoint and returns a snapshot the loop accepts.
//!
//! A call that has no result and was not waiting for the host may have been
//! running when the process died. It is resumed as *interrupted*: the
//! driver answers it with an error saying so, and the model may call it
//! again. A tool never runs twice without the model asking. When no item
//! was appended after the checkpoint (the process died while the first
//! tool of a round ran, right after the host approved it), the journal's
//! [`Mark::ToolStarted`] tells which calls had started.

use agentkit_core::{Item, ItemKind, SessionId, ToolCallId, ToolCallPart, open_tool_calls};
use agentkit_loop::{
    LoopSnapshot, MutationPoint, SNAPSHOT_VERSION, SnapshotCall, SnapshotCallState, SnapshotPhase,
    SnapshotTurn, arguments_hash,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// What the driver did after the last checkpoint, besides appending items.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mark", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Mark {
    /// Pending input (`count` items) was merged into the transcript.
    InputAccepted {
        /// How many items were merged.
        count: usize,
    },
    /// The soft-interrupt queue was drained into the transcript.
    SoftInterruptsDrained,
    /// A model call began (the turn counter moved). Stores written before
    /// the rename hold it as `turn_started`.
    #[serde(alias = "turn_started")]
    ModelCallStarted,
    /// A tool call started executing: after a crash it may have had its
    /// effect, so it is never run again without the model asking.
    ToolStarted {
        /// The call.
        call_id: ToolCallId,
    },
    /// A mutator rewrote the transcript and the rows followed it (see
    /// [`LogEntry::Rewrite`](crate::LogEntry::Rewrite)); the rewrite may
    /// have generated up to `fresh_ids` item ids, never to be reused.
    Rewritten {
        /// Item ids the rewrite may have used.
        fresh_ids: u64,
        /// Where the mutator ran (`None` in stores written before it was
        /// kept). A rewrite before a model call whose answer is not stored
        /// is not run again on resume: the call is due with its mutation
        /// done.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        point: Option<MutationPoint>,
    },
}

/// The snapshot to resume from: the checkpoint, brought forward by the
/// items and marks written after it. `None` when nothing was ever stored.
pub(crate) fn recover(
    session_id: &SessionId,
    checkpoint: Option<LoopSnapshot>,
    items: Vec<Item>,
    marks: &[Mark],
) -> Result<Option<LoopSnapshot>, serde_json::Error> {
    let mut snapshot = match checkpoint {
        Some(snapshot) => snapshot,
        None if items.is_empty() => return Ok(None),
        None => blank_snapshot(session_id)?,
    };
    interrupt_started(&mut snapshot.round, marks);
    let extra = items.len().saturating_sub(snapshot.transcript.len());
    if items.len() < snapshot.transcript.len() {
        // A checkpoint always covers stored items; never shorten it.
        return Ok(Some(snapshot));
    }
    snapshot.transcript = items;
    // Ids of appended items may have been generated: never reuse one.
    snapshot.next_item_index += extra as u64;
    // The input is merged before anything else a step appends, so items
    // after the checkpoint that start with it mean it was sent, even if the
    // process died before its mark was written.
    let appended = &snapshot.transcript[snapshot.transcript.len() - extra..];
    let answers = appended
        .iter()
        .filter(|item| item.kind == ItemKind::Assistant)
        .count();
    let pending = &snapshot.pending_input;
    if !pending.is_empty()
        && appended.len() >= pending.len()
        && pending
            .iter()
            .zip(appended)
            .all(|(a, b)| a.kind == b.kind && a.parts == b.parts)
    {
        snapshot.pending_input.clear();
    }
    for mark in marks {
        match mark {
            &Mark::InputAccepted { count } => {
                // The merge takes all pending input; more than that came from
                // the soft-interrupt queue, drained while idle.
                if count > snapshot.pending_input.len() {
                    snapshot.soft_interrupts.clear();
                }
                snapshot.pending_input.clear();
            }
            Mark::SoftInterruptsDrained => snapshot.soft_interrupts.clear(),
            Mark::ModelCallStarted => snapshot.next_turn_index += 1,
            Mark::ToolStarted { .. } => {}
            &Mark::Rewritten { fresh_ids, .. } => snapshot.next_item_index += fresh_ids,
        }
    }
    if extra > 0 {
        let model_calls = marks
            .iter()
            .filter(|mark| matches!(mark, Mark::ModelCallStarted))
            .count() as u32;
        snapshot.round = open_round(&snapshot.transcript, &snapshot.round);
        snapshot.phase = if !snapshot.round.is_empty() {
            SnapshotPhase::ToolRound
        } else {
            match snapshot.transcript.last().map(|item| item.kind) {
                // The model answered without calls: the turn was ending.
                Some(ItemKind::Assistant) | None => SnapshotPhase::Idle,
                // A round was answered: its pause is next.
                Some(ItemKind::Tool) => SnapshotPhase::AfterToolRound,
                // A user message: the model is due.
                Some(_) => SnapshotPhase::ModelCallDue,
            }
        };
        // What the checkpoint said was due next has happened.
        snapshot.ended_turn = None;
        snapshot.mutation_due = None;
        if snapshot.phase == SnapshotPhase::Idle {
            snapshot.turn = None;
        } else if let Some(turn) = snapshot.turn.as_mut() {
            // The turn's result lists the answers and results it appended.
            let appended = &snapshot.transcript[snapshot.transcript.len() - extra..];
            turn.items.extend(
                appended
                    .iter()
                    .filter(|item| matches!(item.kind, ItemKind::Assistant | ItemKind::Tool))
                    .cloned(),
            );
            turn.model_calls += model_calls;
        }
    }
    if call_mutated_unanswered(marks, answers) {
        let started = marks
            .iter()
            .filter(|mark| matches!(mark, Mark::ModelCallStarted))
            .count() as u32;
        mark_due_call_mutated(&mut snapshot, started);
    }
    if extra > 0
        && snapshot.phase == SnapshotPhase::AfterToolRound
        && after_round_mutators_owed(marks, answers)
    {
        snapshot.mutation_due = Some(MutationPoint::AfterToolResult);
    }
    Ok(Some(snapshot))
}

/// `true` when a round answered after the checkpoint may not have had its
/// `AfterToolResult` mutators run: no model call is in flight (each model
/// call started since the checkpoint has its answer among the `answers`),
/// and no rewrite of theirs is journaled since the last model call began.
/// They are then run on resume. A mutator that leaves the transcript
/// unchanged leaves no trace, so one that ran before the kill runs again:
/// a redaction or compaction is never skipped, which is the safe side (a
/// mutator there should be idempotent; one that rewrote is not run again).
fn after_round_mutators_owed(marks: &[Mark], answers: usize) -> bool {
    let started = marks
        .iter()
        .filter(|mark| matches!(mark, Mark::ModelCallStarted))
        .count();
    let since_last_call = marks
        .iter()
        .rposition(|mark| matches!(mark, Mark::ModelCallStarted))
        .map_or(marks, |last| &marks[last..]);
    let rewrote = since_last_call.iter().any(|mark| {
        matches!(
            mark,
            Mark::Rewritten {
                point: Some(MutationPoint::AfterToolResult),
                ..
            }
        )
    });
    started <= answers && !rewrote
}

/// `true` when the journal holds a rewrite made before a model call whose
/// answer is not among the `answers` stored after the checkpoint: that
/// call is due again, and its mutators already ran. Marks and items are
/// separate sequences, so the call is found by count: each model call
/// started after the checkpoint journals `ModelCallStarted` after its
/// rewrite and appends one answer.
fn call_mutated_unanswered(marks: &[Mark], answers: usize) -> bool {
    let Some(rewrite) = marks.iter().rposition(|mark| {
        matches!(
            mark,
            Mark::Rewritten {
                point: Some(MutationPoint::BeforeModelCall),
                ..
            }
        )
    }) else {
        return false;
    };
    let started = |marks: &[Mark]| {
        marks
            .iter()
            .filter(|mark| matches!(mark, Mark::ModelCallStarted))
            .count()
    };
    let before = started(&marks[..rewrite]);
    let after = started(&marks[rewrite..]);
    // The rewritten call is call `before + 1`, if it started at all.
    after == 0 || answers <= before
}

/// The model call is due with its `BeforeModelCall` mutators run: the
/// driver had left the round's pause for it, or begun a turn with the
/// input the checkpoint still held as pending (then the turn is made here,
/// as the driver made it: `started` model calls since, its id that of its
/// next call).
fn mark_due_call_mutated(snapshot: &mut LoopSnapshot, started: u32) {
    if !matches!(
        snapshot.phase,
        SnapshotPhase::AfterToolRound | SnapshotPhase::ModelCallDue
    ) {
        return;
    }
    let turn_id = snapshot.next_turn_id();
    let turn = snapshot.turn.get_or_insert_with(|| SnapshotTurn {
        turn_id,
        items: Vec::new(),
        usage: Default::default(),
        model_calls: started,
        due_call: Default::default(),
        cancelled: false,
        finish_reason: None,
    });
    snapshot.phase = SnapshotPhase::ModelCallDue;
    turn.due_call.mutated = true;
    turn.due_call.forced_compaction = false;
}

/// Calls the checkpoint holds as about to run (queued, approved) that the
/// journal says started: they may have run, so they are interrupted.
fn interrupt_started(round: &mut [SnapshotCall], marks: &[Mark]) {
    for call in round {
        let started = marks
            .iter()
            .any(|mark| matches!(mark, Mark::ToolStarted { call_id } if *call_id == call.call_id));
        if started
            && matches!(
                call.state,
                SnapshotCallState::Queued
                    | SnapshotCallState::Approved { .. }
                    | SnapshotCallState::Resumed { .. }
            )
        {
            call.state = SnapshotCallState::Interrupted;
        }
    }
}

/// The open calls of the transcript as a round. Calls the host still has
/// to decide on, already refused, or whose result is known keep their
/// state; any other may have been running and is interrupted.
fn open_round(transcript: &[Item], saved: &[SnapshotCall]) -> Vec<SnapshotCall> {
    let calls: HashMap<_, &ToolCallPart> = transcript
        .iter()
        .flat_map(Item::tool_calls)
        .map(|call| (&call.id, call))
        .collect();
    open_tool_calls(transcript)
        .into_iter()
        .filter_map(|id| {
            let call = calls.get(&id)?;
            let kept = saved.iter().find(|c| c.call_id == id).filter(|c| {
                matches!(
                    c.state,
                    SnapshotCallState::AwaitingApproval { .. }
                        | SnapshotCallState::Suspended { .. }
                        | SnapshotCallState::Denied { .. }
                        | SnapshotCallState::Rejected { .. }
                        | SnapshotCallState::Finished { .. }
                )
            });
            Some(match kept {
                Some(saved) => saved.clone(),
                None => SnapshotCall {
                    call_id: id,
                    tool_name: call.name.to_string(),
                    arguments_hash: arguments_hash(&call.input.to_value()),
                    state: SnapshotCallState::Interrupted,
                },
            })
        })
        .collect()
}

/// An idle snapshot with nothing in it, for sessions whose items were
/// stored without a checkpoint (a fork of an unsaved session). Built from
/// JSON so fields the loop adds later take their defaults.
pub(crate) fn blank_snapshot(session_id: &SessionId) -> Result<LoopSnapshot, serde_json::Error> {
    serde_json::from_value(serde_json::json!({
        "version": SNAPSHOT_VERSION,
        "session_id": session_id,
        "transcript": [],
        "pending_input": [],
        "round": [],
        "phase": "idle",
        "next_turn_index": 0,
        "next_item_index": 0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentkit_core::{ToolResultPart, validate_transcript};
    use serde_json::json;

    fn call_item(ids: &[&str]) -> Item {
        let mut item = Item::assistant("calling");
        for id in ids {
            item.parts
                .push(agentkit_core::Part::ToolCall(ToolCallPart::new(
                    *id,
                    "slow",
                    json!({ "ms": 5 }),
                )));
        }
        item
    }

    fn checkpoint(transcript: Vec<Item>) -> LoopSnapshot {
        let mut snapshot = blank_snapshot(&"s".into()).unwrap();
        snapshot.transcript = transcript;
        snapshot
    }

    #[test]
    fn nothing_after_the_checkpoint_resumes_it_unchanged() {
        let mut saved = checkpoint(vec![Item::user("hi")]);
        saved.pending_input = vec![Item::user("more")];
        let items = saved.transcript.clone();
        let resumed = recover(&"s".into(), Some(saved.clone()), items, &[])
            .unwrap()
            .unwrap();
        assert_eq!(resumed, saved);
    }

    #[test]
    fn a_call_that_started_before_any_item_was_written_is_interrupted() {
        // The checkpoint was taken as the round was about to run (the host
        // had just approved); the process died while `a` ran, before any
        // result was written. `b` had not started.
        let mut saved = checkpoint(vec![Item::user("go"), call_item(&["a", "b"])]);
        saved.phase = SnapshotPhase::ToolRound;
        saved.round = ["a", "b"]
            .into_iter()
            .map(|id| SnapshotCall {
                call_id: id.into(),
                tool_name: "slow".into(),
                arguments_hash: arguments_hash(&json!({ "ms": 5 })),
                state: SnapshotCallState::Queued,
            })
            .collect();
        let items = saved.transcript.clone();
        let marks = [Mark::ToolStarted {
            call_id: "a".into(),
        }];
        let resumed = recover(&"s".into(), Some(saved), items, &marks)
            .unwrap()
            .unwrap();
        assert_eq!(resumed.round[0].state, SnapshotCallState::Interrupted);
        assert_eq!(resumed.round[1].state, SnapshotCallState::Queued);
    }

    #[test]
    fn a_crash_mid_round_interrupts_the_open_calls_and_keeps_answers() {
        let mut saved = checkpoint(Vec::new());
        saved.pending_input = vec![Item::user("go")];
        let items = vec![
            Item::user("go"),
            call_item(&["a", "b"]),
            Item::tool_result(ToolResultPart::success("a", "done")),
        ];
        let marks = [Mark::InputAccepted { count: 1 }, Mark::ModelCallStarted];
        let resumed = recover(&"s".into(), Some(saved), items, &marks)
            .unwrap()
            .unwrap();
        assert!(resumed.pending_input.is_empty(), "the input was sent");
        assert_eq!(resumed.next_turn_index, 1);
        assert_eq!(resumed.next_item_index, 3);
        assert_eq!(resumed.phase, SnapshotPhase::ToolRound);
        assert_eq!(resumed.round.len(), 1);
        assert_eq!(resumed.round[0].call_id.as_str(), "b");
        assert_eq!(resumed.round[0].state, SnapshotCallState::Interrupted);
        assert_eq!(
            resumed.round[0].arguments_hash,
            arguments_hash(&json!({ "ms": 5 }))
        );
    }

    #[test]
    fn a_rewrite_before_an_unanswered_call_is_done() {
        let rewritten = |point| Mark::Rewritten {
            fresh_ids: 0,
            point: Some(point),
        };
        let before = rewritten(MutationPoint::BeforeModelCall);
        let cases: [(&[Mark], usize, bool); 6] = [
            (std::slice::from_ref(&before), 0, true),
            (&[before.clone(), Mark::ModelCallStarted], 0, true),
            (&[before.clone(), Mark::ModelCallStarted], 1, false),
            // An earlier call answered, the rewritten one not.
            (
                &[
                    Mark::ModelCallStarted,
                    before.clone(),
                    Mark::ModelCallStarted,
                ],
                1,
                true,
            ),
            (&[rewritten(MutationPoint::AfterToolResult)], 0, false),
            (&[], 0, false),
        ];
        for (marks, answers, done) in cases {
            assert_eq!(call_mutated_unanswered(marks, answers), done, "{marks:?}");
        }
        // Stores written before the point was kept read as no point.
        let old: Mark = serde_json::from_str(r#"{"mark":"rewritten","fresh_ids":2}"#).unwrap();
        assert_eq!(
            old,
            Mark::Rewritten {
                fresh_ids: 2,
                point: None
            }
        );
    }

    #[test]
    fn a_round_answered_after_the_checkpoint_owes_its_mutators() {
        let answered = vec![
            Item::user("go"),
            call_item(&["a"]),
            Item::tool_result(ToolResultPart::success("a", "done")),
        ];
        let rewritten = |point| Mark::Rewritten {
            fresh_ids: 0,
            point: Some(point),
        };
        let cases: [(&[Mark], Option<MutationPoint>); 5] = [
            // Killed while they ran, or before.
            (
                &[Mark::ModelCallStarted],
                Some(MutationPoint::AfterToolResult),
            ),
            // One of them rewrote: they ran.
            (
                &[
                    Mark::ModelCallStarted,
                    rewritten(MutationPoint::AfterToolResult),
                ],
                None,
            ),
            // A rewrite of an earlier round's does not count.
            (
                &[
                    rewritten(MutationPoint::AfterToolResult),
                    Mark::ModelCallStarted,
                ],
                Some(MutationPoint::AfterToolResult),
            ),
            // The next model call began: they had run.
            (&[Mark::ModelCallStarted, Mark::ModelCallStarted], None),
            // Its BeforeModelCall rewrite was stored, the call not: due.
            (
                &[
                    Mark::ModelCallStarted,
                    rewritten(MutationPoint::BeforeModelCall),
                ],
                None,
            ),
        ];
        for (marks, due) in cases {
            let mut saved = checkpoint(vec![Item::user("go")]);
            saved.phase = SnapshotPhase::ModelCallDue;
            let resumed = recover(&"s".into(), Some(saved), answered.clone(), marks)
                .unwrap()
                .unwrap();
            assert_eq!(resumed.mutation_due, due, "{marks:?}");
        }
        // Nothing after the checkpoint: it says what is owed.
        let mut saved = checkpoint(answered.clone());
        saved.phase = SnapshotPhase::AfterToolRound;
        let resumed = recover(&"s".into(), Some(saved), answered, &[])
            .unwrap()
            .unwrap();
        assert_eq!(resumed.mutation_due, None);
    }

    #[test]
    fn marks_written_before_the_rename_are_read() {
        let old: Mark = serde_json::from_str(r#"{"mark":"turn_started"}"#).unwrap();
        assert_eq!(old, Mark::ModelCallStarted);
        let new = serde_json::to_string(&Mark::ModelCallStarted).unwrap();
        assert_eq!(new, r#"{"mark":"model_call_started"}"#);
    }

    #[test]
    fn a_pending_approval_stays_pending() {
        let items = vec![Item::user("go"), call_item(&["a"])];
        let mut saved = checkpoint(items.clone());
        saved.phase = SnapshotPhase::ToolRound;
        let request = agentkit_tools_core::approval_for(
            &agentkit_tools_core::PermissionRequest::custom("danger.write", "do it", json!({})),
            agentkit_tools_core::ApprovalReason::PolicyRequiresConfirmation,
        );
        saved.round = vec![SnapshotCall {
            call_id: "a".into(),
            tool_name: "slow".into(),
            arguments_hash: arguments_hash(&json!({ "ms": 5 })),
            state: SnapshotCallState::AwaitingApproval { request },
        }];
        // A soft interrupt was drained after the checkpoint.
        let mut items = items;
        items.push(Item::user("typed meanwhile"));
        let resumed = recover(
            &"s".into(),
            Some(saved.clone()),
            items,
            &[Mark::SoftInterruptsDrained],
        )
        .unwrap()
        .unwrap();
        assert_eq!(resumed.round, saved.round);
        assert_eq!(resumed.phase, SnapshotPhase::ToolRound);
    }

    #[test]
    fn answered_rounds_call_the_model_next_and_answers_end_the_turn() {
        let answered = vec![
            Item::user("go"),
            call_item(&["a"]),
            Item::tool_result(ToolResultPart::success("a", "done")),
        ];
        let resumed = recover(&"s".into(), Some(checkpoint(vec![])), answered.clone(), &[])
            .unwrap()
            .unwrap();
        assert_eq!(resumed.phase, SnapshotPhase::AfterToolRound);
        assert!(validate_transcript(&resumed.transcript).is_ok());
        let mut finished = answered;
        finished.push(Item::assistant("all done"));
        let resumed = recover(&"s".into(), Some(checkpoint(vec![])), finished, &[])
            .unwrap()
            .unwrap();
        assert_eq!(resumed.phase, SnapshotPhase::Idle);
    }

    #[test]
    fn input_from_the_idle_queue_clears_the_queue() {
        let mut saved = checkpoint(Vec::new());
        saved.soft_interrupts = vec![agentkit_loop::SoftInterruptMessage {
            id: 1,
            item: Item::user("queued"),
            delivery: agentkit_loop::DeliveryMode::Steer,
        }];
        let resumed = recover(
            &"s".into(),
            Some(saved),
            vec![Item::user("queued")],
            &[Mark::InputAccepted { count: 1 }],
        )
        .unwrap()
        .unwrap();
        assert!(resumed.soft_interrupts.is_empty());
        assert_eq!(resumed.phase, SnapshotPhase::ModelCallDue);
    }

    #[test]
    fn items_without_a_checkpoint_resume_idle() {
        let resumed = recover(
            &"s".into(),
            None,
            vec![Item::user("a"), Item::assistant("b")],
            &[],
        )
        .unwrap()
        .unwrap();
        assert_eq!(resumed.transcript.len(), 2);
        assert_eq!(resumed.phase, SnapshotPhase::Idle);
        assert!(
            recover(&"s".into(), None, Vec::new(), &[])
                .unwrap()
                .is_none()
        );
    }
}
