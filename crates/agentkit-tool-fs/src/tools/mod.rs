//! The tools themselves, one module each.
//!
//! Every tool holds the shared [`FsToolsConfig`](crate::FsToolsConfig) and a
//! spec built once at construction, proposes the filesystem permission its
//! call needs with the resolved path, and then acts on that same path.

mod create_dir;
mod delete;
mod list;
mod move_path;
mod read;
mod replace;
mod search;
mod write;

pub use create_dir::CreateDirectoryTool;
pub use delete::DeleteTool;
pub use list::ListDirectoryTool;
pub use move_path::MoveTool;
pub use read::ReadFileTool;
pub use replace::ReplaceInFileTool;
pub use search::SearchTool;
pub use write::WriteFileTool;

use agentkit_tools_core::{ToolAnnotations, ToolError, ToolSpec};
use serde_json::Value;
use std::sync::Arc;

/// A spec for a built-in tool; the names are constants known to be valid.
fn build_spec(
    name: &str,
    description: &str,
    schema: Value,
    annotations: ToolAnnotations,
) -> Arc<ToolSpec> {
    let spec = ToolSpec::new(name, description, schema)
        .unwrap_or_else(|err| panic!("built-in tool name: {err}"));
    Arc::new(spec.with_annotations(annotations))
}

/// Annotations of tools that only look.
fn read_only() -> ToolAnnotations {
    ToolAnnotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        parallel_safe: true,
    }
}

/// Stops a long walk or read when the turn is cancelled.
fn check_cancelled(ctx: &agentkit_tools_core::ToolContext) -> Result<(), ToolError> {
    ctx.cancellation.check().map_err(|_| ToolError::Cancelled)
}
