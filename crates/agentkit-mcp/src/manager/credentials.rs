//! Auth requests and their answers: asking the registered responder,
//! recording requests for the host, applying resolutions.
//!
//! New credentials close the server's current session, because it was
//! authenticated with the old ones; the next call opens a new one.

use super::{Inner, Server};
use crate::auth::{AuthResolution, McpCredentials};
use crate::error::McpError;
use agentkit_tools_core::AuthRequest;
use std::sync::Arc;

/// How many unanswered requests a server keeps; older ones are forgotten.
const PENDING_PER_SERVER: usize = 16;

impl Inner {
    /// Asks the server's responder, or else the manager's; `true` when it
    /// provided credentials worth a retry.
    pub(super) async fn ask_responder(&self, server: &Arc<Server>, request: &AuthRequest) -> bool {
        let own = server.responder.lock().expect("responder lock").clone();
        let responder = own.or_else(|| self.responder.lock().expect("responder lock").clone());
        let Some(responder) = responder else {
            return false;
        };
        match responder.respond(request).await {
            Some(AuthResolution::Provided { credentials, .. }) => {
                tracing::info!(server = %server.config.name, "auth responder provided credentials");
                *server.credentials.lock().expect("credentials lock") = Some(credentials);
                true
            }
            Some(AuthResolution::Refused { reason, .. }) => {
                tracing::info!(server = %server.config.name, "auth responder refused");
                *server.refused.lock().expect("refused lock") = Some(reason);
                false
            }
            None => false,
        }
    }

    /// The error for an unanswered auth request: recorded as pending, or
    /// a refusal when the responder just refused.
    pub(super) fn auth_failure(&self, server: &Server, request: AuthRequest) -> McpError {
        if let Some(reason) = server.refused.lock().expect("refused lock").clone() {
            return McpError::AuthRefused {
                server: server.config.name.clone(),
                reason,
            };
        }
        tracing::info!(
            server = %server.config.name,
            request = %request.id,
            challenge = ?request.challenge,
            "MCP server requires authentication"
        );
        let mut pending = self.pending_auth.lock().expect("pending auth lock");
        pending.push(request.clone());
        let of_server = pending
            .iter()
            .filter(|p| p.provider == request.provider)
            .count();
        if of_server > PENDING_PER_SERVER {
            let oldest = pending
                .iter()
                .position(|p| p.provider == request.provider)
                .expect("counted above");
            pending.remove(oldest);
        }
        McpError::AuthRequired(Box::new(request))
    }

    pub(super) async fn apply_resolution(&self, server: &Arc<Server>, resolution: AuthResolution) {
        let name = server.config.name.clone();
        self.pending_auth
            .lock()
            .expect("pending auth lock")
            .retain(|request| request.provider != name);
        match resolution {
            AuthResolution::Provided { credentials, .. } => {
                self.store_credentials(server, credentials).await;
            }
            AuthResolution::Refused { reason, .. } => {
                tracing::info!(server = %name, "host refused authentication");
                *server.refused.lock().expect("refused lock") = Some(reason);
            }
        }
    }

    pub(super) async fn store_credentials(
        &self,
        server: &Arc<Server>,
        credentials: McpCredentials,
    ) {
        *server.credentials.lock().expect("credentials lock") = Some(credentials);
        *server.refused.lock().expect("refused lock") = None;
        // The open session (if any) was authenticated with the old
        // credentials; the next call opens a new one.
        let old = {
            let mut slot = server.slot.lock().await;
            server.live.lock().expect("live lock").take();
            slot.take()
        };
        if let Some(old) = old {
            old.close().await;
        }
    }
}
