//! Why a tool call did not produce a result.

use crate::{ApprovalRequest, AuthRequest};

/// A failed tool call. The loop writes it to the transcript as an error
/// result (`is_error: true`) with the message, so the model can react; the
/// variant is kept in the result's metadata as `agentkit.error_kind`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool by that name.
    #[error("unknown tool {0:?}")]
    NotFound(String),
    /// The input does not match the tool's schema; the message says how.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A permission check refused the call.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// The tool ran and failed.
    #[error("{0}")]
    ExecutionFailed(String),
    /// The turn was cancelled while the tool ran.
    #[error("the tool call was cancelled")]
    Cancelled,
    /// The tool took longer than its deadline.
    #[error("the tool call timed out after {0:?}")]
    Timeout(std::time::Duration),
    /// The tool's backend is gone (server crashed, disconnected).
    #[error("tool unavailable: {0}")]
    Unavailable(String),
    /// Credentials are needed; the host resolves this out of band.
    #[error("authentication required by {}", .0.provider)]
    AuthRequired(Box<AuthRequest>),
    /// The tool paused mid-run because something it runs needs the host's
    /// approval (a sub-agent's own tool call). The agent loop surfaces the
    /// request as an approval of this call, then runs the call again with
    /// the host's answer in [`ToolContext::resume`](crate::ToolContext::resume),
    /// and the tool picks up where it paused. Outside a loop it is an error
    /// like any other.
    #[error("approval required: {}", .0.summary)]
    NeedsApproval(Box<ApprovalRequest>),
    /// A bug or broken invariant.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ToolError {
    /// A short snake_case name for the variant, stored in result metadata.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolError::NotFound(_) => "not_found",
            ToolError::InvalidInput(_) => "invalid_input",
            ToolError::PermissionDenied(_) => "permission_denied",
            ToolError::ExecutionFailed(_) => "execution_failed",
            ToolError::Cancelled => "cancelled",
            ToolError::Timeout(_) => "timeout",
            ToolError::Unavailable(_) => "unavailable",
            ToolError::AuthRequired(_) => "auth_required",
            ToolError::NeedsApproval(_) => "needs_approval",
            ToolError::Internal(_) => "internal",
        }
    }
}
