//! Snapshots: everything needed to resume a session in another process.
//!
//! A snapshot is plain serde data with a version number. Resuming checks
//! that the snapshot still fits the agent: the version is known, the tools
//! of the open round still exist, and the arguments of each pending approval
//! still hash to what was approved-for, so a host never approves one call and
//! runs another.

use crate::{
    BackgroundTaskInfo, MutationPoint, PromptCacheRequest, SoftInterruptMessage, TranscriptView,
    TurnResult,
};
use agentkit_core::{Item, SessionId, ToolCallId, ToolResultPart, TurnId, Usage};
use agentkit_tools_core::ApprovalRequest;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The snapshot format this version writes. It also reads versions 1 and
/// 2; a newer version is refused, never guessed at.
///
/// Version 3 writes a call paused mid-run as [`SnapshotCallState::Suspended`]
/// (version 2 marked its approval request's metadata), a call not yet
/// through the preflight as [`SnapshotCallState::Unchecked`], and the state
/// of the due model call in [`SnapshotTurn::due_call`].
pub const SNAPSHOT_VERSION: u32 = 3;

/// A resumable picture of a driver.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopSnapshot {
    /// Format version; see [`SNAPSHOT_VERSION`].
    pub version: u32,
    /// The session.
    pub session_id: SessionId,
    /// The transcript.
    pub transcript: Vec<Item>,
    /// Input submitted but not yet sent.
    pub pending_input: Vec<Item>,
    /// The open tool round, if the driver paused inside one.
    pub round: Vec<SnapshotCall>,
    /// Where the driver paused.
    pub phase: SnapshotPhase,
    /// The index of the next model call (`turn-<n>`).
    pub next_turn_index: u64,
    /// The next generated item id.
    pub next_item_index: u64,
    /// Soft-interrupt messages still queued.
    #[serde(default)]
    pub soft_interrupts: Vec<SoftInterruptMessage>,
    /// The user turn in progress: its items and usage so far.
    #[serde(default)]
    pub turn: Option<SnapshotTurn>,
    /// A turn that ended but whose result the host has not received yet
    /// (phase `TurnEnding`).
    #[serde(default)]
    pub ended_turn: Option<TurnResult>,
    /// Mutators owed at this point before the loop goes on.
    #[serde(default)]
    pub mutation_due: Option<MutationPoint>,
    /// The one-off prompt-cache request of the next model call.
    #[serde(default)]
    pub next_turn_cache: Option<PromptCacheRequest>,
    /// The soft-interrupt queue's id in the process that took the snapshot,
    /// so a resume in the same process adopts the handles the host holds;
    /// `None` when the host never asked for the queue.
    #[serde(default)]
    pub soft_queue_id: Option<u64>,
    /// Background tasks: running ones (no result; a resumed driver reports
    /// them as lost) and finished ones whose results wait for a safe point.
    #[serde(default)]
    pub background: Vec<SnapshotBackgroundTask>,
}

/// A background task when the snapshot was taken.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotBackgroundTask {
    /// The task.
    pub task: BackgroundTaskInfo,
    /// Its result, if it finished and was not delivered yet.
    pub result: Option<ToolResultPart>,
}

/// The user turn in progress when the snapshot was taken.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotTurn {
    /// Its current model call.
    pub turn_id: TurnId,
    /// The items it appended so far.
    pub items: Vec<Item>,
    /// Usage summed over its model calls so far.
    pub usage: Usage,
    /// Model calls made so far (for the step limit).
    pub model_calls: u32,
    /// The model call that is due, when the phase is `ModelCallDue`.
    #[serde(default)]
    pub due_call: DueModelCall,
    /// The host cancelled the turn; it ends at the next transition.
    #[serde(default)]
    pub cancelled: bool,
    /// Why the model's last answer ended, when the phase is
    /// `AnswerComplete`.
    #[serde(default)]
    pub finish_reason: Option<agentkit_core::FinishReason>,
}

/// Where the due model call stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DueModelCall {
    /// The `BeforeModelCall` mutators ran for it.
    #[serde(default)]
    pub mutated: bool,
    /// Its mutation runs in forced mode (the last call overflowed the
    /// context window).
    #[serde(default)]
    pub forced_compaction: bool,
    /// The automatic retry after a context-length error was used.
    #[serde(default)]
    pub context_retry_used: bool,
}

impl LoopSnapshot {
    /// The id the driver gives the turn of its next model call
    /// (`turn-<next_turn_index>`), for a tool that rebuilds a snapshot's
    /// turn as the driver would (a store's recovery).
    pub fn next_turn_id(&self) -> TurnId {
        crate::driver::machine::turn_id(self.next_turn_index)
    }

    /// The calls waiting for approval, in the order they will be surfaced.
    pub fn pending_approvals(&self) -> impl Iterator<Item = &SnapshotCall> {
        self.round
            .iter()
            .filter(|c| matches!(c.state, SnapshotCallState::AwaitingApproval { .. }))
    }

    /// The transcript as a view.
    pub fn transcript_view(&self) -> TranscriptView {
        TranscriptView::from_items(self.transcript.clone())
    }
}

/// Where a driver paused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SnapshotPhase {
    /// Between turns.
    Idle,
    /// The next model call is due (after a tool round, or a failed call).
    ModelCallDue,
    /// Inside a tool round.
    ToolRound,
    /// Every call of the round is answered; the `AfterToolResult` pause is next.
    AfterToolRound,
    /// A turn ended; its result (`ended_turn`) is delivered next.
    TurnEnding,
    /// The model answered without tool calls; the queue is asked (the turn-complete point)
    /// before the turn ends with `turn.finish_reason`.
    AnswerComplete,
}

/// One call of the open tool round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotCall {
    /// The call's id.
    pub call_id: ToolCallId,
    /// The tool's name.
    pub tool_name: String,
    /// A hash of the arguments, checked on resume.
    pub arguments_hash: String,
    /// Where the call stands.
    pub state: SnapshotCallState,
}

/// Where a call of the open round stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SnapshotCallState {
    /// The model asked for it; the permission preflight runs on resume.
    Unchecked,
    /// Passed the preflight; will run.
    Queued,
    /// Waiting for the host.
    AwaitingApproval {
        /// The request shown to the host.
        request: ApprovalRequest,
    },
    /// Approved, not run yet.
    Approved {
        /// The approved request.
        request: ApprovalRequest,
    },
    /// Denied; the model will be told.
    Denied {
        /// The host's reason.
        reason: Option<String>,
    },
    /// Refused by the preflight (unknown tool, invalid input, denied by policy).
    Rejected {
        /// The error the model will read.
        message: String,
        /// The exact result, error kind included (absent in version 1).
        #[serde(default)]
        result: Option<ToolResultPart>,
    },
    /// Finished; its real result waits for earlier calls to be answered.
    Finished {
        /// The result.
        result: ToolResultPart,
    },
    /// Was running when the driver stopped; it is answered with a stub on
    /// resume rather than run twice.
    Interrupted,
    /// Answered already.
    Answered,
    /// Paused mid-run for the host's approval (a sub-agent's call); it
    /// runs again with the answer.
    Suspended {
        /// The request shown to the host.
        request: ApprovalRequest,
    },
    /// Was running and waiting for the host's answer to a question it
    /// asked (`ToolContext::ask`); like [`Interrupted`](Self::Interrupted)
    /// it is answered with a stub on resume (the waiting call is gone), the
    /// question kept here for display.
    Asking {
        /// The question.
        question: agentkit_tools_core::HostQuestion,
    },
    /// A paused call the host answered; it runs again with the answer.
    Resumed {
        /// The request the host answered.
        request: ApprovalRequest,
        /// The answer.
        decision: agentkit_tools_core::ApprovalDecision,
    },
}

/// FNV-1a over the canonical JSON of the arguments (object keys sorted
/// recursively): stable across processes, Rust versions and serde_json's
/// `preserve_order` feature, unlike `DefaultHasher` or `to_string`.
pub fn arguments_hash(arguments: &Value) -> String {
    let mut hasher = Fnv(0xcbf2_9ce4_8422_2325);
    canonical(arguments, &mut hasher);
    format!("fnv1a64:{:016x}", hasher.0)
}

struct Fnv(u64);

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Feeds the compact JSON of `value` with sorted keys to the hasher.
fn canonical(value: &Value, out: &mut Fnv) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.write(b"{");
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.write(b",");
                }
                out.write(Value::String(key.clone()).to_string().as_bytes());
                out.write(b":");
                canonical(&map[key], out);
            }
            out.write(b"}");
        }
        Value::Array(items) => {
            out.write(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write(b",");
                }
                canonical(item, out);
            }
            out.write(b"]");
        }
        scalar => out.write(scalar.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_hash_is_stable_and_order_independent() {
        let a = serde_json::json!({ "b": 1, "a": [1, 2] });
        let b: Value = serde_json::from_str(r#"{"a":[1,2],"b":1}"#).unwrap();
        assert_eq!(arguments_hash(&a), arguments_hash(&b));
        assert_ne!(
            arguments_hash(&a),
            arguments_hash(&serde_json::json!({ "b": 2, "a": [1, 2] }))
        );
        assert_eq!(
            arguments_hash(&serde_json::json!(null)),
            "fnv1a64:5b9bc4ba528108e4"
        );
        // Nested objects are canonical too, whatever order they were built in.
        let mut outer = serde_json::Map::new();
        outer.insert("z".into(), serde_json::json!({ "y": 1, "x": 2 }));
        outer.insert("a".into(), serde_json::json!(true));
        assert_eq!(
            arguments_hash(&Value::Object(outer)),
            arguments_hash(&serde_json::json!({ "a": true, "z": { "x": 2, "y": 1 } }))
        );
        // The same bytes as version 1 wrote for sorted input.
        assert_eq!(
            arguments_hash(&serde_json::json!({ "a": 1 })),
            arguments_hash(&serde_json::from_str::<Value>("{\"a\":1}").unwrap())
        );
    }
}
