//! `fs_create_directory`: make a directory and any missing parents.
//!
//! A directory that already exists is success, not an error: the model asked
//! for it to exist, and it does. Only a file in the way is a failure.

use super::{FsArgs, delegate_to_typed, on_path, typed_tool};
use crate::FsToolsConfig;
use crate::beneath;
use crate::paths::{display, io_failure, resolve_contained};
use agentkit_tools_core::{
    FileSystemOperation, PermissionRequest, ToolAnnotations, ToolContext, ToolError, ToolResult,
    TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;

/// Creates a directory with its parents; see the module docs.
pub struct CreateDirectoryTool(TypedTool);

/// The arguments of `fs_create_directory`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The directory, absolute or relative to the workspace root.
    path: String,
}

impl CreateDirectoryTool {
    /// The tool over this configuration.
    pub fn new(config: impl Into<Arc<FsToolsConfig>>) -> Self {
        let annotations = ToolAnnotations {
            read_only: false,
            destructive: false,
            idempotent: true,
            parallel_safe: false,
        };
        Self(typed_tool(
            &config.into(),
            "fs_create_directory",
            "Creates a directory and any missing parent directories. Succeeds if it already exists."
                .into(),
            annotations,
            run,
        ))
    }
}

impl FsArgs for Input {
    fn request(&self, config: &FsToolsConfig) -> Result<PermissionRequest, ToolError> {
        on_path(config, &self.path, |path| FileSystemOperation::CreateDir {
            path,
        })
    }
}

delegate_to_typed!(CreateDirectoryTool);

async fn run(
    config: Arc<FsToolsConfig>,
    input: Input,
    _ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    let path = resolve_contained(&config, &input.path)?;
    let shown = display(&config, &path);
    if tokio::fs::symlink_metadata(&path)
        .await
        .is_ok_and(|meta| !meta.is_dir())
    {
        return Err(ToolError::ExecutionFailed(format!(
            "cannot create directory {shown}: a file of that name exists"
        )));
    }
    let root = config.root().to_path_buf();
    let existed = super::blocking(move || beneath::create_dir_all(&root, &path))
        .await
        .map_err(|err| io_failure("create directory", &shown, &err))?;
    if existed {
        return Ok(ToolResult::new(format!("{shown} already exists")));
    }
    Ok(ToolResult::new(format!("created directory {shown}")))
}
