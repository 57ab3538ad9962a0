//! One MCP tool as an agentkit [`Tool`].
//!
//! The tool holds only a weak link to the manager: the manager's catalog
//! holds the tools, and a strong link back would keep every server process
//! alive forever. A tool outliving its manager reports itself unavailable.

use crate::manager::Inner;
use agentkit_tools_core::{
    McpOperation, PermissionRequest, Tool, ToolContext, ToolError, ToolRequest, ToolResult,
    ToolSpec,
};
use serde_json::Value;
use std::sync::{Arc, Weak};

/// Where a tool's MCP annotations are kept, in its spec's and its
/// permission requests' metadata.
const ANNOTATIONS: &str = "mcp.annotations";

/// A server's tool under its exposed name.
pub(crate) struct McpTool {
    pub(crate) spec: Arc<ToolSpec>,
    pub(crate) server: String,
    pub(crate) tool: String,
    pub(crate) manager: Weak<Inner>,
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    /// Every call asks for `mcp.invoke_tool` on this server and tool, so
    /// MCP server policies (and any other checker) decide like for any tool.
    /// The server's annotations (`readOnlyHint`, `destructiveHint`,
    /// `openWorldHint`, …) travel along under `mcp.annotations`, for a
    /// policy that follows them (`McpServerPolicy::follow_tool_hints`).
    fn proposed_requests(&self, _input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        let mut request = PermissionRequest::mcp(McpOperation::InvokeTool {
            server: self.server.clone(),
            tool: self.tool.clone(),
        });
        if let Some(hints) = self.spec.metadata.get(ANNOTATIONS) {
            request.metadata.insert(ANNOTATIONS.into(), hints.clone());
        }
        Ok(vec![request])
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let Some(manager) = self.manager.upgrade() else {
            return Err(ToolError::Unavailable(format!(
                "the MCP manager serving {} was dropped",
                self.server
            )));
        };
        manager
            .call_tool(
                &self.server,
                &self.tool,
                Arc::unwrap_or_clone(request.input),
                Some(request.call_id),
                ctx,
            )
            .await
    }
}
