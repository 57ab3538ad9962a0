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
use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationRequest, AuthorizationSession, ClientCredentialsConfig,
};

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
    /// The secret of a confidential client registered in advance (sent
    /// the way the authorization server's metadata asks: HTTP Basic or the
    /// request body).
    pub client_secret: Option<String>,
    /// The HTTPS URL of the client's metadata document (a "client ID
    /// metadata document", CIMD): used as the client id where the
    /// authorization server supports it, instead of registering.
    pub client_metadata_url: Option<String>,
    /// How tokens are obtained.
    pub grant: OAuthGrant,
}

/// How the manager obtains tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthGrant {
    /// A user authorizes in a browser; the host catches the redirect
    /// (authorization code with PKCE).
    #[default]
    AuthorizationCode,
    /// No user: the client trades its own id and secret for a token
    /// (`client_credentials`), for machine-to-machine servers.
    ClientCredentials,
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
            client_secret: None,
            client_metadata_url: None,
            grant: OAuthGrant::AuthorizationCode,
        }
    }

    /// A machine client: tokens come from the `client_credentials` grant
    /// with this pre-registered id and secret, with no user and no
    /// redirect. Asked for on the server's first `401`, like any other
    /// credentials.
    ///
    /// ```
    /// use agentkit_mcp::{McpServerConfig, OAuthConfig};
    ///
    /// let config = McpServerConfig::http("billing", "https://billing.example/mcp")
    ///     .oauth(OAuthConfig::client_credentials("agent-42", "s3cret"));
    /// ```
    pub fn client_credentials(client_id: impl Into<String>, secret: impl Into<String>) -> Self {
        Self {
            client_id: Some(client_id.into()),
            client_secret: Some(secret.into()),
            grant: OAuthGrant::ClientCredentials,
            ..Self::new("")
        }
    }

    /// The secret of a confidential client registered in advance (with
    /// [`client_id`](Self::client_id)).
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// The URL of the client's metadata document (CIMD), used as its client
    /// id where the authorization server supports it.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
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

/// An authorization manager for `server_url` with the authorization
/// server's metadata, found from the challenge (protected-resource
/// metadata, then the authorization server's own).
async fn discover(
    server_url: &str,
    challenge: Option<&str>,
) -> Result<AuthorizationManager, String> {
    crate::http::install_tls_provider();
    let mut manager = AuthorizationManager::new(server_url)
        .await
        .map_err(|err| describe(&err))?;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(|err| describe(&err))?;
    manager.set_metadata(resolution.metadata);
    Ok(manager)
}

/// Where one server's authorization stands. The working tokens and a
/// pending authorization live side by side: a step-up (a `403` asking for
/// more scopes) keeps using the tokens it has until the new ones exist.
#[derive(Default)]
struct Phase {
    /// Tokens were obtained; the manager refreshes them.
    authorized: Option<Box<AuthorizationManager>>,
    /// The user was sent to the authorization URL; waiting for the redirect.
    pending: Option<Box<AuthorizationSession>>,
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
        let manager = phase.authorized.as_ref()?;
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
        let Some(manager) = phase.authorized.as_ref() else {
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

    /// Obtains tokens with the `client_credentials` grant (no user):
    /// discovery from `challenge`, then the token request.
    pub(crate) async fn client_credentials(
        &self,
        server_url: &str,
        config: &OAuthConfig,
        challenge: Option<&str>,
    ) -> Result<(), String> {
        let mut phase = self.phase.lock().await;
        let mut manager = discover(server_url, challenge).await?;
        let credentials = ClientCredentialsConfig::ClientSecret {
            client_id: config.client_id.clone().unwrap_or_default(),
            client_secret: config.client_secret.clone().unwrap_or_default(),
            scopes: config.scopes.clone(),
            resource: Some(server_url.to_owned()),
        };
        manager
            .configure_client_credentials(&credentials)
            .map_err(|err| describe(&err))?;
        manager
            .exchange_client_credentials(&credentials)
            .await
            .map_err(|err| describe(&err))?;
        phase.authorized = Some(Box::new(manager));
        Ok(())
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
        if let Some(session) = &phase.pending {
            return Ok(session.get_authorization_url().to_owned());
        }
        let manager = discover(server_url, challenge).await?;
        let mut request = AuthorizationRequest::new(config.redirect_uri.clone())
            .with_client_name(config.client_name.clone());
        if let Some(client_id) = &config.client_id {
            request = request.with_preregistered_client(client_id.clone());
        }
        if let Some(secret) = &config.client_secret {
            request = request.with_client_secret(secret.clone());
        }
        if let Some(url) = &config.client_metadata_url {
            request = request.with_client_metadata_url(url.clone());
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
        phase.pending = Some(Box::new(session));
        Ok(url)
    }

    /// Completes the pending authorization with the URL the authorization
    /// server redirected to: checks its `state`, trades the code for tokens.
    pub(crate) async fn complete(&self, redirect: &str) -> Result<(), String> {
        let mut phase = self.phase.lock().await;
        let Some(session) = phase.pending.take() else {
            return Err("no OAuth authorization is waiting for a redirect".into());
        };
        match session.handle_callback_url(redirect).await {
            Ok(_) => {
                // Only now do the new tokens replace the old ones.
                phase.authorized = Some(Box::new(session.auth_manager));
                Ok(())
            }
            Err(err) => {
                // The same session can take a corrected redirect.
                let reason = describe(&err);
                phase.pending = Some(session);
                Err(reason)
            }
        }
    }
}
