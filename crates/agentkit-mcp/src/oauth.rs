//! OAuth 2.1 for MCP servers (feature `oauth`), with the host in charge of
//! the browser.
//!
//! MCP's authorization spec is OAuth 2.1: the server's `401` challenge
//! points at its protected-resource metadata, which names an authorization
//! server; the client registers itself (or uses a pre-registered client
//! id), sends the user to the authorization URL with a PKCE challenge, and
//! trades the code it gets back for tokens, refreshing them as they expire.
//! rmcp's `auth` module does every protocol step; this module keeps one
//! flow per server and fits it into the manager's out-of-band auth:
//!
//! 1. a server configured with [`OAuthConfig`] answers `401`: the manager
//!    runs discovery and registration and puts the authorization URL in the
//!    [`AuthRequest`](crate::AuthRequest)'s metadata (`mcp.authorization_url`);
//! 2. the host opens it however it likes (a browser, a device on the
//!    user's desk) and catches the redirect to its `redirect_uri`;
//! 3. the host resolves the request with
//!    [`McpCredentials::oauth_redirect`](crate::McpCredentials::oauth_redirect)
//!    (the URL it was redirected to); the manager checks the `state`, trades
//!    the code for tokens, and connects;
//! 4. from then on every connect uses the current access token, refreshed
//!    before it expires, and a `401` in the middle of a call refreshes it
//!    once before anything surfaces.

use crate::plain::describe;
use rmcp::transport::auth::{AuthorizationManager, AuthorizationRequest, AuthorizationSession};

/// How the manager authorizes with an OAuth-protected server.
///
/// ```
/// use agentkit_mcp::{McpServerConfig, OAuthConfig};
///
/// let config = McpServerConfig::http("tickets", "https://tickets.example/mcp").oauth(
///     OAuthConfig::new("http://127.0.0.1:8765/callback")
///         .client_name("my agent")
///         .scopes(["tickets:read"]),
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// Where the authorization server sends the user's browser back to,
    /// with the code. The host must be able to catch it.
    pub redirect_uri: String,
    /// A client id registered in advance; without one the client registers
    /// itself (dynamic client registration) when the server supports it.
    pub client_id: Option<String>,
    /// The name shown to the user when the client registers itself.
    pub client_name: String,
    /// The scopes to ask for; empty lets the server's challenge and
    /// metadata decide.
    pub scopes: Vec<String>,
}

impl OAuthConfig {
    /// A configuration with this redirect URI, registering dynamically as
    /// "agentkit", with the scopes the server asks for.
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        Self {
            redirect_uri: redirect_uri.into(),
            client_id: None,
            client_name: "agentkit".into(),
            scopes: Vec::new(),
        }
    }

    /// Uses a client id registered in advance.
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// The client's name for dynamic registration.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The scopes to ask for.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }
}

/// Where one server's authorization stands.
#[derive(Default)]
enum Phase {
    /// Nothing started, or the last attempt failed.
    #[default]
    Idle,
    /// The user was sent to the authorization URL; waiting for the redirect.
    Pending(Box<AuthorizationSession>),
    /// Tokens were obtained; the manager refreshes them.
    Authorized(Box<AuthorizationManager>),
}

/// One server's OAuth flow.
#[derive(Default)]
pub(crate) struct OAuthFlow {
    phase: tokio::sync::Mutex<Phase>,
}

impl OAuthFlow {
    /// The access token to connect with, refreshed first when it is about
    /// to expire; `None` before authorization or when it lapsed for good.
    pub(crate) async fn access_token(&self) -> Option<String> {
        let phase = self.phase.lock().await;
        let Phase::Authorized(manager) = &*phase else {
            return None;
        };
        match manager.get_access_token().await {
            Ok(token) => Some(token),
            Err(err) => {
                tracing::info!(reason = %describe(&err), "OAuth access token unavailable");
                None
            }
        }
    }

    /// Refreshes the tokens now (a `401` came back for a token still
    /// believed valid); `true` when a new access token was obtained.
    pub(crate) async fn refresh(&self) -> bool {
        let phase = self.phase.lock().await;
        let Phase::Authorized(manager) = &*phase else {
            return false;
        };
        match manager.refresh_token().await {
            Ok(_) => {
                tracing::info!("OAuth access token refreshed after a 401");
                true
            }
            Err(err) => {
                tracing::info!(reason = %describe(&err), "OAuth refresh failed");
                false
            }
        }
    }

    /// The authorization URL for the user: the one already waiting for a
    /// redirect, or a new one (discovery from `challenge`, client
    /// registration, PKCE). `Err` says in words why none could be made.
    pub(crate) async fn authorization_url(
        &self,
        server_url: &str,
        config: &OAuthConfig,
        challenge: Option<&str>,
    ) -> Result<String, String> {
        let mut phase = self.phase.lock().await;
        if let Phase::Pending(session) = &*phase {
            return Ok(session.get_authorization_url().to_owned());
        }
        let mut manager = AuthorizationManager::new(server_url)
            .await
            .map_err(|err| describe(&err))?;
        let resolution = manager
            .resolve_metadata_from_challenge(challenge)
            .await
            .map_err(|err| describe(&err))?;
        manager.set_metadata(resolution.metadata);
        let mut request = AuthorizationRequest::new(config.redirect_uri.clone())
            .with_client_name(config.client_name.clone());
        if let Some(client_id) = &config.client_id {
            request = request.with_preregistered_client(client_id.clone());
        }
        if !config.scopes.is_empty() {
            request = request.with_scopes(config.scopes.iter().cloned());
        }
        if let Some(challenge) = challenge {
            request = request.with_challenge(challenge);
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, err)| describe(&err))?;
        let url = session.get_authorization_url().to_owned();
        *phase = Phase::Pending(Box::new(session));
        Ok(url)
    }

    /// Completes the pending authorization with the URL the authorization
    /// server redirected to: checks its `state`, trades the code for tokens.
    pub(crate) async fn complete(&self, redirect: &str) -> Result<(), String> {
        let mut phase = self.phase.lock().await;
        let Phase::Pending(session) = std::mem::take(&mut *phase) else {
            return Err("no OAuth authorization is waiting for a redirect".into());
        };
        match session.handle_callback_url(redirect).await {
            Ok(_) => {
                let session = *session;
                *phase = Phase::Authorized(Box::new(session.auth_manager));
                Ok(())
            }
            Err(err) => {
                // The same session can take a corrected redirect.
                let reason = describe(&err);
                *phase = Phase::Pending(session);
                Err(reason)
            }
        }
    }
}
