//! Why a model turn ended.

use serde::{Deserialize, Serialize};

/// Why a model turn (or a whole loop turn) ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// The model finished its answer.
    Completed,
    /// The model stopped to have tools called.
    ToolCall,
    /// The output token limit was reached.
    MaxTokens,
    /// The host cancelled the turn.
    Cancelled,
    /// The provider refused to answer (content filter, safety system).
    Blocked,
    /// The turn ended because of an error.
    Error,
    /// The loop's step limit (model calls per user turn) was reached.
    StepLimit,
    /// A provider-specific reason with no equivalent above.
    Other(String),
}

impl FinishReason {
    /// `true` when the model expects tool results before it continues.
    pub fn is_tool_call(&self) -> bool {
        matches!(self, FinishReason::ToolCall)
    }
}
