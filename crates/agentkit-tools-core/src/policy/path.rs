//! `PathPolicy`: which parts of the filesystem tools may read and change.
//!
//! A check on the path as written is worthless: `/work/../etc/passwd` starts
//! with `/work`, and `/work/link` may be a symlink to `/`. So every path is
//! first resolved the way the kernel would resolve it: symlinks followed,
//! `..` applied to the resolved parent. Paths that do not exist yet (a file
//! about to be written) resolve their deepest existing ancestor and keep the
//! rest as written. Only then is it compared with the roots, which were
//! resolved the same way when they were configured.

use crate::{ApprovalReason, FileSystemOperation, PermissionPayload, PermissionRequest};
use crate::{PermissionDenial, PermissionPolicy, PolicyMatch};
use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Symlinks followed while resolving one path before giving up; Linux's own
/// limit is 40.
const MAX_SYMLINK_HOPS: usize = 40;

/// Resolves `path` as the filesystem would: relative paths against `base`,
/// symlinks followed (also inside the target of a symlink), `.` dropped and
/// `..` applied to the already resolved parent. Components that do not exist
/// are kept as written, so a file that is about to be created resolves too.
///
/// Fails on a symlink loop and on errors other than "not found" (a directory
/// that cannot be read), so callers can refuse what they cannot see through.
pub fn resolve_path(path: &Path, base: &Path) -> io::Result<PathBuf> {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    let mut pending: VecDeque<Component<'_>> = joined.components().collect();
    // Link targets are owned; keep them alive while their components wait.
    let mut owned: VecDeque<OsString> = VecDeque::new();
    let mut resolved = PathBuf::new();
    let mut hops = 0;
    loop {
        let part: OsString = if let Some(owned_part) = owned.pop_front() {
            owned_part
        } else if let Some(component) = pending.pop_front() {
            match component {
                Component::Prefix(prefix) => {
                    resolved = PathBuf::from(prefix.as_os_str());
                    continue;
                }
                Component::RootDir => {
                    resolved.push(Component::RootDir.as_os_str());
                    continue;
                }
                other => other.as_os_str().to_owned(),
            }
        } else {
            break;
        };
        if part == "." || part.is_empty() {
            continue;
        }
        if part == ".." {
            resolved.pop();
            continue;
        }
        resolved.push(&part);
        let metadata = match std::fs::symlink_metadata(&resolved) {
            Ok(metadata) => metadata,
            Err(err) if is_absent(&err) => continue,
            Err(err) => return Err(err),
        };
        if !metadata.file_type().is_symlink() {
            continue;
        }
        hops += 1;
        if hops > MAX_SYMLINK_HOPS {
            return Err(io::Error::other(format!(
                "too many symlinks while resolving {}",
                joined.display()
            )));
        }
        let target = std::fs::read_link(&resolved)?;
        resolved.pop();
        // The target's components come before whatever was still pending.
        let mut expanded: VecDeque<OsString> = VecDeque::new();
        for component in target.components() {
            match component {
                Component::Prefix(prefix) => resolved = PathBuf::from(prefix.as_os_str()),
                Component::RootDir => resolved = root_of(&resolved),
                other => expanded.push_back(other.as_os_str().to_owned()),
            }
        }
        expanded.extend(owned.drain(..));
        owned = expanded;
    }
    Ok(resolved)
}

/// The root (`/`, or `C:\` on Windows) of an absolute path.
fn root_of(path: &Path) -> PathBuf {
    let mut root = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => root.push(component.as_os_str()),
            _ => break,
        }
    }
    if root.as_os_str().is_empty() {
        root.push(Component::RootDir.as_os_str());
    }
    root
}

/// "Does not exist" in its two spellings: the path is missing, or one of its
/// parents is a file.
fn is_absent(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// What a [`PathPolicy`] does with paths outside every allowed root.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutsideRoots {
    /// Ask the host (`ApprovalReason::SensitivePath`).
    #[default]
    RequireApproval,
    /// Refuse.
    Deny,
}

/// Filesystem rules over three kinds of roots.
///
/// - Allowed roots: read and write freely.
/// - Read-only roots: read freely; writes, deletes and moves into or out of
///   them are denied.
/// - Protected roots: anything that touches them is denied, reads included,
///   and so is deleting or moving a directory that contains one.
///
/// Paths outside all of them need approval or are denied, see
/// [`OutsideRoots`]. Relative paths are taken relative to the base directory
/// (the process's working directory unless set). A path that cannot be
/// resolved (a symlink loop, an unreadable directory) is denied.
///
/// ```
/// use agentkit_tools_core::{FileSystemOperation, PathPolicy, PermissionPolicy};
/// use agentkit_tools_core::{PermissionRequest, PolicyMatch};
///
/// let workspace = std::env::temp_dir().join("agentkit-doc-workspace");
/// let policy = PathPolicy::new()
///     .with_allowed_root(&workspace)
///     .with_protected_root(workspace.join(".git"));
/// let write = |path| PermissionRequest::filesystem(FileSystemOperation::Write { path });
///
/// assert_eq!(policy.evaluate(&write(workspace.join("src/new.rs"))), PolicyMatch::Allow);
/// assert!(matches!(policy.evaluate(&write(workspace.join(".git/config"))), PolicyMatch::Deny(_)));
/// assert!(matches!(
///     policy.evaluate(&write(workspace.join("../elsewhere"))),
///     PolicyMatch::RequireApproval(_)
/// ));
/// ```
#[derive(Clone, Debug, Default)]
pub struct PathPolicy {
    allowed: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
    protected: Vec<PathBuf>,
    outside: OutsideRoots,
    base_dir: Option<PathBuf>,
}

/// What an operation does to one of its paths.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
    /// Deleted or moved away, with everything below it.
    Remove,
}

/// How one path relates to the configured roots, worst first.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Verdict {
    Deny(String),
    Outside(PathBuf),
    Inside,
}

impl PathPolicy {
    /// A policy with no roots: every path is outside, so everything needs
    /// approval until roots are added.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a root under which tools may read and write.
    pub fn with_allowed_root(mut self, root: impl AsRef<Path>) -> Self {
        let root = self.resolve_root(root.as_ref());
        self.allowed.push(root);
        self
    }

    /// Adds a root tools may read but not change.
    pub fn with_read_only_root(mut self, root: impl AsRef<Path>) -> Self {
        let root = self.resolve_root(root.as_ref());
        self.read_only.push(root);
        self
    }

    /// Adds a root tools may not touch at all (`.git`, `~/.ssh`).
    pub fn with_protected_root(mut self, root: impl AsRef<Path>) -> Self {
        let root = self.resolve_root(root.as_ref());
        self.protected.push(root);
        self
    }

    /// Sets what happens outside the allowed roots.
    pub fn with_outside_roots(mut self, outside: OutsideRoots) -> Self {
        self.outside = outside;
        self
    }

    /// Resolves relative paths (in requests and in roots added after this
    /// call) against `base` instead of the process's working directory.
    pub fn with_base_dir(mut self, base: impl AsRef<Path>) -> Self {
        self.base_dir = Some(base.as_ref().to_path_buf());
        self
    }

    fn base(&self) -> PathBuf {
        self.base_dir
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"))
    }

    /// A root that cannot be resolved is kept as written (made absolute):
    /// rules about a missing directory still hold if it appears later.
    fn resolve_root(&self, root: &Path) -> PathBuf {
        let base = self.base();
        resolve_path(root, &base).unwrap_or_else(|_| base.join(root))
    }

    fn judge(&self, path: &Path, access: Access) -> Verdict {
        let resolved = match resolve_path(path, &self.base()) {
            Ok(resolved) => resolved,
            Err(err) => {
                return Verdict::Deny(format!("cannot resolve {}: {err}", path.display()));
            }
        };
        let shown = || {
            if resolved == path {
                format!("{}", path.display())
            } else {
                format!("{} (resolves to {})", path.display(), resolved.display())
            }
        };
        if let Some(root) = self.protected.iter().find(|r| resolved.starts_with(r)) {
            return Verdict::Deny(format!(
                "{} is inside the protected {}",
                shown(),
                root.display()
            ));
        }
        if access == Access::Remove {
            // Deleting or moving `/ws` would take `/ws/.git` with it.
            if let Some(root) = self
                .protected
                .iter()
                .chain(&self.read_only)
                .find(|r| r.starts_with(&resolved))
            {
                return Verdict::Deny(format!("{} contains {}", shown(), root.display()));
            }
        }
        if access != Access::Read
            && let Some(root) = self.read_only.iter().find(|r| resolved.starts_with(r))
        {
            return Verdict::Deny(format!(
                "{} is inside the read-only {}",
                shown(),
                root.display()
            ));
        }
        let readable =
            access == Access::Read && self.read_only.iter().any(|r| resolved.starts_with(r));
        if readable || self.allowed.iter().any(|r| resolved.starts_with(r)) {
            Verdict::Inside
        } else {
            Verdict::Outside(resolved)
        }
    }
}

impl PermissionPolicy for PathPolicy {
    fn evaluate(&self, request: &PermissionRequest) -> PolicyMatch {
        let PermissionPayload::FileSystem(operation) = &request.payload else {
            return PolicyMatch::NoOpinion;
        };
        let verdict = match operation {
            // A move changes both ends: the source disappears, the target is
            // written (and replaced, if it existed).
            FileSystemOperation::Move { from, to } => self
                .judge(from, Access::Remove)
                .min(self.judge(to, Access::Remove)),
            FileSystemOperation::Read { path } | FileSystemOperation::List { path } => {
                self.judge(path, Access::Read)
            }
            FileSystemOperation::Write { path } | FileSystemOperation::CreateDir { path } => {
                self.judge(path, Access::Write)
            }
            FileSystemOperation::Delete { path } => self.judge(path, Access::Remove),
        };
        match verdict {
            Verdict::Inside => PolicyMatch::Allow,
            Verdict::Deny(message) => PolicyMatch::Deny(PermissionDenial {
                request_kind: request.kind.clone(),
                message,
            }),
            Verdict::Outside(resolved) => match self.outside {
                OutsideRoots::RequireApproval => {
                    PolicyMatch::RequireApproval(ApprovalReason::SensitivePath)
                }
                OutsideRoots::Deny => PolicyMatch::Deny(PermissionDenial {
                    request_kind: request.kind.clone(),
                    message: format!("{} is outside the allowed roots", resolved.display()),
                }),
            },
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir()
                .join(format!("agentkit-resolve-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            // The temp dir itself may sit behind a symlink (macOS /tmp).
            Self(std::fs::canonicalize(&dir).unwrap())
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn resolves_dots_against_the_resolved_parent() {
        let scratch = Scratch::new("dots");
        let root = &scratch.0;
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        symlink(root.join("a/b"), root.join("link")).unwrap();
        // link/.. is a/, not root/: the kernel applies .. after the symlink.
        assert_eq!(
            resolve_path(&root.join("link/../x"), root).unwrap(),
            root.join("a/x")
        );
        assert_eq!(
            resolve_path(Path::new("./a/./b/../new/file"), root).unwrap(),
            root.join("a/new/file")
        );
    }

    #[test]
    fn follows_relative_and_chained_links_and_stops_loops() {
        let scratch = Scratch::new("links");
        let root = &scratch.0;
        std::fs::create_dir_all(root.join("real")).unwrap();
        symlink("real", root.join("one")).unwrap();
        symlink("one/../real", root.join("two")).unwrap();
        assert_eq!(
            resolve_path(&root.join("two/new.txt"), root).unwrap(),
            root.join("real/new.txt")
        );
        symlink("loop-b", root.join("loop-a")).unwrap();
        symlink("loop-a", root.join("loop-b")).unwrap();
        assert!(resolve_path(&root.join("loop-a/x"), root).is_err());
    }

    #[test]
    fn a_missing_tail_is_kept_as_written() {
        let scratch = Scratch::new("missing");
        let root = &scratch.0;
        assert_eq!(
            resolve_path(&root.join("no/such/dir/../file"), root).unwrap(),
            root.join("no/such/file")
        );
    }
}
