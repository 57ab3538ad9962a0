//! `fs_list_directory`: what a directory holds, optionally a few levels down.
//!
//! Entries come sorted, depth first, with paths relative to the listed
//! directory, directories marked with a trailing `/` and symlinks with their
//! target, which is the shape a model can read without a legend. Symlinked
//! directories are shown but not entered, and the entry cap stops a listing
//! of `node_modules` from eating the context.

use super::{
    FsArgs, check_cancelled, delegate_to_typed, on_path, read_only, typed_tool, with_maximum,
};
use crate::FsToolsConfig;
use crate::input::dot;
use crate::paths::{display, io_failure, resolve_contained};
use crate::walk::{is_dir, walk};
use agentkit_tools_core::{
    FileSystemOperation, PermissionRequest, ToolContext, ToolError, ToolResult, TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;

/// Lists a directory; see the module docs.
pub struct ListDirectoryTool(TypedTool);

/// The arguments of `fs_list_directory`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The directory, absolute or relative to the workspace root. Default: the root.
    #[serde(default = "dot")]
    path: String,
    /// List subdirectories too. Default false.
    #[serde(default)]
    recursive: bool,
    /// How many levels a recursive listing goes down. Default 3.
    #[schemars(range(min = 1))]
    max_depth: Option<usize>,
}

/// The listing's default depth when `recursive` is set without `max_depth`.
const DEFAULT_RECURSIVE_DEPTH: usize = 3;

impl ListDirectoryTool {
    /// The tool over this configuration.
    pub fn new(config: impl Into<Arc<FsToolsConfig>>) -> Self {
        let config = config.into();
        let description = format!(
            "Lists a directory, sorted by name. Directories end with `/`, symlinks show their \
             target and are not followed; `.git` and what `.gitignore`/`.ignore` exclude are \
             left out. At most {} entries are returned.",
            config.max_list_entries()
        );
        let max_depth = config.max_list_depth();
        let tool = typed_tool(&config, "fs_list_directory", description, read_only(), run);
        Self(tool.map_schema(|schema| with_maximum(schema, "max_depth", max_depth)))
    }
}

impl FsArgs for Input {
    fn request(&self, config: &FsToolsConfig) -> Result<PermissionRequest, ToolError> {
        on_path(config, &self.path, |path| FileSystemOperation::List {
            path,
        })
    }
}

delegate_to_typed!(ListDirectoryTool);

async fn run(
    config: Arc<FsToolsConfig>,
    input: Input,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    let path = resolve_contained(&config, &input.path)?;
    let shown = display(&config, &path);
    let max_depth = if input.recursive {
        input
            .max_depth
            .unwrap_or(DEFAULT_RECURSIVE_DEPTH)
            .clamp(1, config.max_list_depth())
    } else {
        1
    };
    let cap = config.max_list_entries();

    let cancellation = ctx.cancellation.clone();
    let listed = path.clone();
    let (lines, stopped) = super::blocking(move || {
        let mut lines = Vec::new();
        let mut walk = walk(&listed, max_depth);
        // The listed directory itself must be readable; later failures are
        // noted in the listing.
        if let Some(Err(err)) = walk.next() {
            return Err(std::io::Error::other(err));
        }
        std::fs::read_dir(&listed)?;
        for entry in walk {
            if cancellation.is_cancelled() {
                return Err(std::io::Error::from(std::io::ErrorKind::Interrupted));
            }
            if lines.len() == cap {
                return Ok((lines, true));
            }
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    lines.push(format!("[cannot list: {err}]"));
                    continue;
                }
            };
            let name = entry
                .path()
                .strip_prefix(&listed)
                .unwrap_or(entry.path())
                .display()
                .to_string();
            if is_dir(&entry) {
                lines.push(format!("{name}/"));
            } else if entry.path_is_symlink() {
                let target = std::fs::read_link(entry.path())
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|_| "?".into());
                lines.push(format!("{name} -> {target}"));
            } else {
                lines.push(name);
            }
        }
        Ok((lines, false))
    })
    .await
    .map_err(|err| match err.kind() {
        std::io::ErrorKind::Interrupted => ToolError::Cancelled,
        _ => io_failure("list", &shown, &err),
    })?;
    check_cancelled(&ctx)?;

    if lines.is_empty() {
        return Ok(ToolResult::new(format!("{shown} is empty")));
    }
    let mut out = lines.join("\n");
    if stopped {
        out.push_str(&format!(
            "\n[listing stopped after {cap} entries; list a subdirectory to see more]"
        ));
    }
    Ok(ToolResult::new(out))
}
