//! Snapshots out, snapshots back in.

use super::LoopDriver;
use super::state::{CallState, Phase, RoundCall};
use crate::snapshot::{
    SNAPSHOT_VERSION, SnapshotCall, SnapshotCallState, SnapshotPhase, arguments_hash,
};
use crate::transcript::TranscriptLog;
use crate::{
    Agent, LoopError, LoopSnapshot, ModelAdapter, ModelSession, PromptCacheRequest,
    SoftInterruptHandle,
};
use agentkit_core::{Item, ToolCallPart, TurnId, Usage, open_tool_calls};
use agentkit_tools_core::{ToolError, ToolExecutor};
use std::collections::HashMap;

impl<S: ModelSession> LoopDriver<S> {
    /// A serializable picture of the session, enough to resume it with
    /// [`Agent::resume`] in another process.
    pub fn snapshot(&self) -> LoopSnapshot {
        let phase = match self.phase {
            Phase::Idle => SnapshotPhase::Idle,
            Phase::ModelCallDue => SnapshotPhase::ModelCallDue,
            Phase::ToolRound => SnapshotPhase::ToolRound,
        };
        let round = self
            .round
            .iter()
            .map(|entry| SnapshotCall {
                call_id: entry.call.id.clone(),
                tool_name: entry.call.name.clone(),
                arguments_hash: arguments_hash(&entry.call.input),
                state: match &entry.state {
                    CallState::Queued => SnapshotCallState::Queued,
                    CallState::AwaitingApproval(request) => SnapshotCallState::AwaitingApproval {
                        request: request.clone(),
                    },
                    CallState::Approved(request) => SnapshotCallState::Approved {
                        request: request.clone(),
                    },
                    CallState::Denied(reason) => SnapshotCallState::Denied {
                        reason: reason.clone(),
                    },
                    CallState::Rejected(err) => SnapshotCallState::Rejected {
                        message: err.to_string(),
                    },
                    CallState::Running => SnapshotCallState::Interrupted,
                    CallState::Answered => SnapshotCallState::Answered,
                },
            })
            .collect();
        LoopSnapshot {
            version: SNAPSHOT_VERSION,
            session_id: self.session_id.clone(),
            transcript: self.log.to_vec(),
            pending_input: self.pending_input.clone(),
            round,
            phase,
            next_turn_index: self.next_turn_index,
            next_item_index: self.next_item_index,
            soft_interrupts: self.soft.pending(),
        }
    }

    pub(crate) fn from_snapshot<M: ModelAdapter<Session = S>>(
        agent: &Agent<M>,
        session: S,
        default_cache: Option<PromptCacheRequest>,
        snapshot: LoopSnapshot,
    ) -> Self {
        let calls: HashMap<_, ToolCallPart> = snapshot
            .transcript
            .iter()
            .flat_map(Item::tool_calls)
            .map(|c| (c.id.clone(), c.clone()))
            .collect();
        let round = snapshot
            .round
            .iter()
            .filter_map(|saved| {
                let call = calls.get(&saved.call_id)?.clone();
                let state = match &saved.state {
                    SnapshotCallState::Queued => CallState::Queued,
                    SnapshotCallState::AwaitingApproval { request } => {
                        CallState::AwaitingApproval(request.clone())
                    }
                    SnapshotCallState::Approved { request } => CallState::Approved(request.clone()),
                    SnapshotCallState::Denied { reason } => CallState::Denied(reason.clone()),
                    SnapshotCallState::Rejected { message } => {
                        CallState::Rejected(ToolError::ExecutionFailed(message.clone()))
                    }
                    SnapshotCallState::Interrupted => CallState::Running,
                    _ => CallState::Answered,
                };
                Some(RoundCall { call, state })
            })
            .collect();
        let phase = match snapshot.phase {
            SnapshotPhase::Idle => Phase::Idle,
            SnapshotPhase::ModelCallDue => Phase::ModelCallDue,
            _ => Phase::ToolRound,
        };
        let soft = SoftInterruptHandle::default();
        soft.restore(snapshot.soft_interrupts);
        let turn = (phase != Phase::Idle).then(|| super::state::ActiveTurn {
            turn_id: TurnId::new(format!(
                "turn-{}",
                snapshot.next_turn_index.saturating_sub(1)
            )),
            items: Vec::new(),
            usage: Usage::default(),
            cancellation: agent.config.cancellation.as_ref().map(|h| h.checkpoint()),
        });
        let driver = Self {
            session_id: snapshot.session_id,
            session,
            config: agent.config.clone(),
            log: TranscriptLog::new(snapshot.transcript),
            pending_input: snapshot.pending_input,
            phase,
            round,
            surfaced_approval: None,
            turn,
            next_turn_index: snapshot.next_turn_index,
            next_item_index: snapshot.next_item_index,
            default_cache,
            next_turn_cache: None,
            last_catalog: None,
            soft,
        };
        driver.emit(crate::AgentEvent::RunStarted {
            session_id: driver.session_id.clone(),
        });
        driver
    }
}

/// Refuses snapshots this build or this agent cannot continue.
pub(crate) fn check_snapshot(
    snapshot: &LoopSnapshot,
    executor: &dyn ToolExecutor,
) -> Result<(), LoopError> {
    if snapshot.version != SNAPSHOT_VERSION {
        return Err(LoopError::Snapshot(format!(
            "snapshot version {} is not supported (this build reads version {SNAPSHOT_VERSION})",
            snapshot.version
        )));
    }
    let refuse = |message: String| Err(LoopError::Snapshot(message));
    let calls: HashMap<_, &ToolCallPart> = snapshot
        .transcript
        .iter()
        .flat_map(Item::tool_calls)
        .map(|c| (&c.id, c))
        .collect();
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
        let unanswered = !matches!(saved.state, SnapshotCallState::Answered);
        if unanswered && catalog.get(&saved.tool_name).is_none() {
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
    if open.is_empty() && snapshot.phase == SnapshotPhase::ToolRound {
        return refuse("the snapshot says a tool round is open but every call is answered".into());
    }
    Ok(())
}
