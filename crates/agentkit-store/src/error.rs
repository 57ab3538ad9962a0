//! The errors a session store returns, as an enum a host can match.
//!
//! Database failures keep their source error (reachable with
//! [`std::error::Error::source`]) without putting the driver's types in our
//! public API, so the SQLite and PostgreSQL libraries can be upgraded freely.

use agentkit_core::SessionId;
use agentkit_loop::LoopError;

/// A session store failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No session has this id.
    #[error("session {0} does not exist")]
    NotFound(SessionId),
    /// A session with this id exists already.
    #[error("session {0} exists already")]
    AlreadyExists(SessionId),
    /// Another worker holds the session's lease. Try again later, or after
    /// its lease expired if that worker crashed.
    #[error("session {session} is leased by another worker ({owner})")]
    Busy {
        /// The session.
        session: SessionId,
        /// The lease holder's token.
        owner: String,
    },
    /// This worker's lease expired and another worker took the session over.
    /// Stop driving it: every write of this worker is refused from now on.
    #[error("the lease on session {0} was lost to another worker")]
    LeaseLost(SessionId),
    /// The database was written by a newer version of this crate.
    #[error(
        "the database schema is version {found}, newer than the {supported} this build knows: upgrade agentkit-store"
    )]
    SchemaTooNew {
        /// The version found in the database.
        found: i64,
        /// The newest version this build can read and write.
        supported: i64,
    },
    /// A fork point beyond the session's end.
    #[error("cannot fork session {session} at item {at}: it has {len} items")]
    ForkOutOfRange {
        /// The session.
        session: SessionId,
        /// The requested fork point.
        at: usize,
        /// The session's item count.
        len: usize,
    },
    /// A fork point that would separate a tool call from its result.
    #[error("cannot fork session {session} at item {at}: {reason}")]
    ForkBreaksTranscript {
        /// The session.
        session: SessionId,
        /// The requested fork point.
        at: usize,
        /// Which invariant the prefix breaks.
        reason: agentkit_core::TranscriptError,
    },
    /// Stored data cannot be read back (hand-edited, or written by a broken
    /// build).
    #[error("stored data of session {session} is corrupt: {message}")]
    Corrupt {
        /// The session.
        session: SessionId,
        /// What is wrong.
        message: String,
    },
    /// The loop failed (model error, invalid state, snapshot refused).
    #[error(transparent)]
    Loop(#[from] LoopError),
    /// A JSON document could not be written or read.
    #[error("session data could not be (de)serialized: {0}")]
    Json(#[from] serde_json::Error),
    /// The TLS settings are unusable (no readable CA certificate). A
    /// handshake that fails (an untrusted certificate, a wrong host name)
    /// is a [`StoreError::Database`] error of the connection.
    #[error("TLS: {0}")]
    Tls(String),
    /// The database failed (I/O, connection, constraint).
    #[error("{backend} error: {source}")]
    Database {
        /// `"sqlite"` or `"postgres"`.
        backend: &'static str,
        /// The driver's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl StoreError {
    pub(crate) fn database(
        backend: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        StoreError::Database {
            backend,
            source: Box::new(source),
        }
    }

    pub(crate) fn corrupt(session: &SessionId, message: impl Into<String>) -> Self {
        StoreError::Corrupt {
            session: session.clone(),
            message: message.into(),
        }
    }
}

/// Results of this crate.
pub type StoreResult<T> = Result<T, StoreError>;
