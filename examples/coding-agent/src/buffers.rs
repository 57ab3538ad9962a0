//! Over ACP, the file tools read and write the editor's buffers when the
//! editor offers them (`fs.readTextFile` and `fs.writeTextFile`): the agent
//! reads what the user sees, unsaved edits included, and its edits land in
//! the editor, where the user reviews and saves them. The tools resolve
//! and check every path (inside the workspace, the permission rules)
//! before the editor is asked, exactly as for the disk.
//!
//! Both methods or neither: reading a dirty buffer and writing the disk
//! underneath it would make the two disagree, so an editor that offers
//! only one gets the disk for both.

use agentkit_acp::EditorFiles;
use agentkit_tool_fs::{FsToolsConfig, TextFiles};
use std::path::Path;
use std::sync::Arc;

/// The file tools' configuration for a session in `workspace`: through
/// the editor's buffers when it offers reading and writing them.
pub fn fs_config(workspace: &Path, editor: Option<EditorFiles>) -> FsToolsConfig {
    let config = FsToolsConfig::new(workspace);
    match editor {
        Some(files) if files.can_read() && files.can_write() => {
            config.with_text_files(Arc::new(EditorBuffers(files)))
        }
        _ => config,
    }
}

/// The editor's buffers as the file tools' text files.
#[derive(Debug)]
struct EditorBuffers(EditorFiles);

#[async_trait::async_trait]
impl TextFiles for EditorBuffers {
    async fn read_text(&self, path: &Path) -> std::io::Result<String> {
        self.0.read_text_file(path).await
    }

    async fn write_text(&self, path: &Path, text: &str) -> std::io::Result<()> {
        self.0.write_text_file(path, text).await
    }
}
