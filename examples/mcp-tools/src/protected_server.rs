//! A tiny MCP server written with rmcp, served over streamable HTTP on
//! 127.0.0.1 behind a bearer token: a stand-in for a company's internal
//! server that needs credentials.

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
use std::sync::Arc;

#[derive(Clone)]
struct Tickets;

impl ServerHandler for Tickets {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = serde_json::json!({ "type": "object", "properties": {} });
        let schema = Arc::new(schema.as_object().cloned().unwrap_or_default());
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "open_tickets",
            "Lists the open support tickets.",
            schema,
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match request.name.as_ref() {
            "open_tickets" => Ok(CallToolResult::success(vec![ContentBlock::text(
                "#101 login fails on Safari; #102 export times out",
            )])
            .into()),
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }
}

async fn require_bearer(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if presented == Some(format!("Bearer {token}").as_str()) {
        next.run(request).await
    } else {
        let challenge = "Bearer realm=\"tickets\", error=\"invalid_token\", scope=\"tickets:read\"";
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge)],
        )
            .into_response()
    }
}

/// Serves the ticket server on a free loopback port; returns its URL and the
/// task serving it (abort it to stop the server).
pub async fn start(token: &str) -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let service = StreamableHttpService::new(
        || Ok(Tickets),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = Router::new()
        .nest_service("/mcp", service)
        .layer(from_fn_with_state(Arc::<str>::from(token), require_bearer));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((url, task))
}
