//! Snapshots: everything needed to resume a session in another process.
//!
//! A snapshot is plain serde data with a version number. Resuming checks
//! that the snapshot still fits the agent: the version is known, the tools
//! of the open round still exist, and the arguments of each pending approval
//! still hash to what was approved-for, so a host never approves one call and
//! runs another.

use crate::{SoftInterruptMessage, TranscriptView};
use agentkit_core::{Item, SessionId, ToolCallId};
use agentkit_tools_core::ApprovalRequest;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The snapshot format this version writes and reads.
pub const SNAPSHOT_VERSION: u32 = 1;

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
}

impl LoopSnapshot {
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
    /// Will be checked and run.
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
    },
    /// Was running when the driver stopped; it is answered with a stub on
    /// resume rather than run twice.
    Interrupted,
    /// Answered already.
    Answered,
}

/// FNV-1a over the canonical JSON of the arguments: stable across processes
/// and Rust versions, unlike `DefaultHasher`.
pub fn arguments_hash(arguments: &Value) -> String {
    let mut canonical = String::new();
    write_canonical(arguments, &mut canonical);
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in canonical.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("fnv1a64:{hash:016x}")
}

/// Compact JSON with every object's keys sorted: what `Value::to_string`
/// prints when serde_json keeps maps sorted, and the same text when a crate
/// in the build turns on serde_json's `preserve_order` (the ACP SDK does).
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (key, value)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
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
    }
}
