//! Authentication a tool needs before it can run.
//!
//! Auth is not a loop interrupt: a tool that needs credentials fails with
//! [`ToolError::AuthRequired`](crate::ToolError::AuthRequired), the loop
//! records that in the transcript and carries on, and the host resolves the
//! request out of band (for MCP, with `McpServerManager::resolve_auth`). The
//! types live here because `ToolError` must carry them.

use agentkit_core::{MetadataMap, ToolCallId};
use serde::{Deserialize, Serialize};

/// What was being done when credentials were asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuthOperation {
    /// Connecting to a server.
    Connect,
    /// Calling a tool.
    InvokeTool {
        /// The tool's name on the server.
        tool: String,
        /// The tool call, when there is one.
        call_id: Option<ToolCallId>,
    },
    /// Reading a resource.
    ReadResource {
        /// The resource URI.
        uri: String,
    },
    /// Fetching a prompt.
    GetPrompt {
        /// The prompt's name.
        name: String,
    },
    /// Anything else.
    Other {
        /// A short description.
        description: String,
    },
}

/// A request for credentials.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthRequest {
    /// Unique per request; a resolution names it.
    pub id: String,
    /// Who asks: the MCP server's or provider's name.
    pub provider: String,
    /// What was being done.
    pub operation: AuthOperation,
    /// The `WWW-Authenticate` challenge, verbatim, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge: Option<String>,
    /// Scopes the server says it needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Extra data (resource metadata URL, error description, ...).
    #[serde(default, skip_serializing_if = "MetadataMap::is_empty")]
    pub metadata: MetadataMap,
}
