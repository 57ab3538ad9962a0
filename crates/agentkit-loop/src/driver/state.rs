//! The driver's state between `next()` calls, as plain data.
//!
//! At rest the driver is in one of three phases. Everything `next()` does is
//! a transition between them, and each transition leaves the state
//! consistent before the next `.await`: if the future of `next()` is dropped
//! at any await point, the next call picks up from a valid phase.
//!
//! ```text
//! Idle ──input──▶ ModelCallDue ──answer, no calls──▶ Idle (Finished)
//!                  ▲      │
//!                  │      └──tool calls──▶ ToolRound ──approvals──▶ (Interrupt)
//!                  │                          │
//!                  └──── AfterToolResult ◀────┘ all calls answered
//! ```

use agentkit_core::Item;
use agentkit_core::{ToolCallPart, TurnCancellation, TurnId, Usage};
use agentkit_tools_core::{ApprovalRequest, ToolError};

/// Where the driver rests between `next()` calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No turn in progress.
    Idle,
    /// A turn is in progress and the model is to be called next.
    ModelCallDue,
    /// A turn is in progress and its tool round has calls to answer.
    ToolRound,
}

/// A user turn in progress: it spans every model call and tool round until
/// the model answers without tool calls.
pub(crate) struct ActiveTurn {
    pub(crate) turn_id: TurnId,
    pub(crate) items: Vec<Item>,
    pub(crate) usage: Usage,
    pub(crate) cancellation: Option<TurnCancellation>,
}

impl ActiveTurn {
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancellation
            .as_ref()
            .is_some_and(TurnCancellation::is_cancelled)
    }
}

/// One call of the open tool round.
pub(crate) struct RoundCall {
    pub(crate) call: ToolCallPart,
    pub(crate) state: CallState,
}

/// Where a call stands. Every call ends `Answered`, exactly once.
#[derive(Clone, Debug)]
pub(crate) enum CallState {
    /// Passed the preflight; runs when the round executes.
    Queued,
    /// Waiting for the host.
    AwaitingApproval(ApprovalRequest),
    /// The host approved.
    Approved(ApprovalRequest),
    /// The host denied.
    Denied(Option<String>),
    /// The preflight refused it.
    Rejected(ToolError),
    /// Handed to the task manager. Seen at rest only if `next()` was dropped
    /// mid-round; such a call is answered with a stub rather than run twice.
    Running,
    /// Its result is in the transcript.
    Answered,
}

impl CallState {
    pub(crate) fn is_runnable(&self) -> bool {
        matches!(self, CallState::Queued | CallState::Approved(_))
    }
}
