//! Walking a directory tree the way the project sees it.
//!
//! Listings and searches go through one walker (the `ignore` crate, the one
//! ripgrep uses) so that both see entries sorted by name (the model compares
//! runs, and tests compare outputs), both skip what the project itself
//! ignores (`.gitignore`, `.ignore`, `.git/info/exclude`, also outside a git
//! checkout; not the user's global excludes, which are not the project's
//! rules) instead of a fixed list of bulky directories, both skip `.git`,
//! and both treat symlinks the same way: named, never followed, so a link to
//! `/` or to a parent cannot send a walk around in circles. Hidden files are
//! walked like any other: `.github/` or `.env.example` are part of a
//! project.

use ignore::WalkBuilder;
use std::path::Path;

/// A sorted, ignore-aware, depth-first walk of `start` (depth 0 is `start`
/// itself), at most `max_depth` levels down.
pub(crate) fn walk(start: &Path, max_depth: usize) -> ignore::Walk {
    WalkBuilder::new(start)
        .max_depth(Some(max_depth))
        .follow_links(false)
        .hidden(false)
        .require_git(false)
        .git_global(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
}

/// Whether a walked entry is a directory (not a symlink to one).
pub(crate) fn is_dir(entry: &ignore::DirEntry) -> bool {
    entry.file_type().is_some_and(|t| t.is_dir())
}
