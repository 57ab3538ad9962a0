//! `fs_move`: rename or move a file or directory.
//!
//! An existing destination is only replaced when the call says `overwrite`,
//! because a rename that silently clobbers a file is the kind of loss a
//! model will not notice. Missing parent directories of the destination are
//! created, as `fs_write_file` does. Across filesystems, where a rename is
//! impossible, a single file is copied and the original removed.

use super::build_spec;
use crate::FsToolsConfig;
use crate::input::parse;
use crate::paths::{display, io_failure, resolve_keep_last};
use agentkit_tools_core::{
    FileSystemOperation, PermissionRequest, Tool, ToolAnnotations, ToolContext, ToolError,
    ToolRequest, ToolResult, ToolSpec,
};
use serde::Deserialize;
use serde_json::{Value, json};
use std::io;
use std::sync::Arc;

/// Moves or renames a path; see the module docs.
pub struct MoveTool {
    config: Arc<FsToolsConfig>,
    spec: Arc<ToolSpec>,
}

#[derive(Deserialize)]
struct Input {
    from: String,
    to: String,
    #[serde(default)]
    overwrite: bool,
}

impl MoveTool {
    /// The tool over this configuration.
    pub fn new(config: impl Into<Arc<FsToolsConfig>>) -> Self {
        let config = config.into();
        let schema = json!({
            "type": "object",
            "properties": {
                "from": {
                    "type": "string",
                    "description": "The file or directory to move, absolute or relative to the workspace root."
                },
                "to": {
                    "type": "string",
                    "description": "Its new path (not the directory to move it into)."
                },
                "overwrite": {
                    "type": "boolean",
                    "description": "Replace an existing file at `to`. Default false."
                }
            },
            "required": ["from", "to"],
            "additionalProperties": false
        });
        let annotations = ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            parallel_safe: false,
        };
        let spec = build_spec(
            "fs_move",
            "Moves or renames a file or directory. `to` is the new path. Fails if `to` exists \
             unless `overwrite` is set. Missing parent directories of `to` are created.",
            schema,
            annotations,
        );
        Self { config, spec }
    }
}

#[async_trait::async_trait]
impl Tool for MoveTool {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    fn proposed_requests(&self, input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        let input: Input = parse(input)?;
        let from = resolve_keep_last(&self.config, &input.from)?;
        let to = resolve_keep_last(&self.config, &input.to)?;
        Ok(vec![PermissionRequest::filesystem(
            FileSystemOperation::Move { from, to },
        )])
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let input: Input = parse(&request.input)?;
        let from = resolve_keep_last(&self.config, &input.from)?;
        let to = resolve_keep_last(&self.config, &input.to)?;
        let (from_shown, to_shown) = (display(&self.config, &from), display(&self.config, &to));
        if self.config.root().starts_with(&from) {
            return Err(ToolError::ExecutionFailed(format!(
                "refusing to move {from_shown}: it is the workspace root or contains it"
            )));
        }
        super::check_cancelled(&ctx)?;
        let source = tokio::fs::symlink_metadata(&from)
            .await
            .map_err(|err| io_failure("move", &from_shown, &err))?;
        if tokio::fs::symlink_metadata(&to).await.is_ok() && !input.overwrite {
            return Err(ToolError::ExecutionFailed(format!(
                "cannot move {from_shown} to {to_shown}: the destination exists; set `overwrite` \
                 to replace it"
            )));
        }
        if let Some(parent) = to.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|err| io_failure("create the parent directories of", &to_shown, &err))?;
        }
        match tokio::fs::rename(&from, &to).await {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::CrossesDevices && source.is_file() => {
                tokio::fs::copy(&from, &to)
                    .await
                    .map_err(|err| io_failure("copy", &from_shown, &err))?;
                tokio::fs::remove_file(&from)
                    .await
                    .map_err(|err| io_failure("remove the original", &from_shown, &err))?;
            }
            Err(err) => {
                return Err(ToolError::ExecutionFailed(format!(
                    "cannot move {from_shown} to {to_shown}: {err}"
                )));
            }
        }
        Ok(ToolResult::new(format!("moved {from_shown} to {to_shown}")))
    }
}
