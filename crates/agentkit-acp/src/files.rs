//! The editor's files: `fs/read_text_file` and `fs/write_text_file`.
//!
//! An editor holds the files the user has open, saved or not. When it
//! announces `fs.readTextFile` and `fs.writeTextFile` in `initialize`, the
//! agent can read a buffer as the user sees it (unsaved edits included) and
//! write into the buffer, where the user reviews and saves the change,
//! instead of changing the disk behind the editor's back. [`EditorFiles`]
//! is that access for one session; the server hands it to the host's
//! factory in [`SessionRequest::editor_files`](crate::SessionRequest), and
//! the host routes its file tools through it (the coding agent does, with
//! `agentkit-tool-fs`'s `TextFiles`).
//!
//! The editor sees only what the host sends: a host checks a path (the
//! workspace, its permission rules) before it asks the editor for it.

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Client, ErrorCode};
use std::io;
use std::path::Path;

/// One session's access to the editor's files: a host's file tools read a
/// buffer as the user sees it (unsaved edits included) and write into the
/// buffer, where the user reviews the change, instead of the disk.
///
/// A method the editor did not announce fails with
/// [`io::ErrorKind::Unsupported`] without asking it; a file the editor does
/// not have fails with [`io::ErrorKind::NotFound`]; any other refusal with
/// [`io::ErrorKind::Other`] and the editor's message.
#[derive(Clone)]
pub struct EditorFiles {
    cx: ConnectionTo<Client>,
    session_id: acp::SessionId,
    read: bool,
    write: bool,
}

impl EditorFiles {
    /// The editor's files for `session_id`, with the methods it announced;
    /// `None` when it announced neither.
    pub(crate) fn offered(
        cx: ConnectionTo<Client>,
        session_id: &str,
        fs: &acp::FileSystemCapabilities,
    ) -> Option<Self> {
        (fs.read_text_file || fs.write_text_file).then(|| Self {
            cx,
            session_id: acp::SessionId::new(session_id),
            read: fs.read_text_file,
            write: fs.write_text_file,
        })
    }

    /// The editor announced `fs.readTextFile`.
    pub fn can_read(&self) -> bool {
        self.read
    }

    /// The editor announced `fs.writeTextFile`.
    pub fn can_write(&self) -> bool {
        self.write
    }

    /// The whole text of `path` (absolute) as the editor has it: an open
    /// buffer's contents, saved or not, else the file.
    pub async fn read_text_file(&self, path: &Path) -> io::Result<String> {
        if !self.read {
            return Err(not_offered("fs/read_text_file"));
        }
        let request = acp::ReadTextFileRequest::new(self.session_id.clone(), path);
        let response = self
            .cx
            .send_request(request)
            .block_task()
            .await
            .map_err(io_error)?;
        Ok(response.content)
    }

    /// Replaces the text of `path` (absolute) in the editor, creating the
    /// file if needed; the editor decides when it reaches the disk.
    pub async fn write_text_file(&self, path: &Path, text: &str) -> io::Result<()> {
        if !self.write {
            return Err(not_offered("fs/write_text_file"));
        }
        let request = acp::WriteTextFileRequest::new(self.session_id.clone(), path, text);
        self.cx
            .send_request(request)
            .block_task()
            .await
            .map_err(io_error)?;
        Ok(())
    }
}

impl std::fmt::Debug for EditorFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EditorFiles")
            .field("session_id", &self.session_id.0)
            .field("read", &self.read)
            .field("write", &self.write)
            .finish_non_exhaustive()
    }
}

/// Equal when they reach the same session with the same methods.
impl PartialEq for EditorFiles {
    fn eq(&self, other: &Self) -> bool {
        (&self.session_id, self.read, self.write) == (&other.session_id, other.read, other.write)
    }
}

impl Eq for EditorFiles {}

fn not_offered(method: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("the editor does not offer {method}"),
    )
}

fn io_error(err: agent_client_protocol::Error) -> io::Error {
    let kind = if err.code == ErrorCode::RESOURCE_NOT_FOUND {
        io::ErrorKind::NotFound
    } else {
        io::ErrorKind::Other
    };
    io::Error::new(kind, format!("the editor refused: {}", err.message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_editors_errors_keep_their_kind() {
        let missing = io_error(agent_client_protocol::Error::new(
            ErrorCode::RESOURCE_NOT_FOUND,
            "no such file",
        ));
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        assert!(missing.to_string().contains("no such file"));
        let other = io_error(agent_client_protocol::Error::internal_error());
        assert_eq!(other.kind(), io::ErrorKind::Other);
    }
}
