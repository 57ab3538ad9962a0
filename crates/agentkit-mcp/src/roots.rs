//! Roots: where the host lets servers work (a coding agent's workspace).
//!
//! MCP servers that touch files ask the client for its roots
//! (`roots/list`) instead of guessing a directory, and ask again when the
//! client says they changed (`notifications/roots/list_changed`). The host
//! sets them on the manager; once set, every new connection announces the
//! `roots` capability (with `listChanged`) and answers `roots/list` from
//! the current list, and changing the list notifies the connected servers.
//! Roots are a promise of scope, not an enforcement: the servers are still
//! whatever processes they are.

use crate::connection::Connection;
// Roots are deprecated in rmcp (SEP-2577), but the protocol revisions this
// client speaks still carry them, and servers still ask.
#[allow(deprecated)]
use rmcp::model::{ListRootsResult, RootsCapabilities};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// One root the host offers servers.
///
/// ```
/// use agentkit_mcp::McpRoot;
///
/// let root = McpRoot::directory("/home/ada/my project").name("workspace");
/// assert_eq!(root.uri, "file:///home/ada/my%20project");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct McpRoot {
    /// The root's URI; `file://` for directories.
    pub uri: String,
    /// A name to show for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl McpRoot {
    /// A root with this URI.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: None,
        }
    }

    /// A directory, as a `file://` URI (absolute paths; bytes outside the
    /// URI path characters escaped).
    pub fn directory(path: impl AsRef<Path>) -> Self {
        let text = path.as_ref().to_string_lossy();
        let mut uri = String::from("file://");
        if !text.starts_with('/') {
            uri.push('/');
        }
        for byte in text.bytes() {
            match byte {
                b'A'..=b'Z'
                | b'a'..=b'z'
                | b'0'..=b'9'
                | b'/'
                | b'-'
                | b'.'
                | b'_'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@' => uri.push(byte as char),
                b'\\' => uri.push('/'),
                _ => uri.push_str(&format!("%{byte:02X}")),
            }
        }
        Self::new(uri)
    }

    /// Names the root.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// The host's roots, shared by the manager and every connection's handler.
#[derive(Default)]
pub(crate) struct Roots {
    /// `None` until the host sets roots: nothing is announced.
    list: Mutex<Option<Vec<McpRoot>>>,
}

impl Roots {
    /// Replaces the list; `true` when it changed.
    pub(crate) fn set(&self, roots: Vec<McpRoot>) -> bool {
        let mut list = self.list.lock().expect("roots lock");
        let changed = list.as_ref() != Some(&roots);
        *list = Some(roots);
        changed
    }

    /// The capability to announce, once the host has set roots.
    #[allow(deprecated)]
    pub(crate) fn capability(&self) -> Option<RootsCapabilities> {
        self.list.lock().expect("roots lock").as_ref()?;
        let mut capability = RootsCapabilities::default();
        capability.list_changed = Some(true);
        Some(capability)
    }

    /// The answer to `roots/list`.
    #[allow(deprecated)]
    pub(crate) fn list_result(&self) -> Result<ListRootsResult, rmcp::ErrorData> {
        let roots = self.list.lock().expect("roots lock").clone();
        serde_json::from_value(serde_json::json!({ "roots": roots.unwrap_or_default() }))
            .map_err(|err| rmcp::ErrorData::internal_error(err.to_string(), None))
    }
}

/// Tells each connected server that the roots changed; a server that is
/// gone is skipped (it asks again when it reconnects).
pub(crate) async fn notify_changed(server: &str, connection: Arc<Connection>) {
    if let Err(err) = connection.peer().notify_roots_list_changed().await {
        tracing::debug!(server, %err, "roots/list_changed not delivered");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_become_file_uris_and_the_list_is_offered_once_set() {
        assert_eq!(McpRoot::directory("/srv/a b%").uri, "file:///srv/a%20b%25");
        let roots = Roots::default();
        assert!(roots.capability().is_none(), "nothing announced until set");
        assert!(roots.set(vec![McpRoot::new("file:///w").name("w")]));
        assert!(!roots.set(vec![McpRoot::new("file:///w").name("w")]));
        assert_eq!(roots.capability().unwrap().list_changed, Some(true));
        let answer = serde_json::to_value(roots.list_result().unwrap()).unwrap();
        assert_eq!(answer["roots"][0]["uri"], "file:///w");
        assert_eq!(answer["roots"][0]["name"], "w");
    }
}
