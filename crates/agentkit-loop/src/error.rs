//! Errors `next()` and the handles can return, as enums a host can match.

use crate::ModelError;
use agentkit_core::{ToolCallId, TranscriptError};
use agentkit_tools_core::CatalogError;

/// A loop failure.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LoopError {
    /// The call does not fit the driver's state; the reason says which rule
    /// it broke. Nothing changed.
    #[error("invalid state: {0}")]
    InvalidState(InvalidStateReason),
    /// The model call failed. The transcript is unchanged by the failed call;
    /// calling `next()` again retries it, and
    /// [`LoopDriver::abandon_turn`](crate::LoopDriver::abandon_turn) gives up
    /// on the turn when retrying cannot help.
    #[error("model error: {0}")]
    Model(#[from] ModelError),
    /// The tool catalog could not be built (a name collision under
    /// `CollisionPolicy::Error`).
    #[error("tool catalog: {0}")]
    Catalog(#[from] CatalogError),
    /// A mutator failed, panicked or left the transcript invalid. The
    /// transcript is as it was before that mutator ran; `next()` runs the
    /// mutators of that point again.
    #[error("mutator {mutator}: {error}")]
    Mutator {
        /// The mutator's name.
        mutator: String,
        /// What went wrong.
        error: MutatorError,
    },
    /// Host-supplied code the driver called panicked outside a tool call
    /// (a tool's `spec`, a tool source). The panic was caught.
    #[error("{component} panicked: {message}")]
    Panicked {
        /// What panicked (`"tool catalog"`).
        component: String,
        /// The panic message.
        message: String,
    },
    /// The transcript broke its invariant (a bug, or a bad preloaded one).
    #[error("invalid transcript: {0}")]
    Transcript(#[from] TranscriptError),
    /// A snapshot cannot be resumed.
    #[error("cannot resume snapshot: {0}")]
    Snapshot(String),
    /// The agent is misconfigured.
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// Why a call did not fit the driver's state.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidStateReason {
    /// `next()` was called while an approval the host was shown is unresolved.
    #[error("the approval for tool call {call_id} must be resolved before next()")]
    ApprovalPending {
        /// The call waiting for approval.
        call_id: ToolCallId,
    },
    /// No call of the open round has this id.
    #[error("no pending approval for tool call {call_id}")]
    NoSuchApproval {
        /// The id the host passed.
        call_id: ToolCallId,
    },
    /// The call exists but is not waiting for approval (already resolved).
    #[error("tool call {call_id} is not waiting for approval")]
    NotAwaitingApproval {
        /// The id the host passed.
        call_id: ToolCallId,
    },
    /// `next()` was called while a question a call asked the host is
    /// unanswered.
    #[error("the question of tool call {call_id} must be answered before next()")]
    QuestionPending {
        /// The call waiting for the answer.
        call_id: ToolCallId,
    },
    /// No call of the open round waits for an answer under this id.
    #[error("tool call {call_id} is not waiting for an answer")]
    NoSuchQuestion {
        /// The id the host passed.
        call_id: ToolCallId,
    },
    /// The accepted content does not match the question's schema; the
    /// question stays open, so the host can ask again.
    #[error("the answer to tool call {call_id}'s question does not match its schema: {error}")]
    InvalidAnswer {
        /// The call.
        call_id: ToolCallId,
        /// What does not match.
        error: agentkit_tools_core::FormError,
    },
    /// Input cannot be added while a tool round has unanswered calls.
    #[error("input cannot be added while a tool round has unanswered calls")]
    InputDuringToolRound,
    /// There is no turn in progress to abandon.
    #[error("no turn is in progress")]
    NoTurnInProgress,
}

/// What went wrong in a mutator.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MutatorError {
    /// The mutator returned an error.
    #[error("{0}")]
    Failed(crate::MutateError),
    /// The mutator's rewrite broke the tool-call invariant; it was not kept.
    #[error("its rewrite is not a valid transcript: {0}")]
    InvalidTranscript(TranscriptError),
    /// The mutator panicked; the panic was caught.
    #[error("panicked: {0}")]
    Panicked(String),
}

/// The message of a caught panic.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
