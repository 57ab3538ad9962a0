//! Approval requests: a call the host must allow before it runs.

use agentkit_core::{ApprovalId, MetadataMap, TaskId, ToolCallId};
use serde::{Deserialize, Serialize};

/// Why a call needs the host's approval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalReason {
    /// A policy always asks for this kind of operation.
    PolicyRequiresConfirmation,
    /// The operation is riskier than usual.
    EscalatedRisk,
    /// No policy recognised the target.
    UnknownTarget,
    /// A filesystem path outside the allowed roots.
    SensitivePath,
    /// A shell command not on the allow-list.
    SensitiveCommand,
    /// An MCP server not in the trusted set.
    SensitiveServer,
    /// An MCP auth scope not pre-approved.
    SensitiveAuthScope,
}

/// A call waiting for the host's decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The scheduled task, when a task manager assigned one.
    pub task_id: Option<TaskId>,
    /// The tool call this approval is for.
    pub call_id: Option<ToolCallId>,
    /// Unique per call.
    pub id: ApprovalId,
    /// The permission kind, such as `filesystem.write` or `shell.command`.
    pub request_kind: String,
    /// Why approval is needed.
    pub reason: ApprovalReason,
    /// One line for the person deciding.
    pub summary: String,
    /// Extra data (the tool name, paths, the command line).
    #[serde(default)]
    pub metadata: MetadataMap,
}

/// The host's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run the call.
    Approve,
    /// Do not run it; the model reads the reason, if given.
    Deny {
        /// Why, in words for the model.
        reason: Option<String>,
    },
}

impl ApprovalDecision {
    /// A denial without a reason.
    pub fn deny() -> Self {
        ApprovalDecision::Deny { reason: None }
    }

    /// A denial with a reason for the model.
    pub fn deny_with_reason(reason: impl Into<String>) -> Self {
        ApprovalDecision::Deny {
            reason: Some(reason.into()),
        }
    }
}
