//! MCP servers as agentkit tools.
//!
//! An [`McpServerManager`] registers MCP servers by name (a child process
//! over stdio, or a streamable HTTP endpoint), connects them with a timeout
//! covering the handshake and discovery, and exposes every server's tools
//! as one [`ToolSource`](agentkit_tools_core::ToolSource) whose tools are
//! named `mcp_<server>_<tool>`. Around each call it keeps the promises an
//! agent loop relies on:
//!
//! - every call has a deadline, and the server is sent
//!   `notifications/cancelled` when the deadline passes, the turn is
//!   cancelled, or the caller drops the call (a task manager's timeout, an
//!   aborted task, a dropped `next()`);
//! - a server that crashed is reconnected on the next call;
//! - `notifications/tools/list_changed` updates the catalog (a new
//!   revision, and a [`ToolCatalogEvent`](agentkit_tools_core::ToolCatalogEvent));
//! - calls propose `mcp.invoke_tool` permission requests, so permission
//!   policies apply to MCP tools like to any other;
//! - a server asking for credentials yields an [`AuthRequest`] the host
//!   answers out of band with [`McpServerManager::resolve_auth`].
//!
//! rmcp does the protocol work; none of its types appear in this API.
//!
//! # Metadata
//!
//! What the manager adds to agentkit values, under keys starting `mcp.`:
//!
//! | where | key | value |
//! | --- | --- | --- |
//! | `ToolSpec::metadata` | `mcp.server`, `mcp.tool` | the server's name, the tool's own name |
//! | `ToolSpec::metadata` | `mcp.title`, `mcp.output_schema`, `mcp.annotations` | as the server listed them |
//! | `PermissionRequest::metadata` | `mcp.annotations` | the tool's annotations, for `McpServerPolicy::follow_tool_hints` |
//! | `ToolResult::metadata` | `mcp.server`, `mcp.tool` | who answered |
//! | `ToolResult::metadata` | `mcp.meta` | the result's `_meta`, when sent |
//! | `ToolResult::metadata` | `mcp.deduplicated_text` | how many text blocks were dropped for repeating `structuredContent` as JSON |
//! | `FilePart::metadata` | `mcp.uri` | an embedded or read resource's URI |
//! | `TextPart::metadata` | `mcp.resource_link` | a resource link block, verbatim |
//! | `StructuredPart::metadata` | `mcp.structured_content` | `true` on the result's `structuredContent` |
//! | `AuthRequest::metadata` | `mcp.http_status` | 401 or 403 |
//! | `AuthRequest::metadata` | `mcp.error`, `mcp.error_description`, `mcp.realm`, `mcp.resource_metadata` | from the challenge |
//! | `AuthRequest::metadata` | `mcp.authorization_url` | where to send the user, for a server configured with OAuth (feature `oauth`) |
//! | `AuthRequest::metadata` | `mcp.authorization_error` | why no authorization URL could be made (discovery or registration failed) |
//!
//! # Example
//!
//! The README's example (it starts the MCP reference server with `npx` and
//! contacts a remote one, so here it is compiled, not run):
//!
//! ```no_run
//! use agentkit_mcp::{AuthResolution, McpCredentials, McpError, McpServerConfig, McpServerManager};
//! use agentkit_tools_core::ToolSource;
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), McpError> {
//! let manager = McpServerManager::new();
//! manager.register(
//!     McpServerConfig::stdio("everything", "npx")
//!         .args(["--no-install", "mcp-server-everything", "stdio"])
//!         .call_timeout(Duration::from_secs(30)),
//! )?;
//! manager.register(McpServerConfig::http("tickets", "https://tickets.example/mcp"))?;
//!
//! for (name, outcome) in manager.connect_all().await {
//!     match outcome {
//!         Ok(status) => println!("{name}: {} tools", status.tools.len()),
//!         // The host runs whatever flow it needs, then answers.
//!         Err(McpError::AuthRequired(request)) => {
//!             let token = std::env::var("TICKETS_TOKEN").unwrap_or_default();
//!             // Resolving connects the server; its tools join the catalog.
//!             manager
//!                 .resolve_auth(AuthResolution::provided(*request, McpCredentials::bearer(token)))
//!                 .await?;
//!         }
//!         Err(err) => eprintln!("{name}: {err}"),
//!     }
//! }
//!
//! // Hand this to the agent (`AgentBuilder::add_tool_source`) or a `ToolFederation`.
//! let source = manager.source();
//! println!("{:?}", source.snapshot().names());
//! # Ok(())
//! # }
//! ```

mod asking;
mod auth;
mod catalog;
mod config;
mod connection;
mod convert;
mod discovery;
mod elicitation;
mod error;
mod events;
mod framing;
mod http;
// MCP logging is deprecated in rmcp (SEP-2577), but the protocol revisions
// this client speaks still carry it, and servers still send it.
#[allow(deprecated)]
mod logging;
mod manager;
mod naming;
mod notices;
#[cfg(feature = "oauth")]
mod oauth;
mod plain;
mod process;
mod progress;
mod protocol;
mod resource_tools;
mod roots;
// Sampling is deprecated in rmcp (SEP-2577) like logging; the revisions
// this client speaks still have it and servers still use it.
#[allow(deprecated)]
mod sampling;
mod tool;

pub use auth::{AuthOperation, AuthRequest, AuthResolution, McpAuthResponder, McpCredentials};
pub use catalog::{CatalogEvents, McpToolSource, SOURCE_NAME};
pub use config::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, HttpConfig, McpServerConfig, McpTransport,
    StdioConfig, StreamRetry,
};
/// Converts a `tools/call` result as the server sent it (MCP's JSON) into
/// the [`ToolResult`](agentkit_tools_core::ToolResult) a call returns;
/// public for hosts that talk to MCP servers themselves, and for fuzzing.
pub use convert::tool_result as convert_tool_result;
pub use discovery::{McpPrompt, McpPromptArgument, McpResource, McpResourceTemplate};
pub use elicitation::{
    ElicitationError, ElicitationHandler, ElicitationKind, ElicitationRequest, ElicitationResponse,
    complete_form,
};
pub use error::McpError;
pub use events::{McpEvents, McpLogMessage, McpServerEvent};
pub use manager::{McpServerManager, ServerState, ServerStatus};
pub use naming::exposed_tool_name;
#[cfg(feature = "oauth")]
pub use oauth::{ClientKey, ClientKeyError, EnterpriseIdp, JwsAlgorithm, OAuthConfig, OAuthGrant};
pub use protocol::{PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};
pub use roots::McpRoot;
pub use sampling::{SamplingError, SamplingHandler, SamplingRequest, SamplingResponse};

// The README's example is compiled with the doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
