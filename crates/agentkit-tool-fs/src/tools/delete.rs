//! `fs_delete`: remove a file, a symlink, or a directory.
//!
//! A non-empty directory is only removed when the call says `recursive`, so
//! a model that meant to delete an empty build folder cannot take the source
//! tree with it by accident. The workspace root and its ancestors are never
//! deleted, whatever the policy says: no agent task needs that, and the
//! damage could not be undone.

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

/// Deletes a path; see the module docs.
pub struct DeleteTool {
    config: Arc<FsToolsConfig>,
    spec: Arc<ToolSpec>,
}

#[derive(Deserialize)]
struct Input {
    path: String,
    #[serde(default)]
    recursive: bool,
}

impl DeleteTool {
    /// The tool over this configuration.
    pub fn new(config: impl Into<Arc<FsToolsConfig>>) -> Self {
        let config = config.into();
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The file or directory, absolute or relative to the workspace root."
                },
                "recursive": {
                    "type": "boolean",
                    "description": "Delete a non-empty directory with everything in it. Default false."
                }
            },
            "required": ["path"],
            "additionalProperties": false
        });
        let annotations = ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: true,
            parallel_safe: false,
        };
        let spec = build_spec(
            "fs_delete",
            "Deletes a file, a symlink (not its target) or an empty directory. Set `recursive` \
             to delete a directory with its contents.",
            schema,
            annotations,
        );
        Self { config, spec }
    }
}

#[async_trait::async_trait]
impl Tool for DeleteTool {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    fn proposed_requests(&self, input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        let input: Input = parse(input)?;
        let path = resolve_keep_last(&self.config, &input.path)?;
        Ok(vec![PermissionRequest::filesystem(
            FileSystemOperation::Delete { path },
        )])
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let input: Input = parse(&request.input)?;
        let path = resolve_keep_last(&self.config, &input.path)?;
        let shown = display(&self.config, &path);
        if self.config.root().starts_with(&path) {
            return Err(ToolError::ExecutionFailed(format!(
                "refusing to delete {shown}: it is the workspace root or contains it"
            )));
        }
        super::check_cancelled(&ctx)?;
        let meta = tokio::fs::symlink_metadata(&path)
            .await
            .map_err(|err| io_failure("delete", &shown, &err))?;
        if !meta.is_dir() {
            tokio::fs::remove_file(&path)
                .await
                .map_err(|err| io_failure("delete", &shown, &err))?;
            return Ok(ToolResult::new(format!("deleted {shown}")));
        }
        if input.recursive {
            tokio::fs::remove_dir_all(&path)
                .await
                .map_err(|err| io_failure("delete", &shown, &err))?;
            return Ok(ToolResult::new(format!(
                "deleted directory {shown} with its contents"
            )));
        }
        match tokio::fs::remove_dir(&path).await {
            Ok(()) => Ok(ToolResult::new(format!("deleted directory {shown}"))),
            Err(err) if err.kind() == io::ErrorKind::DirectoryNotEmpty => {
                Err(ToolError::ExecutionFailed(format!(
                    "cannot delete {shown}: the directory is not empty; set `recursive` to delete \
                     it with its contents"
                )))
            }
            Err(err) => Err(io_failure("delete", &shown, &err)),
        }
    }
}
