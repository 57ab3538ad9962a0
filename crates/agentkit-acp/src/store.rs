//! Sessions kept in an `agentkit-store` [`SessionStore`] (feature `store`).
//!
//! With [`AcpServer::session_store`](crate::AcpServer::session_store) every
//! session the editor opens is created in the store and leased; its items
//! are appended as they happen and the driver's snapshot is saved at every
//! step (`agentkit_store::Session`). `session/load` leases the stored
//! session, resumes it exactly where it stopped (a session another program
//! saved in the same store too, such as the coding agent's terminal
//! sessions), and replays its transcript to the editor. When the
//! connection ends, every session is saved and its lease given up.

use crate::session::Drive;
use agentkit_loop::{LoopDriver, LoopStep, ModelSession};
use agentkit_store::{Session, SessionStore};
use std::sync::Arc;
use std::time::Duration;

/// The store and how long its leases last.
#[derive(Clone)]
pub(crate) struct StoreConfig {
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) lease_ttl: Duration,
}

impl<S: ModelSession> Drive for Session<S>
where
    LoopDriver<S>: Send,
{
    type Session = S;

    fn driver(&mut self) -> &mut LoopDriver<S> {
        self.driver_mut()
    }

    async fn step(&mut self) -> Result<LoopStep, String> {
        self.next().await.map_err(|err| err.to_string())
    }

    async fn close(self) {
        let id = self.session_id().clone();
        if let Err(err) = Session::close(self).await {
            tracing::warn!(session = %id, "the stored session was not closed cleanly: {err}");
        }
    }
}
