//! Durable agentkit sessions.
//!
//! A [`SessionStore`] keeps sessions so that any process can pick one up:
//! items are appended as they happen (through a transcript observer, so a
//! process that dies mid-turn loses at most the item being written), and the
//! driver's snapshot is saved at every yield of `next()` (pending input,
//! pending approvals, queued soft-interrupt messages, the turn in progress).
//! A [`SessionLease`] makes sure one worker drives a session at a time; a
//! crashed worker's lease expires so another can take over.
//!
//! Backends, chosen by feature: [`SqliteStore`] (`sqlite`, the default: one
//! file or memory) and [`PgStore`] (`postgres`: many workers on several
//! machines share one database). Both pass the same test suite.
//!
//! The book's chapter "Sessions and resuming" walks through a full example;
//! [`SessionLease`] has a short one.

#![cfg_attr(
    not(any(feature = "sqlite", feature = "postgres")),
    allow(dead_code, unused_imports)
)]

mod error;
mod recorder;
mod recover;
mod session;
mod store;

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

pub use error::{StoreError, StoreResult};
pub use recorder::Recorder;
pub use recover::Mark;
pub use session::{DEFAULT_LEASE_TTL, Session, SessionLease};
pub use store::{
    Checkpoint, LeaseToken, LogEntry, LogWriter, NewSession, SessionInfo, SessionStore,
    StoredSession,
};

#[cfg(feature = "postgres")]
pub use postgres::{PG_SCHEMA_VERSION, PgStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{SQLITE_SCHEMA_VERSION, SqliteStore};
