//! One server's runtime state as one value: where its connection stands
//! ([`Phase`]), what it offered, the host's credentials and refusal, and the
//! subscriptions to renew.
//!
//! It sits behind one lock, never held across an await, so every change is
//! a single step from one consistent value to the next, and the host's
//! [`ServerState`] is derived from it rather than kept beside it. Connects
//! themselves are serialized by a separate async gate (see `session`).

use super::status::ServerState;
use crate::auth::{McpAuthResponder, McpCredentials};
use crate::connection::Connection;
use crate::convert::RemoteTool;
use crate::discovery::{McpPrompt, McpResource};
use crate::error::McpError;
use agentkit_tools_core::AuthRequest;
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::task::AbortHandle;

/// Where a server's connection stands.
pub(super) enum Phase {
    /// Never connected, disconnected, or the last connect ended waiting
    /// for credentials.
    Closed,
    /// The first connect (or one after a failure or a disconnect) is in
    /// progress.
    Connecting,
    /// A session is open.
    Ready(Live),
    /// The open session closed under us (the process crashed, the session
    /// ended) and is being replaced.
    Reconnecting,
    /// The last connect failed for a reason other than auth.
    Failed(McpError),
}

/// An open session and the task that follows its list changes.
pub(super) struct Live {
    pub(super) connection: Arc<Connection>,
    pub(super) refresher: AbortHandle,
}

/// What a server offered when it was last listed: kept across crashes so
/// the model can keep calling its tools, cleared by a disconnect.
#[derive(Default)]
pub(super) struct Offered {
    pub(super) tools: Vec<RemoteTool>,
    pub(super) resources: Vec<McpResource>,
    pub(super) prompts: Vec<McpPrompt>,
}

/// Everything about a server that changes while it runs.
pub(super) struct Runtime {
    pub(super) phase: Phase,
    pub(super) offered: Offered,
    /// The credentials the host (or its responder) gave.
    pub(super) credentials: Option<McpCredentials>,
    /// This server's own credentials provider, asked before the manager's.
    pub(super) responder: Option<Arc<dyn McpAuthResponder>>,
    /// `Some(reason)` after the host refused to authenticate: calls fail
    /// until credentials are given, whatever the phase.
    pub(super) refused: Option<Option<String>>,
    /// The resources the host subscribed to, renewed on reconnect.
    pub(super) subscriptions: BTreeSet<String>,
}

impl Runtime {
    pub(super) fn new() -> Self {
        Self {
            phase: Phase::Closed,
            offered: Offered::default(),
            credentials: None,
            responder: None,
            refused: None,
            subscriptions: BTreeSet::new(),
        }
    }

    /// The open session, if there is one (it may have closed since).
    pub(super) fn connection(&self) -> Option<&Arc<Connection>> {
        match &self.phase {
            Phase::Ready(live) => Some(&live.connection),
            _ => None,
        }
    }

    /// Whether `connection` is the server's current session.
    pub(super) fn is_current(&self, connection: &Arc<Connection>) -> bool {
        self.connection()
            .is_some_and(|current| Arc::ptr_eq(current, connection))
    }

    /// Moves to `next`. A session left behind stops being followed and is
    /// returned, for the caller to close outside the lock.
    pub(super) fn enter(&mut self, next: Phase) -> Option<Arc<Connection>> {
        match std::mem::replace(&mut self.phase, next) {
            Phase::Ready(live) => {
                live.refresher.abort();
                Some(live.connection)
            }
            _ => None,
        }
    }

    /// Ends a connect that did not reach `Ready` or `Failed` (it waits
    /// for credentials, or its future was dropped).
    pub(super) fn connect_ended(&mut self) {
        if matches!(self.phase, Phase::Connecting | Phase::Reconnecting) {
            self.phase = Phase::Closed;
        }
    }

    /// What the host sees, given the auth requests pending for this
    /// server (newest last). An open session wins; then the host's
    /// refusal, a request waiting for an answer, a connect in progress,
    /// the last failure.
    pub(super) fn state(&self, pending: Option<&AuthRequest>) -> ServerState {
        if self.connection().is_some_and(|c| !c.is_closed()) {
            return ServerState::Connected;
        }
        if let Some(reason) = &self.refused {
            return ServerState::AuthRefused {
                reason: reason.clone(),
            };
        }
        if let Some(request) = pending {
            return ServerState::NeedsAuth(Box::new(request.clone()));
        }
        match &self.phase {
            Phase::Connecting | Phase::Reconnecting => ServerState::Connecting,
            Phase::Failed(err) => ServerState::Failed(err.clone()),
            Phase::Closed | Phase::Ready(_) => ServerState::Disconnected,
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Phase::Ready(live) = &self.phase {
            live.refresher.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentkit_tools_core::AuthOperation;

    #[test]
    fn the_state_the_host_sees_follows_the_phase_and_auth() {
        let mut runtime = Runtime::new();
        assert_eq!(runtime.state(None), ServerState::Disconnected);
        runtime.enter(Phase::Connecting);
        assert_eq!(runtime.state(None), ServerState::Connecting);
        let failure = McpError::UnknownServer("x".into());
        runtime.enter(Phase::Failed(failure.clone()));
        assert_eq!(runtime.state(None), ServerState::Failed(failure));
        let request = crate::auth::auth_request(
            "x",
            AuthOperation::Connect,
            &crate::auth::Challenge::default(),
        );
        assert!(matches!(
            runtime.state(Some(&request)),
            ServerState::NeedsAuth(_)
        ));
        runtime.refused = Some(Some("no".into()));
        assert_eq!(
            runtime.state(Some(&request)),
            ServerState::AuthRefused {
                reason: Some("no".into())
            }
        );
        runtime.refused = None;
        runtime.enter(Phase::Reconnecting);
        runtime.connect_ended();
        assert_eq!(runtime.state(None), ServerState::Disconnected);
        // A failure stays when a connect ends without a verdict.
        runtime.enter(Phase::Failed(McpError::UnknownServer("y".into())));
        runtime.connect_ended();
        assert!(matches!(runtime.state(None), ServerState::Failed(_)));
    }
}
