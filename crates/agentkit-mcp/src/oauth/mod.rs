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
//!
//! Machine clients need no person: [`OAuthGrant::ClientCredentials`]
//! (with a secret, or a private key: `private_key_jwt`, see
//! [`ClientKey`]) and [`OAuthGrant::CrossAppAccess`] (an enterprise
//! identity provider's ID token traded for an ID-JAG, then for an access
//! token: see [`EnterpriseIdp`]) run on the server's first `401` without
//! reaching the host.
//!
//! What discovery and registration found is kept per server (see
//! `flow.rs`), so re-authorizing (a step-up, tokens that lapsed for good)
//! goes straight to the authorization request; a failure forgets it.

mod assertion;
mod flow;
mod grants;

pub use assertion::{ClientKey, ClientKeyError, JwsAlgorithm};
pub(crate) use flow::OAuthFlow;

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
    /// The private key of a client registered with `private_key_jwt`
    /// authentication: its token requests carry a signed assertion instead
    /// of a secret (the `client_credentials` and cross-app access grants).
    pub client_key: Option<ClientKey>,
    /// The enterprise identity provider of the cross-app access grant.
    pub enterprise_idp: Option<EnterpriseIdp>,
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
    /// (`client_credentials`), for machine-to-machine servers. The client
    /// authenticates with its secret, or with a signed JWT when it has a
    /// [`ClientKey`] (`private_key_jwt`, RFC 7523).
    ClientCredentials,
    /// Enterprise-managed authorization (cross-app access, SEP-990): the
    /// user's ID token from the enterprise identity provider is exchanged
    /// there for an identity assertion grant (RFC 8693 token exchange, an
    /// ID-JAG), which the MCP server's authorization server trades for an
    /// access token (RFC 7523 JWT bearer grant). No browser.
    CrossAppAccess,
}

impl OAuthGrant {
    /// `true` for the grants that run without a user (no redirect).
    pub fn is_machine(self) -> bool {
        matches!(
            self,
            OAuthGrant::ClientCredentials | OAuthGrant::CrossAppAccess
        )
    }
}

/// The enterprise identity provider of a cross-app access grant, and the
/// user's ID token it issued to this client.
///
/// ```
/// use agentkit_mcp::{EnterpriseIdp, McpServerConfig, OAuthConfig};
///
/// let idp = EnterpriseIdp::new(
///     "https://idp.corp.example",
///     "https://idp.corp.example/oauth2/token",
///     "agent-at-idp",
///     "eyJhbGciOi...the user's ID token",
/// );
/// let config = McpServerConfig::http("wiki", "https://wiki.example/mcp")
///     .oauth(OAuthConfig::cross_app_access("agent-at-wiki", "s3cret", idp));
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnterpriseIdp {
    /// The identity provider's issuer identifier (the `iss` of its tokens).
    pub issuer: String,
    /// Its token endpoint, where the token exchange happens.
    pub token_endpoint: String,
    /// This client's id at the identity provider.
    pub client_id: String,
    /// This client's secret there, for a confidential client (HTTP Basic).
    pub client_secret: Option<String>,
    /// The user's OpenID Connect ID token, issued to this client.
    pub id_token: String,
}

impl EnterpriseIdp {
    /// A public client at the identity provider holding `id_token`.
    pub fn new(
        issuer: impl Into<String>,
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
        id_token: impl Into<String>,
    ) -> Self {
        Self {
            issuer: issuer.into(),
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            client_secret: None,
            id_token: id_token.into(),
        }
    }

    /// The client's secret at the identity provider.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }
}

impl std::fmt::Debug for EnterpriseIdp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterpriseIdp")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
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
            client_key: None,
            enterprise_idp: None,
            grant: OAuthGrant::AuthorizationCode,
        }
    }

    /// A machine client authenticating with a private key
    /// (`private_key_jwt`): tokens come from the `client_credentials` grant,
    /// each request carrying a fresh assertion signed with `key`.
    ///
    /// ```
    /// use agentkit_mcp::{ClientKey, JwsAlgorithm, McpServerConfig, OAuthConfig};
    ///
    /// # fn config(pem: &str) -> Result<McpServerConfig, agentkit_mcp::ClientKeyError> {
    /// let key = ClientKey::from_pem(JwsAlgorithm::Es256, pem)?;
    /// Ok(McpServerConfig::http("billing", "https://billing.example/mcp")
    ///     .oauth(OAuthConfig::client_credentials_jwt("agent-42", key)))
    /// # }
    /// ```
    pub fn client_credentials_jwt(client_id: impl Into<String>, key: ClientKey) -> Self {
        Self {
            client_id: Some(client_id.into()),
            client_key: Some(key),
            grant: OAuthGrant::ClientCredentials,
            ..Self::new("")
        }
    }

    /// Cross-app access: `client_id` and `secret` are this client's
    /// registration at the MCP server's authorization server; `idp` holds
    /// the user's ID token. See [`OAuthGrant::CrossAppAccess`].
    pub fn cross_app_access(
        client_id: impl Into<String>,
        secret: impl Into<String>,
        idp: EnterpriseIdp,
    ) -> Self {
        Self {
            client_id: Some(client_id.into()),
            client_secret: Some(secret.into()),
            enterprise_idp: Some(idp),
            grant: OAuthGrant::CrossAppAccess,
            ..Self::new("")
        }
    }

    /// Authenticates with a private key (`private_key_jwt`) instead of a
    /// secret, for the grants without a user.
    pub fn client_key(mut self, key: ClientKey) -> Self {
        self.client_key = Some(key);
        self
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
