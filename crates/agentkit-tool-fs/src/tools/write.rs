//! `fs_write_file`: create a file, or replace one, with the given text.
//!
//! Missing parent directories are created, because a model writing
//! `src/new_module/mod.rs` means "make it exist", and a failure that only
//! says "no such directory" costs a round trip to fix.

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
use std::io::Write as _;
use std::sync::Arc;

/// Writes a whole file; see the module docs.
pub struct WriteFileTool(TypedTool);

/// The arguments of `fs_write_file`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The file, absolute or relative to the workspace root.
    path: String,
    /// The file's whole new content.
    content: String,
}

impl WriteFileTool {
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
            "fs_write_file",
            "Creates a file with the given content, or overwrites it if it exists. \
             Missing parent directories are created. To change part of a file, prefer \
             fs_replace_in_file."
                .into(),
            annotations,
            run,
        ))
    }
}

impl FsArgs for Input {
    fn request(&self, config: &FsToolsConfig) -> Result<PermissionRequest, ToolError> {
        on_path(config, &self.path, |path| FileSystemOperation::Write {
            path,
        })
    }
}

delegate_to_typed!(WriteFileTool);

async fn run(
    config: Arc<FsToolsConfig>,
    input: Input,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    let path = resolve_contained(&config, &input.path)?;
    let shown = display(&config, &path);
    super::check_cancelled(&ctx)?;
    let content_len = input.content.len();
    if let Some(files) = config.text_files() {
        // The host's copy (an editor's buffer), after the same checks.
        files
            .write_text(&path, &input.content)
            .await
            .map_err(|err| io_failure("write", &shown, &err))?;
        return Ok(ToolResult::new(format!(
            "wrote {shown} ({content_len} bytes)"
        )));
    }
    // Opened beneath the root with symlinks refused: the file written is the
    // one the permission check saw.
    let root = config.root().to_path_buf();
    let existed = super::blocking(move || {
        let (mut file, existed) = beneath::create_file(&root, &path)?;
        file.write_all(input.content.as_bytes())?;
        Ok(existed)
    })
    .await
    .map_err(|err| io_failure("write", &shown, &err))?;
    let verb = if existed { "overwrote" } else { "created" };
    Ok(ToolResult::new(format!(
        "{verb} {shown} ({} bytes)",
        content_len
    )))
}
