//! A session's event log: what a server streamed to its clients, kept so
//! that a client reconnecting to any replica gets what it missed.
//!
//! Events are opaque here (a JSON document and the run it belongs to),
//! numbered from 1 per session. Appending a number that is already stored
//! keeps the stored event: a replica that lost the session cannot rewrite
//! what another replica's clients already read. Deleting a session deletes
//! its events.

use crate::StoreResult;
use agentkit_core::SessionId;

/// One stored event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its number in the session, from 1.
    pub seq: u64,
    /// The run it belongs to.
    pub run_id: String,
    /// The event, as JSON.
    pub event: String,
}

/// Where a session's events are kept; both backends implement it.
///
/// ```
/// use agentkit_store::{EventLog, NewSession, SessionStore, SqliteStore, StoredEvent};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = SqliteStore::open_in_memory()?;
/// let id = store.create(NewSession::new()).await?.id;
/// let event = |seq: u64| StoredEvent { seq, run_id: "r1".into(), event: format!("{{\"n\":{seq}}}") };
/// store.append_events(&id, &[event(1), event(2), event(3)]).await?;
/// let missed = store.events_after(&id, 1).await?;
/// assert_eq!(missed, [event(2), event(3)]);
/// # Ok::<(), agentkit_store::StoreError>(())
/// # }).unwrap();
/// ```
#[async_trait::async_trait]
pub trait EventLog: Send + Sync + 'static {
    /// Appends events (in order); numbers already stored are skipped.
    async fn append_events(&self, id: &SessionId, events: &[StoredEvent]) -> StoreResult<()>;

    /// The events numbered above `after`, in order.
    async fn events_after(&self, id: &SessionId, after: u64) -> StoreResult<Vec<StoredEvent>>;
}
