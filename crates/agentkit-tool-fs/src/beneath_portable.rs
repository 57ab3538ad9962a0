//! The operations of `beneath` on systems without `openat` (Windows): by
//! path, with the containment check of `resolve_contained` as the only
//! defence against a swapped link. Same signatures as the Unix module.

use std::fs::File;
use std::io;
use std::path::Path;

/// Opens a file a walk found; hard links are a Unix concern (see the Unix module).
pub(crate) fn open_walked(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// Opens an existing file or directory for reading.
pub(crate) fn open_read(_root: &Path, path: &Path) -> io::Result<File> {
    File::open(path)
}

/// Creates or truncates a file, creating missing parents; says whether it existed.
pub(crate) fn create_file(_root: &Path, path: &Path) -> io::Result<(File, bool)> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let existed = std::fs::symlink_metadata(path).is_ok();
    Ok((File::create(path)?, existed))
}

/// Creates a directory and its parents; says whether it existed.
pub(crate) fn create_dir_all(_root: &Path, path: &Path) -> io::Result<bool> {
    let existed = path.is_dir();
    std::fs::create_dir_all(path)?;
    Ok(existed)
}

/// What [`remove`] removed.
pub(crate) enum Removed {
    File,
    EmptyDir,
    Tree,
}

/// Removes a file or link, an empty directory, or a tree.
pub(crate) fn remove(_root: &Path, path: &Path, recursive: bool) -> io::Result<Removed> {
    if !std::fs::symlink_metadata(path)?.is_dir() {
        std::fs::remove_file(path)?;
        return Ok(Removed::File);
    }
    match std::fs::remove_dir(path) {
        Ok(()) => Ok(Removed::EmptyDir),
        Err(err) if err.kind() == io::ErrorKind::DirectoryNotEmpty && recursive => {
            std::fs::remove_dir_all(path)?;
            Ok(Removed::Tree)
        }
        Err(err) => Err(err),
    }
}

/// Renames, creating the target's parents; refuses to replace unless `overwrite`.
pub(crate) fn rename(_root: &Path, from: &Path, to: &Path, overwrite: bool) -> io::Result<()> {
    std::fs::symlink_metadata(from)?;
    if std::fs::symlink_metadata(to).is_ok() && !overwrite {
        return Err(io::Error::from(io::ErrorKind::AlreadyExists));
    }
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::rename(from, to)
}
