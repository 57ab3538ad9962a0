//! `fs_replace_in_file`: swap one exact piece of text for another.
//!
//! Exact matching (no regex, no whitespace folding) makes the edit
//! predictable: the model copies the text it read and gets exactly that
//! changed. A piece that occurs several times is refused unless the call
//! says `replace_all`, because guessing which occurrence was meant is how
//! edits land in the wrong function.

use super::{build_spec, check_cancelled};
use crate::FsToolsConfig;
use crate::input::parse;
use crate::paths::{display, io_failure, resolve};
use crate::text::has_nul;
use agentkit_tools_core::{
    FileSystemOperation, PermissionRequest, Tool, ToolAnnotations, ToolContext, ToolError,
    ToolRequest, ToolResult, ToolSpec,
};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// Replaces exact text in a file; see the module docs.
pub struct ReplaceInFileTool {
    config: Arc<FsToolsConfig>,
    spec: Arc<ToolSpec>,
}

#[derive(Deserialize)]
struct Input {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

impl ReplaceInFileTool {
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
                "old_string": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The exact text to replace, including whitespace and indentation."
                },
                "new_string": {
                    "type": "string",
                    "description": "The text to put in its place."
                },
                "replace_all": {
                    "type": "boolean",
                    "description": "Replace every occurrence. Default false: the text must occur exactly once."
                }
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": false
        });
        let annotations = ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            parallel_safe: false,
        };
        let spec = build_spec(
            "fs_replace_in_file",
            "Replaces an exact piece of text in a file with new text and reports how many \
             occurrences were replaced. Fails if the text is not found, or is found more than \
             once and `replace_all` is not set; add surrounding lines to make it unique.",
            schema,
            annotations,
        );
        Self { config, spec }
    }
}

#[async_trait::async_trait]
impl Tool for ReplaceInFileTool {
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
        if input.old_string.is_empty() {
            return Err(ToolError::InvalidInput(
                "`old_string` must not be empty".into(),
            ));
        }
        if input.old_string == input.new_string {
            return Err(ToolError::InvalidInput(
                "`old_string` and `new_string` are the same; there is nothing to change".into(),
            ));
        }
        let path = resolve(&self.config, &input.path)?;
        let shown = display(&self.config, &path);
        let bytes = tokio::fs::read(&path)
            .await
            .map_err(|err| io_failure("read", &shown, &err))?;
        let text = match String::from_utf8(bytes) {
            Ok(text) if !has_nul(text.as_bytes()) => text,
            _ => {
                return Err(ToolError::ExecutionFailed(format!(
                    "{shown} looks like a binary file (not UTF-8 text); it cannot be edited as text"
                )));
            }
        };
        check_cancelled(&ctx)?;
        let count = text.matches(input.old_string.as_str()).count();
        if count == 0 {
            return Err(ToolError::ExecutionFailed(format!(
                "`old_string` was not found in {shown}; read the file again and copy the text exactly"
            )));
        }
        if count > 1 && !input.replace_all {
            return Err(ToolError::ExecutionFailed(format!(
                "`old_string` occurs {count} times in {shown}; include more surrounding text to \
                 pick one, or set `replace_all` to replace them all"
            )));
        }
        let updated = text.replace(input.old_string.as_str(), &input.new_string);
        tokio::fs::write(&path, updated.as_bytes())
            .await
            .map_err(|err| io_failure("write", &shown, &err))?;
        let noun = if count == 1 {
            "occurrence"
        } else {
            "occurrences"
        };
        Ok(ToolResult::new(format!(
            "replaced {count} {noun} in {shown}"
        )))
    }
}
