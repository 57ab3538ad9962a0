//! The client the MCP conformance suite drives: `mcp-conformance <url>`.
//!
//! A host of agentkit-mcp as a user would write it, with nothing but the
//! crate's public API, so the suite judges the library, not a test
//! harness. Each scenario's mock server is an MCP endpoint (sometimes behind
//! OAuth); the client connects, authorizes when asked (playing the user's
//! browser), and calls every tool the server lists. It exits non-zero when
//! anything fails, with the reason on stderr.

use agentkit_mcp::{
    AuthRequest, AuthResolution, McpAuthResponder, McpCredentials, McpServerConfig,
    McpServerManager, OAuthConfig,
};
use agentkit_tools_core::ToolContext;
use serde_json::{Value, json};
use std::process::ExitCode;
use std::sync::Arc;

/// Where the mock authorization server sends the "browser" back to; the
/// client never listens there, it reads the redirect's `Location`.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

const SERVER: &str = "conformance";

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
    let config = McpServerConfig::http(SERVER, url).oauth(OAuthConfig::new(REDIRECT_URI));
    manager.register(config).map_err(|e| e.to_string())?;
    manager.set_auth_responder(Arc::new(Browser::new()?));
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
