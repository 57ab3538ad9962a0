//! Filesystem tools for agentkit agents.
//!
//! A coding agent needs to look around a workspace and change it: this crate
//! gives it `fs_read_file`, `fs_list_directory`, `fs_search`,
//! `fs_write_file`, `fs_replace_in_file`, `fs_create_directory`, `fs_delete`
//! and `fs_move`, each a [`Tool`](agentkit_tools_core::Tool) with a precise
//! JSON Schema and behaviour annotations.
//!
//! The tools do not judge what may be touched. Each resolves the path it was
//! given against the workspace root of its [`FsToolsConfig`] (symlinks and
//! `..` included) and proposes a filesystem
//! [`PermissionRequest`](agentkit_tools_core::PermissionRequest) with that
//! path, so the agent's permission checker (typically a
//! [`PathPolicy`](agentkit_tools_core::PathPolicy) over the same root)
//! allows it, asks the host, or refuses, before anything runs.
//!
//! When a call runs, the path is resolved again and must still lie in the
//! workspace if it was written as a path in it, and it is opened with
//! symlinks refused (`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` on
//! Linux, an `O_NOFOLLOW` walk on other Unix systems): a symlink swapped in
//! after the permission check cannot redirect a write outside the root.
//! Search and listing respect `.gitignore` and `.ignore` files.
//!
//! [`fs_tools`] returns all of them in a [`ToolRegistry`];
//! [`fs_read_only_tools`] only those that change nothing.
//!
//! # Example
//!
//! The README's example (it runs as a doc-test here and in the README):
//!
//! ```
//! use agentkit_tool_fs::{FsToolsConfig, fs_tools};
//! use agentkit_tools_core::{
//!     BasicToolExecutor, CompositePermissionChecker, PathPolicy, Preflight, ToolContext,
//!     ToolExecutor, ToolFederation, ToolRequest,
//! };
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let workspace = tempfile::tempdir().unwrap();
//! let tools = fs_tools(FsToolsConfig::new(workspace.path()));
//! let policy = PathPolicy::new().with_allowed_root(workspace.path());
//! let executor = BasicToolExecutor::new(ToolFederation::new().with_source(tools))
//!     .with_permissions(Arc::new(CompositePermissionChecker::new().with_policy(policy)));
//!
//! // Inside the workspace: allowed, and it runs.
//! let write = ToolRequest::new("call-1", "fs_write_file", json!({
//!     "path": "notes/todo.txt", "content": "ship it\n"
//! }));
//! assert_eq!(executor.preflight(&write), Preflight::Ready);
//! executor.execute(write, ToolContext::detached()).await.unwrap();
//!
//! let read = ToolRequest::new("call-2", "fs_read_file", json!({ "path": "notes/todo.txt" }));
//! let result = executor.execute(read, ToolContext::detached()).await.unwrap();
//! assert_eq!(result.output.to_text(), "     1\tship it\n");
//!
//! // Outside it: the policy wants the host's approval first.
//! let escape = ToolRequest::new("call-3", "fs_write_file", json!({
//!     "path": "../elsewhere.txt", "content": "x"
//! }));
//! assert!(matches!(executor.preflight(&escape), Preflight::NeedsApproval(_)));
//! # });
//! ```

#[cfg(unix)]
mod beneath;
#[cfg(not(unix))]
#[path = "beneath_portable.rs"]
mod beneath;
mod config;
mod input;
mod paths;
mod text;
mod text_files;
mod tools;
mod walk;

pub use config::FsToolsConfig;
pub use text_files::TextFiles;
pub use tools::{
    CreateDirectoryTool, DeleteTool, ListDirectoryTool, MoveTool, ReadFileTool, ReplaceInFileTool,
    SearchTool, WriteFileTool,
};

use agentkit_tools_core::ToolRegistry;
use std::sync::Arc;

/// Every filesystem tool over `config`, in a registry named `fs`.
///
/// For a smaller set, register the tools you want over one shared config:
///
/// ```
/// use agentkit_tool_fs::{FsToolsConfig, ListDirectoryTool, ReadFileTool, fs_tools};
/// use agentkit_tools_core::ToolRegistry;
/// use std::sync::Arc;
///
/// assert_eq!(fs_tools(FsToolsConfig::new(".")).len(), 8);
/// let config = Arc::new(FsToolsConfig::new("."));
/// let browse = ToolRegistry::new()
///     .with(ReadFileTool::new(config.clone()))
///     .with(ListDirectoryTool::new(config));
/// assert_eq!(browse.len(), 2);
/// ```
pub fn fs_tools(config: FsToolsConfig) -> ToolRegistry {
    let config = Arc::new(config);
    fs_read_only_tools_shared(config.clone())
        .with(WriteFileTool::new(config.clone()))
        .with(ReplaceInFileTool::new(config.clone()))
        .with(CreateDirectoryTool::new(config.clone()))
        .with(DeleteTool::new(config.clone()))
        .with(MoveTool::new(config))
}

/// The tools that only look (`fs_read_file`, `fs_list_directory`,
/// `fs_search`), for agents that should not change the workspace.
pub fn fs_read_only_tools(config: FsToolsConfig) -> ToolRegistry {
    fs_read_only_tools_shared(Arc::new(config))
}

fn fs_read_only_tools_shared(config: Arc<FsToolsConfig>) -> ToolRegistry {
    ToolRegistry::new()
        .named("fs")
        .with(ReadFileTool::new(config.clone()))
        .with(ListDirectoryTool::new(config.clone()))
        .with(SearchTool::new(config))
}

// The README's example is compiled and run with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
