//! Durable agentkit sessions.
//!
//! A [`SessionStore`] keeps sessions so that any process can pick one up:
//! items are appended as they happen (through a transcript observer, so a
//! process that dies mid-turn loses at most the items appended since
//! something slow last began: a model call, a tool call, a mutator), and the
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
//!
//! # Example
//!
//! The README's example (it runs as a doc-test here and in the README):
//!
//! ```rust
//! use agentkit_core::Item;
//! use agentkit_loop::{Agent, LoopStep};
//! use agentkit_store::{NewSession, SessionLease, SessionStore, SqliteStore};
//! use agentkit_testkit::{ScriptedModel, ScriptedTurn};
//! use std::sync::Arc;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("sessions.db");
//! let store = Arc::new(SqliteStore::open(&path)?); // e.g. "sessions.db"
//! let lease = SessionLease::create(store.clone(), NewSession::new()).await?;
//! let id = lease.session_id().clone();
//! let agent = lease
//!     .record(
//!         Agent::builder()
//!             .model(ScriptedModel::new([ScriptedTurn::text("hi")]))
//!             .input(vec![Item::user("hello")]),
//!     )
//!     .build()?;
//! let mut session = lease.open(&agent).await?; // resumes if anything was saved
//! let step = session.next().await?; // items written as they happen, saved at every yield
//! assert!(matches!(step, LoopStep::Finished(_)));
//! session.close().await?;
//!
//! // Any process that opens the file sees the session.
//! let reopened = SqliteStore::open(&path)?;
//! assert_eq!(reopened.info(&id).await?.item_count, 2); // hello, hi
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

#![cfg_attr(
    not(any(feature = "sqlite", feature = "postgres")),
    allow(dead_code, unused_imports)
)]

mod error;
mod events;
mod recorder;
mod recover;
mod session;
mod store;

#[cfg(feature = "postgres")]
mod pg_connect;
#[cfg(feature = "postgres")]
mod pg_log;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_log;

pub use error::{StoreError, StoreResult};
pub use events::{EventLog, StoredEvent};
pub use recorder::Recorder;
pub use recover::Mark;
pub use session::{DEFAULT_LEASE_TTL, Session, SessionLease};
pub use store::{
    Checkpoint, LeaseToken, LogEntry, LogWriter, NewSession, SessionInfo, SessionStore,
    StoredSession, load_input_log,
};

#[cfg(feature = "postgres")]
pub use pg_connect::{DEFAULT_MAX_CONNECTIONS, PgStoreBuilder};
#[cfg(feature = "postgres")]
pub use postgres::{PG_SCHEMA_VERSION, PgStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{SQLITE_SCHEMA_VERSION, SqliteStore};

// The README's example is compiled and run with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
