//! An MCP server written with rmcp, served over streamable HTTP on
//! 127.0.0.1 behind a bearer-token check, for the auth, list_changed and
//! cancellation tests. Its state is shared with the test, so the test can
//! change the accepted token and see which cancellations arrived.

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What the test and the server share.
#[derive(Default)]
pub struct Shared {
    /// The token the server accepts.
    pub token: Mutex<String>,
    /// Tools added at run time with `add_tool`.
    pub extra_tools: Mutex<Vec<String>>,
    /// How many `hang` calls were cancelled by the client.
    pub cancellations: AtomicUsize,
    /// Answer 401 without a `WWW-Authenticate` header (a sloppy server).
    pub omit_challenge: AtomicBool,
    /// The authorization server named by the protected-resource metadata
    /// (`/.well-known/oauth-protected-resource`); 404 while `None`.
    pub authorization_server: Mutex<Option<String>>,
}

impl Shared {
    pub fn cancellations(&self) -> usize {
        self.cancellations.load(Ordering::SeqCst)
    }

    pub fn set_token(&self, token: &str) {
        *self.token.lock().unwrap() = token.to_owned();
    }
}

#[derive(Clone)]
struct TestServer {
    shared: Arc<Shared>,
}

fn schema(properties: serde_json::Value) -> Arc<serde_json::Map<String, serde_json::Value>> {
    let value = json!({ "type": "object", "properties": properties });
    Arc::new(value.as_object().cloned().unwrap())
}

fn text(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text.into())]).into()
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let name_arg = || schema(json!({ "name": { "type": "string" } }));
        let mut tools = vec![
            Tool::new(
                "whoami",
                "Says whether the caller is authorized.",
                schema(json!({})),
            ),
            Tool::new("hang", "Never answers until cancelled.", schema(json!({}))),
            Tool::new("add_tool", "Adds a tool.", name_arg()),
            Tool::new("remove_tool", "Removes a tool.", name_arg()),
        ];
        for name in self.shared.extra_tools.lock().unwrap().iter() {
            tools.push(Tool::new(
                name.clone(),
                "Added at run time.",
                schema(json!({})),
            ));
        }
        // Pages of three, so every listing exercises the client's paging.
        let start: usize = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let end = (start + TOOLS_PER_PAGE).min(tools.len());
        let mut page = ListToolsResult::with_all_items(tools[start.min(end)..end].to_vec());
        if end < tools.len() {
            page.next_cursor = Some(end.to_string());
        }
        Ok(page)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arg = |key: &str| {
            request
                .arguments
                .as_ref()
                .and_then(|args| args.get(key))
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        match request.name.as_ref() {
            "whoami" => Ok(text("authorized")),
            "hang" => {
                context.ct.cancelled().await;
                self.shared.cancellations.fetch_add(1, Ordering::SeqCst);
                Ok(text("cancelled"))
            }
            "add_tool" | "remove_tool" => {
                let name = arg("name");
                {
                    let mut extra = self.shared.extra_tools.lock().unwrap();
                    if request.name == "add_tool" {
                        extra.push(name.clone());
                    } else {
                        extra.retain(|n| *n != name);
                    }
                }
                let _ = context.peer.notify_tool_list_changed().await;
                Ok(text(format!("{} {name}", request.name)))
            }
            other
                if self
                    .shared
                    .extra_tools
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|n| n == other) =>
            {
                Ok(text(format!("extra {other}")))
            }
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }
}

/// The server lists its tools in pages of this size.
pub const TOOLS_PER_PAGE: usize = 3;

/// The challenge the server sends with every 401.
pub fn challenge(port: u16) -> String {
    format!(
        "Bearer realm=\"agentkit-test\", error=\"invalid_token\", scope=\"tools:call\", \
         resource_metadata=\"http://127.0.0.1:{port}/.well-known/oauth-protected-resource\""
    )
}

/// A token the server knows but that lacks a scope: answered with 403.
pub const READ_ONLY_TOKEN: &str = "read-only-token";

/// The challenge sent with that 403.
pub const SCOPE_CHALLENGE: &str = "Bearer error=\"insufficient_scope\", scope=\"tools:call admin\", error_description=\"needs admin\"";

#[derive(Clone)]
struct Gate {
    shared: Arc<Shared>,
    port: u16,
}

async fn require_bearer(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    let expected = format!("Bearer {}", gate.shared.token.lock().unwrap());
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if presented == Some(expected.as_str()) {
        next.run(request).await
    } else if presented == Some(&format!("Bearer {READ_ONLY_TOKEN}")) {
        (
            StatusCode::FORBIDDEN,
            [(header::WWW_AUTHENTICATE, SCOPE_CHALLENGE)],
        )
            .into_response()
    } else if gate.shared.omit_challenge.load(Ordering::SeqCst) {
        StatusCode::UNAUTHORIZED.into_response()
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge(gate.port))],
        )
            .into_response()
    }
}

/// Calls the server's `whoami` tool through the manager (server `secure`).
pub async fn whoami(
    manager: &agentkit_mcp::McpServerManager,
    call_id: &str,
) -> Result<agentkit_tools_core::ToolResult, agentkit_tools_core::ToolError> {
    manager
        .call_tool(
            "secure",
            "whoami",
            json!({}),
            agentkit_tools_core::ToolContext::new(call_id),
        )
        .await
}

/// A JSON body with its content type (axum's `json` feature is off).
pub fn json_response(value: serde_json::Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// The running server; stopped on drop.
pub struct HttpServer {
    pub url: String,
    pub port: u16,
    pub shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl HttpServer {
    /// A manager with this server registered as `secure` (no token yet).
    pub fn manager(&self) -> agentkit_mcp::McpServerManager {
        let manager = agentkit_mcp::McpServerManager::new();
        manager
            .register(
                agentkit_mcp::McpServerConfig::http("secure", &self.url)
                    .connect_timeout(std::time::Duration::from_secs(10)),
            )
            .unwrap();
        manager
    }

    /// Starts the server on a free port of 127.0.0.1, accepting `token`.
    pub async fn start(token: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        shared.set_token(token);
        let for_sessions = shared.clone();
        let service = StreamableHttpService::new(
            move || {
                Ok(TestServer {
                    shared: for_sessions.clone(),
                })
            },
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let gate = Gate {
            shared: shared.clone(),
            port,
        };
        let metadata_shared = shared.clone();
        let resource = format!("http://127.0.0.1:{port}/mcp");
        let app = Router::new()
            .nest_service("/mcp", service)
            .layer(from_fn_with_state(gate, require_bearer))
            // RFC 9728 protected-resource metadata, outside the bearer gate.
            .route(
                "/.well-known/oauth-protected-resource",
                axum::routing::get(move || {
                    let server = metadata_shared.authorization_server.lock().unwrap().clone();
                    let resource = resource.clone();
                    async move {
                        match server {
                            Some(server) => json_response(json!({
                                "resource": resource,
                                "authorization_servers": [server],
                                "bearer_methods_supported": ["header"],
                            })),
                            None => StatusCode::NOT_FOUND.into_response(),
                        }
                    }
                }),
            );
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url: format!("http://127.0.0.1:{port}/mcp"),
            port,
            shared,
            task,
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
