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
    follow_hints: bool,
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

    /// Lets the tools' own annotations (under `mcp.annotations` in the
    /// request's metadata, as MCP servers send them) shape the defaults:
    /// a tool that says `readOnlyHint: true` and does not say
    /// `openWorldHint: true` runs without asking, even on an untrusted
    /// server; a tool that says `destructiveHint: true` asks every time,
    /// even on a trusted one. Hints are the server's word, so they only
    /// move a call between *ask* and *allow*: a denied server stays denied,
    /// a hint contradicting itself (read-only and destructive) asks, and
    /// any other policy's denial still wins.
    ///
    /// ```
    /// use agentkit_tools_core::{McpOperation, McpServerPolicy, PermissionPolicy};
    /// use agentkit_tools_core::{PermissionRequest, PolicyMatch};
    /// use serde_json::json;
    ///
    /// let policy = McpServerPolicy::new().follow_tool_hints();
    /// let mut call = PermissionRequest::mcp(McpOperation::InvokeTool {
    ///     server: "docs".into(),
    ///     tool: "search".into(),
    /// });
    /// call.metadata.insert("mcp.annotations".into(), json!({ "readOnlyHint": true, "openWorldHint": false }));
    /// assert_eq!(policy.evaluate(&call), PolicyMatch::Allow);
    /// ```
    pub fn follow_tool_hints(mut self) -> Self {
        self.follow_hints = true;
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
            McpOperation::InvokeTool { .. } if self.follow_hints => match Hints::of(request) {
                Hints::Destructive => PolicyMatch::RequireApproval(ApprovalReason::SensitiveServer),
                Hints::ReadOnly => PolicyMatch::Allow,
                Hints::Other if self.trusted.contains(server) => PolicyMatch::Allow,
                Hints::Other => PolicyMatch::RequireApproval(ApprovalReason::SensitiveServer),
            },
            _ if self.trusted.contains(server) => PolicyMatch::Allow,
            _ => PolicyMatch::RequireApproval(ApprovalReason::SensitiveServer),
        }
    }
}

/// What a tool's MCP annotations say, for [`McpServerPolicy::follow_tool_hints`].
enum Hints {
    /// `destructiveHint: true`, or read-only and destructive at once.
    Destructive,
    /// `readOnlyHint: true`, not destructive, not open to the world.
    ReadOnly,
    /// Nothing that changes the default.
    Other,
}

impl Hints {
    fn of(request: &PermissionRequest) -> Hints {
        let hints = request.metadata.get("mcp.annotations");
        // Only real booleans count: `"true"` or `1` is not a claim.
        let says = |key: &str| {
            hints
                .and_then(|h| h.get(key))
                .and_then(serde_json::Value::as_bool)
        };
        if says("destructiveHint") == Some(true) {
            Hints::Destructive
        } else if says("readOnlyHint") == Some(true) && says("openWorldHint") != Some(true) {
            Hints::ReadOnly
        } else {
            Hints::Other
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn call(server: &str, hints: Option<Value>) -> PermissionRequest {
        let mut request = PermissionRequest::mcp(McpOperation::InvokeTool {
            server: server.into(),
            tool: "t".into(),
        });
        if let Some(hints) = hints {
            request.metadata.insert("mcp.annotations".into(), hints);
        }
        request
    }

    const ASK: PolicyMatch = PolicyMatch::RequireApproval(ApprovalReason::SensitiveServer);

    /// A server's annotations are its own word: each row is a way a lying
    /// or careless server could try to get a call through without the
    /// host's approval, and what the policy does about it.
    #[test]
    fn tool_hints_only_move_calls_between_ask_and_allow() {
        let policy = McpServerPolicy::new()
            .follow_tool_hints()
            .trust_server("trusted")
            .deny_server("denied");
        let read_only = json!({ "readOnlyHint": true, "openWorldHint": false });
        let rows: Vec<(&str, &str, Option<Value>, PolicyMatch)> = vec![
            (
                "honest read-only tool, untrusted server",
                "other",
                Some(read_only.clone()),
                PolicyMatch::Allow,
            ),
            (
                "read-only claim on a denied server",
                "denied",
                Some(read_only.clone()),
                PolicyMatch::Deny(PermissionDenial {
                    request_kind: "mcp.invoke_tool".into(),
                    message: "the MCP server denied is denied".into(),
                }),
            ),
            (
                "read-only and destructive at once",
                "other",
                Some(json!({ "readOnlyHint": true, "destructiveHint": true })),
                ASK,
            ),
            (
                "read-only but open to the world",
                "other",
                Some(json!({ "readOnlyHint": true, "openWorldHint": true })),
                ASK,
            ),
            (
                "read-only as a string",
                "other",
                Some(json!({ "readOnlyHint": "true" })),
                ASK,
            ),
            (
                "read-only as a number",
                "other",
                Some(json!({ "readOnlyHint": 1 })),
                ASK,
            ),
            (
                "hints that are not an object",
                "other",
                Some(json!("readOnlyHint")),
                ASK,
            ),
            (
                "destructive tool on a trusted server",
                "trusted",
                Some(json!({ "destructiveHint": true })),
                ASK,
            ),
            ("no hints, untrusted server", "other", None, ASK),
            (
                "no hints, trusted server",
                "trusted",
                None,
                PolicyMatch::Allow,
            ),
            (
                "not destructive, untrusted server",
                "other",
                Some(json!({ "destructiveHint": false })),
                ASK,
            ),
        ];
        for (attack, server, hints, expected) in rows {
            assert_eq!(policy.evaluate(&call(server, hints)), expected, "{attack}");
        }
    }

    #[test]
    fn hints_are_ignored_unless_the_host_follows_them() {
        let hints = json!({ "readOnlyHint": true, "openWorldHint": false });
        assert_eq!(
            McpServerPolicy::new().evaluate(&call("other", Some(hints.clone()))),
            ASK
        );
        // And a read-only claim does not touch scope grants.
        let policy = McpServerPolicy::new().follow_tool_hints();
        let mut scope = PermissionRequest::mcp(McpOperation::AuthScope {
            server: "other".into(),
            scopes: vec!["admin".into()],
        });
        scope.metadata.insert("mcp.annotations".into(), hints);
        assert_eq!(
            policy.evaluate(&scope),
            PolicyMatch::RequireApproval(ApprovalReason::SensitiveAuthScope)
        );
    }
}
