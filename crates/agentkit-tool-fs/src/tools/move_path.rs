//! `fs_move`: rename or move a file or directory.
//!
//! An existing destination is only replaced when the call says `overwrite`,
//! because a rename that silently clobbers a file is the kind of loss a
//! model will not notice. Missing parent directories of the destination are
//! created, as `fs_write_file` does. Across filesystems, where a rename is
//! impossible, a single file is copied and the original removed.

use super::{FsArgs, delegate_to_typed, typed_tool};
use crate::FsToolsConfig;
use crate::beneath;
use crate::paths::{display, io_failure, resolve_keep_last, resolve_keep_last_contained};
use agentkit_tools_core::{
    FileSystemOperation, PermissionRequest, ToolAnnotations, ToolContext, ToolError, ToolResult,
    TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use std::io;
use std::sync::Arc;

/// Moves or renames a path; see the module docs.
pub struct MoveTool(TypedTool);

/// The arguments of `fs_move`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The file or directory to move, absolute or relative to the workspace root.
    from: String,
    /// Its new path (not the directory to move it into).
    to: String,
    /// Replace an existing file at `to`. Default false.
    #[serde(default)]
    overwrite: bool,
}

impl MoveTool {
    /// The tool over this configuration.
    pub fn new(config: impl Into<Arc<FsToolsConfig>>) -> Self {
        let annotations = ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            parallel_safe: false,
        };
        Self(typed_tool(
            &config.into(),
            "fs_move",
            "Moves or renames a file or directory. `to` is the new path. Fails if `to` exists \
             unless `overwrite` is set. Missing parent directories of `to` are created."
                .into(),
            annotations,
            run,
        ))
    }
}

impl FsArgs for Input {
    fn request(&self, config: &FsToolsConfig) -> Result<PermissionRequest, ToolError> {
        let from = resolve_keep_last(config, &self.from)?;
        let to = resolve_keep_last(config, &self.to)?;
        Ok(PermissionRequest::filesystem(FileSystemOperation::Move {
            from,
            to,
        }))
    }
}

delegate_to_typed!(MoveTool);

async fn run(
    config: Arc<FsToolsConfig>,
    input: Input,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    let from = resolve_keep_last_contained(&config, &input.from)?;
    let to = resolve_keep_last_contained(&config, &input.to)?;
    let (from_shown, to_shown) = (display(&config, &from), display(&config, &to));
    if config.root().starts_with(&from) {
        return Err(ToolError::ExecutionFailed(format!(
            "refusing to move {from_shown}: it is the workspace root or contains it"
        )));
    }
    super::check_cancelled(&ctx)?;
    let root = config.root().to_path_buf();
    let overwrite = input.overwrite;
    match super::blocking(move || beneath::rename(&root, &from, &to, overwrite)).await {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
            return Err(ToolError::ExecutionFailed(format!(
                "cannot move {from_shown} to {to_shown}: the destination exists; set `overwrite` \
                 to replace it"
            )));
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Err(io_failure("move", &from_shown, &err));
        }
        Err(err) => {
            return Err(ToolError::ExecutionFailed(format!(
                "cannot move {from_shown} to {to_shown}: {err}"
            )));
        }
    }
    Ok(ToolResult::new(format!("moved {from_shown} to {to_shown}")))
}
