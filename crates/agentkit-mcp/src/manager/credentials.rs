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
    /// provided credentials worth a retry. A server authorized with OAuth
    /// refreshes its tokens first.
    pub(super) async fn ask_responder(&self, server: &Arc<Server>, request: &AuthRequest) -> bool {
        #[cfg(feature = "oauth")]
        if let crate::config::McpTransport::Http(http) = &server.config.transport
            && let Some(config) = &http.oauth
            && config.grant.is_machine()
        {
            // A machine client needs nobody: it asks for a token itself.
            let outcome = server
                .oauth
                .machine_grant(&http.url, config, request.challenge.as_deref())
                .await;
            if let Err(reason) = &outcome {
                tracing::warn!(server = %server.config.name, %reason, grant = ?config.grant, "OAuth grant failed");
            }
            return outcome.is_ok();
        }
        // A step-up (403, more scopes) is not cured by a refresh.
        #[cfg(feature = "oauth")]
        if !is_step_up(request) && server.oauth.refresh().await {
            return true;
        }
        let own = server.state().responder.clone();
        let responder = own.or_else(|| self.responder.lock().expect("responder lock").clone());
        let Some(responder) = responder else {
            return false;
        };
        // An OAuth server's request carries the authorization URL for the
        // responder too: a host that can play the browser answers at once.
        let mut request = request.clone();
        self.add_authorization_url(server, &mut request).await;
        match responder.respond(&request).await {
            Some(AuthResolution::Provided {
                credentials: McpCredentials::OAuthRedirect(redirect),
                ..
            }) => match self.finish_oauth(server, &redirect).await {
                Ok(()) => true,
                Err(err) => {
                    tracing::warn!(server = %server.config.name, %err, "OAuth redirect from the responder failed");
                    false
                }
            },
            Some(AuthResolution::Provided { credentials, .. }) => {
                tracing::info!(server = %server.config.name, "auth responder provided credentials");
                server.state().credentials = Some(credentials);
                true
            }
            Some(AuthResolution::Refused { reason, .. }) => {
                tracing::info!(server = %server.config.name, "auth responder refused");
                server.state().refused = Some(reason);
                false
            }
            None => false,
        }
    }

    /// The error for an unanswered auth request, after adding what the host
    /// needs to answer it (the OAuth authorization URL, for servers
    /// configured with OAuth).
    pub(super) async fn surface_auth(
        &self,
        server: &Arc<Server>,
        mut request: AuthRequest,
    ) -> McpError {
        self.add_authorization_url(server, &mut request).await;
        self.auth_failure(server, request)
    }

    /// Adds the OAuth authorization URL (or why none could be made) to a
    /// request of a server configured with OAuth.
    #[cfg_attr(not(feature = "oauth"), allow(unused_variables))]
    async fn add_authorization_url(&self, server: &Arc<Server>, request: &mut AuthRequest) {
        #[cfg(feature = "oauth")]
        if let crate::config::McpTransport::Http(http) = &server.config.transport
            && let Some(config) = &http.oauth
            // A machine client has no user to send anywhere.
            && !config.grant.is_machine()
        {
            let url = server
                .oauth
                .authorization_url(&http.url, config, request.challenge.as_deref())
                .await;
            match url {
                Ok(url) => {
                    request
                        .metadata
                        .insert("mcp.authorization_url".into(), url.into());
                }
                Err(reason) => {
                    tracing::warn!(server = %server.config.name, %reason, "OAuth authorization could not start");
                    request
                        .metadata
                        .insert("mcp.authorization_error".into(), reason.into());
                }
            }
        }
    }

    /// The error for an unanswered auth request: recorded as pending, or
    /// a refusal when the responder just refused.
    pub(super) fn auth_failure(&self, server: &Server, request: AuthRequest) -> McpError {
        if let Some(reason) = server.state().refused.clone() {
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

    pub(super) async fn apply_resolution(
        &self,
        server: &Arc<Server>,
        resolution: AuthResolution,
    ) -> Result<(), McpError> {
        let name = server.config.name.clone();
        if let AuthResolution::Provided {
            credentials: McpCredentials::OAuthRedirect(redirect),
            ..
        } = &resolution
        {
            return self.complete_oauth(server, redirect).await;
        }
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
                server.state().refused = Some(reason);
            }
        }
        Ok(())
    }

    /// Ends an OAuth authorization with the host's redirect URL. The
    /// pending requests stay pending when it fails (the host may retry).
    async fn complete_oauth(&self, server: &Arc<Server>, redirect: &str) -> Result<(), McpError> {
        self.finish_oauth(server, redirect).await?;
        close_session(server).await;
        Ok(())
    }

    /// Trades an OAuth redirect for tokens and forgets the server's pending
    /// requests and refusal.
    async fn finish_oauth(&self, server: &Arc<Server>, redirect: &str) -> Result<(), McpError> {
        let name = server.config.name.clone();
        #[cfg(feature = "oauth")]
        let outcome = server.oauth.complete(redirect).await;
        #[cfg(not(feature = "oauth"))]
        let outcome: Result<(), String> = {
            let _ = redirect;
            Err("this build has no OAuth support (the `oauth` feature is off)".into())
        };
        if let Err(message) = outcome {
            return Err(McpError::Authorization {
                server: name,
                message,
            });
        }
        tracing::info!(server = %name, "OAuth authorization completed");
        self.pending_auth
            .lock()
            .expect("pending auth lock")
            .retain(|request| request.provider != name);
        server.state().refused = None;
        Ok(())
    }

    pub(super) async fn store_credentials(
        &self,
        server: &Arc<Server>,
        credentials: McpCredentials,
    ) {
        {
            let mut state = server.state();
            state.credentials = Some(credentials);
            state.refused = None;
        }
        close_session(server).await;
    }
}

/// `true` for a `403` asking for more scopes.
#[cfg(feature = "oauth")]
fn is_step_up(request: &AuthRequest) -> bool {
    request
        .metadata
        .get("mcp.http_status")
        .and_then(|status| status.as_u64())
        == Some(403)
}

/// Closes the server's open session, if any: it was authenticated with the
/// old credentials, and the next connect opens a new one.
async fn close_session(server: &Server) {
    let old = {
        let _gate = server.gate.lock().await;
        server.state().enter(super::state::Phase::Closed)
    };
    if let Some(old) = old {
        old.close().await;
    }
}
