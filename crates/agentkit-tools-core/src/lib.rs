//! Tools for agentkit agents, and the permission system around them.
//!
//! - A [`Tool`] has a shared [`ToolSpec`] (name, description, JSON Schema),
//!   says which [`PermissionRequest`]s a call would make, and is invoked with
//!   a [`ToolContext`].
//! - Tools come from [`ToolSource`]s: a frozen [`ToolRegistry`], or catalogs
//!   that change at run time (MCP servers, plugins). A [`ToolFederation`]
//!   merges several sources in registration order under a [`CollisionPolicy`].
//! - A [`ToolExecutor`] checks each call's permissions before running it
//!   (preflight), so the agent loop can ask the host for approval first.
//! - A [`PermissionChecker`] decides: allow, deny, or require approval.
//!
//! Nothing here depends on the agent loop; MCP and the built-in tools build
//! on this crate alone.

mod approval;
mod auth;
mod error;
mod executor;
mod federation;
mod permission;
mod source;
mod spec;
mod tool;

pub use approval::{ApprovalDecision, ApprovalReason, ApprovalRequest};
pub use auth::{AuthOperation, AuthRequest};
pub use error::ToolError;
pub use executor::{BasicToolExecutor, Preflight, ToolExecutor};
pub use federation::{CatalogError, CollisionPolicy, ResolvedCatalog, ToolFederation};
pub use permission::{
    AllowAllPermissions, CompositePermissionChecker, FileSystemOperation, McpOperation,
    PermissionChecker, PermissionDecision, PermissionDenial, PermissionPayload, PermissionPolicy,
    PermissionRequest, PolicyMatch, ShellCommand,
};
pub use source::{CatalogSnapshot, ToolCatalogEvent, ToolRegistry, ToolSource};
pub use spec::{InvalidToolName, ToolAnnotations, ToolSpec, validate_tool_name};
pub use tool::{Tool, ToolContext, ToolRequest, ToolResources, ToolResult};

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
