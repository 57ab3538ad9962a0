//! `McpServerPolicy`: which MCP servers tools may reach, and which auth
//! scopes they may be granted without asking.
//!
//! An MCP server is code someone else wrote, reached over stdio or the
//! network; calling its tools, reading its resources or fetching its prompts
//! is only as safe as the server. Granting it OAuth scopes hands it access to
//! an account. So untrusted servers need the host's approval per call
//! (`SensitiveServer`), and scopes that were not approved in advance need it
//! per grant (`SensitiveAuthScope`).

use crate::{ApprovalReason, McpOperation, PermissionDenial, PermissionPayload};
use crate::{PermissionPolicy, PermissionRequest, PolicyMatch};
use std::collections::{BTreeMap, BTreeSet};

/// Trusted, denied and pre-approved-scope rules for MCP servers.
///
/// ```
/// use agentkit_tools_core::{McpOperation, McpServerPolicy, PermissionPolicy};
/// use agentkit_tools_core::{PermissionRequest, PolicyMatch};
///
/// let policy = McpServerPolicy::new()
///     .trust_server("github")
///     .approve_scopes("github", ["repo:read"]);
/// let call = PermissionRequest::mcp(McpOperation::InvokeTool {
///     server: "github".into(),
///     tool: "search".into(),
/// });
/// assert_eq!(policy.evaluate(&call), PolicyMatch::Allow);
/// ```
#[derive(Clone, Debug, Default)]
pub struct McpServerPolicy {
    trusted: BTreeSet<String>,
    denied: BTreeSet<String>,
    scopes: BTreeMap<String, BTreeSet<String>>,
}

impl McpServerPolicy {
    /// A policy that trusts no server and approves no scope.
    pub fn new() -> Self {
        Self::default()
    }

    /// Trusts a server: its tools, resources and prompts need no approval.
    pub fn trust_server(mut self, server: impl Into<String>) -> Self {
        self.trusted.insert(server.into());
        self
    }

    /// Denies every operation on a server.
    pub fn deny_server(mut self, server: impl Into<String>) -> Self {
        self.denied.insert(server.into());
        self
    }

    /// Approves granting these scopes to a server in advance.
    pub fn approve_scopes<I, S>(mut self, server: impl Into<String>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes
            .entry(server.into())
            .or_default()
            .extend(scopes.into_iter().map(Into::into));
        self
    }
}

impl PermissionPolicy for McpServerPolicy {
    fn evaluate(&self, request: &PermissionRequest) -> PolicyMatch {
        let PermissionPayload::Mcp(operation) = &request.payload else {
            return PolicyMatch::NoOpinion;
        };
        let server = operation.server();
        if self.denied.contains(server) {
            return PolicyMatch::Deny(PermissionDenial {
                request_kind: request.kind.clone(),
                message: format!("the MCP server {server} is denied"),
            });
        }
        match operation {
            // Scopes are judged on their own: trusting a server's tools is not
            // trusting it with an account.
            McpOperation::AuthScope { scopes, .. } => {
                let approved = self.scopes.get(server);
                let all_approved = scopes
                    .iter()
                    .all(|scope| approved.is_some_and(|a| a.contains(scope)));
                if all_approved {
                    PolicyMatch::Allow
                } else {
                    PolicyMatch::RequireApproval(ApprovalReason::SensitiveAuthScope)
                }
            }
            _ if self.trusted.contains(server) => PolicyMatch::Allow,
            _ => PolicyMatch::RequireApproval(ApprovalReason::SensitiveServer),
        }
    }
}
