//! Credentials for MCP servers, asked for and given out of band.
//!
//! When a server answers `401 Unauthorized` (or `403` with
//! `error="insufficient_scope"`), the manager never blocks on a person: it
//! turns the `WWW-Authenticate` challenge into an
//! [`AuthRequest`] and fails the connect ([`McpError::AuthRequired`]) or the
//! tool call ([`ToolError::AuthRequired`]). The host (which may own a
//! browser, a secret store, a person) answers with an [`AuthResolution`]
//! through [`McpServerManager::resolve_auth`], which connects the server
//! with the new credentials. A host that can always answer (a secret store,
//! a token cache) registers an [`McpAuthResponder`] instead, per server or
//! for all, and is asked directly: on the first 401 / 403, and once more
//! whenever a later operation meets one, so a refreshed token is picked up
//! without an error. With the `oauth` feature, a server configured with an
//! `OAuthConfig` runs OAuth 2.1 (see the `oauth` module): the request
//! carries the authorization URL, and the host answers with
//! [`McpCredentials::oauth_redirect`].
//!
//! [`McpError::AuthRequired`]: crate::McpError::AuthRequired
//! [`ToolError::AuthRequired`]: agentkit_tools_core::ToolError::AuthRequired
//! [`McpServerManager::resolve_auth`]: crate::McpServerManager::resolve_auth

pub use agentkit_tools_core::{AuthOperation, AuthRequest};

use agentkit_core::MetadataMap;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Credentials for one server.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpCredentials {
    /// A bearer token, sent as `Authorization: Bearer <token>`.
    Bearer(String),
    /// Headers sent with every request (API keys in custom headers).
    Headers(BTreeMap<String, String>),
    /// The URL an OAuth authorization server redirected the user's browser
    /// to (with `code` and `state`), answering a request that carried an
    /// `mcp.authorization_url` (feature `oauth`). The manager trades the
    /// code for tokens and keeps them fresh itself.
    OAuthRedirect(String),
}

impl McpCredentials {
    /// A bearer token (without the `Bearer ` prefix).
    pub fn bearer(token: impl Into<String>) -> Self {
        McpCredentials::Bearer(token.into())
    }

    /// A single header, such as `X-Api-Key`.
    pub fn header(name: impl Into<String>, value: impl Into<String>) -> Self {
        McpCredentials::Headers(BTreeMap::from([(name.into(), value.into())]))
    }

    /// The redirect that ends an OAuth authorization: the full URL the
    /// browser was sent to, such as
    /// `http://127.0.0.1:8765/callback?code=…&state=…`.
    pub fn oauth_redirect(url: impl Into<String>) -> Self {
        McpCredentials::OAuthRedirect(url.into())
    }
}

impl std::fmt::Debug for McpCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Credentials end up in logs through `{:?}` sooner or later; keep
        // the secret parts out.
        match self {
            McpCredentials::Bearer(_) => f.write_str("Bearer(<redacted>)"),
            McpCredentials::Headers(headers) => f
                .debug_tuple("Headers")
                .field(&headers.keys().collect::<Vec<_>>())
                .finish(),
            McpCredentials::OAuthRedirect(_) => f.write_str("OAuthRedirect(<redacted>)"),
        }
    }
}

/// The host's answer to an [`AuthRequest`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AuthResolution {
    /// Use these credentials for the request's server from now on.
    Provided {
        /// The request being answered.
        request: AuthRequest,
        /// The credentials.
        credentials: McpCredentials,
    },
    /// Do not authenticate; calls to the server fail until credentials are
    /// provided.
    Refused {
        /// The request being answered.
        request: AuthRequest,
        /// Why, in words for logs and the model.
        reason: Option<String>,
    },
}

impl AuthResolution {
    /// Answers `request` with `credentials`.
    pub fn provided(request: AuthRequest, credentials: McpCredentials) -> Self {
        AuthResolution::Provided {
            request,
            credentials,
        }
    }

    /// Refuses `request`.
    pub fn refused(request: AuthRequest, reason: Option<String>) -> Self {
        AuthResolution::Refused { request, reason }
    }

    /// The request this resolution answers.
    pub fn request(&self) -> &AuthRequest {
        match self {
            AuthResolution::Provided { request, .. } | AuthResolution::Refused { request, .. } => {
                request
            }
        }
    }
}

/// A credentials provider: answers auth requests without involving the
/// host's main flow, for example from a secret store or a token cache.
/// Registered for every server with
/// [`McpServerManager::set_auth_responder`](crate::McpServerManager::set_auth_responder),
/// or for one with
/// [`McpServerManager::set_server_auth_responder`](crate::McpServerManager::set_server_auth_responder).
/// Asked at most once per operation (a connect, a call); what it provides
/// is used for the retry and kept for later calls.
#[async_trait::async_trait]
pub trait McpAuthResponder: Send + Sync {
    /// The answer to `request`, or `None` to let it surface as an
    /// `AuthRequired` error for the host to resolve.
    async fn respond(&self, request: &AuthRequest) -> Option<AuthResolution>;
}

/// What the manager knows when a server asks for credentials.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// The `WWW-Authenticate` header, verbatim.
    pub(crate) header: Option<String>,
    /// 401 or 403.
    pub(crate) insufficient_scope: bool,
}

static NEXT_REQUEST: AtomicU64 = AtomicU64::new(1);

/// Builds the request the host will see: who asks, for what, and what the
/// challenge says (scopes, error, resource metadata URL).
pub(crate) fn auth_request(
    server: &str,
    operation: AuthOperation,
    challenge: &Challenge,
) -> AuthRequest {
    let id = format!(
        "mcp-auth-{server}-{}",
        NEXT_REQUEST.fetch_add(1, Ordering::Relaxed)
    );
    let params = challenge
        .header
        .as_deref()
        .map(parse_challenge)
        .unwrap_or_default();
    let scopes = params
        .get("scope")
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let mut metadata = MetadataMap::new();
    for key in ["error", "error_description", "realm", "resource_metadata"] {
        if let Some(value) = params.get(key) {
            metadata.insert(format!("mcp.{key}"), value.clone().into());
        }
    }
    let status = if challenge.insufficient_scope {
        403
    } else {
        401
    };
    metadata.insert("mcp.http_status".into(), status.into());
    AuthRequest {
        id,
        provider: server.to_owned(),
        operation,
        challenge: challenge.header.clone(),
        scopes,
        metadata,
    }
}

/// The `key=value` parameters of a `WWW-Authenticate` header (RFC 9110
/// auth-params; quoted strings unescaped). The scheme itself is skipped.
/// Good enough for the single Bearer challenge MCP servers send.
pub(crate) fn parse_challenge(header: &str) -> BTreeMap<String, String> {
    let mut params = BTreeMap::new();
    let rest = header.trim();
    // Skip the scheme ("Bearer") when it is followed by parameters.
    let mut rest = match rest.split_once(char::is_whitespace) {
        Some((scheme, tail)) if !scheme.contains('=') => tail,
        _ => rest,
    };
    loop {
        rest = rest.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim().to_ascii_lowercase();
        rest = rest[eq + 1..].trim_start();
        let value;
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            out.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => out.push(c),
                }
            }
            value = out;
            rest = &quoted[end.min(quoted.len())..];
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            value = rest[..end].trim().to_owned();
            rest = &rest[end..];
        }
        if !key.is_empty() {
            params.insert(key, value);
        }
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_parameters_are_parsed() {
        let params = parse_challenge(
            r#"Bearer realm="mcp", error="insufficient_scope", scope="tools:read tools:call", resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource", error_description="needs \"call\"""#,
        );
        assert_eq!(params["realm"], "mcp");
        assert_eq!(params["error"], "insufficient_scope");
        assert_eq!(params["scope"], "tools:read tools:call");
        assert_eq!(params["error_description"], r#"needs "call""#);
        assert!(params["resource_metadata"].ends_with("oauth-protected-resource"));
        assert!(parse_challenge("Bearer").is_empty());
        assert_eq!(
            parse_challenge("Bearer error=invalid_token")["error"],
            "invalid_token"
        );
    }

    #[test]
    fn requests_carry_scopes_and_challenge() {
        let challenge = Challenge {
            header: Some(r#"Bearer error="invalid_token", scope="a b""#.into()),
            insufficient_scope: false,
        };
        let request = auth_request("remote", AuthOperation::Connect, &challenge);
        assert_eq!(request.provider, "remote");
        assert_eq!(request.scopes, ["a", "b"]);
        assert_eq!(request.challenge, challenge.header);
        assert_eq!(request.metadata["mcp.error"], "invalid_token");
        assert_eq!(request.metadata["mcp.http_status"], 401);
        let again = auth_request("remote", AuthOperation::Connect, &challenge);
        assert_ne!(request.id, again.id, "every request has its own id");
    }

    #[test]
    fn credentials_do_not_leak_through_debug() {
        assert!(!format!("{:?}", McpCredentials::bearer("s3cret")).contains("s3cret"));
        assert!(!format!("{:?}", McpCredentials::header("X-Key", "s3cret")).contains("s3cret"));
    }
}
