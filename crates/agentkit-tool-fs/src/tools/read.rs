//! `fs_read_file`: a text file, or a window of its lines, numbered.
//!
//! Line numbers let the model cite and edit precisely; the window (`offset`,
//! `limit`) and the byte cap let it page through files too big for one call
//! without ever loading more than a page into its context.

use super::{build_spec, check_cancelled, read_only};
use crate::FsToolsConfig;
use crate::input::parse;
use crate::paths::{display, io_failure, resolve};
use crate::text::{cut_line, has_nul, strip_newline};
use agentkit_tools_core::{
    FileSystemOperation, PermissionRequest, Tool, ToolContext, ToolError, ToolRequest, ToolResult,
    ToolSpec,
};
use serde::Deserialize;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, BufReader};

/// Reads a UTF-8 text file with line numbers; see the module docs.
pub struct ReadFileTool {
    config: Arc<FsToolsConfig>,
    spec: Arc<ToolSpec>,
}

#[derive(Deserialize)]
struct Input {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

impl ReadFileTool {
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
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "The first line to return (1-based). Default 1."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": config.max_read_lines(),
                    "description": format!("How many lines to return. Default {}.", config.max_read_lines())
                }
            },
            "required": ["path"],
            "additionalProperties": false
        });
        let description = format!(
            "Reads a UTF-8 text file and returns its lines prefixed with their line numbers. \
             At most {} lines and {} bytes come back per call; use `offset` and `limit` to page \
             through longer files. Binary files are refused.",
            config.max_read_lines(),
            config.max_read_bytes()
        );
        let spec = build_spec("fs_read_file", &description, schema, read_only());
        Self { config, spec }
    }
}

#[async_trait::async_trait]
impl Tool for ReadFileTool {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    fn proposed_requests(&self, input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        let input: Input = parse(input)?;
        let path = resolve(&self.config, &input.path)?;
        Ok(vec![PermissionRequest::filesystem(
            FileSystemOperation::Read { path },
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
        let metadata = tokio::fs::metadata(&path)
            .await
            .map_err(|err| io_failure("read", &shown, &err))?;
        if metadata.is_dir() {
            return Err(ToolError::ExecutionFailed(format!(
                "cannot read {shown}: it is a directory; use fs_list_directory"
            )));
        }
        let file = tokio::fs::File::open(&path)
            .await
            .map_err(|err| io_failure("read", &shown, &err))?;
        let mut reader = BufReader::new(file);
        let head = reader
            .fill_buf()
            .await
            .map_err(|err| io_failure("read", &shown, &err))?;
        if has_nul(head) {
            return Err(binary(&shown));
        }

        let offset = input.offset.unwrap_or(1).max(1);
        let limit = input
            .limit
            .unwrap_or(self.config.max_read_lines())
            .min(self.config.max_read_lines());
        let mut out = String::new();
        let mut line = Vec::new();
        let mut line_no = 0usize;
        let mut shown_lines = 0usize;
        let mut more = false;
        loop {
            line.clear();
            let read = reader
                .read_until(b'\n', &mut line)
                .await
                .map_err(|err| io_failure("read", &shown, &err))?;
            if read == 0 {
                break;
            }
            line_no += 1;
            if line_no.is_multiple_of(1024) {
                check_cancelled(&ctx)?;
            }
            if line_no < offset {
                continue;
            }
            if shown_lines == limit {
                more = true;
                break;
            }
            let text = std::str::from_utf8(strip_newline(&line)).map_err(|_| binary(&shown))?;
            let numbered = format!(
                "{line_no:>6}\t{}\n",
                cut_line(text, self.config.max_line_bytes())
            );
            if shown_lines > 0 && out.len() + numbered.len() > self.config.max_read_bytes() {
                more = true;
                break;
            }
            out.push_str(&numbered);
            shown_lines += 1;
        }

        if line_no == 0 {
            return Ok(ToolResult::new(format!("{shown} is empty")));
        }
        if shown_lines == 0 {
            return Err(ToolError::ExecutionFailed(format!(
                "{shown} has {line_no} lines; offset {offset} is past the end"
            )));
        }
        if more {
            let last = offset + shown_lines - 1;
            let _ = write!(
                out,
                "[lines {offset}-{last} of {shown} shown; more follow: call again with offset {}]",
                last + 1
            );
        }
        Ok(ToolResult::new(out))
    }
}

fn binary(shown: &str) -> ToolError {
    ToolError::ExecutionFailed(format!(
        "{shown} looks like a binary file (not UTF-8 text); it cannot be read as text"
    ))
}
