//! `fs_search`: find lines containing a literal string, grep style.
//!
//! Literal matching keeps this tool free of a regex engine and its
//! dependencies, and it covers what a coding agent mostly searches for:
//! identifiers, error messages, config keys. The walk skips binary files,
//! files above a size limit and the usual bulky directories (`.git`,
//! `node_modules`, `target`), and stops at a result cap with a note saying
//! so, so a common word cannot flood the context.

use super::{FsArgs, check_cancelled, delegate_to_typed, on_path, read_only, typed_tool};
use crate::FsToolsConfig;
use crate::input::dot;
use crate::paths::{display, io_failure, resolve_contained};
use crate::text::{cut_line, has_nul};
use crate::walk::{EntryKind, read_sorted};
use agentkit_tools_core::{
    FileSystemOperation, PermissionRequest, ToolContext, ToolError, ToolResult, TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Directories the search does not enter: version control data, vendored
/// packages and build output, which are large and rarely what is sought.
const SKIPPED_DIRS: &[&str] = &[".git", "node_modules", "target"];

/// How deep the search goes below the starting directory.
const MAX_SEARCH_DEPTH: usize = 32;

/// Matching lines are cut to this many bytes in the output.
const MAX_MATCH_LINE_BYTES: usize = 200;

/// Searches files for a literal string; see the module docs.
pub struct SearchTool(TypedTool);

/// The arguments of `fs_search`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The literal text to look for (not a regular expression).
    #[schemars(length(min = 1))]
    pattern: String,
    /// A directory to search recursively, or one file. Default: the workspace root.
    #[serde(default = "dot")]
    path: String,
    /// Ignore case. Default false.
    #[serde(default)]
    case_insensitive: bool,
}

impl SearchTool {
    /// The tool over this configuration.
    pub fn new(config: impl Into<Arc<FsToolsConfig>>) -> Self {
        let config = config.into();
        let description = format!(
            "Searches text files for lines containing a literal string and returns them as \
             `path:line: text`. Skips binary files, files over {} bytes and the \
             directories {}. At most {} matches are returned.",
            config.max_search_file_bytes(),
            SKIPPED_DIRS.join(", "),
            config.max_search_results()
        );
        Self(typed_tool(
            &config,
            "fs_search",
            description,
            read_only(),
            run,
        ))
    }
}

impl FsArgs for Input {
    fn request(&self, config: &FsToolsConfig) -> Result<PermissionRequest, ToolError> {
        on_path(config, &self.path, |path| FileSystemOperation::Read {
            path,
        })
    }
}

delegate_to_typed!(SearchTool);

async fn run(
    config: Arc<FsToolsConfig>,
    input: Input,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    if input.pattern.is_empty() {
        return Err(ToolError::InvalidInput(
            "`pattern` must not be empty".into(),
        ));
    }
    let start = resolve_contained(&config, &input.path)?;
    let shown = display(&config, &start);
    let meta = tokio::fs::metadata(&start)
        .await
        .map_err(|err| io_failure("search", &shown, &err))?;
    let needle = if input.case_insensitive {
        input.pattern.to_lowercase()
    } else {
        input.pattern.clone()
    };
    let mut search = Search {
        config: &config,
        needle,
        case_insensitive: input.case_insensitive,
        matches: Vec::new(),
        stopped: false,
    };
    if meta.is_dir() {
        // Depth-first over sorted entries, so results come in path order.
        let mut stack: Vec<(PathBuf, usize)> = vec![(start.clone(), 0)];
        while let Some((dir, depth)) = stack.pop() {
            check_cancelled(&ctx)?;
            let Ok(entries) = read_sorted(&dir).await else {
                continue;
            };
            for entry in entries.iter().rev() {
                match entry.kind {
                    EntryKind::Dir
                        if depth < MAX_SEARCH_DEPTH
                            && !SKIPPED_DIRS.contains(&entry.name.as_str()) =>
                    {
                        stack.push((entry.path.clone(), depth + 1));
                    }
                    _ => {}
                }
            }
            for entry in entries.iter().filter(|e| e.kind == EntryKind::File) {
                check_cancelled(&ctx)?;
                search.file(&entry.path).await;
                if search.stopped {
                    break;
                }
            }
            if search.stopped {
                break;
            }
        }
    } else {
        search.file(&start).await;
    }

    let count = search.matches.len();
    if count == 0 {
        return Ok(ToolResult::new(format!(
            "no matches for {:?} in {shown}",
            input.pattern
        )));
    }
    let mut out = search.matches.join("\n");
    if search.stopped {
        out.push_str(&format!(
            "\n[stopped after {count} matches; search a narrower path or a more specific pattern]"
        ));
    }
    Ok(ToolResult::new(out))
}

/// The state of one search.
struct Search<'a> {
    config: &'a FsToolsConfig,
    needle: String,
    case_insensitive: bool,
    matches: Vec<String>,
    stopped: bool,
}

impl Search<'_> {
    /// Adds the matching lines of one file; unreadable, oversized and binary
    /// files are passed over.
    async fn file(&mut self, path: &Path) {
        match tokio::fs::metadata(path).await {
            Ok(meta) if meta.len() <= self.config.max_search_file_bytes() => {}
            _ => return,
        }
        let Ok(bytes) = tokio::fs::read(path).await else {
            return;
        };
        if has_nul(&bytes) {
            return;
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            return;
        };
        let shown = display(self.config, path);
        for (index, line) in text.lines().enumerate() {
            let hit = if self.case_insensitive {
                line.to_lowercase().contains(&self.needle)
            } else {
                line.contains(&self.needle)
            };
            if !hit {
                continue;
            }
            if self.matches.len() == self.config.max_search_results() {
                self.stopped = true;
                return;
            }
            self.matches.push(format!(
                "{shown}:{}: {}",
                index + 1,
                cut_line(line.trim_end(), MAX_MATCH_LINE_BYTES)
            ));
        }
    }
}
