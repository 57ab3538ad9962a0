//! `fs_delete`: remove a file, a symlink, or a directory.
//!
//! A non-empty directory is only removed when the call says `recursive`, so
//! a model that meant to delete an empty build folder cannot take the source
//! tree with it by accident. The workspace root and its ancestors are never
//! deleted, whatever the policy says: no agent task needs that, and the
//! damage could not be undone.

use super::{FsArgs, delegate_to_typed, typed_tool};
use crate::FsToolsConfig;
use crate::beneath::{self, Removed};
use crate::paths::{display, io_failure, resolve_keep_last, resolve_keep_last_contained};
use agentkit_tools_core::{
    FileSystemOperation, PermissionRequest, ToolAnnotations, ToolContext, ToolError, ToolResult,
    TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use std::io;
use std::sync::Arc;

/// Deletes a path; see the module docs.
pub struct DeleteTool(TypedTool);

/// The arguments of `fs_delete`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The file or directory, absolute or relative to the workspace root.
    path: String,
    /// Delete a non-empty directory with everything in it. Default false.
    #[serde(default)]
    recursive: bool,
}

impl DeleteTool {
    /// The tool over this configuration.
    pub fn new(config: impl Into<Arc<FsToolsConfig>>) -> Self {
        let annotations = ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: true,
            parallel_safe: false,
        };
        Self(typed_tool(
            &config.into(),
            "fs_delete",
            "Deletes a file, a symlink (not its target) or an empty directory. Set `recursive` \
             to delete a directory with its contents."
                .into(),
            annotations,
            run,
        ))
    }
}

impl FsArgs for Input {
    fn request(&self, config: &FsToolsConfig) -> Result<PermissionRequest, ToolError> {
        let path = resolve_keep_last(config, &self.path)?;
        Ok(PermissionRequest::filesystem(FileSystemOperation::Delete {
            path,
        }))
    }
}

delegate_to_typed!(DeleteTool);

async fn run(
    config: Arc<FsToolsConfig>,
    input: Input,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    let path = resolve_keep_last_contained(&config, &input.path)?;
    let shown = display(&config, &path);
    if config.root().starts_with(&path) {
        return Err(ToolError::ExecutionFailed(format!(
            "refusing to delete {shown}: it is the workspace root or contains it"
        )));
    }
    super::check_cancelled(&ctx)?;
    let root = config.root().to_path_buf();
    let recursive = input.recursive;
    match super::blocking(move || beneath::remove(&root, &path, recursive)).await {
        Ok(Removed::File) => Ok(ToolResult::new(format!("deleted {shown}"))),
        Ok(Removed::EmptyDir) => Ok(ToolResult::new(format!("deleted directory {shown}"))),
        Ok(Removed::Tree) => Ok(ToolResult::new(format!(
            "deleted directory {shown} with its contents"
        ))),
        Err(err) if err.kind() == io::ErrorKind::DirectoryNotEmpty => {
            Err(ToolError::ExecutionFailed(format!(
                "cannot delete {shown}: the directory is not empty; set `recursive` to delete \
                     it with its contents"
            )))
        }
        Err(err) => Err(io_failure("delete", &shown, &err)),
    }
}
