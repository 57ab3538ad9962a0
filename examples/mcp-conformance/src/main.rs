//! The client the MCP conformance suite drives: `mcp-conformance <url>`.
//!
//! A host of agentkit-mcp as a user would write it, with nothing but the
//! crate's public API, so the suite judges the library, not a test
//! harness. Each scenario's mock server is an MCP endpoint (sometimes behind
//! OAuth); the client connects, authorizes when asked (playing the user's
//! browser), and calls every tool the server lists. It exits non-zero when
//! anything fails, with the reason on stderr.

use agentkit_mcp::{
    AuthRequest, AuthResolution, ClientKey, ClientKeyError, ElicitationHandler, ElicitationKind,
    ElicitationRequest, ElicitationResponse, EnterpriseIdp, JwsAlgorithm, McpAuthResponder,
    McpCredentials, McpServerConfig, McpServerManager, OAuthConfig,
};
use agentkit_tools_core::ToolContext;
use serde_json::{Value, json};
use std::process::ExitCode;
use std::sync::Arc;

/// Where the mock authorization server sends the "browser" back to; the
/// client never listens there, it reads the redirect's `Location`.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

const SERVER: &str = "conformance";

/// The client's metadata document (CIMD), which the suite's authorization
/// server accepts as a client id without fetching it.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

#[tokio::main]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: mcp-conformance <server-url>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&url, &scenario).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mcp-conformance ({scenario}): {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(url: &str, scenario: &str) -> Result<(), String> {
    let manager = McpServerManager::new();
    let config = McpServerConfig::http(SERVER, url).oauth(oauth_config(scenario)?);
    manager.register(config).map_err(|e| e.to_string())?;
    manager.set_auth_responder(Arc::new(Browser::new()?));
    manager.set_elicitation_handler(Arc::new(AcceptDefaults));
    let status = manager.connect(SERVER).await.map_err(|e| e.to_string())?;
    eprintln!(
        "connected at protocol {:?}; tools {:?}",
        status.protocol_version, status.tools
    );
    for tool in &status.tools {
        let arguments = arguments_for(scenario, tool);
        let result = manager
            .call_tool(
                SERVER,
                tool,
                arguments,
                ToolContext::new(format!("call-{tool}")),
            )
            .await
            .map_err(|e| format!("calling {tool}: {e}"))?;
        eprintln!("{tool}: {}", result.output.to_text());
    }
    manager.disconnect_all().await;
    Ok(())
}

/// The client's OAuth identity: a pre-registered one when the suite hands
/// one over in `MCP_CONFORMANCE_CONTEXT` (a machine client for the
/// client-credentials scenarios, with a secret or a private key; a
/// cross-app access client with the identity provider's ID token), else a public client with a metadata
/// document URL, registering dynamically where that is not supported.
fn oauth_config(scenario: &str) -> Result<OAuthConfig, String> {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    let field = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let (client_id, secret) = (field("client_id"), field("client_secret"));
    // A machine client with a private key (`private_key_jwt`).
    if let (Some(id), Some(pem)) = (&client_id, field("private_key_pem")) {
        let algorithm: JwsAlgorithm = field("signing_algorithm")
            .as_deref()
            .unwrap_or("ES256")
            .parse()
            .map_err(|e: ClientKeyError| e.to_string())?;
        let key = ClientKey::from_pem(algorithm, &pem).map_err(|e| e.to_string())?;
        return Ok(OAuthConfig::client_credentials_jwt(id, key));
    }
    // Cross-app access: the enterprise identity provider's ID token.
    if let (Some(id), Some(secret), Some(id_token)) = (&client_id, &secret, field("idp_id_token")) {
        let idp = EnterpriseIdp::new(
            field("idp_issuer").unwrap_or_default(),
            field("idp_token_endpoint").unwrap_or_default(),
            field("idp_client_id").unwrap_or_default(),
            id_token,
        );
        return Ok(OAuthConfig::cross_app_access(id, secret, idp));
    }
    if scenario.starts_with("auth/client-credentials")
        && let (Some(id), Some(secret)) = (&client_id, &secret)
    {
        return Ok(OAuthConfig::client_credentials(id, secret));
    }
    let mut config = OAuthConfig::new(REDIRECT_URI).client_metadata_url(CLIENT_METADATA_URL);
    if let Some(id) = client_id {
        config = config.client_id(id);
    }
    if let Some(secret) = secret {
        config = config.client_secret(secret);
    }
    Ok(config)
}

/// The arguments a tool of the suite expects.
fn arguments_for(_scenario: &str, tool: &str) -> Value {
    match tool {
        "add_numbers" => json!({ "a": 5, "b": 3 }),
        _ => json!({}),
    }
}

/// The user's browser: opens the authorization URL, and since the mock
/// authorization server approves at once, returns where it redirects to.
struct Browser {
    http: reqwest::Client,
}

impl Browser {
    fn new() -> Result<Self, String> {
        // reqwest is built without a rustls provider (no aws-lc-sys).
        agentkit_http::install_tls_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self { http })
    }

    async fn visit(&self, url: &str) -> Result<String, String> {
        let response = self.http.get(url).send().await.map_err(|e| e.to_string())?;
        response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| format!("no redirect from {url} ({})", response.status()))
    }
}

#[async_trait::async_trait]
impl McpAuthResponder for Browser {
    async fn respond(&self, request: &AuthRequest) -> Option<AuthResolution> {
        let url = request.metadata.get("mcp.authorization_url")?.as_str()?;
        match self.visit(url).await {
            Ok(redirect) => Some(AuthResolution::provided(
                request.clone(),
                McpCredentials::oauth_redirect(redirect),
            )),
            Err(err) => {
                eprintln!("authorization failed: {err}");
                None
            }
        }
    }
}

/// The user: accepts every form as offered (the manager fills in the
/// schema's defaults) and every URL.
struct AcceptDefaults;

#[async_trait::async_trait]
impl ElicitationHandler for AcceptDefaults {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationResponse {
        match request.kind {
            ElicitationKind::Form { .. } | ElicitationKind::Url { .. } => {
                ElicitationResponse::Accept(Default::default())
            }
            _ => ElicitationResponse::Decline,
        }
    }
}
