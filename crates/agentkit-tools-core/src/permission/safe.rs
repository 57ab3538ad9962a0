//! `SafeDefaultPermissions`: the checker an agent gets when it sets none.
//!
//! Reading is what an agent does most, and asking about every read would
//! train people to click "yes" blindly; writing files, running commands and
//! calling out to other systems are what can do harm. So this checker allows
//! the requests that only look and asks the host about everything else,
//! including request kinds it does not know: a tool that proposes a custom
//! request (`payments.charge`) does so because it has a side effect. A tool
//! that proposes nothing at all (a pure function, a lookup) runs freely.

use super::{PermissionChecker, PermissionDecision, approval_for};
use crate::PermissionRequest;
use crate::{ApprovalReason, McpOperation, PermissionPayload};

/// Allows reads, asks for approval of every side effect.
///
/// | request                                   | decision |
/// |-------------------------------------------|----------|
/// | `filesystem.read`, `filesystem.list`      | allow    |
/// | `mcp.read_resource`, `mcp.get_prompt`     | allow    |
/// | other `filesystem.*` (write, delete, ...) | approval (`SensitivePath`) |
/// | `shell.command`                           | approval (`SensitiveCommand`) |
/// | `mcp.invoke_tool`                         | approval (`SensitiveServer`) |
/// | `mcp.auth_scope`                          | approval (`SensitiveAuthScope`) |
/// | any custom kind                           | approval (`PolicyRequiresConfirmation`) |
///
/// It never denies: refusing is for policies that know the workspace
/// ([`PathPolicy`](crate::PathPolicy), [`CommandPolicy`](crate::CommandPolicy)),
/// which replace it once configured.
///
/// ```
/// use agentkit_tools_core::{FileSystemOperation, PermissionChecker, PermissionDecision};
/// use agentkit_tools_core::{PermissionRequest, SafeDefaultPermissions, ShellCommand};
///
/// let checker = SafeDefaultPermissions::new();
/// let read = PermissionRequest::filesystem(FileSystemOperation::Read { path: "src/lib.rs".into() });
/// let run = PermissionRequest::shell(ShellCommand::new("cargo test"));
/// assert_eq!(checker.evaluate(&read), PermissionDecision::Allow);
/// assert!(matches!(checker.evaluate(&run), PermissionDecision::RequireApproval(_)));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SafeDefaultPermissions;

impl SafeDefaultPermissions {
    /// The checker.
    pub fn new() -> Self {
        Self
    }
}

impl PermissionChecker for SafeDefaultPermissions {
    fn evaluate(&self, request: &PermissionRequest) -> PermissionDecision {
        let reason = match &request.payload {
            PermissionPayload::FileSystem(operation) if !operation.is_mutation() => None,
            PermissionPayload::FileSystem(_) => Some(ApprovalReason::SensitivePath),
            PermissionPayload::Shell(_) => Some(ApprovalReason::SensitiveCommand),
            PermissionPayload::Mcp(
                McpOperation::ReadResource { .. } | McpOperation::GetPrompt { .. },
            ) => None,
            PermissionPayload::Mcp(McpOperation::AuthScope { .. }) => {
                Some(ApprovalReason::SensitiveAuthScope)
            }
            PermissionPayload::Mcp(_) => Some(ApprovalReason::SensitiveServer),
            _ => Some(ApprovalReason::PolicyRequiresConfirmation),
        };
        match reason {
            None => PermissionDecision::Allow,
            Some(reason) => PermissionDecision::RequireApproval(approval_for(request, reason)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FileSystemOperation, ShellCommand};

    #[test]
    fn reads_run_and_every_side_effect_asks() {
        let fs = |op| PermissionRequest::filesystem(op);
        let mcp = |op| PermissionRequest::mcp(op);
        let p = || std::path::PathBuf::from("f");
        let server = || "srv".to_string();
        // (request, expected reason; None = allowed)
        let table: Vec<(PermissionRequest, Option<ApprovalReason>)> = vec![
            (fs(FileSystemOperation::Read { path: p() }), None),
            (fs(FileSystemOperation::List { path: p() }), None),
            (
                fs(FileSystemOperation::Write { path: p() }),
                Some(ApprovalReason::SensitivePath),
            ),
            (
                fs(FileSystemOperation::CreateDir { path: p() }),
                Some(ApprovalReason::SensitivePath),
            ),
            (
                fs(FileSystemOperation::Delete { path: p() }),
                Some(ApprovalReason::SensitivePath),
            ),
            (
                fs(FileSystemOperation::Move { from: p(), to: p() }),
                Some(ApprovalReason::SensitivePath),
            ),
            (
                PermissionRequest::shell(ShellCommand::new("ls")),
                Some(ApprovalReason::SensitiveCommand),
            ),
            (
                mcp(McpOperation::ReadResource {
                    server: server(),
                    uri: "file:///x".into(),
                }),
                None,
            ),
            (
                mcp(McpOperation::GetPrompt {
                    server: server(),
                    name: "p".into(),
                }),
                None,
            ),
            (
                mcp(McpOperation::InvokeTool {
                    server: server(),
                    tool: "t".into(),
                }),
                Some(ApprovalReason::SensitiveServer),
            ),
            (
                mcp(McpOperation::AuthScope {
                    server: server(),
                    scopes: vec!["repo".into()],
                }),
                Some(ApprovalReason::SensitiveAuthScope),
            ),
            (
                PermissionRequest::custom(
                    "payments.charge",
                    "charge 5 EUR",
                    serde_json::Value::Null,
                ),
                Some(ApprovalReason::PolicyRequiresConfirmation),
            ),
        ];
        for (request, expected) in table {
            let decision = SafeDefaultPermissions::new().evaluate(&request);
            match (expected, decision) {
                (None, PermissionDecision::Allow) => {}
                (Some(reason), PermissionDecision::RequireApproval(approval)) => {
                    assert_eq!(approval.reason, reason, "{}", request.kind);
                    assert_eq!(approval.request_kind, request.kind);
                    assert_eq!(approval.summary, request.summary);
                }
                (expected, decision) => {
                    panic!("{}: expected {expected:?}, got {decision:?}", request.kind)
                }
            }
        }
    }
}
