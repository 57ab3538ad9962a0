//! What a server offers: tools, resources and prompts, fetched page by page.
//!
//! Tools become agentkit tools (see `catalog.rs`); resources and prompts are
//! kept as plain descriptions the host can show or use. Listing resources
//! and prompts is best effort: a server that advertises them but fails to
//! list them still has its tools connected, with a warning in the log.

use crate::convert::RemoteTool;
use rmcp::RoleClient;
use rmcp::model::PaginatedRequestParams;
use rmcp::service::{Peer, ServiceError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A resource a server offers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpResource {
    /// The resource's URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// What it is, when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type, when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// A family of resources a server offers, named by a URI template
/// (RFC 6570: `file:///{path}`); fill it in and
/// [`read_resource`](crate::McpServerManager::read_resource) the URI.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// What it is, when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of what it names, when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// A prompt template a server offers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpPrompt {
    /// The prompt's name.
    pub name: String,
    /// What it is for, when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default)]
    pub arguments: Vec<McpPromptArgument>,
}

/// One argument of an [`McpPrompt`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpPromptArgument {
    /// The argument's name.
    pub name: String,
    /// What it means, when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the prompt needs it.
    #[serde(default)]
    pub required: bool,
}

/// Everything discovered on one connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct Discovery {
    pub(crate) tools: Vec<RemoteTool>,
    pub(crate) resources: Vec<McpResource>,
    pub(crate) prompts: Vec<McpPrompt>,
}

/// All pages of `tools/list`.
pub(crate) async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<RemoteTool>, ServiceError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    loop {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await?;
        tools.extend(
            page.tools
                .iter()
                .filter_map(|tool| serde_json::to_value(tool).ok())
                .filter_map(RemoteTool::from_json),
        );
        cursor = page.next_cursor;
        if cursor.is_none() {
            return Ok(tools);
        }
    }
}

/// Tools (required), then resources and prompts when the server advertises
/// them (best effort).
pub(crate) async fn discover(
    server: &str,
    peer: &Peer<RoleClient>,
) -> Result<Discovery, ServiceError> {
    let capabilities = peer
        .peer_info()
        .and_then(|info| serde_json::to_value(&info.capabilities).ok())
        .unwrap_or(Value::Null);
    let offers = |key: &str| capabilities.get(key).is_some_and(|v| !v.is_null());
    let tools = if offers("tools") {
        list_tools(peer).await?
    } else {
        Vec::new()
    };
    let resources = if offers("resources") {
        peer.list_all_resources()
            .await
            .map(|list| list.iter().filter_map(convert_json).collect())
            .unwrap_or_else(|err| {
                tracing::warn!(server, %err, "listing resources failed");
                Vec::new()
            })
    } else {
        Vec::new()
    };
    let prompts = if offers("prompts") {
        peer.list_all_prompts()
            .await
            .map(|list| list.iter().filter_map(convert_json).collect())
            .unwrap_or_else(|err| {
                tracing::warn!(server, %err, "listing prompts failed");
                Vec::new()
            })
    } else {
        Vec::new()
    };
    Ok(Discovery {
        tools,
        resources,
        prompts,
    })
}

/// A JSON list of MCP objects as ours, skipping entries that do not fit.
pub(crate) fn from_json_list<U: for<'de> Deserialize<'de>>(list: Value) -> Vec<U> {
    match list {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|item| serde_json::from_value(item).ok())
            .collect(),
        _ => Vec::new(),
    }
}

/// rmcp's type to ours through MCP's JSON; see `convert.rs` for why.
fn convert_json<T: Serialize, U: for<'de> Deserialize<'de>>(value: &T) -> Option<U> {
    let json = serde_json::to_value(value).ok()?;
    serde_json::from_value(json).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resources_and_prompts_read_mcp_json() {
        let resource: McpResource = serde_json::from_value(json!({
            "uri": "demo://resource/1", "name": "one", "mimeType": "text/plain", "size": 3
        }))
        .unwrap();
        assert_eq!(resource.mime_type.as_deref(), Some("text/plain"));
        let prompt: McpPrompt = serde_json::from_value(json!({
            "name": "greet", "arguments": [{ "name": "who", "required": true }]
        }))
        .unwrap();
        assert!(prompt.arguments[0].required);
    }
}
