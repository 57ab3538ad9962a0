//! `fs_create_directory`: make a directory and any missing parents.
//!
//! A directory that already exists is success, not an error: the model asked
//! for it to exist, and it does. Only a file in the way is a failure.

use super::build_spec;
use crate::FsToolsConfig;
use crate::input::parse;
use crate::paths::{display, io_failure, resolve};
use agentkit_tools_core::{
    FileSystemOperation, PermissionRequest, Tool, ToolAnnotations, ToolContext, ToolError,
    ToolRequest, ToolResult, ToolSpec,
};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// Creates a directory with its parents; see the module docs.
pub struct CreateDirectoryTool {
    config: Arc<FsToolsConfig>,
    spec: Arc<ToolSpec>,
}

#[derive(Deserialize)]
struct Input {
    path: String,
}

impl CreateDirectoryTool {
    /// The tool over this configuration.
    pub fn new(config: impl Into<Arc<FsToolsConfig>>) -> Self {
        let config = config.into();
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The directory, absolute or relative to the workspace root."
                }
            },
            "required": ["path"],
            "additionalProperties": false
        });
        let annotations = ToolAnnotations {
            read_only: false,
            destructive: false,
            idempotent: true,
            parallel_safe: false,
        };
        let spec = build_spec(
            "fs_create_directory",
            "Creates a directory and any missing parent directories. Succeeds if it already exists.",
            schema,
            annotations,
        );
        Self { config, spec }
    }
}

#[async_trait::async_trait]
impl Tool for CreateDirectoryTool {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    fn proposed_requests(&self, input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        let input: Input = parse(input)?;
        let path = resolve(&self.config, &input.path)?;
        Ok(vec![PermissionRequest::filesystem(
            FileSystemOperation::CreateDir { path },
        )])
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let input: Input = parse(&request.input)?;
        let path = resolve(&self.config, &input.path)?;
        let shown = display(&self.config, &path);
        match tokio::fs::metadata(&path).await {
            Ok(meta) if meta.is_dir() => {
                return Ok(ToolResult::new(format!("{shown} already exists")));
            }
            Ok(_) => {
                return Err(ToolError::ExecutionFailed(format!(
                    "cannot create directory {shown}: a file of that name exists"
                )));
            }
            Err(_) => {}
        }
        tokio::fs::create_dir_all(&path)
            .await
            .map_err(|err| io_failure("create directory", &shown, &err))?;
        Ok(ToolResult::new(format!("created directory {shown}")))
    }
}
