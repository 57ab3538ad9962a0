//! Requests on a server's connection: tool calls for the model, resource
//! reads and prompt fetches for the host.
//!
//! A request that finds the session already closed reconnects and is sent
//! once more; one that was in flight when the session broke is not, since
//! the server may have acted on it. Tool call failures become
//! `ToolError`s, worded for the model; the host's requests fail with
//! `McpError`s.

use super::Inner;
use crate::connection::{CallError, Connection};
use crate::convert;
use crate::error::McpError;
use agentkit_core::ToolCallId;
use agentkit_tools_core::{AuthOperation, ToolContext, ToolError, ToolResult};
use serde_json::Value;
use std::sync::Arc;
use tracing::Instrument;

impl Inner {
    /// A tool call: connect if needed, call with deadline and cancellation,
    /// reconnect once if the session turned out closed, map the outcome.
    pub(crate) async fn call_tool(
        &self,
        server_name: &str,
        tool: &str,
        input: Value,
        call_id: Option<ToolCallId>,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let span = tracing::info_span!(
            "mcp.call_tool",
            server = server_name,
            tool,
            call_id = call_id
                .as_ref()
                .map(|id| id.to_string())
                .unwrap_or_default()
        );
        async move {
            let server = self
                .server(server_name)
                .map_err(McpError::into_tool_error)?;
            let arguments = match input {
                Value::Object(map) => Some(map),
                Value::Null => None,
                other => {
                    return Err(ToolError::InvalidInput(format!(
                        "MCP tool arguments must be a JSON object, got {other}"
                    )));
                }
            };
            if ctx.cancellation.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            let operation = AuthOperation::InvokeTool {
                tool: tool.to_owned(),
                call_id,
            };
            let deadline = server.config.call_timeout;
            let mut retried = false;
            // The responder is asked at most once per call, at connect or
            // after a 401 / 403 in the call.
            let mut asked = false;
            loop {
                // Reconnecting can take the whole connect timeout; the turn
                // may be cancelled meanwhile.
                let connection = tokio::select! {
                    connection = self.connection_asking(&server, operation.clone(), &mut asked) => {
                        connection.map_err(McpError::into_tool_error)?
                    }
                    _ = ctx.cancellation.cancelled() => return Err(ToolError::Cancelled),
                };
                let outcome = connection
                    .call_tool(tool, arguments.clone(), deadline, &ctx)
                    .await;
                return match outcome {
                    Ok(result) => Ok(convert::tool_result(server_name, tool, &result)),
                    Err(CallError::NotSent(why)) => {
                        self.discard(&server, &connection).await;
                        if retried {
                            Err(ToolError::Unavailable(format!(
                                "MCP server {server_name}: {why}, and reconnecting did not help"
                            )))
                        } else {
                            retried = true;
                            continue;
                        }
                    }
                    Err(CallError::Lost) => {
                        // Not retried: the server may have run the call.
                        self.discard(&server, &connection).await;
                        Err(ToolError::Unavailable(format!(
                            "MCP server {server_name} closed the session during the call; \
                             it will be reconnected on the next call"
                        )))
                    }
                    Err(CallError::Broken(why)) => {
                        // Not retried either: an HTTP request may have
                        // reached the server before the exchange broke.
                        self.discard(&server, &connection).await;
                        Err(ToolError::Unavailable(format!(
                            "MCP server {server_name}: {why}; \
                             it will be reconnected on the next call"
                        )))
                    }
                    Err(CallError::Timeout(after)) => {
                        tracing::warn!(?after, "MCP tool call hit its deadline; cancelled");
                        Err(ToolError::Timeout(after))
                    }
                    Err(CallError::Cancelled) => Err(ToolError::Cancelled),
                    Err(CallError::Auth(challenge)) => {
                        self.discard(&server, &connection).await;
                        let request =
                            crate::auth::auth_request(server_name, operation.clone(), &challenge);
                        if !asked {
                            asked = true;
                            if self.ask_responder(&server, &request).await {
                                continue;
                            }
                        }
                        Err(self.surface_auth(&server, request).await.into_tool_error())
                    }
                    Err(CallError::Rejected { message, .. }) => Err(ToolError::ExecutionFailed(
                        format!("MCP server {server_name} rejected the call: {message}"),
                    )),
                    Err(CallError::Protocol(message)) => Err(ToolError::ExecutionFailed(format!(
                        "MCP server {server_name}: {message}"
                    ))),
                };
            }
        }
        .instrument(span)
        .await
    }

    /// A request other than a tool call (resources, prompts): connect if
    /// needed, run it within the call timeout, reconnect once if the
    /// session turned out closed. Failures are manager errors, since the
    /// host, not the model, asked.
    pub(super) async fn request<F, Fut>(
        &self,
        server_name: &str,
        operation: AuthOperation,
        run: F,
    ) -> Result<Value, McpError>
    where
        F: Fn(Arc<Connection>, std::time::Duration) -> Fut,
        Fut: std::future::Future<Output = Result<Value, CallError>>,
    {
        let server = self.server(server_name)?;
        let limit = server.config.call_timeout;
        let failed = |message: String| McpError::Protocol {
            server: server_name.to_owned(),
            message,
        };
        let mut retried = false;
        let mut asked = false;
        loop {
            let connection = self
                .connection_asking(&server, operation.clone(), &mut asked)
                .await?;
            return match run(connection.clone(), limit).await {
                Ok(value) => Ok(value),
                Err(CallError::NotSent(_)) if !retried => {
                    self.discard(&server, &connection).await;
                    retried = true;
                    continue;
                }
                Err(CallError::Auth(challenge)) => {
                    self.discard(&server, &connection).await;
                    let request =
                        crate::auth::auth_request(server_name, operation.clone(), &challenge);
                    if !asked {
                        asked = true;
                        if self.ask_responder(&server, &request).await {
                            continue;
                        }
                    }
                    Err(self.surface_auth(&server, request).await)
                }
                Err(err @ (CallError::NotSent(_) | CallError::Lost | CallError::Broken(_))) => {
                    self.discard(&server, &connection).await;
                    Err(failed(err.to_string()))
                }
                Err(CallError::Rejected { code, message }) => Err(McpError::Rejected {
                    server: server_name.to_owned(),
                    code,
                    message,
                }),
                Err(
                    err @ (CallError::Timeout(_) | CallError::Cancelled | CallError::Protocol(_)),
                ) => Err(failed(err.to_string())),
            };
        }
    }
}
