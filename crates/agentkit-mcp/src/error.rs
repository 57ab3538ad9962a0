//! What can go wrong when managing MCP servers.
//!
//! [`McpError`] is the manager's own error: registering, connecting,
//! disconnecting. Tool calls report failures as
//! [`ToolError`](agentkit_tools_core::ToolError) instead, because that is
//! what the agent loop writes into the transcript; [`McpError::into_tool_error`]
//! is the bridge between the two.

use agentkit_tools_core::{AuthRequest, ToolError};
use std::time::Duration;

/// A failure of the MCP server manager.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// No server is registered under this name.
    #[error("no MCP server named {0:?} is registered")]
    UnknownServer(String),
    /// A server with this name is already registered.
    #[error("an MCP server named {0:?} is already registered")]
    AlreadyRegistered(String),
    /// The configuration cannot work (empty name, bad header, bad URL).
    #[error("invalid configuration for MCP server {server:?}: {message}")]
    InvalidConfig {
        /// The server's name.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// The server process could not be started.
    #[error("could not start MCP server {server:?}: {message}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The operating system's reason.
        message: String,
    },
    /// Initialize and discovery did not finish in time.
    #[error("MCP server {server:?} did not finish connecting within {after:?}")]
    ConnectTimeout {
        /// The server's name.
        server: String,
        /// The connect timeout that passed.
        after: Duration,
    },
    /// The connection failed (the process exited, the handshake was refused,
    /// the HTTP endpoint is unreachable).
    #[error("could not connect to MCP server {server:?}: {message}")]
    Connect {
        /// The server's name.
        server: String,
        /// What happened, with the tail of the server's stderr when there is one.
        message: String,
    },
    /// The server wants credentials; resolve the request with
    /// [`McpServerManager::resolve_auth`](crate::McpServerManager::resolve_auth).
    #[error("MCP server {} requires authentication", .0.provider)]
    AuthRequired(Box<AuthRequest>),
    /// The host refused to authenticate to this server.
    #[error("authentication to MCP server {server:?} was refused{}", reason_suffix(.reason))]
    AuthRefused {
        /// The server's name.
        server: String,
        /// Why, when the host said.
        reason: Option<String>,
    },
    /// An OAuth authorization could not be completed (a redirect with a
    /// wrong `state`, a code the authorization server refused, a build
    /// without the `oauth` feature). The request stays pending: resolve it
    /// again with the right redirect.
    #[error("OAuth authorization with MCP server {server:?} failed: {message}")]
    Authorization {
        /// The server's name.
        server: String,
        /// What went wrong, in words.
        message: String,
    },
    /// An auth resolution names a request this manager never issued or
    /// already resolved.
    #[error("no pending auth request with id {0:?}")]
    UnknownAuthRequest(String),
    /// The server answered `initialize` with a protocol revision this
    /// client does not speak (a newer one, an unknown one); the session was
    /// closed. [`SUPPORTED_PROTOCOL_VERSIONS`](crate::SUPPORTED_PROTOCOL_VERSIONS)
    /// lists the ones it does.
    #[error(
        "MCP server {server:?} answered with protocol version {version:?}, which this client does not speak"
    )]
    UnsupportedProtocolVersion {
        /// The server's name.
        server: String,
        /// The version the server named.
        version: String,
    },
    /// The server answered a host request (reading a resource, getting a
    /// prompt, subscribing) with a JSON-RPC error: an unknown resource
    /// (MCP uses code -32002), a missing prompt argument (-32602).
    #[error("MCP server {server:?} refused the request ({code}): {message}")]
    Rejected {
        /// The server's name.
        server: String,
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
    },
    /// The server did not announce what the request needs (resources,
    /// resource subscriptions, prompts); nothing was sent.
    #[error("MCP server {server:?} does not offer {feature}")]
    Unsupported {
        /// The server's name.
        server: String,
        /// What it lacks, in words (`resources`, `resource subscriptions`,
        /// `prompts`).
        feature: String,
    },
    /// The server answered with something that breaks the protocol, or a
    /// request failed after connecting.
    #[error("MCP server {server:?}: {message}")]
    Protocol {
        /// The server's name.
        server: String,
        /// What went wrong.
        message: String,
    },
}

fn reason_suffix(reason: &Option<String>) -> String {
    reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default()
}

impl McpError {
    /// The auth request, when this error asks for credentials.
    pub fn auth_request(&self) -> Option<&AuthRequest> {
        match self {
            McpError::AuthRequired(request) => Some(request),
            _ => None,
        }
    }

    /// The same failure as a tool error, for the transcript: auth stays
    /// auth; everything else (a connect timeout included: the call itself
    /// never started) means the server cannot be used right now.
    pub fn into_tool_error(self) -> ToolError {
        match self {
            McpError::AuthRequired(request) => ToolError::AuthRequired(request),
            McpError::UnknownServer(name) => ToolError::NotFound(name),
            // The server is fine; it refused this request.
            rejected @ McpError::Rejected { .. } => {
                ToolError::ExecutionFailed(rejected.to_string())
            }
            other => ToolError::Unavailable(other.to_string()),
        }
    }
}

impl From<McpError> for ToolError {
    fn from(error: McpError) -> Self {
        error.into_tool_error()
    }
}
