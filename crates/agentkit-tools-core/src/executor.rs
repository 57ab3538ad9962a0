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
//! preflight hands the validated spec back (`preflight_validated`, then
//! `execute_validated`) so the same input is not validated twice while the
//! tool is unchanged.

use crate::federation::{CatalogError, CatalogTool, ResolvedCatalog, ToolFederation};
use crate::permission::PermissionDecision;
use crate::{
    AllowAllPermissions, ApprovalRequest, DEFAULT_MAX_OUTPUT_BYTES, PermissionChecker, Tool,
    ToolContext, ToolError, ToolRequest, ToolResult, ToolSpec,
};
use crate::{truncate_output, validate_input};
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

    /// The specs of the current catalog (empty if it cannot be built).
    fn specs(&self) -> Vec<Arc<ToolSpec>> {
        self.catalog()
            .map(|c| c.specs().to_vec())
            .unwrap_or_default()
    }

    /// Decides whether the call can run, without running it.
    fn preflight(&self, request: &ToolRequest) -> Preflight;

    /// [`preflight`](Self::preflight), also returning, when the call may run
    /// ([`Preflight::Ready`]), the spec of the tool its input was validated
    /// against; [`execute_validated`](Self::execute_validated) takes it back.
    /// Default: `preflight`, returning no spec.
    fn preflight_validated(&self, request: &ToolRequest) -> (Preflight, Option<Arc<ToolSpec>>) {
        (self.preflight(request), None)
    }

    /// [`execute`](Self::execute) for a call whose input was validated
    /// against `validated` by [`preflight_validated`](Self::preflight_validated):
    /// while the tool's spec is still that one, the input is not validated
    /// again (permissions are checked again). Default: `execute`.
    async fn execute_validated(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
        validated: Arc<ToolSpec>,
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
    /// The default boxes that method's future inside another; the
    /// [`BasicToolExecutor`] returns one box around its own steps, which
    /// awaits the tool's future (one allocation less per call).
    fn execute_shared(
        self: Arc<Self>,
        request: ToolRequest,
        ctx: ToolContext,
        approval: Option<Box<ApprovalRequest>>,
        validated: Option<Arc<ToolSpec>>,
    ) -> ExecuteFuture
    where
        Self: 'static,
    {
        Box::pin(async move {
            match (approval, validated) {
                (Some(approval), _) => self.execute_approved(request, &approval, ctx).await,
                (None, Some(spec)) => self.execute_validated(request, ctx, spec).await,
                (None, None) => self.execute(request, ctx).await,
            }
        })
    }
}

/// The future [`ToolExecutor::execute_shared`] returns: owned, so the
/// loop can hold it beside the call while other work goes on.
pub type ExecuteFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<ToolResult, ToolError>> + Send>>;

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

    /// Folds every request the call proposes into one decision: the first
    /// denial wins; otherwise one approval covers all requests that need it.
    /// The input is validated against `spec` (the tool's) unless it was
    /// against this same spec already (`validated`).
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
        let proposed = match entry.tool.proposed_requests(&request.input) {
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
        metadata.insert("tool".into(), request.tool_name.clone().into());
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

    /// `execute`, skipping the validation of `validated`, see `check`.
    async fn execute_checked(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
        validated: Option<&Arc<ToolSpec>>,
    ) -> Result<ToolResult, ToolError> {
        let catalog = self.resolved()?;
        let entry = Self::lookup(&catalog, &request.tool_name)?;
        let spec = entry.tool.spec();
        match self.check(entry, &spec, &request, validated) {
            Preflight::Ready => self.run(entry.tool.clone(), request, ctx).await,
            Preflight::NeedsApproval(approval) => Err(ToolError::PermissionDenied(format!(
                "{} requires approval and none was given",
                approval.summary
            ))),
            Preflight::Rejected(err) => Err(err),
        }
    }

    async fn run(
        &self,
        tool: Arc<dyn Tool>,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        if ctx.cancellation.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let mut result = tool.invoke(request, ctx).await?;
        if let Some(limit) = self.max_output_bytes {
            result.output = truncate_output(result.output, limit);
        }
        Ok(result)
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

    fn preflight(&self, request: &ToolRequest) -> Preflight {
        self.preflight_validated(request).0
    }

    fn preflight_validated(&self, request: &ToolRequest) -> (Preflight, Option<Arc<ToolSpec>>) {
        let catalog = match self.resolved() {
            Ok(catalog) => catalog,
            Err(err) => return (Preflight::Rejected(err), None),
        };
        match Self::lookup(&catalog, &request.tool_name) {
            Ok(entry) => {
                let spec = entry.tool.spec();
                let preflight = self.check(entry, &spec, request, None);
                let validated = (preflight == Preflight::Ready).then_some(spec);
                (preflight, validated)
            }
            Err(err) => (Preflight::Rejected(err), None),
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
        validated: Arc<ToolSpec>,
    ) -> Result<ToolResult, ToolError> {
        self.execute_checked(request, ctx, Some(&validated)).await
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
        validated: Option<Arc<ToolSpec>>,
    ) -> ExecuteFuture {
        // The inherent steps, awaited inside this one box: no box per step.
        Box::pin(async move {
            match approval {
                Some(approval) => self.execute_approved_inline(request, &approval, ctx).await,
                None => self.execute_checked(request, ctx, validated.as_ref()).await,
            }
        })
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
            Preflight::Ready => self.run(tool, request, ctx).await,
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
            Preflight::NeedsApproval(_) => self.run(tool, request, ctx).await,
            Preflight::Rejected(err) => Err(err),
        }
    }
}
