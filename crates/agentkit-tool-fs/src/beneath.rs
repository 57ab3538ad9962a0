//! Touching exactly the path that was checked, without a check-then-use race.
//!
//! A tool resolves the path the model wrote (symlinks followed, `..`
//! applied) and the permission checker judges that resolved path. If the
//! tool then opened the path by name, a symlink swapped in between the check
//! and the open (`ws/dir` replaced by a link to `/etc`) would send the write
//! somewhere nobody approved. So the resolved path, which holds no symlink
//! by construction, is opened with symlinks refused: on Linux with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` from the workspace root
//! (or from `/` for an approved path outside it), and elsewhere, or where
//! `openat2` is unavailable (old kernels, seccomp filters), by walking the
//! components one `openat(O_NOFOLLOW | O_DIRECTORY)` at a time. Either way a
//! symlink that appears after the check fails the call (`ELOOP`, reported as
//! "a symlink appeared in the path") instead of being followed.
//!
//! The last component is then created, opened, removed or renamed relative
//! to the directory descriptor, with `O_NOFOLLOW` / `AT_SYMLINK_NOFOLLOW`.
//! These functions block; the tools call them on tokio's blocking pool.
//!
//! A hard link is the one way into a file that no path check can see: a
//! name inside the workspace whose inode also has a name outside it
//! (`ln /home/me/.ssh/id_ed25519 ws/key`). The path is inside, the data is
//! not. So every file opened for reading or writing is checked on its
//! descriptor (`fstat`, after the open, so nothing can swap it in between)
//! and refused with [`HardLinked`] when its link count is above one, before
//! a byte is read or the file is truncated. Deleting or renaming such a
//! name stays allowed: it changes the workspace's directory, not the data.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// A regular file with more than one name: reading or writing it through
/// the workspace could reach data that lives outside it (see the module
/// docs). Carried inside an [`io::Error`]; `io_failure` turns it into
/// `ToolError::PermissionDenied`.
#[derive(Debug)]
pub(crate) struct HardLinked {
    /// The file's link count.
    pub(crate) links: u64,
}

impl std::fmt::Display for HardLinked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "it has {} hard links, so its data may also be reachable outside the workspace; \
             the filesystem tools never read or write a file with more than one name \
             (copy it to a new file first if it is meant to be edited)",
            self.links
        )
    }
}

impl std::error::Error for HardLinked {}

/// Refuses an opened regular file that has more than one name.
pub(crate) fn refuse_hard_link(file: &File) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata()?;
    if meta.is_file() && meta.nlink() > 1 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            HardLinked {
                links: meta.nlink(),
            },
        ));
    }
    Ok(())
}

/// Opens `path` by name for a walk (symlinks refused in the last
/// component; the walker never follows them on the way) and refuses a hard
/// link, for `fs_search`, which visits files it found rather than paths
/// that were checked one by one.
pub(crate) fn open_walked(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    refuse_hard_link(&file)?;
    Ok(file)
}

/// The descriptor of `path`'s parent directory, opened without following
/// symlinks, and the last component's name.
pub(crate) struct Parent {
    dir: OwnedFd,
    name: std::ffi::OsString,
}

/// Opens directory `dir` (absolute, resolved) without following any
/// symlink, creating missing directories on the way when `create` is set.
/// `root` is the anchor when `dir` is inside it.
pub(crate) fn open_dir(root: &Path, dir: &Path, create: bool) -> io::Result<OwnedFd> {
    let (anchor, rel) = anchor(root, dir);
    let start = rustix::fs::open(
        anchor,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    if rel.as_os_str().is_empty() {
        return Ok(start);
    }
    if !create && let Some(fd) = openat2_beneath(&start, rel)? {
        return Ok(fd);
    }
    walk(start, rel, create)
}

/// The parent of `path` (opened as [`open_dir`] does) and its last name.
pub(crate) fn parent(root: &Path, path: &Path, create: bool) -> io::Result<Parent> {
    let name = match path.components().next_back() {
        Some(Component::Normal(name)) => name.to_owned(),
        _ => return Err(io::Error::new(io::ErrorKind::InvalidInput, "no file name")),
    };
    let dir = open_dir(root, path.parent().unwrap_or(Path::new("/")), create)?;
    Ok(Parent { dir, name })
}

/// Opens an existing file or directory for reading.
pub(crate) fn open_read(root: &Path, path: &Path) -> io::Result<File> {
    let parent = parent(root, path, false)?;
    let fd = rustix::fs::openat(
        &parent.dir,
        &parent.name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(symlink_error)?;
    let file = File::from(fd);
    refuse_hard_link(&file)?;
    Ok(file)
}

/// Creates or truncates a file for writing, creating missing parent
/// directories; also says whether it existed. An existing file is opened
/// without `O_TRUNC`, checked for hard links on its descriptor, and only
/// then truncated.
pub(crate) fn create_file(root: &Path, path: &Path) -> io::Result<(File, bool)> {
    let parent = parent(root, path, true)?;
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mode = Mode::from_raw_mode(0o666);
    match rustix::fs::openat(&parent.dir, &parent.name, flags | OFlags::EXCL, mode) {
        Ok(fd) => Ok((File::from(fd), false)),
        Err(rustix::io::Errno::EXIST) => {
            let fd = rustix::fs::openat(&parent.dir, &parent.name, flags, mode)
                .map_err(symlink_error)?;
            let file = File::from(fd);
            refuse_hard_link(&file)?;
            file.set_len(0)?;
            Ok((file, true))
        }
        Err(err) => Err(symlink_error(err)),
    }
}

/// Creates `path` and its missing parents as directories; says whether it
/// already existed.
pub(crate) fn create_dir_all(root: &Path, path: &Path) -> io::Result<bool> {
    let existed = open_dir(root, path, false).is_ok();
    if !existed {
        open_dir(root, path, true)?;
    }
    Ok(existed)
}

/// What [`remove`] removed.
pub(crate) enum Removed {
    File,
    EmptyDir,
    Tree,
}

/// Removes a file or symlink, an empty directory, or (with `recursive`) a
/// directory tree, never following a symlink.
pub(crate) fn remove(root: &Path, path: &Path, recursive: bool) -> io::Result<Removed> {
    let parent = parent(root, path, false)?;
    let stat = rustix::fs::statat(&parent.dir, &parent.name, AtFlags::SYMLINK_NOFOLLOW)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
        rustix::fs::unlinkat(&parent.dir, &parent.name, AtFlags::empty())?;
        return Ok(Removed::File);
    }
    match rustix::fs::unlinkat(&parent.dir, &parent.name, AtFlags::REMOVEDIR) {
        Ok(()) => Ok(Removed::EmptyDir),
        Err(rustix::io::Errno::NOTEMPTY | rustix::io::Errno::EXIST) if recursive => {
            remove_tree(&parent.dir, &parent.name)?;
            Ok(Removed::Tree)
        }
        Err(err) => Err(err.into()),
    }
}

/// Empties and removes directory `name` in `dir`, descending through
/// descriptors only.
fn remove_tree(dir: &OwnedFd, name: &OsStr) -> io::Result<()> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(symlink_error)?;
    let entries = rustix::fs::Dir::read_from(&fd)?;
    for entry in entries {
        let entry = entry?;
        let child = entry.file_name().to_bytes();
        if child == b"." || child == b".." {
            continue;
        }
        let child = <OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(child);
        let stat = rustix::fs::statat(&fd, child, AtFlags::SYMLINK_NOFOLLOW)?;
        if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
            remove_tree(&fd, child)?;
        } else {
            rustix::fs::unlinkat(&fd, child, AtFlags::empty())?;
        }
    }
    rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)?;
    Ok(())
}

/// Renames `from` to `to` (missing parents of `to` created); refuses to
/// replace an existing `to` unless `overwrite`. A move across filesystems
/// copies a regular file and removes the original.
pub(crate) fn rename(root: &Path, from: &Path, to: &Path, overwrite: bool) -> io::Result<()> {
    let source = parent(root, from, false)?;
    let target = parent(root, to, true)?;
    let stat = rustix::fs::statat(&source.dir, &source.name, AtFlags::SYMLINK_NOFOLLOW)?;
    let exists = rustix::fs::statat(&target.dir, &target.name, AtFlags::SYMLINK_NOFOLLOW).is_ok();
    if exists && !overwrite {
        return Err(io::Error::from(io::ErrorKind::AlreadyExists));
    }
    match rustix::fs::renameat(&source.dir, &source.name, &target.dir, &target.name) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::XDEV) if FileType::from_raw_mode(stat.st_mode).is_file() => {
            let mut input = File::from(
                rustix::fs::openat(
                    &source.dir,
                    &source.name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(symlink_error)?,
            );
            // A copy is a read: a hard-linked source would be copied out.
            refuse_hard_link(&input)?;
            let mut output = File::from(
                rustix::fs::openat(
                    &target.dir,
                    &target.name,
                    OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW,
                    Mode::from_raw_mode(stat.st_mode & 0o777),
                )
                .map_err(symlink_error)?,
            );
            io::copy(&mut input, &mut output)?;
            rustix::fs::unlinkat(&source.dir, &source.name, AtFlags::empty())?;
            Ok(())
        }
        Err(err) => Err(err.into()),
    }
}

/// The workspace root when `path` is inside it, else `/`; and the rest.
fn anchor<'a>(root: &'a Path, path: &'a Path) -> (&'a Path, &'a Path) {
    match path.strip_prefix(root) {
        Ok(rel) => (root, rel),
        Err(_) => (Path::new("/"), path.strip_prefix("/").unwrap_or(path)),
    }
}

/// One `openat2` call that refuses symlinks and escapes; `None` when the
/// kernel cannot do it, so the caller walks instead.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn openat2_beneath(start: &OwnedFd, rel: &Path) -> io::Result<Option<OwnedFd>> {
    use rustix::fs::ResolveFlags;
    match rustix::fs::openat2(
        start,
        rel,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    ) {
        Ok(fd) => Ok(Some(fd)),
        // No openat2 (before Linux 5.6), or a seccomp filter refusing it.
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => Ok(None),
        Err(err) => Err(symlink_error(err)),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn openat2_beneath(_start: &OwnedFd, _rel: &Path) -> io::Result<Option<OwnedFd>> {
    Ok(None)
}

/// Opens `rel` below `start` one component at a time, each with
/// `O_NOFOLLOW`, creating missing directories when `create` is set.
fn walk(start: OwnedFd, rel: &Path, create: bool) -> io::Result<OwnedFd> {
    let mut current = start;
    for component in rel.components() {
        let Component::Normal(name) = component else {
            // Resolved paths hold no `.`, `..` or prefixes.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the path is not resolved",
            ));
        };
        let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let next = match rustix::fs::openat(current.as_fd(), name, flags, Mode::empty()) {
            Err(rustix::io::Errno::NOENT) if create => {
                match rustix::fs::mkdirat(current.as_fd(), name, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(err) => return Err(err.into()),
                }
                rustix::fs::openat(current.as_fd(), name, flags, Mode::empty())
            }
            // `O_NOFOLLOW | O_DIRECTORY` on a symlink is `ENOTDIR`: say why.
            Err(rustix::io::Errno::NOTDIR)
                if rustix::fs::statat(current.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink) =>
            {
                Err(rustix::io::Errno::LOOP)
            }
            other => other,
        }
        .map_err(symlink_error)?;
        current = next;
    }
    Ok(current)
}

/// `ELOOP` (and `ENOTDIR` from `O_NOFOLLOW | O_DIRECTORY` on a link) as a
/// message that says what happened.
fn symlink_error(err: rustix::io::Errno) -> io::Error {
    match err {
        rustix::io::Errno::LOOP | rustix::io::Errno::XDEV => io::Error::other(
            "a symlink appeared in the path after it was checked; refusing to follow it",
        ),
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_anywhere_in_the_path_is_refused_and_real_paths_work() {
        let top = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(top.path()).unwrap();
        let (root, outside) = (base.join("ws"), base.join("outside"));
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("inner")).unwrap();

        // Through a link, whether it leads out or stays in: refused.
        for path in [root.join("link/x"), root.join("inner/x")] {
            let err = create_file(&root, &path).unwrap_err();
            assert!(
                err.to_string().contains("symlink"),
                "{}: {err}",
                path.display()
            );
            assert!(open_read(&root, &path).is_err());
            assert!(open_dir(&root, &path, true).is_err());
        }
        // The final component too.
        assert!(open_read(&root, &root.join("link")).is_err());
        assert!(matches!(
            remove(&root, &root.join("link"), false),
            Ok(Removed::File)
        ));
        assert!(outside.exists(), "removing the link keeps its target");
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());

        // Real paths: created, rewritten, renamed, removed.
        let (file, existed) = create_file(&root, &root.join("real/a/b.txt")).unwrap();
        drop(file);
        assert!(!existed);
        assert!(create_file(&root, &root.join("real/a/b.txt")).unwrap().1);
        rename(
            &root,
            &root.join("real/a/b.txt"),
            &root.join("real/c/d.txt"),
            false,
        )
        .unwrap();
        assert!(root.join("real/c/d.txt").is_file());
        assert!(
            create_dir_all(&root, &root.join("real/e/f"))
                .map(|e| !e)
                .unwrap()
        );
        assert!(matches!(
            remove(&root, &root.join("real"), true),
            Ok(Removed::Tree)
        ));
        assert!(!root.join("real").exists());
    }
}
