//! `fs_read_file`: a text file, or a window of its lines, numbered.
//!
//! Line numbers let the model cite and edit precisely; the window (`offset`,
//! `limit`) and the byte cap let it page through files too big for one call
//! without ever loading more than a page into its context.

use super::{
    FsArgs, check_cancelled, delegate_to_typed, on_path, read_only, typed_tool, with_maximum,
};
use crate::FsToolsConfig;
use crate::beneath;
use crate::paths::{display, io_failure, resolve_contained};
use crate::text::{cut_line, has_nul, strip_newline};
use agentkit_tools_core::{
    FileSystemOperation, PermissionRequest, ToolContext, ToolError, ToolResult, TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};

/// Reads a UTF-8 text file with line numbers; see the module docs.
pub struct ReadFileTool(TypedTool);

/// The arguments of `fs_read_file`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The file, absolute or relative to the workspace root.
    path: String,
    /// The first line to return (1-based). Default 1.
    #[schemars(range(min = 1))]
    offset: Option<usize>,
    /// How many lines to return. Default: the configured maximum.
    #[schemars(range(min = 1))]
    limit: Option<usize>,
}

impl ReadFileTool {
    /// The tool over this configuration.
    pub fn new(config: impl Into<Arc<FsToolsConfig>>) -> Self {
        let config = config.into();
        let description = format!(
            "Reads a UTF-8 text file and returns its lines prefixed with their line numbers. \
             At most {} lines and {} bytes come back per call; use `offset` and `limit` to page \
             through longer files. Binary files are refused.",
            config.max_read_lines(),
            config.max_read_bytes()
        );
        let max_lines = config.max_read_lines();
        let tool = typed_tool(&config, "fs_read_file", description, read_only(), run);
        Self(tool.map_schema(|schema| with_maximum(schema, "limit", max_lines)))
    }
}

impl FsArgs for Input {
    fn request(&self, config: &FsToolsConfig) -> Result<PermissionRequest, ToolError> {
        on_path(config, &self.path, |path| FileSystemOperation::Read {
            path,
        })
    }
}

delegate_to_typed!(ReadFileTool);

async fn run(
    config: Arc<FsToolsConfig>,
    input: Input,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    let path = resolve_contained(&config, &input.path)?;
    let shown = display(&config, &path);
    let mut reader: Box<dyn AsyncBufRead + Unpin + Send> = match config.text_files() {
        // The host's copy (an editor's buffer), after the same checks.
        Some(files) => {
            let text = files
                .read_text(&path)
                .await
                .map_err(|err| io_failure("read", &shown, &err))?;
            Box::new(std::io::Cursor::new(text.into_bytes()))
        }
        None => Box::new(BufReader::new(open_local(&config, &path, &shown).await?)),
    };
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
        .unwrap_or(config.max_read_lines())
        .min(config.max_read_lines());
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
            cut_line(text, config.max_line_bytes())
        );
        if shown_lines > 0 && out.len() + numbered.len() > config.max_read_bytes() {
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

/// The file beneath the root, refused if it is a directory.
async fn open_local(
    config: &FsToolsConfig,
    path: &Path,
    shown: &str,
) -> Result<tokio::fs::File, ToolError> {
    let root = config.root().to_path_buf();
    let opened = path.to_path_buf();
    let file = super::blocking(move || {
        let file = beneath::open_read(&root, &opened)?;
        let is_dir = file.metadata()?.is_dir();
        Ok((file, is_dir))
    })
    .await
    .map_err(|err| io_failure("read", shown, &err))?;
    match file {
        (_, true) => Err(ToolError::ExecutionFailed(format!(
            "cannot read {shown}: it is a directory; use fs_list_directory"
        ))),
        (file, false) => Ok(tokio::fs::File::from_std(file)),
    }
}

fn binary(shown: &str) -> ToolError {
    ToolError::ExecutionFailed(format!(
        "{shown} looks like a binary file (not UTF-8 text); it cannot be read as text"
    ))
}
