//! The grants without a user: `client_credentials` (client secret or
//! `private_key_jwt`) and cross-app access (token exchange at the
//! enterprise identity provider, then the JWT bearer grant).
//!
//! rmcp does the secret-authenticated `client_credentials` request and both
//! steps of cross-app access (its `enterprise` module checks the ID-JAG's
//! bindings). Its `private_key_jwt` signer needs `jsonwebtoken` on
//! aws-lc-rs; here the assertion is signed with `ring` (see
//! `assertion.rs`) and the token request, a plain form POST, is sent here.
//! Whatever the grant, the tokens end up in the authorization manager's
//! credential store, so the rest of the flow (access token, expiry) does
//! not care how they were obtained.

use super::OAuthConfig;
use super::assertion::ClientKey;
use crate::plain::describe;
use oauth2::ClientSecret;
use rmcp::transport::auth::CredentialStore as _;
use rmcp::transport::auth::enterprise::{
    EmaAuthorizationServer, EmaClientAssertion, EmaClientAssertionProvider,
    EmaClientAuthentication, EmaExchangeRequest,
};
use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationMetadata, ClientCredentialsConfig, InMemoryCredentialStore,
    OAuthTokenResponse, StoredCredentials, default_oauth_http_client,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

const JWT_BEARER_ASSERTION: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The issuer a client assertion is addressed to (RFC 7523 section 3:
/// the authorization server; its issuer identifier, per RFC 7523bis),
/// falling back to the token endpoint when the metadata has no issuer.
fn audience(metadata: &AuthorizationMetadata) -> String {
    metadata
        .issuer
        .clone()
        .unwrap_or_else(|| metadata.token_endpoint.clone())
}

/// Puts a token response into the manager's credential store, where
/// `get_access_token` finds it.
async fn keep(
    manager: &mut AuthorizationManager,
    client_id: &str,
    response: Value,
) -> Result<(), String> {
    let token: OAuthTokenResponse = serde_json::from_value(response)
        .map_err(|err| format!("the token response is malformed: {err}"))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .ok();
    let store = InMemoryCredentialStore::new();
    store
        .save(StoredCredentials::new(
            client_id.to_owned(),
            Some(token),
            Vec::new(),
            now,
        ))
        .await
        .map_err(|err| describe(&err))?;
    manager.set_credential_store(store);
    Ok(())
}

/// The `client_credentials` grant, authenticated with the client's key
/// when it has one, else with its secret.
pub(super) async fn client_credentials(
    manager: &mut AuthorizationManager,
    metadata: &AuthorizationMetadata,
    server_url: &str,
    config: &OAuthConfig,
) -> Result<(), String> {
    let client_id = config.client_id.clone().unwrap_or_default();
    if let Some(key) = &config.client_key {
        return client_credentials_jwt(manager, metadata, server_url, config, &client_id, key)
            .await;
    }
    let credentials = ClientCredentialsConfig::ClientSecret {
        client_id,
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
    Ok(())
}

/// `client_credentials` with `private_key_jwt` (RFC 7523 section 2.2):
/// the client is identified by the signed assertion, not a secret.
async fn client_credentials_jwt(
    manager: &mut AuthorizationManager,
    metadata: &AuthorizationMetadata,
    server_url: &str,
    config: &OAuthConfig,
    client_id: &str,
    key: &ClientKey,
) -> Result<(), String> {
    let assertion = key
        .client_assertion(client_id, &audience(metadata))
        .map_err(|err| err.to_string())?;
    let mut form = vec![
        ("grant_type", "client_credentials".to_owned()),
        ("client_assertion_type", JWT_BEARER_ASSERTION.to_owned()),
        ("client_assertion", assertion),
        ("resource", server_url.to_owned()),
    ];
    if !config.scopes.is_empty() {
        form.push(("scope", config.scopes.join(" ")));
    }
    let response = token_request(&metadata.token_endpoint, &form).await?;
    keep(manager, client_id, response).await
}

/// One form POST to a token endpoint; the JSON answer, or the OAuth error
/// in words.
async fn token_request(endpoint: &str, form: &[(&str, String)]) -> Result<Value, String> {
    agentkit_http::install_tls_provider();
    let response = reqwest::Client::new()
        .post(endpoint)
        .header(reqwest::header::ACCEPT, "application/json")
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(form_encode(form))
        .send()
        .await
        .map_err(|err| format!("token request to {endpoint} failed: {}", describe(&err)))?;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        let error = body["error"].as_str().unwrap_or("no OAuth error code");
        let description = body["error_description"].as_str().unwrap_or("");
        return Err(format!(
            "the token endpoint answered {status}: {error} {description}"
        ));
    }
    Ok(body)
}

/// `application/x-www-form-urlencoded` (every byte but the unreserved
/// ones escaped).
fn form_encode(pairs: &[(&str, String)]) -> String {
    let escape = |text: &str| {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    pairs
        .iter()
        .map(|(key, value)| format!("{}={}", escape(key), escape(value)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Signs a fresh client assertion for each of rmcp's token requests.
struct KeySigner {
    key: ClientKey,
}

#[async_trait::async_trait]
impl EmaClientAssertionProvider for KeySigner {
    async fn create_assertion(
        &self,
        server: &EmaAuthorizationServer,
    ) -> Result<EmaClientAssertion, Box<dyn std::error::Error + Send + Sync>> {
        Ok(EmaClientAssertion::new(
            self.key
                .client_assertion(&server.client_id, &server.issuer)?,
        ))
    }
}

/// Cross-app access (SEP-990): ID token → ID-JAG at the identity provider
/// (RFC 8693), ID-JAG → access token at the MCP server's authorization
/// server (RFC 7523 JWT bearer grant).
pub(super) async fn cross_app_access(
    manager: &mut AuthorizationManager,
    metadata: &AuthorizationMetadata,
    server_url: &str,
    config: &OAuthConfig,
) -> Result<(), String> {
    let idp = config.enterprise_idp.as_ref().ok_or(
        "cross-app access needs the enterprise identity provider (OAuthConfig::cross_app_access)",
    )?;
    let issuer = metadata
        .issuer
        .clone()
        .ok_or("the authorization server's metadata names no issuer, which the ID-JAG must be addressed to")?;
    let client_id = config.client_id.clone().unwrap_or_default();
    let idp_auth = match &idp.client_secret {
        Some(secret) => {
            EmaClientAuthentication::ClientSecretBasic(ClientSecret::new(secret.clone()))
        }
        None => EmaClientAuthentication::None,
    };
    let idp_server = EmaAuthorizationServer::new(&idp.issuer, &idp.token_endpoint, &idp.client_id)
        .with_client_authentication(idp_auth);
    let methods: Vec<&str> = metadata
        .additional_fields
        .get("token_endpoint_auth_methods_supported")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let as_auth = match (&config.client_key, &config.client_secret) {
        (Some(key), _) => {
            EmaClientAuthentication::JwtAssertion(Arc::new(KeySigner { key: key.clone() }))
        }
        // HTTP Basic unless the server lists only the request body (RFC
        // 6749 section 2.3.1: servers must support Basic).
        (None, Some(secret))
            if methods.contains(&"client_secret_post")
                && !methods.contains(&"client_secret_basic") =>
        {
            EmaClientAuthentication::ClientSecretPost(ClientSecret::new(secret.clone()))
        }
        (None, Some(secret)) => {
            EmaClientAuthentication::ClientSecretBasic(ClientSecret::new(secret.clone()))
        }
        (None, None) => EmaClientAuthentication::None,
    };
    let as_server = EmaAuthorizationServer::new(&issuer, &metadata.token_endpoint, &client_id)
        .with_client_authentication(as_auth);
    let http = default_oauth_http_client().map_err(|err| describe(&err))?;
    let exchange =
        EmaExchangeRequest::new_with_id_token(idp_server, as_server, server_url, &idp.id_token)
            .with_scopes(config.scopes.iter().cloned());
    let token = exchange
        .exchange(&http, &http)
        .await
        .map_err(|err| format!("cross-app access failed: {}", describe(&err)))?;
    let mut response = json!({
        "access_token": token.access_token.secret(),
        "token_type": "Bearer",
    });
    if let Some(lifetime) = token.expires_in {
        response["expires_in"] = lifetime.as_secs().into();
    }
    keep(manager, &client_id, response).await
}
