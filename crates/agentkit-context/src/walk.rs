//! The directories between the working directory and the repository root.
//!
//! Both `AGENTS.md` files and project skills are looked up in every
//! directory from the working directory up to the repository root: the
//! nearest directory that holds a `.git` entry (a directory in a normal
//! checkout, a file in a worktree or submodule). Outside any repository only
//! the working directory itself is searched, so an agent started in `/tmp`
//! never reads instructions from `/`.

use std::path::{Path, PathBuf};

/// The repository root above (or at) `cwd`: the nearest directory holding a
/// `.git` entry. `None` outside a repository.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir_all(dir.path().join(".git")).unwrap();
/// std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
/// let root = agentkit_context::repository_root(&dir.path().join("src/deep"));
/// assert_eq!(root.as_deref(), Some(dir.path()));
/// ```
pub fn repository_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// The directories searched for `cwd`, nearest first: `cwd`, its parent,
/// ... up to and including the repository root; just `cwd` outside a
/// repository.
pub fn search_path(cwd: &Path) -> Vec<PathBuf> {
    let Some(root) = repository_root(cwd) else {
        return vec![cwd.to_path_buf()];
    };
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir.to_path_buf());
        if dir == root {
            break;
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_at_the_repository_root() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("a/b")).unwrap();
        // A worktree's `.git` is a file.
        std::fs::write(repo.join(".git"), "gitdir: elsewhere").unwrap();
        let dirs = search_path(&repo.join("a/b"));
        assert_eq!(dirs, vec![repo.join("a/b"), repo.join("a"), repo.clone()]);
    }

    #[test]
    fn outside_a_repository_only_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("x")).unwrap();
        // tempdir is not inside a repository on a normal machine; guard anyway.
        if repository_root(dir.path()).is_none() {
            assert_eq!(
                search_path(&dir.path().join("x")),
                vec![dir.path().join("x")]
            );
        }
    }
}
