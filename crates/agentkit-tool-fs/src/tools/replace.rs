//! `fs_replace_in_file`: swap one exact piece of text for another.
//!
//! Exact matching (no regex, no whitespace folding) makes the edit
//! predictable: the model copies the text it read and gets exactly that
//! changed. A piece that occurs several times is refused unless the call
//! says `replace_all`, because guessing which occurrence was meant is how
//! edits land in the wrong function.

use super::{FsArgs, check_cancelled, delegate_to_typed, on_path, typed_tool};
use crate::FsToolsConfig;
use crate::beneath;
use crate::paths::{display, io_failure, resolve_contained};
use crate::text::has_nul;
use agentkit_tools_core::{
    FileSystemOperation, PermissionRequest, ToolAnnotations, ToolContext, ToolError, ToolResult,
    TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Replaces exact text in a file; see the module docs.
pub struct ReplaceInFileTool(TypedTool);

/// The arguments of `fs_replace_in_file`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The file, absolute or relative to the workspace root.
    path: String,
    /// The exact text to replace, including whitespace and indentation.
    #[schemars(length(min = 1))]
    old_string: String,
    /// The text to put in its place.
    new_string: String,
    /// Replace every occurrence. Default false: the text must occur exactly once.
    #[serde(default)]
    replace_all: bool,
}

impl ReplaceInFileTool {
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
            "fs_replace_in_file",
            "Replaces an exact piece of text in a file with new text and reports how many \
             occurrences were replaced. Fails if the text is not found, or is found more than \
             once and `replace_all` is not set; add surrounding lines to make it unique."
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

delegate_to_typed!(ReplaceInFileTool);

async fn run(
    config: Arc<FsToolsConfig>,
    input: Input,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
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
    let path = resolve_contained(&config, &input.path)?;
    let shown = display(&config, &path);
    let text = read_text(&config, &path, &shown).await?;
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
    write_text(&config, path, updated, &shown).await?;
    let noun = if count == 1 {
        "occurrence"
    } else {
        "occurrences"
    };
    Ok(ToolResult::new(format!(
        "replaced {count} {noun} in {shown}"
    )))
}

/// The file's text, from the host's files if set, else from beneath the root.
async fn read_text(config: &FsToolsConfig, path: &Path, shown: &str) -> Result<String, ToolError> {
    let bytes = match config.text_files() {
        Some(files) => files.read_text(path).await.map(String::into_bytes),
        None => {
            let root = config.root().to_path_buf();
            let opened = path.to_path_buf();
            super::blocking(move || {
                let mut bytes = Vec::new();
                beneath::open_read(&root, &opened)?.read_to_end(&mut bytes)?;
                Ok(bytes)
            })
            .await
        }
    }
    .map_err(|err| io_failure("read", shown, &err))?;
    match String::from_utf8(bytes) {
        Ok(text) if !has_nul(text.as_bytes()) => Ok(text),
        _ => Err(ToolError::ExecutionFailed(format!(
            "{shown} looks like a binary file (not UTF-8 text); it cannot be edited as text"
        ))),
    }
}

/// Writes the edited text where it was read from.
async fn write_text(
    config: &FsToolsConfig,
    path: PathBuf,
    text: String,
    shown: &str,
) -> Result<(), ToolError> {
    match config.text_files() {
        Some(files) => files.write_text(&path, &text).await,
        None => {
            let root = config.root().to_path_buf();
            super::blocking(move || {
                let (mut file, _) = beneath::create_file(&root, &path)?;
                file.write_all(text.as_bytes())
            })
            .await
        }
    }
    .map_err(|err| io_failure("write", shown, &err))
}
