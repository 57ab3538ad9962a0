//! Running tool calls: look the tool up, check permissions, invoke.
//!
//! The loop splits a call in two steps. `preflight` decides, without running
//! anything, whether the call can run now, needs the host's approval, or is
//! rejected. Then `execute` (or `execute_approved`, after the host said yes)
//! runs it. All permission requests a call proposes are folded into one
//! decision, so a call is approved once however many requests it makes.
//!
//! The input is checked against the tool's schema before anything else looks
//! at it (tools parse their input to propose permission requests), and the
//! output is cut to a byte budget on the way out. A caller that ran the
//! preflight hands the tool it found back (`preflight_validated`, then
//! `execute_validated` with the [`ResolvedTool`]) so the call is neither
//! looked up nor validated twice while the catalog is unchanged.

use crate::federation::{CatalogError, CatalogTool, ResolvedCatalog, ResolvedTool, ToolFederation};
use crate::permission::PermissionDecision;
use crate::validate_input;
use crate::{
    AllowAllPermissions, ApprovalRequest, DEFAULT_MAX_OUTPUT_BYTES, ExecuteFuture,
    PermissionChecker, Tool, ToolContext, ToolError, ToolRequest, ToolResult, ToolSpec,
};
use agentkit_core::{ApprovalId, MetadataMap};
use std::sync::Arc;

/// The outcome of a permission preflight.
#[derive(Clone, Debug, PartialEq)]
pub enum Preflight {
    /// The call may run.
    Ready,
    /// The host must approve the call first.
    NeedsApproval(ApprovalRequest),
    /// The call cannot run (unknown tool, invalid input, denied).
    Rejected(ToolError),
}

/// Looks up, checks and runs tool calls.
#[async_trait::async_trait]
pub trait ToolExecutor: Send + Sync {
    /// The current tool catalog; re-read at every model call.
    fn catalog(&self) -> Result<Arc<ResolvedCatalog>, CatalogError>;

    /// `true` when `catalog` is still the current one: what
    /// [`catalog`](Self::catalog) would return now. A caller that kept the
    /// last catalog (an agent loop, at every model call) asks this instead
    /// of fetching the catalog to compare it. Default: fetches the catalog
    /// and compares the pointers; the [`BasicToolExecutor`] compares
    /// without taking a reference (a pointer compare for a federation of
    /// frozen sources).
    fn is_current(&self, catalog: &Arc<ResolvedCatalog>) -> bool {
        self.catalog()
            .is_ok_and(|current| Arc::ptr_eq(&current, catalog))
    }

    /// The specs of the current catalog (empty if it cannot be built).
    fn specs(&self) -> Vec<Arc<ToolSpec>> {
        self.catalog()
            .map(|c| c.specs().to_vec())
            .unwrap_or_default()
    }

    /// Decides whether the call can run, without running it.
    fn preflight(&self, request: &ToolRequest) -> Preflight;

    /// [`preflight`](Self::preflight), also returning, when the call may run
    /// ([`Preflight::Ready`]), the tool it found and the spec its input was
    /// validated against; [`execute_validated`](Self::execute_validated)
    /// takes it back. Default: `preflight`, returning no tool.
    fn preflight_validated(&self, request: &ToolRequest) -> (Preflight, Option<ResolvedTool>) {
        (self.preflight(request), None)
    }

    /// [`execute`](Self::execute) for a call that
    /// [`preflight_validated`](Self::preflight_validated) found ready with
    /// `validated`: while the catalog is still the one it was found in,
    /// that tool runs without another lookup and its input is not
    /// validated again (permissions are checked again); after the catalog
    /// changed, the call is looked up again, and validated again if its
    /// tool's spec changed. Default: `execute`.
    async fn execute_validated(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
        validated: ResolvedTool,
    ) -> Result<ToolResult, ToolError> {
        let _ = validated;
        self.execute(request, ctx).await
    }

    /// Runs a call that needs no approval. A call that does is refused with
    /// `PermissionDenied`.
    async fn execute(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError>;

    /// Runs a call the host approved. Denials still apply; approval
    /// requirements are covered by `approval`.
    async fn execute_approved(
        &self,
        request: ToolRequest,
        approval: &ApprovalRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError>;

    /// The call as one owned future, what an agent loop holds while it
    /// runs: [`execute_approved`](Self::execute_approved) with `approval`,
    /// else [`execute_validated`](Self::execute_validated) with `validated`,
    /// else [`execute`](Self::execute).
    ///
    /// The default boxes that method's future inside another
    /// ([`ExecuteFuture::boxed`]); the [`BasicToolExecutor`] checks a call
    /// that needs no approval before it returns, and returns the tool's own
    /// future with the tool ([`ExecuteFuture::invoke`]): one allocation per
    /// call, the tool's.
    fn execute_shared(
        self: Arc<Self>,
        request: ToolRequest,
        ctx: ToolContext,
        approval: Option<Box<ApprovalRequest>>,
        validated: Option<ResolvedTool>,
    ) -> ExecuteFuture
    where
        Self: 'static,
    {
        ExecuteFuture::boxed(async move {
            match (approval, validated) {
                (Some(approval), _) => self.execute_approved(request, &approval, ctx).await,
                (None, Some(spec)) => self.execute_validated(request, ctx, spec).await,
                (None, None) => self.execute(request, ctx).await,
            }
        })
    }
}

/// The standard executor: a federation of sources and a permission checker.
///
/// Before running a call it validates the input against the tool's schema
/// (an [`InvalidInput`](ToolError::InvalidInput) error tells the model what
/// to fix), and after it cuts text output to [`DEFAULT_MAX_OUTPUT_BYTES`]
/// unless configured otherwise with [`with_max_output_bytes`](Self::with_max_output_bytes).
pub struct BasicToolExecutor {
    federation: ToolFederation,
    permissions: Arc<dyn PermissionChecker>,
    max_output_bytes: Option<usize>,
}

impl BasicToolExecutor {
    /// An executor over these sources, allowing everything.
    pub fn new(federation: ToolFederation) -> Self {
        Self {
            federation,
            permissions: Arc::new(AllowAllPermissions),
            max_output_bytes: Some(DEFAULT_MAX_OUTPUT_BYTES),
        }
    }

    /// Sets the output budget in bytes, see [`truncate_output`](crate::truncate_output);
    /// `None` passes outputs through whole.
    pub fn with_max_output_bytes(mut self, max_output_bytes: Option<usize>) -> Self {
        self.max_output_bytes = max_output_bytes;
        self
    }

    /// Sets the permission checker.
    pub fn with_permissions(mut self, permissions: Arc<dyn PermissionChecker>) -> Self {
        self.permissions = permissions;
        self
    }

    /// The current catalog.
    fn resolved(&self) -> Result<Arc<ResolvedCatalog>, ToolError> {
        self.federation
            .resolve()
            .map_err(|err| ToolError::Internal(err.to_string()))
    }

    /// The tool `name` of `catalog`.
    fn lookup<'c>(catalog: &'c ResolvedCatalog, name: &str) -> Result<&'c CatalogTool, ToolError> {
        catalog
            .entry(name)
            .ok_or_else(|| ToolError::NotFound(name.to_owned()))
    }

    /// Checks `input` against the tool's schema: through the schema the
    /// catalog compiled for this spec when it says the input is valid
    /// (the usual case), else through [`validate_input`], which words
    /// what is wrong.
    fn validate(
        entry: &CatalogTool,
        spec: &Arc<ToolSpec>,
        input: &serde_json::Value,
    ) -> Result<(), crate::SchemaErrors> {
        if entry
            .compiled(spec)
            .is_some_and(|compiled| compiled.accepts(input))
        {
            return Ok(());
        }
        validate_input(&spec.input_schema, input)
    }

    /// Validates the input against `spec` (the tool's) unless it was
    /// against this same spec already (`validated`), then [`permit`](Self::permit).
    fn check(
        &self,
        entry: &CatalogTool,
        spec: &Arc<ToolSpec>,
        request: &ToolRequest,
        validated: Option<&Arc<ToolSpec>>,
    ) -> Preflight {
        let revalidate = validated.is_none_or(|done| !Arc::ptr_eq(done, spec));
        if revalidate && let Err(errors) = Self::validate(entry, spec, &request.input) {
            return Preflight::Rejected(ToolError::InvalidInput(errors.to_string()));
        }
        self.permit(&*entry.tool, request)
    }

    /// Folds every request the call proposes into one decision: the first
    /// denial wins; otherwise one approval covers all requests that need it.
    fn permit(&self, tool: &dyn Tool, request: &ToolRequest) -> Preflight {
        let proposed = match tool.proposed_requests(&request.input) {
            // Most calls propose nothing (a tool that only computes or
            // reads what it was given).
            Ok(proposed) if proposed.is_empty() => return Preflight::Ready,
            Ok(proposed) => proposed,
            Err(err) => return Preflight::Rejected(err),
        };
        let mut approvals: Vec<ApprovalRequest> = Vec::new();
        for permission in &proposed {
            match self.permissions.evaluate(permission) {
                PermissionDecision::Allow => {}
                PermissionDecision::Deny(denial) => {
                    return Preflight::Rejected(ToolError::PermissionDenied(denial.message));
                }
                PermissionDecision::RequireApproval(approval) => approvals.push(approval),
            }
        }
        let Some(mut approval) = approvals.first().cloned() else {
            return Preflight::Ready;
        };
        if approvals.len() > 1 {
            approval.summary = distinct(approvals.iter().map(|a| a.summary.as_str())).join("; ");
        }
        approval.call_id = Some(request.call_id.clone());
        approval.id = ApprovalId::new(format!("approval:{}", request.call_id));
        let mut metadata = MetadataMap::new();
        metadata.insert("tool".into(), (*request.tool_name).into());
        metadata.insert(
            "request_kinds".into(),
            distinct(approvals.iter().map(|a| a.request_kind.as_str()))
                .into_iter()
                .map(serde_json::Value::from)
                .collect(),
        );
        metadata.extend(approval.metadata);
        approval.metadata = metadata;
        Preflight::NeedsApproval(approval)
    }

    /// The tool to run a call that needs no approval with, once its
    /// input is valid and its permissions allow it. `validated`, from the
    /// preflight, is used as it is while its catalog is the current one
    /// and it names the call's tool; otherwise the call is looked up
    /// again, and validated again unless its tool kept that spec.
    fn runnable(
        &self,
        request: &ToolRequest,
        validated: Option<ResolvedTool>,
    ) -> Result<Arc<dyn Tool>, ToolError> {
        let validated = match validated {
            Some(found) => {
                let (catalog, tool, spec) = found.into_parts();
                if spec.name == *request.tool_name && self.federation.is_current(&catalog) {
                    // What a lookup would find: the same catalog holds
                    // the same tool under this name, and the input was
                    // validated against the spec it had in that catalog.
                    drop(catalog);
                    return Self::allowed(self.permit(&*tool, request)).map(|()| tool);
                }
                Some(spec)
            }
            None => None,
        };
        let catalog = self.resolved()?;
        let entry = Self::lookup(&catalog, &request.tool_name)?;
        let spec = entry.tool.spec();
        Self::allowed(self.check(entry, &spec, request, validated.as_ref()))?;
        Ok(entry.tool.clone())
    }

    /// `Ok` for a call that may run; a call that needs approval, when none
    /// was given, is refused.
    fn allowed(preflight: Preflight) -> Result<(), ToolError> {
        match preflight {
            Preflight::Ready => Ok(()),
            Preflight::NeedsApproval(approval) => Err(ToolError::PermissionDenied(format!(
                "{} requires approval and none was given",
                approval.summary
            ))),
            Preflight::Rejected(err) => Err(err),
        }
    }

    /// `tool`'s call, its output cut to the budget.
    fn invoke(&self, tool: Arc<dyn Tool>, request: ToolRequest, ctx: ToolContext) -> ExecuteFuture {
        ExecuteFuture::invoke(tool, request, ctx, self.max_output_bytes)
    }

    /// `execute`, or `execute_validated` with `validated`.
    async fn execute_checked(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
        validated: Option<ResolvedTool>,
    ) -> Result<ToolResult, ToolError> {
        let tool = self.runnable(&request, validated)?;
        self.invoke(tool, request, ctx).await
    }
}

/// The items in first-seen order, each once: two requests with the same
/// summary are one thing for the person approving them.
fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = Vec::new();
    for item in items {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}

#[async_trait::async_trait]
impl ToolExecutor for BasicToolExecutor {
    fn catalog(&self) -> Result<Arc<ResolvedCatalog>, CatalogError> {
        self.federation.resolve()
    }

    fn is_current(&self, catalog: &Arc<ResolvedCatalog>) -> bool {
        self.federation.is_current(catalog)
    }

    fn preflight(&self, request: &ToolRequest) -> Preflight {
        self.preflight_validated(request).0
    }

    fn preflight_validated(&self, request: &ToolRequest) -> (Preflight, Option<ResolvedTool>) {
        let catalog = match self.resolved() {
            Ok(catalog) => catalog,
            Err(err) => return (Preflight::Rejected(err), None),
        };
        let entry = match Self::lookup(&catalog, &request.tool_name) {
            Ok(entry) => entry,
            Err(err) => return (Preflight::Rejected(err), None),
        };
        let spec = entry.tool.spec();
        match self.check(entry, &spec, request, None) {
            Preflight::Ready => {
                let tool = entry.tool.clone();
                (
                    Preflight::Ready,
                    Some(ResolvedTool::new(catalog, tool, spec)),
                )
            }
            other => (other, None),
        }
    }

    async fn execute(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        self.execute_checked(request, ctx, None).await
    }

    async fn execute_validated(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
        validated: ResolvedTool,
    ) -> Result<ToolResult, ToolError> {
        self.execute_checked(request, ctx, Some(validated)).await
    }

    async fn execute_approved(
        &self,
        request: ToolRequest,
        approval: &ApprovalRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        self.execute_approved_inline(request, approval, ctx).await
    }

    fn execute_shared(
        self: Arc<Self>,
        request: ToolRequest,
        ctx: ToolContext,
        approval: Option<Box<ApprovalRequest>>,
        validated: Option<ResolvedTool>,
    ) -> ExecuteFuture {
        if let Some(approval) = approval {
            // The rare path: the inherent steps, awaited inside one box.
            return ExecuteFuture::boxed(async move {
                self.execute_approved_inline(request, &approval, ctx).await
            });
        }
        // The common path: checked now, and the tool's own future held
        // with the tool, nothing boxed around it.
        match self.runnable(&request, validated) {
            Ok(tool) => self.invoke(tool, request, ctx),
            Err(err) => ExecuteFuture::ready(Err(err)),
        }
    }
}

impl BasicToolExecutor {
    /// `execute_approved`, as an inherent method `execute_shared` awaits
    /// without a box of its own.
    async fn execute_approved_inline(
        &self,
        request: ToolRequest,
        approval: &ApprovalRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        if approval.call_id.as_ref() != Some(&request.call_id) {
            return Err(ToolError::Internal(format!(
                "approval {} does not belong to call {}",
                approval.id, request.call_id
            )));
        }
        let catalog = self.resolved()?;
        let entry = Self::lookup(&catalog, &request.tool_name)?;
        let tool = entry.tool.clone();
        let spec = tool.spec();
        match self.check(entry, &spec, &request, None) {
            Preflight::Ready => self.invoke(tool, request, ctx).await,
            // The host approved what it was shown. If the call would now need
            // something else (a dynamic catalog swapped the tool in between),
            // that approval does not cover it.
            Preflight::NeedsApproval(fresh)
                if fresh.summary != approval.summary
                    || fresh.request_kind != approval.request_kind =>
            {
                Err(ToolError::PermissionDenied(format!(
                    "the call changed after it was approved: it now needs approval for {}",
                    fresh.summary
                )))
            }
            Preflight::NeedsApproval(_) => self.invoke(tool, request, ctx).await,
            Preflight::Rejected(err) => Err(err),
        }
    }
}
