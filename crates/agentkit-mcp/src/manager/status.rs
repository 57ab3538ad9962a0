//! What the host can see of one server: [`ServerStatus`] and its
//! [`ServerState`].
//!
//! The state is derived when asked, from what the manager already keeps
//! (the live connection, the host's refusal, pending auth requests, the
//! last connect error), so it can never disagree with them.

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
    let live = server.live.lock().expect("live lock").clone();
    let live = live.filter(|c| !c.is_closed());
    let info = live.as_ref().map(|c| c.server_info.clone());
    let field = |path: &[&str]| {
        let mut value = info.as_ref()?;
        for key in path {
            value = value.get(*key)?;
        }
        value.as_str().map(str::to_owned)
    };
    let state = if live.is_some() {
        ServerState::Connected
    } else if let Some(reason) = server.refused.lock().expect("refused lock").clone() {
        ServerState::AuthRefused { reason }
    } else if let Some(request) = pending
        .iter()
        .rev()
        .find(|request| request.provider == server.config.name)
    {
        ServerState::NeedsAuth(Box::new(request.clone()))
    } else if let Some(err) = server.last_error.lock().expect("last error lock").clone() {
        ServerState::Failed(err)
    } else {
        ServerState::Disconnected
    };
    ServerStatus {
        name: server.config.name.clone(),
        connected: live.is_some(),
        state,
        pid: live.as_ref().and_then(|c| c.pid()),
        server_name: field(&["serverInfo", "name"]),
        server_version: field(&["serverInfo", "version"]),
        protocol_version: field(&["protocolVersion"]),
        instructions: field(&["instructions"]),
        tools: server
            .tools
            .lock()
            .expect("tools lock")
            .iter()
            .map(|t| t.name.clone())
            .collect(),
    }
}
