//! A tool that must be approved before it runs, and counts its runs: what a
//! test of approval, kill or resume needs to show a call ran exactly once
//! (or never). It can finish at once, or hold like a long command until the
//! loop drops it, so a test can stop the process while the call is running.

use agentkit_tools_core::{
    ApprovalReason, PermissionChecker, PermissionDecision, PermissionRequest, Tool, ToolContext,
    ToolError, ToolRequest, ToolResult, ToolSpec, approval_for,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A tool named `name` whose every call asks for the permission
/// `<name>.run` (which [`AskFor`] sends to the user) and that counts how
/// often it ran. Clones share the count, so a test keeps one clone and hands
/// another to the agent.
///
/// ```
/// use agentkit_testkit::{AskFor, GuardedTool};
/// use agentkit_tools_core::{PermissionChecker, PermissionDecision, Tool};
///
/// let tool = GuardedTool::new("danger");
/// let asked = tool.proposed_requests(&serde_json::json!({})).unwrap();
/// assert_eq!(asked[0].kind, "danger.run");
/// assert!(matches!(AskFor::kinds("danger.").evaluate(&asked[0]), PermissionDecision::RequireApproval(_)));
/// assert_eq!(tool.runs(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct GuardedTool {
    spec: Arc<ToolSpec>,
    holds: bool,
    runs: Arc<AtomicUsize>,
}

impl GuardedTool {
    /// Answers `<name> done` once approved.
    pub fn new(name: &str) -> Self {
        let spec = ToolSpec::new(
            name,
            format!("the {name} tool"),
            json!({ "type": "object" }),
        )
        .expect("a valid schema");
        Self {
            spec: Arc::new(spec),
            holds: false,
            runs: Arc::default(),
        }
    }

    /// Once approved, never answers: the call runs until the loop drops it
    /// (a long command), so a test can kill or stop the session mid-call.
    pub fn holding(name: &str) -> Self {
        Self {
            holds: true,
            ..Self::new(name)
        }
    }

    /// How many times a call started running (after its approval).
    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl Tool for GuardedTool {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    fn proposed_requests(&self, _input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        let name = &self.spec.name;
        Ok(vec![PermissionRequest::custom(
            format!("{name}.run"),
            format!("run {name}"),
            json!({}),
        )])
    }

    async fn invoke(
        &self,
        _request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if self.holds {
            std::future::pending::<()>().await;
        }
        Ok(ToolResult::new(format!("{} done", self.spec.name)))
    }
}

/// A permission checker that asks the user about every request whose kind
/// starts with a prefix and allows the rest.
#[derive(Clone, Debug)]
pub struct AskFor {
    prefix: String,
}

impl AskFor {
    /// Asks about every request (as a coding agent asks about a command).
    pub fn all() -> Self {
        Self::kinds("")
    }

    /// Asks about the requests whose kind starts with `prefix`
    /// (`"danger."`).
    pub fn kinds(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
        }
    }
}

impl PermissionChecker for AskFor {
    fn evaluate(&self, request: &PermissionRequest) -> PermissionDecision {
        if request.kind.starts_with(&self.prefix) {
            PermissionDecision::RequireApproval(approval_for(
                request,
                ApprovalReason::PolicyRequiresConfirmation,
            ))
        } else {
            PermissionDecision::Allow
        }
    }
}
