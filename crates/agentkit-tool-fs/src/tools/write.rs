//! `fs_write_file`: create a file, or replace one, with the given text.
//!
//! Missing parent directories are created, because a model writing
//! `src/new_module/mod.rs` means "make it exist", and a failure that only
//! says "no such directory" costs a round trip to fix.

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

/// Writes a whole file; see the module docs.
pub struct WriteFileTool {
    config: Arc<FsToolsConfig>,
    spec: Arc<ToolSpec>,
}

#[derive(Deserialize)]
struct Input {
    path: String,
    content: String,
}

impl WriteFileTool {
    /// The tool over this configuration.
    pub fn new(config: impl Into<Arc<FsToolsConfig>>) -> Self {
        let config = config.into();
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The file, absolute or relative to the workspace root."
                },
                "content": {
                    "type": "string",
                    "description": "The file's whole new content."
                }
            },
            "required": ["path", "content"],
            "additionalProperties": false
        });
        let annotations = ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: true,
            parallel_safe: false,
        };
        let spec = build_spec(
            "fs_write_file",
            "Creates a file with the given content, or overwrites it if it exists. \
             Missing parent directories are created. To change part of a file, prefer \
             fs_replace_in_file.",
            schema,
            annotations,
        );
        Self { config, spec }
    }
}

#[async_trait::async_trait]
impl Tool for WriteFileTool {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    fn proposed_requests(&self, input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        let input: Input = parse(input)?;
        let path = resolve(&self.config, &input.path)?;
        Ok(vec![PermissionRequest::filesystem(
            FileSystemOperation::Write { path },
        )])
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let input: Input = parse(&request.input)?;
        let path = resolve(&self.config, &input.path)?;
        let shown = display(&self.config, &path);
        super::check_cancelled(&ctx)?;
        let existed = match tokio::fs::metadata(&path).await {
            Ok(meta) if meta.is_dir() => {
                return Err(ToolError::ExecutionFailed(format!(
                    "cannot write {shown}: it is a directory"
                )));
            }
            Ok(_) => true,
            Err(_) => false,
        };
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|err| io_failure("create the parent directories of", &shown, &err))?;
        }
        tokio::fs::write(&path, input.content.as_bytes())
            .await
            .map_err(|err| io_failure("write", &shown, &err))?;
        let verb = if existed { "overwrote" } else { "created" };
        Ok(ToolResult::new(format!(
            "{verb} {shown} ({} bytes)",
            input.content.len()
        )))
    }
}
