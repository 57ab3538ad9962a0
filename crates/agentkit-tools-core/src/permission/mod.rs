//! Permission requests and the checkers that decide on them.
//!
//! A tool describes what a call would do as [`PermissionRequest`]s (write
//! this file, run this command, call that MCP tool). A [`PermissionChecker`]
//! answers each with a [`PermissionDecision`]. The usual checker is a
//! [`CompositePermissionChecker`] over [`PermissionPolicy`]s, each of which may
//! also have no opinion.

mod request;
mod safe;

pub use request::{
    FileSystemOperation, McpOperation, PermissionPayload, PermissionRequest, ShellCommand,
};
pub use safe::SafeDefaultPermissions;

use crate::{ApprovalReason, ApprovalRequest};
use agentkit_core::{ApprovalId, MetadataMap};
use serde::{Deserialize, Serialize};

/// Why a request was refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionDenial {
    /// The request's kind.
    pub request_kind: String,
    /// Why, in words for the model.
    pub message: String,
}

/// A checker's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum PermissionDecision {
    /// Go ahead.
    Allow,
    /// Refused.
    Deny(PermissionDenial),
    /// Ask the host. The executor fills in the call id, task id and approval
    /// id; checkers leave them empty.
    RequireApproval(ApprovalRequest),
}

/// Decides on permission requests.
pub trait PermissionChecker: Send + Sync {
    /// The decision for one request.
    fn evaluate(&self, request: &PermissionRequest) -> PermissionDecision;
}

/// Allows everything. For tests and fully trusted tool sets; agents default to
/// [`SafeDefaultPermissions`], which asks before side effects.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllowAllPermissions;

impl PermissionChecker for AllowAllPermissions {
    fn evaluate(&self, _request: &PermissionRequest) -> PermissionDecision {
        PermissionDecision::Allow
    }
}

/// One policy's opinion.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicyMatch {
    /// The policy does not cover this request.
    NoOpinion,
    /// The policy allows it.
    Allow,
    /// The policy refuses it.
    Deny(PermissionDenial),
    /// The policy wants the host to decide.
    RequireApproval(ApprovalReason),
}

/// A rule set that may or may not cover a request.
pub trait PermissionPolicy: Send + Sync {
    /// This policy's opinion on the request.
    fn evaluate(&self, request: &PermissionRequest) -> PolicyMatch;
}

/// Combines policies: any deny wins, then any approval requirement, then any
/// allow; if no policy has an opinion, the fallback decides.
pub struct CompositePermissionChecker {
    policies: Vec<Box<dyn PermissionPolicy>>,
    fallback: PolicyMatch,
}

impl CompositePermissionChecker {
    /// A checker with no policies whose fallback asks for approval
    /// (`UnknownTarget`): what no rule covers is not silently allowed.
    pub fn new() -> Self {
        Self {
            policies: Vec::new(),
            fallback: PolicyMatch::RequireApproval(ApprovalReason::UnknownTarget),
        }
    }

    /// Adds a policy.
    pub fn with_policy(mut self, policy: impl PermissionPolicy + 'static) -> Self {
        self.policies.push(Box::new(policy));
        self
    }

    /// Sets what happens when no policy has an opinion.
    pub fn with_fallback(mut self, fallback: PolicyMatch) -> Self {
        self.fallback = fallback;
        self
    }
}

impl Default for CompositePermissionChecker {
    fn default() -> Self {
        Self::new()
    }
}

impl PermissionChecker for CompositePermissionChecker {
    fn evaluate(&self, request: &PermissionRequest) -> PermissionDecision {
        let mut approval = None;
        let mut allowed = false;
        for policy in &self.policies {
            match policy.evaluate(request) {
                PolicyMatch::Deny(denial) => return PermissionDecision::Deny(denial),
                PolicyMatch::RequireApproval(reason) => {
                    approval.get_or_insert(reason);
                }
                PolicyMatch::Allow => allowed = true,
                PolicyMatch::NoOpinion => {}
            }
        }
        let verdict = match (approval, allowed) {
            (Some(reason), _) => PolicyMatch::RequireApproval(reason),
            (None, true) => PolicyMatch::Allow,
            (None, false) => self.fallback.clone(),
        };
        match verdict {
            PolicyMatch::Allow | PolicyMatch::NoOpinion => PermissionDecision::Allow,
            PolicyMatch::Deny(denial) => PermissionDecision::Deny(denial),
            PolicyMatch::RequireApproval(reason) => {
                PermissionDecision::RequireApproval(approval_for(request, reason))
            }
        }
    }
}

/// An approval request for `request`, ids left for the executor to fill in.
pub fn approval_for(request: &PermissionRequest, reason: ApprovalReason) -> ApprovalRequest {
    ApprovalRequest {
        task_id: None,
        call_id: None,
        id: ApprovalId::new(format!("approval:{}", request.kind)),
        request_kind: request.kind.clone(),
        reason,
        summary: request.summary.clone(),
        metadata: MetadataMap::new(),
    }
}
