//! The core's state as a snapshot, and back.
//!
//! The snapshot is derived from the phase alone, which carries everything
//! (the turn in progress with its items and usage, every call's state, the
//! due model call, the mutation owed), so nothing is left out by
//! construction.

use super::DriverCore;
use super::state::{
    AfterRound, CallState, DueCall, Phase, Round, RoundCall, Step, Turn, TurnItems,
};
use crate::snapshot::{
    DueModelCall, SNAPSHOT_VERSION, SnapshotCall, SnapshotCallState, SnapshotPhase, SnapshotTurn,
    arguments_hash,
};
use crate::transcript::TranscriptLog;
use crate::{LoopSnapshot, MutationPoint, PromptCacheRequest};
use agentkit_core::{FinishReason, ToolCallId, ToolCallPart, ToolResultPart, Usage};
use agentkit_tools_core::{ApprovalDecision, ApprovalRequest, ToolResume};
use std::collections::{HashMap, HashSet};

/// How version 2 marked the request of a call that paused mid-run.
const SUSPENDED_MARK: &str = "agentkit.suspended_call";

impl DriverCore {
    /// The core's state as a snapshot, without the transcript, the queued
    /// messages and the background tasks (the shell owns those).
    pub(crate) fn snapshot(&self) -> LoopSnapshot {
        let turn = self.turn();
        let (phase, ended_turn) = match &self.phase {
            Phase::Idle { .. } => (SnapshotPhase::Idle, None),
            Phase::TurnEnding { result, .. } => {
                (SnapshotPhase::TurnEnding, Some((**result).clone()))
            }
            Phase::InTurn(turn) => (
                match &turn.step {
                    Step::ModelCallDue(_) | Step::Streaming(_) => SnapshotPhase::ModelCallDue,
                    Step::TurnComplete { .. } => SnapshotPhase::AnswerComplete,
                    Step::ToolRound(_) => SnapshotPhase::ToolRound,
                    Step::AfterRound(_) => SnapshotPhase::AfterToolRound,
                },
                None,
            ),
        };
        LoopSnapshot {
            version: SNAPSHOT_VERSION,
            session_id: self.session_id.clone(),
            transcript: Vec::new(),
            pending_input: self.pending_input.clone(),
            round: self.round_calls().iter().map(snapshot_call).collect(),
            phase,
            next_turn_index: self.next_turn_index,
            next_item_index: self.next_item_index,
            soft_interrupts: Vec::new(),
            turn: turn.map(|turn| self.snapshot_turn(turn)),
            ended_turn,
            mutation_due: self.mutation_due(),
            next_turn_cache: self.next_turn_cache.as_deref().cloned(),
            soft_queue_id: None,
            background: Vec::new(),
        }
    }

    fn snapshot_turn(&self, turn: &Turn) -> SnapshotTurn {
        let due = match &turn.step {
            Step::ModelCallDue(due) => *due,
            // A stream in progress is lost: the call is due again.
            Step::Streaming(stream) => DueCall {
                mutated: false,
                forced: false,
                retried: stream.due.retried,
            },
            _ => DueCall::default(),
        };
        SnapshotTurn {
            turn_id: turn.turn_id.clone(),
            items: self.log.with(|log| turn.items.to_vec(log)),
            usage: turn.usage.clone(),
            model_calls: turn.model_calls,
            due_call: DueModelCall {
                mutated: due.mutated,
                forced_compaction: due.forced,
                context_retry_used: due.retried,
            },
            cancelled: turn.cancelled,
            finish_reason: match &turn.step {
                Step::TurnComplete { finish_reason, .. } => Some(finish_reason.clone()),
                _ => None,
            },
        }
    }

    /// A core continuing `snapshot` (checked by `check_snapshot`).
    pub(crate) fn from_snapshot(
        snapshot: LoopSnapshot,
        settings: super::CoreSettings,
        default_cache: Option<PromptCacheRequest>,
    ) -> Self {
        let calls = round_calls(&snapshot);
        let round: Vec<RoundCall> = snapshot
            .round
            .iter()
            .filter_map(|saved| {
                let call = (*calls.get(&saved.call_id)?).clone();
                let state = call_state(&call, &saved.state);
                Some(RoundCall { call, state })
            })
            .collect();
        let owed = |point| settings.has_mutators && snapshot.mutation_due == Some(point);
        let saved_turn = snapshot.turn;
        let turn_with = |step: Step| {
            let turn = match saved_turn.clone() {
                Some(saved) => Turn {
                    turn_id: saved.turn_id,
                    items: TurnItems::restored(saved.items),
                    usage: saved.usage,
                    call_usage: Usage::default(),
                    model_calls: saved.model_calls,
                    cancelled: saved.cancelled,
                    number: 1,
                    step,
                    spare_round: Vec::new(),
                    spare_stream: None,
                },
                // Version 1 did not record the turn.
                None => Turn {
                    turn_id: super::turn_id(snapshot.next_turn_index.saturating_sub(1)),
                    items: TurnItems::default(),
                    usage: Usage::default(),
                    call_usage: Usage::default(),
                    model_calls: 0,
                    cancelled: false,
                    number: 1,
                    step,
                    spare_round: Vec::new(),
                    spare_stream: None,
                },
            };
            Phase::InTurn(Box::new(turn))
        };
        let due = saved_turn.as_ref().map(|t| t.due_call).unwrap_or_default();
        let phase = match snapshot.phase {
            SnapshotPhase::Idle => Phase::IDLE,
            SnapshotPhase::ModelCallDue => turn_with(Step::ModelCallDue(DueCall {
                mutated: due.mutated,
                forced: due.forced_compaction,
                retried: due.context_retry_used,
            })),
            SnapshotPhase::ToolRound => turn_with(Step::ToolRound(Round {
                calls: round,
                ..Round::default()
            })),
            SnapshotPhase::AfterToolRound => turn_with(Step::AfterRound(AfterRound {
                mutated: !owed(MutationPoint::AfterToolResult),
                ..AfterRound::default()
            })),
            SnapshotPhase::AnswerComplete => turn_with(Step::TurnComplete {
                finish_reason: saved_turn
                    .as_ref()
                    .and_then(|t| t.finish_reason.clone())
                    .unwrap_or(FinishReason::Completed),
                delivered: false,
            }),
            SnapshotPhase::TurnEnding => match snapshot.ended_turn {
                Some(result) => Phase::TurnEnding {
                    result: Box::new(result),
                    mutated: !owed(MutationPoint::AfterTurnEnded),
                },
                None => Phase::IDLE,
            },
        };
        let mut core = DriverCore::new(snapshot.session_id, settings, default_cache);
        core.log = TranscriptLog::new(snapshot.transcript);
        core.pending_input = snapshot.pending_input;
        core.user_turns = u64::from(matches!(phase, Phase::InTurn(_)));
        core.phase = phase;
        core.next_turn_index = snapshot.next_turn_index;
        core.next_item_index = snapshot.next_item_index;
        core.next_turn_cache = snapshot.next_turn_cache.map(Box::new);
        core
    }
}

fn snapshot_call(entry: &RoundCall) -> SnapshotCall {
    SnapshotCall {
        call_id: entry.call.id.clone(),
        tool_name: entry.call.name.to_string(),
        arguments_hash: arguments_hash(&entry.call.input.to_value()),
        state: match &entry.state {
            CallState::Unchecked => SnapshotCallState::Unchecked,
            CallState::Queued(_) => SnapshotCallState::Queued,
            CallState::AwaitingApproval(request) => SnapshotCallState::AwaitingApproval {
                request: (**request).clone(),
            },
            CallState::Approved(request) => SnapshotCallState::Approved {
                request: (**request).clone(),
            },
            CallState::Denied(reason) => SnapshotCallState::Denied {
                reason: reason.clone(),
            },
            CallState::Rejected(result) => SnapshotCallState::Rejected {
                message: result.output.to_text(),
                result: Some(result.clone()),
            },
            CallState::Running(_) | CallState::Interrupted => SnapshotCallState::Interrupted,
            CallState::Asking(question) => SnapshotCallState::Asking {
                question: (**question).clone(),
            },
            // The answer never reached the call: as interrupted as a
            // question still open.
            CallState::Replying(_) => SnapshotCallState::Asking {
                question: agentkit_tools_core::HostQuestion::form(
                    "(answered, not yet delivered)",
                    serde_json::Value::Null,
                ),
            },
            CallState::Suspended(request) => SnapshotCallState::Suspended {
                request: (**request).clone(),
            },
            CallState::Resumed(resume) => SnapshotCallState::Resumed {
                request: resume.request.clone(),
                decision: resume.decision.clone(),
            },
            CallState::Finished(result) => SnapshotCallState::Finished {
                result: result.clone(),
            },
            CallState::Answered => SnapshotCallState::Answered,
        },
    }
}

fn call_state(call: &ToolCallPart, saved: &SnapshotCallState) -> CallState {
    match saved {
        SnapshotCallState::Unchecked => CallState::Unchecked,
        SnapshotCallState::Queued => CallState::Queued(None),
        // Version 2 saved a paused call as a marked approval.
        SnapshotCallState::AwaitingApproval { request } if marked(request) => {
            CallState::Suspended(Box::new(unmarked(request)))
        }
        SnapshotCallState::AwaitingApproval { request } => {
            CallState::AwaitingApproval(Box::new(request.clone()))
        }
        SnapshotCallState::Approved { request } if marked(request) => {
            CallState::Resumed(Box::new(ToolResume {
                request: unmarked(request),
                decision: ApprovalDecision::Approve,
            }))
        }
        SnapshotCallState::Approved { request } => CallState::Approved(Box::new(request.clone())),
        SnapshotCallState::Denied { reason } => CallState::Denied(reason.clone()),
        SnapshotCallState::Rejected { message, result } => {
            CallState::Rejected(result.clone().unwrap_or_else(|| {
                ToolResultPart::error(call.id.clone(), message.clone())
                    .with_metadata(agentkit_core::keys::ERROR_KIND, "rejected")
            }))
        }
        // The waiting future is gone with the process that ran it.
        SnapshotCallState::Interrupted | SnapshotCallState::Asking { .. } => CallState::Interrupted,
        SnapshotCallState::Finished { result } => CallState::Finished(result.clone()),
        SnapshotCallState::Answered => CallState::Answered,
        SnapshotCallState::Suspended { request } => CallState::Suspended(Box::new(request.clone())),
        SnapshotCallState::Resumed { request, decision } => {
            CallState::Resumed(Box::new(ToolResume {
                request: request.clone(),
                decision: decision.clone(),
            }))
        }
    }
}

fn marked(request: &ApprovalRequest) -> bool {
    request.metadata.get(SUSPENDED_MARK) == Some(&serde_json::Value::Bool(true))
}

fn unmarked(request: &ApprovalRequest) -> ApprovalRequest {
    let mut request = request.clone();
    request.metadata.remove(SUSPENDED_MARK);
    request
}

/// The transcript's calls that the snapshot's open round names. The round's
/// calls are the transcript's last ones, so the scan goes backwards and
/// stops once all are found: resuming an idle session scans nothing.
pub(crate) fn round_calls(snapshot: &LoopSnapshot) -> HashMap<&ToolCallId, &ToolCallPart> {
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
