//! Resources and prompts offered to the model as tools (opt-in).
//!
//! MCP meant resources and prompts for the host: the application decides
//! what to read and which prompt to use. Some hosts would rather let the
//! model decide (Goose and Codex do), so with
//! [`McpServerManager::set_resource_tools`](crate::McpServerManager::set_resource_tools)
//! each server that offers resources gets a `read_resource` tool and each
//! that offers prompts a `get_prompt` tool, named like its own tools
//! (`mcp_<server>_read_resource`). Their descriptions list what the server
//! offers, so the model knows what to ask for. Calls go through the same
//! path as the host's own requests, and propose the `mcp.read_resource` /
//! `mcp.get_prompt` permission requests, so policies can tell them apart
//! from tool calls.

use crate::convert::RemoteTool;
use crate::discovery::{McpPrompt, McpResource};
use crate::manager::{Inner, McpServerManager};
use agentkit_core::{ItemKind, Part, ToolOutput};
use agentkit_tools_core::{
    McpOperation, PermissionRequest, Tool, ToolContext, ToolError, ToolRequest, ToolResult,
    ToolSpec,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

/// The most entries a tool description lists.
const LISTED: usize = 30;

/// Which host request a tool makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HostRequest {
    /// `resources/read`.
    ReadResource,
    /// `prompts/get`.
    GetPrompt,
}

impl HostRequest {
    /// The tool's own name (before `mcp_<server>_`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            HostRequest::ReadResource => "read_resource",
            HostRequest::GetPrompt => "get_prompt",
        }
    }
}

/// The host tools of one server: `read_resource` when it offers resources,
/// `get_prompt` when it offers prompts.
pub(crate) fn host_tools(
    server: &str,
    resources: &[McpResource],
    prompts: &[McpPrompt],
) -> Vec<RemoteTool> {
    let mut tools = Vec::new();
    if !resources.is_empty() {
        let listed: Vec<String> = resources
            .iter()
            .take(LISTED)
            .map(|r| match &r.description {
                Some(description) => format!("{} ({}): {description}", r.uri, r.name),
                None => format!("{} ({})", r.uri, r.name),
            })
            .collect();
        let definition = json!({
            "name": HostRequest::ReadResource.name(),
            "description": format!(
                "Reads a resource of the MCP server {server} by its URI. Known resources:\n{}",
                listed.join("\n")
            ),
            "inputSchema": {
                "type": "object",
                "properties": { "uri": { "type": "string", "description": "The resource's URI." } },
                "required": ["uri"]
            },
            "annotations": { "readOnlyHint": true, "openWorldHint": false }
        });
        tools.push(RemoteTool::host(definition, HostRequest::ReadResource));
    }
    if !prompts.is_empty() {
        let listed: Vec<String> = prompts
            .iter()
            .take(LISTED)
            .map(|p| {
                let arguments: Vec<String> = p
                    .arguments
                    .iter()
                    .map(|a| format!("{}{}", a.name, if a.required { "" } else { "?" }))
                    .collect();
                let description = p.description.as_deref().unwrap_or_default();
                format!("{}({}): {description}", p.name, arguments.join(", "))
            })
            .collect();
        let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
        let definition = json!({
            "name": HostRequest::GetPrompt.name(),
            "description": format!(
                "Fetches a prompt of the MCP server {server}, filled in with string arguments \
                 (`?` marks optional ones). Prompts:\n{}",
                listed.join("\n")
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": { "type": "string", "enum": names },
                    "arguments": { "type": "object", "additionalProperties": { "type": "string" } }
                },
                "required": ["name"]
            },
            "annotations": { "readOnlyHint": true, "openWorldHint": false }
        });
        tools.push(RemoteTool::host(definition, HostRequest::GetPrompt));
    }
    tools
}

/// A host request as a tool.
pub(crate) struct HostTool {
    pub(crate) spec: Arc<ToolSpec>,
    pub(crate) server: String,
    pub(crate) request: HostRequest,
    pub(crate) manager: Weak<Inner>,
}

impl HostTool {
    fn text(input: &Value, key: &str) -> Result<String, ToolError> {
        input
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| ToolError::InvalidInput(format!("`{key}` must be a string")))
    }
}

#[async_trait::async_trait]
impl Tool for HostTool {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    fn proposed_requests(&self, input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        let server = self.server.clone();
        let operation = match self.request {
            HostRequest::ReadResource => McpOperation::ReadResource {
                server,
                uri: Self::text(input, "uri")?,
            },
            HostRequest::GetPrompt => McpOperation::GetPrompt {
                server,
                name: Self::text(input, "name")?,
            },
        };
        Ok(vec![PermissionRequest::mcp(operation)])
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let Some(inner) = self.manager.upgrade() else {
            return Err(ToolError::Unavailable(format!(
                "the MCP manager serving {} was dropped",
                self.server
            )));
        };
        let manager = McpServerManager::from_inner(inner);
        let input = &request.input;
        let parts = match self.request {
            HostRequest::ReadResource => {
                let uri = Self::text(input, "uri")?;
                manager.read_resource(&self.server, &uri).await?
            }
            HostRequest::GetPrompt => {
                let name = Self::text(input, "name")?;
                let arguments: BTreeMap<String, String> = match input.get("arguments") {
                    None | Some(Value::Null) => BTreeMap::new(),
                    Some(value) => serde_json::from_value(value.clone()).map_err(|_| {
                        ToolError::InvalidInput("`arguments` must map names to strings".into())
                    })?,
                };
                let items = manager.get_prompt(&self.server, &name, arguments).await?;
                // Each message under a line naming its role.
                items
                    .into_iter()
                    .flat_map(|item| {
                        let role = match item.kind {
                            ItemKind::Assistant => "assistant",
                            _ => "user",
                        };
                        std::iter::once(Part::text(format!("[{role}]"))).chain(item.parts)
                    })
                    .collect()
            }
        };
        let mut result = ToolResult::new(ToolOutput::Parts(parts));
        result
            .metadata
            .insert("mcp.server".into(), self.server.clone().into());
        result
            .metadata
            .insert("mcp.tool".into(), self.request.name().into());
        Ok(result)
    }
}
