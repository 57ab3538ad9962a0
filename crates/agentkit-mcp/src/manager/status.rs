//! What the host can see of one server: [`ServerStatus`] and its
//! [`ServerState`].
//!
//! The state is derived when asked, from the server's one runtime value
//! (its connection's phase, the host's refusal) and the pending auth
//! requests, so it can never disagree with them.

use super::Server;
use crate::error::McpError;
use agentkit_tools_core::AuthRequest;

/// What the manager knows about one server.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ServerStatus {
    /// The name it was registered under.
    pub name: String,
    /// Where the server stands; see [`ServerState`].
    pub state: ServerState,
    /// `true` while a session is open (`state` is [`ServerState::Connected`]).
    pub connected: bool,
    /// The process id (and process group id) of a stdio server's process.
    pub pid: Option<u32>,
    /// The name the server gave itself in the handshake.
    pub server_name: Option<String>,
    /// The version the server gave itself in the handshake.
    pub server_version: Option<String>,
    /// The negotiated MCP protocol version.
    pub protocol_version: Option<String>,
    /// The server's instructions for the model, if it sent any.
    pub instructions: Option<String>,
    /// The server's own names of its tools (as last listed).
    pub tools: Vec<String>,
}

/// Where a registered server stands.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ServerState {
    /// Not connected: never tried, or disconnected.
    Disconnected,
    /// A session is open; its tools are in the catalog.
    Connected,
    /// A connect is in progress: the first, or one replacing a session
    /// that closed (calls wait for it).
    Connecting,
    /// The server wants credentials: the newest pending request, to answer
    /// with [`McpServerManager::resolve_auth`](crate::McpServerManager::resolve_auth).
    NeedsAuth(Box<AuthRequest>),
    /// The host refused to authenticate; calls fail until credentials are
    /// given.
    AuthRefused {
        /// Why, when the host said.
        reason: Option<String>,
    },
    /// The last connect failed for another reason (the next call tries
    /// again).
    Failed(McpError),
}

pub(super) fn status_of(server: &Server, pending: &[AuthRequest]) -> ServerStatus {
    let runtime = server.state();
    let newest = pending
        .iter()
        .rev()
        .find(|request| request.provider == server.config.name);
    let state = runtime.state(newest);
    let live = runtime.connection().filter(|c| !c.is_closed());
    let info = live.map(|c| &c.server_info);
    let field = |path: &[&str]| {
        let mut value = info?;
        for key in path {
            value = value.get(*key)?;
        }
        value.as_str().map(str::to_owned)
    };
    ServerStatus {
        name: server.config.name.clone(),
        connected: live.is_some(),
        state,
        pid: live.and_then(|c| c.pid()),
        server_name: field(&["serverInfo", "name"]),
        server_version: field(&["serverInfo", "version"]),
        protocol_version: field(&["protocolVersion"]),
        instructions: field(&["instructions"]),
        tools: runtime
            .offered
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect(),
    }
}
