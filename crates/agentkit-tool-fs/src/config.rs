//! `FsToolsConfig`: the workspace root every path is resolved against, and
//! the limits that keep one call from flooding the model's context.
//!
//! The tools never decide on their own what may be touched: they resolve the
//! path the model wrote against the root and propose it to the permission
//! checker (typically a `PathPolicy` with the same root). The root here only
//! says what a relative path means.

use crate::TextFiles;
use crate::paths::CheckedPaths;
use agentkit_tools_core::resolve_path;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Settings shared by all filesystem tools.
///
/// ```
/// use agentkit_tool_fs::FsToolsConfig;
///
/// let config = FsToolsConfig::new(std::env::temp_dir())
///     .with_max_read_bytes(32 * 1024)
///     .with_max_list_entries(200);
/// assert_eq!(config.max_read_bytes(), 32 * 1024);
/// ```
#[derive(Clone, Debug)]
pub struct FsToolsConfig {
    root: PathBuf,
    max_read_bytes: usize,
    max_read_lines: usize,
    max_line_bytes: usize,
    max_list_entries: usize,
    max_list_depth: usize,
    max_search_results: usize,
    max_search_file_bytes: u64,
    /// What the permission checker saw, shared by every tool over this
    /// configuration (see `paths::CheckedPaths`).
    checked: Arc<CheckedPaths>,
    /// The host's files the text tools use instead of the disk.
    text_files: Option<Arc<dyn TextFiles>>,
}

impl FsToolsConfig {
    /// Default for [`with_max_read_bytes`](Self::with_max_read_bytes): 48 KiB,
    /// below the executor's default output budget (64 KiB) so the note on
    /// how to read on is never the part that gets cut.
    pub const DEFAULT_MAX_READ_BYTES: usize = 48 * 1024;
    /// Default for [`with_max_read_lines`](Self::with_max_read_lines).
    pub const DEFAULT_MAX_READ_LINES: usize = 2_000;
    /// Default for [`with_max_line_bytes`](Self::with_max_line_bytes).
    pub const DEFAULT_MAX_LINE_BYTES: usize = 2_000;
    /// Default for [`with_max_list_entries`](Self::with_max_list_entries).
    pub const DEFAULT_MAX_LIST_ENTRIES: usize = 1_000;
    /// Default for [`with_max_list_depth`](Self::with_max_list_depth).
    pub const DEFAULT_MAX_LIST_DEPTH: usize = 8;
    /// Default for [`with_max_search_results`](Self::with_max_search_results).
    pub const DEFAULT_MAX_SEARCH_RESULTS: usize = 200;
    /// Default for [`with_max_search_file_bytes`](Self::with_max_search_file_bytes): 1 MiB.
    pub const DEFAULT_MAX_SEARCH_FILE_BYTES: u64 = 1024 * 1024;

    /// A configuration rooted at `root`, with default limits. The root is
    /// resolved now (symlinks, `..`), the way `PathPolicy` resolves its roots,
    /// so paths the tools propose compare equal to the policy's.
    pub fn new(root: impl AsRef<Path>) -> Self {
        let root = root.as_ref();
        let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let root = resolve_path(root, &base).unwrap_or_else(|_| base.join(root));
        Self {
            root,
            max_read_bytes: Self::DEFAULT_MAX_READ_BYTES,
            max_read_lines: Self::DEFAULT_MAX_READ_LINES,
            max_line_bytes: Self::DEFAULT_MAX_LINE_BYTES,
            max_list_entries: Self::DEFAULT_MAX_LIST_ENTRIES,
            max_list_depth: Self::DEFAULT_MAX_LIST_DEPTH,
            max_search_results: Self::DEFAULT_MAX_SEARCH_RESULTS,
            max_search_file_bytes: Self::DEFAULT_MAX_SEARCH_FILE_BYTES,
            checked: Arc::default(),
            text_files: None,
        }
    }

    /// Reads and writes of `fs_read_file`, `fs_write_file` and
    /// `fs_replace_in_file` go to `files` (an editor's buffers) instead of
    /// the disk, after the same path checks; see [`TextFiles`].
    pub fn with_text_files(mut self, files: Arc<dyn TextFiles>) -> Self {
        self.text_files = Some(files);
        self
    }

    /// The host's files set with [`with_text_files`](Self::with_text_files).
    pub fn text_files(&self) -> Option<&Arc<dyn TextFiles>> {
        self.text_files.as_ref()
    }

    /// The most text `fs_read_file` returns in one call; the rest is left for
    /// a later call with an `offset`.
    pub fn with_max_read_bytes(mut self, bytes: usize) -> Self {
        self.max_read_bytes = bytes.max(1);
        self
    }

    /// The most lines `fs_read_file` returns when the call sets no `limit`,
    /// and the largest `limit` it accepts.
    pub fn with_max_read_lines(mut self, lines: usize) -> Self {
        self.max_read_lines = lines.max(1);
        self
    }

    /// Lines longer than this are cut (minified files would otherwise spend
    /// the whole read budget on one line).
    pub fn with_max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes.max(1);
        self
    }

    /// The most entries `fs_list_directory` returns.
    pub fn with_max_list_entries(mut self, entries: usize) -> Self {
        self.max_list_entries = entries.max(1);
        self
    }

    /// The deepest a recursive listing may go, counting the listed directory's
    /// children as depth 1.
    pub fn with_max_list_depth(mut self, depth: usize) -> Self {
        self.max_list_depth = depth.max(1);
        self
    }

    /// The most matching lines `fs_search` returns.
    pub fn with_max_search_results(mut self, results: usize) -> Self {
        self.max_search_results = results.max(1);
        self
    }

    /// Files bigger than this are skipped by `fs_search`.
    pub fn with_max_search_file_bytes(mut self, bytes: u64) -> Self {
        self.max_search_file_bytes = bytes;
        self
    }

    pub(crate) fn checked(&self) -> &CheckedPaths {
        &self.checked
    }

    /// The resolved workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// See [`with_max_read_bytes`](Self::with_max_read_bytes).
    pub fn max_read_bytes(&self) -> usize {
        self.max_read_bytes
    }

    /// See [`with_max_read_lines`](Self::with_max_read_lines).
    pub fn max_read_lines(&self) -> usize {
        self.max_read_lines
    }

    /// See [`with_max_line_bytes`](Self::with_max_line_bytes).
    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// See [`with_max_list_entries`](Self::with_max_list_entries).
    pub fn max_list_entries(&self) -> usize {
        self.max_list_entries
    }

    /// See [`with_max_list_depth`](Self::with_max_list_depth).
    pub fn max_list_depth(&self) -> usize {
        self.max_list_depth
    }

    /// See [`with_max_search_results`](Self::with_max_search_results).
    pub fn max_search_results(&self) -> usize {
        self.max_search_results
    }

    /// See [`with_max_search_file_bytes`](Self::with_max_search_file_bytes).
    pub fn max_search_file_bytes(&self) -> u64 {
        self.max_search_file_bytes
    }
}
