//! Where the text tools read and write: the disk beneath the root, or a
//! host's own store of file contents.
//!
//! An editor that runs the agent (over ACP) holds the files the user has
//! open, edited or not yet saved: an edit written to disk behind its back
//! is lost or conflicts. When the host offers its buffers, `fs_read_file`,
//! `fs_write_file` and `fs_replace_in_file` go through a [`TextFiles`]
//! instead of the disk. The path is resolved and checked against the root
//! and the permission rules first, exactly as for the disk: the host
//! receives only paths the tools would have touched themselves. The other
//! tools (list, search, create, delete, move) work on the disk, which is
//! what the editor's buffers are saved to.

use std::path::Path;

/// A host's store of text files (an editor's buffers).
///
/// ```
/// use agentkit_tool_fs::{FsToolsConfig, TextFiles};
/// use std::collections::HashMap;
/// use std::path::{Path, PathBuf};
/// use std::sync::{Arc, Mutex};
///
/// /// Files kept in memory, as an editor keeps unsaved buffers.
/// #[derive(Debug, Default)]
/// struct Buffers(Mutex<HashMap<PathBuf, String>>);
///
/// #[async_trait::async_trait]
/// impl TextFiles for Buffers {
///     async fn read_text(&self, path: &Path) -> std::io::Result<String> {
///         let files = self.0.lock().unwrap();
///         files.get(path).cloned().ok_or_else(|| std::io::ErrorKind::NotFound.into())
///     }
///     async fn write_text(&self, path: &Path, text: &str) -> std::io::Result<()> {
///         self.0.lock().unwrap().insert(path.to_owned(), text.to_owned());
///         Ok(())
///     }
/// }
///
/// let config = FsToolsConfig::new(".").with_text_files(Arc::new(Buffers::default()));
/// assert!(config.text_files().is_some());
/// ```
#[async_trait::async_trait]
pub trait TextFiles: Send + Sync + std::fmt::Debug {
    /// The whole text of `path` (absolute, inside the tools' root).
    async fn read_text(&self, path: &Path) -> std::io::Result<String>;

    /// Replaces the text of `path` (absolute, inside the tools' root),
    /// creating the file if it does not exist.
    async fn write_text(&self, path: &Path, text: &str) -> std::io::Result<()>;
}
