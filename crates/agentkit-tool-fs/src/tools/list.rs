//! `fs_list_directory`: what a directory holds, optionally a few levels down.
//!
//! Entries come sorted, depth first, with paths relative to the listed
//! directory, directories marked with a trailing `/` and symlinks with their
//! target, which is the shape a model can read without a legend. Symlinked
//! directories are shown but not entered, and the entry cap stops a listing
//! of `node_modules` from eating the context.

use super::{build_spec, check_cancelled, read_only};
use crate::FsToolsConfig;
use crate::input::{dot, parse};
use crate::paths::{display, io_failure, resolve};
use crate::walk::{Entry, EntryKind, read_sorted};
use agentkit_tools_core::{
    FileSystemOperation, PermissionRequest, Tool, ToolContext, ToolError, ToolRequest, ToolResult,
    ToolSpec,
};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::Arc;

/// Lists a directory; see the module docs.
pub struct ListDirectoryTool {
    config: Arc<FsToolsConfig>,
    spec: Arc<ToolSpec>,
}

#[derive(Deserialize)]
struct Input {
    #[serde(default = "dot")]
    path: String,
    #[serde(default)]
    recursive: bool,
    max_depth: Option<usize>,
}

/// The listing's default depth when `recursive` is set without `max_depth`.
const DEFAULT_RECURSIVE_DEPTH: usize = 3;

impl ListDirectoryTool {
    /// The tool over this configuration.
    pub fn new(config: impl Into<Arc<FsToolsConfig>>) -> Self {
        let config = config.into();
        let default_depth = DEFAULT_RECURSIVE_DEPTH.min(config.max_list_depth());
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The directory, absolute or relative to the workspace root. Default: the root."
                },
                "recursive": {
                    "type": "boolean",
                    "description": "List subdirectories too. Default false."
                },
                "max_depth": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": config.max_list_depth(),
                    "description": format!("How many levels a recursive listing goes down. Default {default_depth}.")
                }
            },
            "additionalProperties": false
        });
        let description = format!(
            "Lists a directory, sorted by name. Directories end with `/`, symlinks show their \
             target and are not followed. At most {} entries are returned.",
            config.max_list_entries()
        );
        let spec = build_spec("fs_list_directory", &description, schema, read_only());
        Self { config, spec }
    }
}

#[async_trait::async_trait]
impl Tool for ListDirectoryTool {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    fn proposed_requests(&self, input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        let input: Input = parse(input)?;
        let path = resolve(&self.config, &input.path)?;
        Ok(vec![PermissionRequest::filesystem(
            FileSystemOperation::List { path },
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
        let max_depth = if input.recursive {
            input
                .max_depth
                .unwrap_or(DEFAULT_RECURSIVE_DEPTH)
                .clamp(1, self.config.max_list_depth())
        } else {
            1
        };
        let cap = self.config.max_list_entries();

        let top = read_sorted(&path)
            .await
            .map_err(|err| io_failure("list", &shown, &err))?;
        // One frame per open directory: its remaining entries, their depth
        // and the prefix that makes their names relative to the listed one.
        let mut stack: Vec<(VecDeque<Entry>, usize, String)> = vec![(top.into(), 1, String::new())];
        let mut lines = Vec::new();
        let mut stopped = false;
        while let Some((entries, depth, prefix)) = stack.last_mut() {
            let Some(entry) = entries.pop_front() else {
                stack.pop();
                continue;
            };
            if lines.len() == cap {
                stopped = true;
                break;
            }
            let (depth, name) = (*depth, format!("{prefix}{}", entry.name));
            match entry.kind {
                EntryKind::Dir => {
                    lines.push(format!("{name}/"));
                    if depth < max_depth {
                        check_cancelled(&ctx)?;
                        match read_sorted(&entry.path).await {
                            Ok(children) => {
                                stack.push((children.into(), depth + 1, format!("{name}/")))
                            }
                            Err(err) => {
                                let last = lines.len() - 1;
                                lines[last] = format!("{name}/ [cannot list: {err}]");
                            }
                        }
                    }
                }
                EntryKind::Symlink => {
                    let target = tokio::fs::read_link(&entry.path)
                        .await
                        .map(|t| t.display().to_string())
                        .unwrap_or_else(|_| "?".into());
                    lines.push(format!("{name} -> {target}"));
                }
                EntryKind::File | EntryKind::Other => lines.push(name),
            }
        }

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
}
