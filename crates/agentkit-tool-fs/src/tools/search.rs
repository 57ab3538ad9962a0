//! `fs_search`: find lines containing a literal string, grep style.
//!
//! Literal matching covers what a coding agent mostly searches for:
//! identifiers, error messages, config keys. The walk (see `walk`) skips
//! `.git` and what the project's `.gitignore` and `.ignore` files exclude
//! (build output, vendored packages), binary files and files above a size
//! limit, and stops at a result cap with a note saying so, so a common word
//! cannot flood the context.

use super::{FsArgs, check_cancelled, delegate_to_typed, on_path, read_only, typed_tool};
use crate::FsToolsConfig;
use crate::input::dot;
use crate::paths::{display, io_failure, resolve_contained};
use crate::text::{cut_line, has_nul};
use crate::walk::walk;
use agentkit_tools_core::{
    FileSystemOperation, PermissionRequest, ToolContext, ToolError, ToolResult, TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::Path;
use std::sync::Arc;

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
             `path:line: text`. Skips binary files, files over {} bytes, `.git` and \
             whatever `.gitignore` and `.ignore` files exclude. At most {} matches are returned.",
            config.max_search_file_bytes(),
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
    let needle = if input.case_insensitive {
        input.pattern.to_lowercase()
    } else {
        input.pattern.clone()
    };
    let mut search = Search {
        config: config.clone(),
        needle,
        case_insensitive: input.case_insensitive,
        matches: Vec::new(),
        stopped: false,
    };
    let cancellation = ctx.cancellation.clone();
    let search = super::blocking(move || {
        std::fs::metadata(&start)?;
        // Depth first over sorted entries, so results come in path order; a
        // single file is a walk of one.
        for entry in walk(&start, MAX_SEARCH_DEPTH) {
            if cancellation.is_cancelled() {
                return Err(std::io::Error::from(std::io::ErrorKind::Interrupted));
            }
            let Ok(entry) = entry else { continue };
            if entry.file_type().is_some_and(|t| t.is_file()) {
                search.file(entry.path());
                if search.stopped {
                    break;
                }
            }
        }
        Ok(search)
    })
    .await
    .map_err(|err| match err.kind() {
        std::io::ErrorKind::Interrupted => ToolError::Cancelled,
        _ => io_failure("search", &shown, &err),
    })?;
    check_cancelled(&ctx)?;

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
struct Search {
    config: Arc<FsToolsConfig>,
    needle: String,
    case_insensitive: bool,
    matches: Vec<String>,
    stopped: bool,
}

impl Search {
    /// Adds the matching lines of one file; unreadable, oversized and binary
    /// files are passed over.
    fn file(&mut self, path: &Path) {
        // Opened once, checked on the descriptor: no symlink, no hard link
        // (whose data may live outside the workspace), not too big.
        let Ok(mut file) = crate::beneath::open_walked(path) else {
            return;
        };
        match file.metadata() {
            Ok(meta) if meta.len() <= self.config.max_search_file_bytes() => {}
            _ => return,
        }
        let mut bytes = Vec::new();
        if std::io::Read::read_to_end(&mut file, &mut bytes).is_err() {
            return;
        }
        if has_nul(&bytes) {
            return;
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            return;
        };
        let shown = display(&self.config, path);
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
