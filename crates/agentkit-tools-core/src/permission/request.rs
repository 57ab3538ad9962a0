//! What a tool call asks to be allowed to do.

use agentkit_core::MetadataMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// One thing a call would do, for a checker to decide on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequest {
    /// A dotted kind: `filesystem.write`, `shell.command`,
    /// `mcp.invoke_tool`, or your own (`payments.charge`).
    pub kind: String,
    /// One line for a person.
    pub summary: String,
    /// Extra data.
    #[serde(default, skip_serializing_if = "MetadataMap::is_empty")]
    pub metadata: MetadataMap,
    /// The typed details policies inspect.
    pub payload: PermissionPayload,
}

impl PermissionRequest {
    /// A filesystem request; the kind is `filesystem.<operation>`.
    pub fn filesystem(operation: FileSystemOperation) -> Self {
        let summary = operation.summary();
        Self {
            kind: format!("filesystem.{}", operation.name()),
            summary,
            metadata: MetadataMap::new(),
            payload: PermissionPayload::FileSystem(operation),
        }
    }

    /// A shell request; the kind is `shell.command`.
    pub fn shell(command: ShellCommand) -> Self {
        Self {
            kind: "shell.command".into(),
            summary: format!("run `{}`", command.command_line),
            metadata: MetadataMap::new(),
            payload: PermissionPayload::Shell(command),
        }
    }

    /// An MCP request; the kind is `mcp.<operation>`.
    pub fn mcp(operation: McpOperation) -> Self {
        let summary = operation.summary();
        Self {
            kind: format!("mcp.{}", operation.name()),
            summary,
            metadata: MetadataMap::new(),
            payload: PermissionPayload::Mcp(operation),
        }
    }

    /// A request of your own kind.
    pub fn custom(kind: impl Into<String>, summary: impl Into<String>, payload: Value) -> Self {
        Self {
            kind: kind.into(),
            summary: summary.into(),
            metadata: MetadataMap::new(),
            payload: PermissionPayload::Custom(payload),
        }
    }
}

/// The typed details of a request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "details", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PermissionPayload {
    /// A filesystem operation.
    FileSystem(FileSystemOperation),
    /// A shell command.
    Shell(ShellCommand),
    /// An MCP operation.
    Mcp(McpOperation),
    /// Anything else.
    Custom(Value),
}

/// A filesystem operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "operation", rename_all = "snake_case")]
#[non_exhaustive]
pub enum FileSystemOperation {
    /// Read a file.
    Read {
        /// The path.
        path: PathBuf,
    },
    /// List a directory.
    List {
        /// The path.
        path: PathBuf,
    },
    /// Create or overwrite a file.
    Write {
        /// The path.
        path: PathBuf,
    },
    /// Create a directory.
    CreateDir {
        /// The path.
        path: PathBuf,
    },
    /// Delete a file or directory.
    Delete {
        /// The path.
        path: PathBuf,
    },
    /// Move or rename.
    Move {
        /// Where from.
        from: PathBuf,
        /// Where to.
        to: PathBuf,
    },
}

impl FileSystemOperation {
    /// The snake_case name, also the second half of the request kind.
    pub fn name(&self) -> &'static str {
        match self {
            FileSystemOperation::Read { .. } => "read",
            FileSystemOperation::List { .. } => "list",
            FileSystemOperation::Write { .. } => "write",
            FileSystemOperation::CreateDir { .. } => "create_dir",
            FileSystemOperation::Delete { .. } => "delete",
            FileSystemOperation::Move { .. } => "move",
        }
    }

    /// `true` for operations that change the filesystem.
    pub fn is_mutation(&self) -> bool {
        !matches!(
            self,
            FileSystemOperation::Read { .. } | FileSystemOperation::List { .. }
        )
    }

    fn summary(&self) -> String {
        match self {
            FileSystemOperation::Move { from, to } => {
                format!("move {} to {}", from.display(), to.display())
            }
            FileSystemOperation::Read { path }
            | FileSystemOperation::List { path }
            | FileSystemOperation::Write { path }
            | FileSystemOperation::CreateDir { path }
            | FileSystemOperation::Delete { path } => {
                format!("{} {}", self.name().replace('_', " "), path.display())
            }
        }
    }
}

/// A shell command line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShellCommand {
    /// The whole line, as the shell would read it.
    pub command_line: String,
    /// The working directory, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Names of environment variables the call sets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_keys: Vec<String>,
}

impl ShellCommand {
    /// A command line with no working directory or environment.
    pub fn new(command_line: impl Into<String>) -> Self {
        Self {
            command_line: command_line.into(),
            cwd: None,
            env_keys: Vec::new(),
        }
    }
}

/// An MCP operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "operation", rename_all = "snake_case")]
#[non_exhaustive]
pub enum McpOperation {
    /// Call a tool on a server.
    InvokeTool {
        /// The server's name.
        server: String,
        /// The tool's name on the server.
        tool: String,
    },
    /// Read a resource.
    ReadResource {
        /// The server's name.
        server: String,
        /// The resource URI.
        uri: String,
    },
    /// Fetch a prompt.
    GetPrompt {
        /// The server's name.
        server: String,
        /// The prompt's name.
        name: String,
    },
    /// Grant auth scopes to a server.
    AuthScope {
        /// The server's name.
        server: String,
        /// The scopes.
        scopes: Vec<String>,
    },
}

impl McpOperation {
    /// The snake_case name, also the second half of the request kind.
    pub fn name(&self) -> &'static str {
        match self {
            McpOperation::InvokeTool { .. } => "invoke_tool",
            McpOperation::ReadResource { .. } => "read_resource",
            McpOperation::GetPrompt { .. } => "get_prompt",
            McpOperation::AuthScope { .. } => "auth_scope",
        }
    }

    /// The server the operation targets.
    pub fn server(&self) -> &str {
        match self {
            McpOperation::InvokeTool { server, .. }
            | McpOperation::ReadResource { server, .. }
            | McpOperation::GetPrompt { server, .. }
            | McpOperation::AuthScope { server, .. } => server,
        }
    }

    fn summary(&self) -> String {
        match self {
            McpOperation::InvokeTool { server, tool } => {
                format!("call MCP tool {tool} on {server}")
            }
            McpOperation::ReadResource { server, uri } => format!("read {uri} from {server}"),
            McpOperation::GetPrompt { server, name } => format!("get prompt {name} from {server}"),
            McpOperation::AuthScope { server, scopes } => {
                format!("grant {} to {server}", scopes.join(" "))
            }
        }
    }
}
