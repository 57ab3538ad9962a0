//! Reading directories in a stable order.
//!
//! Listings and searches go through here so that both see entries sorted by
//! name (the model compares runs, and tests compare outputs) and both treat
//! symlinks the same way: named, never followed, so a link to `/` or to a
//! parent cannot send a walk around in circles.

use std::io;
use std::path::PathBuf;

/// What a directory entry is, without following symlinks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Dir,
    File,
    Symlink,
    Other,
}

/// One directory entry.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
    pub(crate) kind: EntryKind,
}

/// The entries of `dir`, sorted by name.
pub(crate) async fn read_sorted(dir: &std::path::Path) -> io::Result<Vec<Entry>> {
    let mut reader = tokio::fs::read_dir(dir).await?;
    let mut entries = Vec::new();
    while let Some(entry) = reader.next_entry().await? {
        let file_type = entry.file_type().await?;
        let kind = if file_type.is_symlink() {
            EntryKind::Symlink
        } else if file_type.is_dir() {
            EntryKind::Dir
        } else if file_type.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        };
        entries.push(Entry {
            name: entry.file_name().to_string_lossy().into_owned(),
            path: entry.path(),
            kind,
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}
