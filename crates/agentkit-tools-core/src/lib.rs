//! Tools for agentkit agents, and the permission system around them.
//!
//! - [`TypedTool`] builds a tool from an argument type
//!   (`#[derive(Deserialize, JsonSchema)]`) and an async function: the schema
//!   is generated, the input deserialized, errors name the field.
//! - A [`Tool`] has a shared [`ToolSpec`] (name, description, JSON Schema),
//!   says which [`PermissionRequest`]s a call would make, and is invoked with
//!   a [`ToolContext`].
//! - Tools come from [`ToolSource`]s: a frozen [`ToolRegistry`], or catalogs
//!   that change at run time ([`dynamic_catalog`]: MCP servers, plugins),
//!   possibly renamed or filtered ([`PrefixedSource`], [`FilteredSource`]).
//!   A [`ToolFederation`] merges several sources in registration order under
//!   a [`CollisionPolicy`].
//! - A [`ToolExecutor`] validates each call's input against the schema
//!   ([`validate_input`]) and checks its permissions before running it
//!   (preflight), so the agent loop can ask the host for approval first; it
//!   bounds the output ([`truncate_output`]).
//! - A [`PermissionChecker`] decides: allow, deny, or require approval. The
//!   [`policy`] module has ready-made rules for paths, shell commands and
//!   MCP servers.
//!
//! Nothing here depends on the agent loop; MCP and the built-in tools build
//! on this crate alone.
//!
//! # Example
//!
//! The README's example (it runs as a doc-test here and in the README):
//!
//! ```
//! use agentkit_tools_core::{
//!     BasicToolExecutor, CommandPolicy, CompositePermissionChecker, PermissionRequest, Preflight,
//!     ShellCommand, Tool, ToolContext, ToolError, ToolExecutor, ToolFederation, ToolRegistry,
//!     ToolRequest, ToolResult, ToolSpec,
//! };
//! use serde_json::{Value, json};
//! use std::sync::Arc;
//!
//! /// Runs a shell command (here it only pretends to).
//! struct Shell(Arc<ToolSpec>);
//!
//! #[async_trait::async_trait]
//! impl Tool for Shell {
//!     fn spec(&self) -> Arc<ToolSpec> {
//!         self.0.clone()
//!     }
//!
//!     fn proposed_requests(&self, input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
//!         let line = input["command"].as_str().unwrap_or_default();
//!         Ok(vec![PermissionRequest::shell(ShellCommand::new(line))])
//!     }
//!
//!     async fn invoke(&self, request: ToolRequest, _ctx: ToolContext) -> Result<ToolResult, ToolError> {
//!         Ok(ToolResult::new(format!("ran {}", request.input["command"])))
//!     }
//! }
//!
//! let spec = ToolSpec::new("shell", "Runs a command line.", json!({
//!     "type": "object",
//!     "properties": { "command": { "type": "string" } },
//!     "required": ["command"]
//! }))?;
//! let tools = ToolRegistry::new().with(Shell(Arc::new(spec)));
//! let checker = CompositePermissionChecker::new()
//!     .with_policy(CommandPolicy::new().allow_programs(["cargo", "git"]).deny_programs(["rm"]));
//! let executor = BasicToolExecutor::new(ToolFederation::new().with_source(tools))
//!     .with_permissions(Arc::new(checker));
//!
//! let call = |line: Value| ToolRequest::new("call-1", "shell", json!({ "command": line }));
//! assert_eq!(executor.preflight(&call(json!("cargo test"))), Preflight::Ready);
//! assert!(matches!(executor.preflight(&call(json!("cargo build && rm -rf /"))), Preflight::Rejected(_)));
//! assert!(matches!(executor.preflight(&call(json!("make"))), Preflight::NeedsApproval(_)));
//! // The model passed a number: it is told so before the tool runs.
//! let Preflight::Rejected(error) = executor.preflight(&call(json!(42))) else { unreachable!() };
//! assert_eq!(error.to_string(), "invalid input: `/command`: expected string, got integer");
//! # Ok::<(), agentkit_tools_core::InvalidToolName>(())
//! ```

mod adapter;
mod approval;
mod auth;
mod dynamic;
mod error;
mod execute_future;
mod executor;
mod federation;
mod format;
mod nested;
mod normalize;
mod owned_call;
mod permission;
pub mod policy;
mod process_group;
mod question;
mod schema;
mod source;
mod spec;
mod tool;
mod truncate;
mod typed;

pub use adapter::{FilteredSource, PrefixedSource};
pub use approval::{ApprovalDecision, ApprovalReason, ApprovalRequest};
pub use auth::{AuthOperation, AuthRequest};
pub use dynamic::{CatalogReader, CatalogWriter, dynamic_catalog};
pub use error::ToolError;
pub use execute_future::ExecuteFuture;
pub use executor::{BasicToolExecutor, Preflight, ToolExecutor};
pub use federation::{
    CatalogError, CollisionPolicy, ResolvedCatalog, ResolvedTool, ToolFederation,
};
pub use nested::{EventSink, ToolResume, UsageSink};
pub use normalize::{SchemaDialect, normalize_for};
pub use permission::{
    AllowAllPermissions, CompositePermissionChecker, FileSystemOperation, McpOperation,
    PermissionChecker, PermissionDecision, PermissionDenial, PermissionPayload, PermissionPolicy,
    PermissionRequest, PolicyMatch, SafeDefaultPermissions, ShellCommand, approval_for,
};
pub use policy::{CommandPolicy, McpServerPolicy, OutsideRoots, PathPolicy, resolve_path};
pub use process_group::ProcessGroup;
pub use question::{
    Bound, FormError, HostAnswer, HostQuestion, QuestionKind, QuestionSink, check_field,
    complete_form,
};
pub use schema::{SchemaErrors, SchemaViolation, validate_input};
pub use source::{CatalogSnapshot, ToolCatalogEvent, ToolRegistry, ToolSource};
pub use spec::{InvalidToolName, MAX_TOOL_NAME_LEN, ToolAnnotations, ToolSpec, validate_tool_name};
pub use tool::{
    ProgressSink, Tool, ToolContext, ToolProgress, ToolRequest, ToolResources, ToolResult,
};
pub use truncate::{DEFAULT_MAX_OUTPUT_BYTES, truncate_output, truncate_text};
pub use typed::{IntoToolResult, TypedTool, parse_args, schema_for};

/// The schemars version typed tools derive `JsonSchema` with, for crates that
/// would rather not name it in their own manifest
/// (`#[schemars(crate = "agentkit_tools_core::schemars")]`).
pub use schemars;

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
