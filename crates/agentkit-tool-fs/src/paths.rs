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
use std::collections::HashMap;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

/// The resolutions the permission checker last saw, by the path as written:
/// when the call runs, the path must resolve the same way, or something
/// changed the filesystem between the check and the use (a directory
/// swapped for a symlink to `.git`), and the call is refused.
#[derive(Debug, Default)]
pub(crate) struct CheckedPaths(Mutex<HashMap<(Mode, String), PathBuf>>);

/// How a written path was resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Mode {
    Follow,
    KeepLast,
}

/// Forget everything past this many remembered paths (one per distinct
/// path written in a call; the check runs right before each use).
const MAX_CHECKED: usize = 4096;

impl CheckedPaths {
    fn record(&self, mode: Mode, written: &str, resolved: &Path) {
        let mut map = self.0.lock().unwrap_or_else(|poison| poison.into_inner());
        if map.len() >= MAX_CHECKED {
            map.clear();
        }
        map.insert((mode, written.to_owned()), resolved.to_path_buf());
    }

    fn verify(&self, mode: Mode, written: &str, resolved: &Path) -> Result<(), ToolError> {
        let map = self.0.lock().unwrap_or_else(|poison| poison.into_inner());
        match map.get(&(mode, written.to_owned())) {
            Some(checked) if checked != resolved => Err(ToolError::ExecutionFailed(format!(
                "{written} resolved to {} when its permission was checked and to {} now \
                 (a symlink changed in between); refusing to touch either",
                checked.display(),
                resolved.display()
            ))),
            _ => Ok(()),
        }
    }
}

/// Resolves `path` against the workspace root, following every symlink, and
/// remembers the result for the moment of use (see [`CheckedPaths`]).
pub(crate) fn resolve(config: &FsToolsConfig, path: &str) -> Result<PathBuf, ToolError> {
    let resolved = resolve_follow(config, path)?;
    config.checked().record(Mode::Follow, path, &resolved);
    Ok(resolved)
}

/// Resolves the parent of `path` and keeps its last component as written, so
/// a symlink is named rather than followed; remembered like [`resolve`].
pub(crate) fn resolve_keep_last(config: &FsToolsConfig, path: &str) -> Result<PathBuf, ToolError> {
    let resolved = keep_last(config, path)?;
    config.checked().record(Mode::KeepLast, path, &resolved);
    Ok(resolved)
}

fn resolve_follow(config: &FsToolsConfig, path: &str) -> Result<PathBuf, ToolError> {
    if path.is_empty() {
        return Err(ToolError::InvalidInput("`path` must not be empty".into()));
    }
    resolve_path(Path::new(path), config.root())
        .map_err(|err| ToolError::InvalidInput(format!("cannot resolve {path}: {err}")))
}

fn keep_last(config: &FsToolsConfig, path: &str) -> Result<PathBuf, ToolError> {
    let written = Path::new(path);
    match written.components().next_back() {
        Some(Component::Normal(name)) => {
            let parent = written.parent().unwrap_or(Path::new(""));
            let parent = resolve_path(parent, config.root())
                .map_err(|err| ToolError::InvalidInput(format!("cannot resolve {path}: {err}")))?;
            Ok(parent.join(name))
        }
        // `.`, `..`, `/` or nothing: there is no name to keep.
        _ => resolve_follow(config, path),
    }
}

/// [`resolve`] for the moment of use. The path must resolve as it did when
/// its permission was checked (see [`CheckedPaths`]), and a path written
/// inside the root (as text, `..` applied) must still resolve inside it,
/// also when the tool is called without a check. A symlink swapped in after
/// the check (`ws/dir` -> `/etc`, or -> `ws/.git`) fails the call instead of
/// redirecting it. Files outside the workspace are reached by their real
/// path, which the permission checker then judges as such.
pub(crate) fn resolve_contained(config: &FsToolsConfig, path: &str) -> Result<PathBuf, ToolError> {
    let resolved = resolve_follow(config, path)?;
    config.checked().verify(Mode::Follow, path, &resolved)?;
    check_contained(config, path, &resolved)?;
    Ok(resolved)
}

/// [`resolve_keep_last`] for the moment of use, see [`resolve_contained`].
pub(crate) fn resolve_keep_last_contained(
    config: &FsToolsConfig,
    path: &str,
) -> Result<PathBuf, ToolError> {
    let resolved = keep_last(config, path)?;
    config.checked().verify(Mode::KeepLast, path, &resolved)?;
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
/// A refused hard link is a `PermissionDenied`, so a host can tell it from
/// a file that is merely missing.
pub(crate) fn io_failure(action: &str, shown: &str, err: &io::Error) -> ToolError {
    #[cfg(unix)]
    if let Some(linked) = err
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<crate::beneath::HardLinked>())
    {
        return ToolError::PermissionDenied(format!("cannot {action} {shown}: {linked}"));
    }
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
