//! What `next()` returns: a finished turn, or an interrupt the host handles.
//!
//! Each interrupt carries a small handle whose methods resolve it against the
//! driver (`pending.approve(&mut driver)`), so the host never has to match ids
//! by hand. The handles are plain data (serializable) so an interrupted
//! session can be stored and shown again after a restart.

use crate::{LoopDriver, LoopError, ModelSession};
use agentkit_core::{FinishReason, Item, MetadataMap, SessionId, ToolCallPart, TurnId, Usage};
use agentkit_tools_core::{ApprovalDecision, ApprovalRequest};
use serde::{Deserialize, Serialize};

/// The outcome of one [`LoopDriver::next`] call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", content = "value", rename_all = "snake_case")]
pub enum LoopStep {
    /// The loop needs (or invites) the host's attention.
    Interrupt(LoopInterrupt),
    /// The model finished a turn.
    Finished(TurnResult),
}

/// Why the loop paused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "interrupt", content = "value", rename_all = "snake_case")]
// The approval is the largest variant, and larger still when a crate in the
// build turns on serde_json's `preserve_order` (IndexMap metadata; the ACP
// SDK does). One value per `next()` call: boxing it would cost an API change
// for nothing measurable.
#[allow(clippy::large_enum_variant)]
pub enum LoopInterrupt {
    /// A tool call needs approval. Blocking: `next()` refuses to run until
    /// it is resolved.
    ApprovalRequest(PendingApproval),
    /// The loop has no input to send. Cooperative.
    AwaitingInput(InputRequest),
    /// A tool round finished and the model is about to be called again.
    /// Cooperative: the host may add a message, or just call `next()`.
    AfterToolResult(ToolRoundInfo),
}

impl LoopInterrupt {
    /// `true` for interrupts that must be resolved before the loop can go on
    /// (approvals); `false` for cooperative pauses the host may ignore.
    pub fn is_blocking(&self) -> bool {
        matches!(self, LoopInterrupt::ApprovalRequest(_))
    }
}

/// A tool call waiting for approval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// What is asked, and why.
    pub request: ApprovalRequest,
    /// The call itself (tool name and arguments), for display.
    pub call: ToolCallPart,
}

impl PendingApproval {
    /// Lets the call run.
    pub fn approve<S: ModelSession>(self, driver: &mut LoopDriver<S>) -> Result<(), LoopError> {
        driver.resolve_approval_for(self.call.id, ApprovalDecision::Approve)
    }

    /// Refuses the call; the model is told it was denied.
    pub fn deny<S: ModelSession>(self, driver: &mut LoopDriver<S>) -> Result<(), LoopError> {
        driver.resolve_approval_for(self.call.id, ApprovalDecision::deny())
    }

    /// Refuses the call with a reason the model will read.
    pub fn deny_with_reason<S: ModelSession>(
        self,
        driver: &mut LoopDriver<S>,
        reason: impl Into<String>,
    ) -> Result<(), LoopError> {
        driver.resolve_approval_for(self.call.id, ApprovalDecision::deny_with_reason(reason))
    }
}

/// The loop is waiting for the next user turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// The session.
    pub session_id: SessionId,
    /// Why input is needed, for display.
    pub reason: String,
}

impl InputRequest {
    /// Queues these items as the next input; the following `next()` sends them.
    pub fn submit<S: ModelSession>(
        self,
        driver: &mut LoopDriver<S>,
        items: Vec<Item>,
    ) -> Result<(), LoopError> {
        driver.submit_input(items)
    }
}

/// A tool round finished; every call of it has its result in the transcript.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolRoundInfo {
    /// The session.
    pub session_id: SessionId,
    /// The model turn whose tool calls were answered.
    pub turn_id: TurnId,
    /// The transcript's length at the pause.
    pub transcript_len: usize,
}

impl ToolRoundInfo {
    /// Adds items (typically a user message) that the next model call will
    /// see after the tool results. The handle is consumed: one submit per pause.
    pub fn submit<S: ModelSession>(
        self,
        driver: &mut LoopDriver<S>,
        items: Vec<Item>,
    ) -> Result<(), LoopError> {
        driver.submit_input(items)
    }
}

/// A finished turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnResult {
    /// The last model call of the turn.
    pub turn_id: TurnId,
    /// Why the turn ended.
    pub finish_reason: FinishReason,
    /// Items the turn appended: the model's answers and the tool results.
    pub items: Vec<Item>,
    /// Usage summed over the turn's model calls.
    pub usage: Usage,
    /// Extra data, such as `agentkit.interrupted` after a cancellation.
    pub metadata: MetadataMap,
}
