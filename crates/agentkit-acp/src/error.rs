//! What can go wrong while serving ACP.

use agentkit_loop::LoopError;

/// A boxed error from host code (an agent factory, a session loader).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error of the ACP server. Request-level failures are also sent to the
/// editor as JSON-RPC errors; these values are what the host sees.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcpError {
    /// The host's agent factory refused to build an agent for a session.
    #[error("cannot set up session {session_id}: {source}")]
    Setup {
        /// The session.
        session_id: String,
        /// The factory's error.
        #[source]
        source: BoxError,
    },
    /// The session loader failed.
    #[error("cannot load session {session_id}: {source}")]
    Load {
        /// The session.
        session_id: String,
        /// The loader's error.
        #[source]
        source: BoxError,
    },
    /// The editor named a session this server does not know (and the
    /// loader, if any, does not have).
    #[error("unknown session {0}")]
    UnknownSession(String),
    /// `session/list` carried a cursor this server did not hand out.
    #[error("unknown session/list cursor {0:?}")]
    BadCursor(String),
    /// The session store could not list its sessions.
    #[error("cannot list the sessions: {0}")]
    List(#[source] BoxError),
    /// The agent loop failed.
    #[error(transparent)]
    Loop(#[from] LoopError),
    /// The connection to the editor failed (closed stream, malformed
    /// message the protocol layer could not answer).
    #[error("ACP connection failed: {0}")]
    Connection(String),
}
