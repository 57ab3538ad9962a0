//! What kind of tool a call is, for the editor's icons and grouping.
//!
//! ACP tool calls carry a kind (read, edit, execute, ...). agentkit tools do
//! not declare one, so the server guesses from the tool's name unless the
//! host supplies its own mapping ([`AcpServer::tool_kinds`]).
//!
//! [`AcpServer::tool_kinds`]: crate::AcpServer::tool_kinds

use agent_client_protocol::v1::schema as acp;

/// The kinds of tool call ACP knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolKind {
    /// Reads files or data.
    Read,
    /// Changes files or content.
    Edit,
    /// Deletes files or data.
    Delete,
    /// Moves or renames.
    Move,
    /// Searches.
    Search,
    /// Runs commands or code.
    Execute,
    /// Internal reasoning or planning.
    Think,
    /// Fetches external data.
    Fetch,
    /// Anything else.
    Other,
}

impl ToolKind {
    /// The default guess from a tool's name: the first matching word wins
    /// (`fs_read_file` is `Read`, `shell_exec` is `Execute`).
    ///
    /// ```
    /// use agentkit_acp::ToolKind;
    /// assert_eq!(ToolKind::guess("fs_write_file"), ToolKind::Edit);
    /// assert_eq!(ToolKind::guess("shell_exec"), ToolKind::Execute);
    /// assert_eq!(ToolKind::guess("load_skill"), ToolKind::Read);
    /// assert_eq!(ToolKind::guess("frobnicate"), ToolKind::Other);
    /// ```
    pub fn guess(tool_name: &str) -> ToolKind {
        const WORDS: &[(&str, ToolKind)] = &[
            ("delete", ToolKind::Delete),
            ("remove", ToolKind::Delete),
            ("move", ToolKind::Move),
            ("rename", ToolKind::Move),
            ("search", ToolKind::Search),
            ("grep", ToolKind::Search),
            ("find", ToolKind::Search),
            ("write", ToolKind::Edit),
            ("edit", ToolKind::Edit),
            ("replace", ToolKind::Edit),
            ("create", ToolKind::Edit),
            ("exec", ToolKind::Execute),
            ("shell", ToolKind::Execute),
            ("bash", ToolKind::Execute),
            ("run", ToolKind::Execute),
            ("fetch", ToolKind::Fetch),
            ("http", ToolKind::Fetch),
            ("think", ToolKind::Think),
            ("plan", ToolKind::Think),
            ("read", ToolKind::Read),
            ("list", ToolKind::Read),
            ("get", ToolKind::Read),
            ("load", ToolKind::Read),
        ];
        let lower = tool_name.to_ascii_lowercase();
        let words: Vec<&str> = lower.split(['_', '-', '.']).collect();
        WORDS
            .iter()
            .find(|(word, _)| words.contains(word))
            .map(|(_, kind)| *kind)
            .unwrap_or(ToolKind::Other)
    }

    pub(crate) fn to_acp(self) -> acp::ToolKind {
        match self {
            ToolKind::Read => acp::ToolKind::Read,
            ToolKind::Edit => acp::ToolKind::Edit,
            ToolKind::Delete => acp::ToolKind::Delete,
            ToolKind::Move => acp::ToolKind::Move,
            ToolKind::Search => acp::ToolKind::Search,
            ToolKind::Execute => acp::ToolKind::Execute,
            ToolKind::Think => acp::ToolKind::Think,
            ToolKind::Fetch => acp::ToolKind::Fetch,
            ToolKind::Other => acp::ToolKind::Other,
        }
    }
}
