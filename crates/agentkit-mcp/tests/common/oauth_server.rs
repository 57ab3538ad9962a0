//! A minimal OAuth 2.1 authorization server on 127.0.0.1, for the OAuth
//! tests: RFC 8414 metadata, dynamic client registration (RFC 7591), the
//! authorization endpoint (which approves at once, as if the user had
//! clicked "allow", and redirects with a code), and the token endpoint
//! (authorization code with PKCE S256, and refresh tokens). Every access
//! token it issues becomes the one token the MCP server accepts, so a
//! token that was not issued, or was replaced by a refresh, is refused.

use super::rmcp_server::{Shared, json_response};
use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A code waiting to be exchanged.
struct Grant {
    challenge: String,
    redirect_uri: String,
    client_id: String,
}

/// What the test can inspect.
#[derive(Default)]
pub struct AuthState {
    clients: Mutex<Vec<String>>,
    codes: Mutex<HashMap<String, Grant>>,
    refresh_tokens: Mutex<Vec<String>>,
    issued: AtomicUsize,
    /// How many tokens came from a refresh grant.
    pub refreshes: AtomicUsize,
    /// How many codes were exchanged with a correct PKCE verifier.
    pub code_exchanges: AtomicUsize,
    /// How many token requests were refused (bad code, bad verifier).
    pub refused: AtomicUsize,
    /// The scope parameter of the last authorization request.
    pub last_scope: Mutex<Option<String>>,
    /// How many times its metadata was fetched (discovery).
    pub metadata_requests: AtomicUsize,
}

impl AuthState {
    /// How many clients registered themselves.
    pub fn registrations(&self) -> usize {
        self.clients.lock().unwrap().len()
    }

    /// Forgets every refresh token issued so far: the next refresh is
    /// refused, and the client has to authorize again.
    pub fn revoke_refresh_tokens(&self) {
        self.refresh_tokens.lock().unwrap().clear();
    }
}

/// The running authorization server; stopped on drop.
pub struct AuthServer {
    pub url: String,
    pub state: Arc<AuthState>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `application/x-www-form-urlencoded` (bodies and query strings).
fn form(text: &str) -> HashMap<String, String> {
    fn decode(part: &str) -> String {
        let bytes = part.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                    out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                    i += 2;
                }
                byte => out.push(byte),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    text.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key), decode(value))
        })
        .collect()
}

fn token_error(state: &AuthState, error: &str) -> Response {
    state.refused.fetch_add(1, Ordering::SeqCst);
    (
        StatusCode::BAD_REQUEST,
        json_response(json!({ "error": error })),
    )
        .into_response()
}

impl AuthServer {
    /// Starts the server on a free port of 127.0.0.1; the tokens it issues
    /// are what `resource` accepts.
    pub async fn start(resource: Arc<Shared>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(AuthState::default());

        let metadata = {
            let url = url.clone();
            let state = state.clone();
            move || {
                let url = url.clone();
                state.metadata_requests.fetch_add(1, Ordering::SeqCst);
                async move {
                    json_response(json!({
                        "issuer": url,
                        "authorization_endpoint": format!("{url}/authorize"),
                        "token_endpoint": format!("{url}/token"),
                        "registration_endpoint": format!("{url}/register"),
                        "response_types_supported": ["code"],
                        "grant_types_supported": ["authorization_code", "refresh_token"],
                        "code_challenge_methods_supported": ["S256"],
                        "token_endpoint_auth_methods_supported": ["none"],
                        "scopes_supported": ["tools:call"],
                    }))
                }
            }
        };
        let register = {
            let state = state.clone();
            move |body: Bytes| {
                let state = state.clone();
                async move {
                    let request: serde_json::Value =
                        serde_json::from_slice(&body).unwrap_or_default();
                    let client_id = format!("client-{}", state.clients.lock().unwrap().len() + 1);
                    state.clients.lock().unwrap().push(client_id.clone());
                    (
                        StatusCode::CREATED,
                        json_response(json!({
                            "client_id": client_id,
                            "client_name": request["client_name"],
                            "redirect_uris": request["redirect_uris"],
                            "grant_types": ["authorization_code", "refresh_token"],
                            "response_types": ["code"],
                            "token_endpoint_auth_method": "none",
                        })),
                    )
                        .into_response()
                }
            }
        };
        let authorize = {
            let state = state.clone();
            move |uri: Uri| {
                let state = state.clone();
                async move {
                    let query = form(uri.query().unwrap_or_default());
                    let known = state
                        .clients
                        .lock()
                        .unwrap()
                        .contains(&query.get("client_id").cloned().unwrap_or_default());
                    if !known
                        || query.get("response_type").map(String::as_str) != Some("code")
                        || query.get("code_challenge_method").map(String::as_str) != Some("S256")
                    {
                        return StatusCode::BAD_REQUEST.into_response();
                    }
                    *state.last_scope.lock().unwrap() = query.get("scope").cloned();
                    let code = format!("code-{}", state.codes.lock().unwrap().len() + 1);
                    let redirect_uri = query["redirect_uri"].clone();
                    state.codes.lock().unwrap().insert(
                        code.clone(),
                        Grant {
                            challenge: query["code_challenge"].clone(),
                            redirect_uri: redirect_uri.clone(),
                            client_id: query["client_id"].clone(),
                        },
                    );
                    let location = format!(
                        "{redirect_uri}?code={code}&state={}",
                        query.get("state").cloned().unwrap_or_default()
                    );
                    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
                }
            }
        };
        let token = {
            let state = state.clone();
            move |body: Bytes| {
                let state = state.clone();
                let resource = resource.clone();
                async move {
                    let params = form(&String::from_utf8_lossy(&body));
                    match params.get("grant_type").map(String::as_str) {
                        Some("authorization_code") => {
                            let grant = params
                                .get("code")
                                .and_then(|code| state.codes.lock().unwrap().remove(code));
                            let Some(grant) = grant else {
                                return token_error(&state, "invalid_grant");
                            };
                            let verifier = params.get("code_verifier").cloned().unwrap_or_default();
                            let computed =
                                URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
                            if computed != grant.challenge
                                || params.get("redirect_uri") != Some(&grant.redirect_uri)
                                || params.get("client_id") != Some(&grant.client_id)
                            {
                                return token_error(&state, "invalid_grant");
                            }
                            state.code_exchanges.fetch_add(1, Ordering::SeqCst);
                        }
                        Some("refresh_token") => {
                            let known = params.get("refresh_token").is_some_and(|token| {
                                state.refresh_tokens.lock().unwrap().contains(token)
                            });
                            if !known {
                                return token_error(&state, "invalid_grant");
                            }
                            state.refreshes.fetch_add(1, Ordering::SeqCst);
                        }
                        _ => return token_error(&state, "unsupported_grant_type"),
                    }
                    let n = state.issued.fetch_add(1, Ordering::SeqCst) + 1;
                    let access = format!("access-{n}");
                    let refresh = format!("refresh-{n}");
                    state.refresh_tokens.lock().unwrap().push(refresh.clone());
                    resource.set_token(&access);
                    json_response(json!({
                        "access_token": access,
                        "token_type": "Bearer",
                        "expires_in": 3600,
                        "refresh_token": refresh,
                        "scope": "tools:call",
                    }))
                }
            }
        };
        let app = Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                axum::routing::get(metadata),
            )
            .route("/register", axum::routing::post(register))
            .route("/authorize", axum::routing::get(authorize))
            .route("/token", axum::routing::post(token));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { url, state, task }
    }
}

/// What a browser does with the authorization URL: one GET, and the
/// `Location` it is redirected to (the host's redirect URI, with the code).
pub async fn browse(url: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").expect("a loopback http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(
        response.starts_with("HTTP/1.1 302"),
        "the authorization server redirects: {response}"
    );
    response
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("location")
                .then(|| value.trim().to_owned())
        })
        .expect("a Location header")
}
