//! Turning the path a model wrote into the path a tool touches.
//!
//! The permission checker and the tool must agree on the path, or a policy
//! could approve one file while the tool writes another. So both use the
//! same resolution as `PathPolicy` (`resolve_path`: relative to the root,
//! symlinks followed, `..` applied to the resolved parent), and the tool then
//! operates on exactly the path it proposed.
//!
//! Deleting and moving are the exception: they act on a symlink itself, not
//! on what it points to, so only the parent is resolved and the last
//! component is kept. `PathPolicy` still judges such a request by the link's
//! target, which errs on the side of asking.

use crate::FsToolsConfig;
use agentkit_tools_core::{ToolError, resolve_path};
use std::io;
use std::path::{Component, Path, PathBuf};

/// Resolves `path` against the workspace root, following every symlink.
pub(crate) fn resolve(config: &FsToolsConfig, path: &str) -> Result<PathBuf, ToolError> {
    if path.is_empty() {
        return Err(ToolError::InvalidInput("`path` must not be empty".into()));
    }
    resolve_path(Path::new(path), config.root())
        .map_err(|err| ToolError::InvalidInput(format!("cannot resolve {path}: {err}")))
}

/// Resolves the parent of `path` and keeps its last component as written, so
/// a symlink is named rather than followed.
pub(crate) fn resolve_keep_last(config: &FsToolsConfig, path: &str) -> Result<PathBuf, ToolError> {
    let written = Path::new(path);
    match written.components().next_back() {
        Some(Component::Normal(name)) => {
            let parent = written.parent().unwrap_or(Path::new(""));
            let parent = resolve_path(parent, config.root())
                .map_err(|err| ToolError::InvalidInput(format!("cannot resolve {path}: {err}")))?;
            Ok(parent.join(name))
        }
        // `.`, `..`, `/` or nothing: there is no name to keep.
        _ => resolve(config, path),
    }
}

/// [`resolve`] for the moment of use: a path written inside the root (as
/// text, `..` applied) must still resolve inside it. A symlink swapped in
/// after the permission check (`ws/dir` -> `/etc`) would otherwise send the
/// call outside the workspace; such a call fails instead. Files outside the
/// workspace are reached by their real path, which the permission checker
/// then judges as such.
pub(crate) fn resolve_contained(config: &FsToolsConfig, path: &str) -> Result<PathBuf, ToolError> {
    let resolved = resolve(config, path)?;
    check_contained(config, path, &resolved)?;
    Ok(resolved)
}

/// [`resolve_keep_last`] for the moment of use, see [`resolve_contained`].
pub(crate) fn resolve_keep_last_contained(
    config: &FsToolsConfig,
    path: &str,
) -> Result<PathBuf, ToolError> {
    let resolved = resolve_keep_last(config, path)?;
    check_contained(config, path, &resolved)?;
    Ok(resolved)
}

fn check_contained(
    config: &FsToolsConfig,
    written: &str,
    resolved: &Path,
) -> Result<(), ToolError> {
    let root = config.root();
    if lexically_inside(root, Path::new(written)) && !resolved.starts_with(root) {
        return Err(ToolError::ExecutionFailed(format!(
            "{written} now resolves to {}, outside the workspace, through a symlink; \
             refusing to follow it (use the real path if that is intended)",
            resolved.display()
        )));
    }
    Ok(())
}

/// Whether `path` (relative to `root` unless absolute) names something under
/// `root` as text, with `.` and `..` applied but no symlink followed.
fn lexically_inside(root: &Path, path: &Path) -> bool {
    let joined = root.join(path);
    let mut normal = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other.as_os_str()),
        }
    }
    normal.starts_with(root)
}

/// How a path is shown to the model: relative to the root when inside it
/// (shorter, and what the model wrote), absolute otherwise.
pub(crate) fn display(config: &FsToolsConfig, path: &Path) -> String {
    match path.strip_prefix(config.root()) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// An I/O failure as a message that says what was attempted and on what.
pub(crate) fn io_failure(action: &str, shown: &str, err: &io::Error) -> ToolError {
    let reason = match err.kind() {
        io::ErrorKind::NotFound => "it does not exist".to_string(),
        io::ErrorKind::PermissionDenied => "permission denied by the operating system".into(),
        io::ErrorKind::AlreadyExists => "it already exists".into(),
        io::ErrorKind::IsADirectory => "it is a directory".into(),
        io::ErrorKind::NotADirectory => "a component of the path is not a directory".into(),
        io::ErrorKind::DirectoryNotEmpty => "the directory is not empty".into(),
        _ => err.to_string(),
    };
    ToolError::ExecutionFailed(format!("cannot {action} {shown}: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_join_the_root_and_display_relative() {
        let dir = tempfile::tempdir().unwrap();
        let config = FsToolsConfig::new(dir.path());
        let resolved = resolve(&config, "src/../notes/a.txt").unwrap();
        assert_eq!(resolved, config.root().join("notes/a.txt"));
        assert_eq!(display(&config, &resolved), "notes/a.txt");
        assert_eq!(display(&config, config.root()), ".");
        assert_eq!(display(&config, Path::new("/elsewhere")), "/elsewhere");
        assert!(resolve(&config, "").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn keep_last_names_a_symlink_instead_of_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let config = FsToolsConfig::new(dir.path());
        std::fs::write(config.root().join("target.txt"), "x").unwrap();
        std::os::unix::fs::symlink(config.root().join("target.txt"), config.root().join("link"))
            .unwrap();
        assert_eq!(
            resolve(&config, "link").unwrap(),
            config.root().join("target.txt")
        );
        assert_eq!(
            resolve_keep_last(&config, "link").unwrap(),
            config.root().join("link")
        );
    }
}
