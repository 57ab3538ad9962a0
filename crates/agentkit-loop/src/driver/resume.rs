//! Snapshots out, snapshots back in.
//!
//! The snapshot is derived from the core's state field by field, so it holds
//! everything by construction: the turn in progress with its items and
//! usage, every call's state (a finished call's real result included), the
//! owed mutation, the next-turn cache request, the queued messages.

use super::core::{DriverCore, background_result, turn_id};
use super::state::{ActiveTurn, CallState, Phase, RoundCall, TurnItems};
use super::{DriverParts, LoopDriver};
use crate::snapshot::{
    SNAPSHOT_VERSION, SnapshotBackgroundTask, SnapshotCall, SnapshotCallState, SnapshotPhase,
    SnapshotTurn, arguments_hash,
};
use crate::transcript::TranscriptLog;
use crate::{LoopError, LoopSnapshot, ModelSession, SoftInterruptHandle};
use agentkit_core::{ToolCallId, ToolCallPart, ToolResultPart, Usage, open_tool_calls};
use agentkit_tools_core::{ApprovalDecision, ApprovalRequest, ToolExecutor};
use std::collections::{HashMap, HashSet};

impl<S: ModelSession> LoopDriver<S> {
    /// A serializable picture of the session, enough to resume it with
    /// [`Agent::resume`](crate::Agent::resume) in another process.
    pub fn snapshot(&self) -> LoopSnapshot {
        let mut snapshot = self.snapshot_without_transcript();
        snapshot.transcript = self.core.log.to_vec();
        snapshot
    }

    /// [`LoopDriver::snapshot`] with an empty transcript, for hosts that
    /// keep the items themselves (a session store appends them as they
    /// happen): it costs the same at any transcript length. Put the items
    /// back (from [`LoopDriver::transcript`]) before resuming from it.
    pub fn snapshot_without_transcript(&self) -> LoopSnapshot {
        let core = &self.core;
        let (phase, ended_turn) = match &core.phase {
            Phase::Idle => (SnapshotPhase::Idle, None),
            Phase::ModelCallDue => (SnapshotPhase::ModelCallDue, None),
            Phase::ToolRound => (SnapshotPhase::ToolRound, None),
            Phase::AfterRound => (SnapshotPhase::AfterToolRound, None),
            Phase::TurnEnding(result) => (SnapshotPhase::TurnEnding, Some((**result).clone())),
        };
        let round = core
            .round
            .iter()
            .map(|entry| SnapshotCall {
                call_id: entry.call.id.clone(),
                tool_name: entry.call.name.clone(),
                arguments_hash: arguments_hash(&entry.call.input),
                state: match &entry.state {
                    CallState::Queued(_) => SnapshotCallState::Queued,
                    CallState::AwaitingApproval(request) => SnapshotCallState::AwaitingApproval {
                        request: request.clone(),
                    },
                    CallState::Approved(request) => SnapshotCallState::Approved {
                        request: request.clone(),
                    },
                    CallState::Denied(reason) => SnapshotCallState::Denied {
                        reason: reason.clone(),
                    },
                    CallState::Rejected(result) => SnapshotCallState::Rejected {
                        message: result.output.to_text(),
                        result: Some(result.clone()),
                    },
                    CallState::Running | CallState::Interrupted => SnapshotCallState::Interrupted,
                    // A call paused mid-run is saved as an ordinary approval,
                    // marked, so a resumed driver runs it again with the
                    // answer (the tool reports whether it can still go on).
                    CallState::Suspended(request) => SnapshotCallState::AwaitingApproval {
                        request: mark_suspended(request),
                    },
                    CallState::Resumed(request, ApprovalDecision::Approve) => {
                        SnapshotCallState::Approved {
                            request: mark_suspended(request),
                        }
                    }
                    CallState::Resumed(_, ApprovalDecision::Deny { reason }) => {
                        SnapshotCallState::Denied {
                            reason: reason.clone(),
                        }
                    }
                    CallState::Finished(result) => SnapshotCallState::Finished {
                        result: result.clone(),
                    },
                    CallState::Answered => SnapshotCallState::Answered,
                },
            })
            .collect();
        LoopSnapshot {
            version: SNAPSHOT_VERSION,
            session_id: core.session_id.clone(),
            transcript: Vec::new(),
            pending_input: core.pending_input.clone(),
            round,
            phase,
            next_turn_index: core.next_turn_index,
            next_item_index: core.next_item_index,
            soft_interrupts: core.soft.pending(),
            turn: core.turn.as_ref().map(|turn| SnapshotTurn {
                turn_id: turn.turn_id.clone(),
                items: core.log.with(|log| turn.items.to_vec(log)),
                usage: turn.usage.clone(),
                model_calls: turn.model_calls,
            }),
            ended_turn,
            mutation_due: core.mutation_due,
            next_turn_cache: core.next_turn_cache.as_deref().cloned(),
            soft_queue_id: Some(core.soft.queue_id()),
            background: self.background_snapshot(),
        }
    }

    fn background_snapshot(&self) -> Vec<SnapshotBackgroundTask> {
        let tasks = self.background.get();
        let running = tasks
            .map(crate::BackgroundTasks::list)
            .unwrap_or_default()
            .into_iter()
            .map(|task| SnapshotBackgroundTask { task, result: None });
        let finished = tasks
            .map(crate::BackgroundTasks::peek_finished)
            .unwrap_or_default()
            .into_iter()
            .map(|(task, outcome)| SnapshotBackgroundTask {
                result: Some(background_result(&task, outcome)),
                task,
            });
        let waiting = self
            .core
            .notifications
            .iter()
            .map(|(task, part)| SnapshotBackgroundTask {
                task: task.clone(),
                result: Some(part.clone()),
            });
        waiting.chain(finished).chain(running).collect()
    }

    /// A driver continuing `snapshot`, which [`check_snapshot`] accepted.
    pub(crate) fn from_snapshot(parts: DriverParts<S>, snapshot: LoopSnapshot) -> Self {
        let settings = Self::settings(parts.config.as_ref(), parts.max_model_calls);
        let calls = round_calls(&snapshot);
        let round = snapshot
            .round
            .iter()
            .filter_map(|saved| {
                let call = (*calls.get(&saved.call_id)?).clone();
                let state = match &saved.state {
                    SnapshotCallState::Queued => CallState::Queued(None),
                    SnapshotCallState::AwaitingApproval { request } if is_suspended(request) => {
                        CallState::Suspended(request.clone())
                    }
                    SnapshotCallState::AwaitingApproval { request } => {
                        CallState::AwaitingApproval(request.clone())
                    }
                    SnapshotCallState::Approved { request } if is_suspended(request) => {
                        CallState::Resumed(request.clone(), ApprovalDecision::Approve)
                    }
                    SnapshotCallState::Approved { request } => CallState::Approved(request.clone()),
                    SnapshotCallState::Denied { reason } => CallState::Denied(reason.clone()),
                    SnapshotCallState::Rejected { message, result } => {
                        CallState::Rejected(result.clone().unwrap_or_else(|| {
                            ToolResultPart::error(call.id.clone(), message.clone())
                                .with_metadata("agentkit.error_kind", "rejected")
                        }))
                    }
                    SnapshotCallState::Interrupted => CallState::Interrupted,
                    SnapshotCallState::Finished { result } => CallState::Finished(result.clone()),
                    SnapshotCallState::Answered => CallState::Answered,
                };
                Some(RoundCall { call, state })
            })
            .collect();
        let phase = match snapshot.phase {
            SnapshotPhase::Idle => Phase::Idle,
            SnapshotPhase::ModelCallDue => Phase::ModelCallDue,
            SnapshotPhase::ToolRound => Phase::ToolRound,
            SnapshotPhase::AfterToolRound => Phase::AfterRound,
            SnapshotPhase::TurnEnding => match snapshot.ended_turn {
                Some(result) => Phase::TurnEnding(Box::new(result)),
                None => Phase::Idle,
            },
        };
        // A handle the host still holds on the old queue keeps working.
        let soft = snapshot
            .soft_queue_id
            .and_then(SoftInterruptHandle::adopt)
            .unwrap_or_default();
        soft.restore(snapshot.soft_interrupts);
        let cancellation = parts.cancellation.clone();
        let needs_turn = matches!(
            phase,
            Phase::ModelCallDue | Phase::ToolRound | Phase::AfterRound
        );
        let turn = match snapshot.turn {
            Some(saved) if needs_turn => Some(Box::new(ActiveTurn {
                turn_id: saved.turn_id,
                items: TurnItems::restored(saved.items),
                usage: saved.usage,
                cancellation: cancellation.as_ref().map(|h| h.checkpoint()),
                model_calls: saved.model_calls,
            })),
            // Version 1 did not record the turn.
            None if needs_turn => Some(Box::new(ActiveTurn {
                turn_id: turn_id(snapshot.next_turn_index.saturating_sub(1)),
                items: TurnItems::default(),
                usage: Usage::default(),
                cancellation: cancellation.as_ref().map(|h| h.checkpoint()),
                model_calls: 0,
            })),
            _ => None,
        };
        let mut core = DriverCore::new(
            snapshot.session_id,
            settings,
            cancellation,
            parts.default_cache,
        );
        core.log = TranscriptLog::new(snapshot.transcript);
        core.pending_input = snapshot.pending_input;
        core.phase = phase;
        core.round = round;
        core.turn = turn;
        core.next_turn_index = snapshot.next_turn_index;
        core.next_item_index = snapshot.next_item_index;
        core.next_turn_cache = snapshot.next_turn_cache.map(Box::new);
        core.soft = soft;
        core.mutation_due = snapshot.mutation_due.filter(|_| settings.has_mutators);
        // Tasks that were running live in another process (or none): they
        // are reported as lost, never silently forgotten.
        core.notifications = snapshot
            .background
            .into_iter()
            .map(|saved| {
                let part = saved.result.unwrap_or_else(|| {
                    ToolResultPart::error(
                        saved.task.call_id.clone(),
                        "the background task was lost: the session was resumed in a process that does not run it",
                    )
                    .with_metadata("agentkit.error_kind", "lost")
                    .with_metadata("agentkit.background_task", saved.task.task_id.as_str())
                });
                (saved.task, part)
            })
            .collect();
        Self::from_core(core, parts.session, parts.config)
    }
}

/// Marks the request of a call that paused mid-run, in a snapshot.
const SUSPENDED: &str = "agentkit.suspended_call";

fn mark_suspended(request: &ApprovalRequest) -> ApprovalRequest {
    let mut request = request.clone();
    request.metadata.insert(SUSPENDED.into(), true.into());
    request
}

/// The transcript's calls that the snapshot's open round names. The round's
/// calls are the transcript's last ones, so the scan goes backwards and
/// stops once all are found: resuming an idle session scans nothing.
fn round_calls(snapshot: &LoopSnapshot) -> HashMap<&ToolCallId, &ToolCallPart> {
    let mut calls = HashMap::with_capacity(snapshot.round.len());
    if snapshot.round.is_empty() {
        return calls;
    }
    let wanted: HashSet<&ToolCallId> = snapshot.round.iter().map(|s| &s.call_id).collect();
    for item in snapshot.transcript.iter().rev() {
        for call in item.tool_calls() {
            if wanted.contains(&call.id) {
                calls.entry(&call.id).or_insert(call);
            }
        }
        if calls.len() == wanted.len() {
            break;
        }
    }
    calls
}

fn is_suspended(request: &ApprovalRequest) -> bool {
    request.metadata.get(SUSPENDED) == Some(&serde_json::Value::Bool(true))
}

/// Refuses snapshots this build or this agent cannot continue.
pub(crate) fn check_snapshot(
    snapshot: &LoopSnapshot,
    executor: &dyn ToolExecutor,
) -> Result<(), LoopError> {
    if !(1..=SNAPSHOT_VERSION).contains(&snapshot.version) {
        return Err(LoopError::Snapshot(format!(
            "snapshot version {} is not supported (this build reads versions 1 to {SNAPSHOT_VERSION})",
            snapshot.version
        )));
    }
    let refuse = |message: String| Err(LoopError::Snapshot(message));
    let calls = round_calls(snapshot);
    let catalog = executor.catalog()?;
    for saved in &snapshot.round {
        let Some(call) = calls.get(&saved.call_id) else {
            return refuse(format!(
                "tool call {} of the open round is not in the transcript",
                saved.call_id
            ));
        };
        if call.name != saved.tool_name || arguments_hash(&call.input) != saved.arguments_hash {
            return refuse(format!(
                "tool call {} no longer matches its recorded name and arguments",
                saved.call_id
            ));
        }
        let will_run = matches!(
            saved.state,
            SnapshotCallState::Queued
                | SnapshotCallState::AwaitingApproval { .. }
                | SnapshotCallState::Approved { .. }
        );
        if will_run && catalog.get(&saved.tool_name).is_none() {
            return refuse(format!(
                "tool {} needed by pending call {} is no longer available",
                saved.tool_name, saved.call_id
            ));
        }
    }
    let open = open_tool_calls(&snapshot.transcript);
    if let Some(orphan) = open
        .iter()
        .find(|id| !snapshot.round.iter().any(|c| &c.call_id == *id))
    {
        return refuse(format!(
            "tool call {orphan} has no result and is not part of the saved round"
        ));
    }
    if snapshot.phase == SnapshotPhase::TurnEnding && snapshot.ended_turn.is_none() {
        return refuse("the snapshot says a turn ended but holds no result".into());
    }
    if open.is_empty() && snapshot.phase == SnapshotPhase::ToolRound {
        return refuse("the snapshot says a tool round is open but every call is answered".into());
    }
    Ok(())
}
