//! One server's OAuth state: the working tokens, a pending authorization,
//! and what discovery and registration found.
//!
//! Discovery (protected-resource metadata, then the authorization server's
//! metadata) and dynamic client registration are the same every time for a
//! server, so their results are kept: re-authorizing (a `403` step-up,
//! tokens that lapsed and cannot be refreshed) starts from them and only
//! makes the authorization request. They are forgotten when a token
//! request fails (the client may have been deleted, the server moved), or
//! when a challenge points at other resource metadata, and found again on
//! the next attempt.

use super::{OAuthConfig, OAuthGrant, grants};
use crate::plain::describe;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession,
};

/// Where one server's authorization stands. The working tokens and a
/// pending authorization live side by side: a step-up (a `403` asking for
/// more scopes) keeps using the tokens it has until the new ones exist.
#[derive(Default)]
struct Phase {
    /// Tokens were obtained; the manager refreshes them.
    authorized: Option<Box<AuthorizationManager>>,
    /// The user was sent to the authorization URL; waiting for the redirect.
    pending: Option<Box<AuthorizationSession>>,
    /// What discovery and registration found, for the next authorization.
    known: Known,
}

/// Discovery and registration results kept between authorizations.
#[derive(Default)]
struct Known {
    /// The authorization server's metadata, and the `resource_metadata`
    /// URL of the challenge it was found from.
    metadata: Option<(Option<String>, AuthorizationMetadata)>,
    /// The client dynamic registration created: id and secret.
    registration: Option<(String, Option<String>)>,
    /// The scopes the last authorization asked for (re-authorization asks
    /// for them and the challenge's, SEP-2350).
    scopes: Vec<String>,
}

/// One server's OAuth flow.
#[derive(Default)]
pub(crate) struct OAuthFlow {
    phase: tokio::sync::Mutex<Phase>,
}

/// The `resource_metadata` URL a challenge points at.
fn resource_metadata(challenge: Option<&str>) -> Option<String> {
    challenge
        .map(crate::auth::parse_challenge)
        .and_then(|mut params| params.remove("resource_metadata"))
}

/// The scopes a challenge asks for.
fn challenge_scopes(challenge: Option<&str>) -> Vec<String> {
    challenge
        .map(crate::auth::parse_challenge)
        .and_then(|params| params.get("scope").cloned())
        .map(|scope| scope.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// The `scope` of an authorization URL, split.
fn url_scopes(url: &str) -> Vec<String> {
    let Some((_, query)) = url.split_once('?') else {
        return Vec::new();
    };
    query
        .split('&')
        .filter_map(|pair| pair.strip_prefix("scope="))
        .flat_map(|scope| {
            form_decode(scope)
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `application/x-www-form-urlencoded` decoding of one value.
fn form_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() && value.is_char_boundary(i + 3) => {
                match u8::from_str_radix(&value[i + 1..i + 3], 16) {
                    Ok(byte) => {
                        out.push(byte);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn push_unique(into: &mut Vec<String>, scopes: impl IntoIterator<Item = String>) {
    for scope in scopes {
        if !into.contains(&scope) {
            into.push(scope);
        }
    }
}

impl Known {
    fn forget(&mut self) {
        *self = Known::default();
    }
}

impl OAuthFlow {
    /// An authorization manager for `server_url` with the authorization
    /// server's metadata: the kept one, or found from the challenge
    /// (protected-resource metadata, then the authorization server's own).
    /// `true` when discovery ran.
    async fn manager(
        &self,
        known: &mut Known,
        server_url: &str,
        challenge: Option<&str>,
    ) -> Result<(AuthorizationManager, bool), String> {
        agentkit_http::install_tls_provider();
        let mut manager = AuthorizationManager::new(server_url)
            .await
            .map_err(|err| describe(&err))?;
        let pointer = resource_metadata(challenge);
        if let Some((found_from, metadata)) = &known.metadata
            && (pointer.is_none() || pointer == *found_from)
        {
            manager.set_metadata(metadata.clone());
            return Ok((manager, false));
        }
        // Other metadata: the registration belonged to the old server.
        known.forget();
        let resolution = manager
            .resolve_metadata_from_challenge(challenge)
            .await
            .map_err(|err| describe(&err))?;
        known.metadata = Some((pointer, resolution.metadata.clone()));
        manager.set_metadata(resolution.metadata);
        Ok((manager, true))
    }

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

    /// Obtains tokens with a grant that needs no user (`client_credentials`,
    /// cross-app access): discovery from `challenge` (or the kept
    /// metadata), then the token requests.
    pub(crate) async fn machine_grant(
        &self,
        server_url: &str,
        config: &OAuthConfig,
        challenge: Option<&str>,
    ) -> Result<(), String> {
        let mut phase = self.phase.lock().await;
        let (mut manager, _) = self
            .manager(&mut phase.known, server_url, challenge)
            .await?;
        let metadata = phase
            .known
            .metadata
            .as_ref()
            .map(|(_, metadata)| metadata.clone())
            .unwrap_or_default();
        let outcome = match config.grant {
            OAuthGrant::CrossAppAccess => {
                grants::cross_app_access(&mut manager, &metadata, server_url, config).await
            }
            _ => grants::client_credentials(&mut manager, &metadata, server_url, config).await,
        };
        match outcome {
            Ok(()) => {
                phase.authorized = Some(Box::new(manager));
                Ok(())
            }
            Err(reason) => {
                phase.known.forget();
                Err(reason)
            }
        }
    }

    /// The authorization URL for the user: the one already waiting for a
    /// redirect, or a new one (discovery and registration unless kept,
    /// PKCE). `Err` says in words why none could be made.
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
        let phase = &mut *phase;
        let (mut manager, discovered) = self
            .manager(&mut phase.known, server_url, challenge)
            .await?;
        let known = &mut phase.known;
        // The scopes: the configured ones; else what rmcp selects from a
        // fresh discovery (the challenge, the resource's metadata), and on
        // re-authorization the last request's plus the challenge's.
        let mut scopes = config.scopes.clone();
        if scopes.is_empty() {
            push_unique(&mut scopes, known.scopes.iter().cloned());
            push_unique(&mut scopes, challenge_scopes(challenge));
            if discovered || scopes.is_empty() {
                push_unique(&mut scopes, manager.select_scopes(None, &[]));
            }
        }
        let metadata = known.metadata.as_ref().map(|(_, m)| m);
        let supports_cimd = metadata
            .and_then(|m| {
                m.additional_fields
                    .get("client_id_metadata_document_supported")
            })
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        let can_register = metadata.is_some_and(|m| m.registration_endpoint.is_some());
        let mut request = AuthorizationRequest::new(config.redirect_uri.clone())
            .with_client_name(config.client_name.clone());
        if let Some(client_id) = &config.client_id {
            request = request.with_preregistered_client(client_id.clone());
            if let Some(secret) = &config.client_secret {
                request = request.with_client_secret(secret.clone());
            }
        } else if let Some(url) = config
            .client_metadata_url
            .as_ref()
            .filter(|_| supports_cimd)
        {
            request = request.with_client_metadata_url(url.clone());
        } else {
            if known.registration.is_none() && can_register {
                let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
                let registered = manager
                    .register_client(&config.client_name, &config.redirect_uri, &refs)
                    .await
                    .map_err(|err| {
                        known.forget();
                        describe(&AuthError::RegistrationFailed(describe(&err)))
                    })?;
                known.registration = Some((registered.client_id, registered.client_secret));
            }
            if let Some((client_id, secret)) = &known.registration {
                request = request.with_preregistered_client(client_id.clone());
                if let Some(secret) = secret {
                    request = request.with_client_secret(secret.clone());
                }
            }
        }
        if !scopes.is_empty() {
            request = request.with_scopes(scopes);
        }
        if let Some(challenge) = challenge {
            request = request.with_challenge(challenge);
        }
        let session = match AuthorizationSession::new(manager, request).await {
            Ok(session) => session,
            Err((_, err)) => {
                known.forget();
                return Err(describe(&err));
            }
        };
        let url = session.get_authorization_url().to_owned();
        known.scopes = url_scopes(&url);
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
                // A refused exchange may mean a stale registration or
                // metadata: find them again next time. A bad redirect
                // (forged state) says nothing about them.
                // The session is spent then (its state was used up), so
                // the next request gets a new authorization URL.
                if matches!(err, AuthError::TokenExchangeFailed(_)) {
                    phase.known.forget();
                    return Err(describe(&err));
                }
                // The same session can take a corrected redirect.
                let reason = describe(&err);
                phase.pending = Some(session);
                Err(reason)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_come_back_out_of_an_authorization_url() {
        assert_eq!(
            url_scopes("https://as/authorize?client_id=x&scope=mcp%3Abasic+mcp%3Awrite&state=s"),
            ["mcp:basic", "mcp:write"]
        );
        assert!(url_scopes("https://as/authorize?client_id=x").is_empty());
        assert_eq!(
            challenge_scopes(Some(
                r#"Bearer scope="a b", resource_metadata="https://r/m""#
            )),
            ["a", "b"]
        );
        assert_eq!(
            resource_metadata(Some(r#"Bearer resource_metadata="https://r/m""#)).as_deref(),
            Some("https://r/m")
        );
    }
}
