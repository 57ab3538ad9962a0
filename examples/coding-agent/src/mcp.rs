//! MCP servers from a configuration file.
//!
//! The file uses the `[mcp_servers.NAME]` tables other coding agents read,
//! so an existing configuration can be pointed at as is:
//!
//! ```toml
//! [mcp_servers.everything]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything", "stdio"]
//! env = { LOG_LEVEL = "warn" }
//!
//! [mcp_servers.tickets]
//! url = "http://127.0.0.1:8080/mcp"
//! bearer_token_env_var = "TICKETS_TOKEN"
//! ```
//!
//! Other keys in the file are ignored. Servers that fail to connect are
//! reported and left out; the agent runs without them.

use agentkit_mcp::{McpRoot, McpServerConfig, McpServerManager};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why the configuration could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpConfigError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is not valid TOML of the expected shape.
    #[error("{path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        source: toml::de::Error,
    },
    /// A server has neither `command` nor `url`, or both.
    #[error("{path}: server {name:?} needs exactly one of `command` or `url`")]
    Transport {
        /// The file.
        path: PathBuf,
        /// The server.
        name: String,
    },
    /// The manager refused a server.
    #[error("server {name:?}: {message}")]
    Register {
        /// The server.
        name: String,
        /// The manager's error.
        message: String,
    },
}

#[derive(Debug, Default, Deserialize)]
struct File {
    #[serde(default)]
    mcp_servers: BTreeMap<String, Server>,
}

#[derive(Debug, Default, Deserialize)]
struct Server {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    bearer_token_env_var: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    startup_timeout_sec: Option<f64>,
    tool_timeout_sec: Option<f64>,
}

/// The default file, when it exists: `$XDG_CONFIG_HOME/agentkit/mcp.toml`
/// or `~/.config/agentkit/mcp.toml`.
pub fn default_path() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    let base = var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    let path = base.join("agentkit/mcp.toml");
    path.is_file().then_some(path)
}

/// Reads the servers of `path`.
pub fn read(path: &Path) -> Result<Vec<McpServerConfig>, McpConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| McpConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, path)
}

fn parse(text: &str, path: &Path) -> Result<Vec<McpServerConfig>, McpConfigError> {
    let file: File = toml::from_str(text).map_err(|source| McpConfigError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    let mut servers = Vec::new();
    for (name, server) in file.mcp_servers {
        let mut config = match (&server.command, &server.url) {
            (Some(command), None) => {
                let mut config = McpServerConfig::stdio(&name, command).args(&server.args);
                for (key, value) in &server.env {
                    config = config.env(key, value);
                }
                if let Some(cwd) = &server.cwd {
                    config = config.cwd(cwd);
                }
                config
            }
            (None, Some(url)) => {
                let mut config = McpServerConfig::http(&name, url);
                for (key, value) in &server.headers {
                    config = config.header(key, value);
                }
                if let Some(token) = server
                    .bearer_token_env_var
                    .as_deref()
                    .and_then(|var| std::env::var(var).ok())
                {
                    config = config.bearer_token(token);
                }
                config
            }
            _ => {
                return Err(McpConfigError::Transport {
                    path: path.to_path_buf(),
                    name,
                });
            }
        };
        if let Some(secs) = server.startup_timeout_sec.filter(|s| *s > 0.0) {
            config = config.connect_timeout(Duration::from_secs_f64(secs));
        }
        if let Some(secs) = server.tool_timeout_sec.filter(|s| *s > 0.0) {
            config = config.call_timeout(Duration::from_secs_f64(secs));
        }
        servers.push(config);
    }
    Ok(servers)
}

/// The roots a workspace offers MCP servers: the directory itself.
pub fn workspace_roots(workspace: &Path) -> Vec<McpRoot> {
    vec![McpRoot::directory(workspace).name("workspace")]
}

/// Registers and connects `servers`; returns the manager and one line per
/// server saying how it went. `roots`, when given, are announced in the
/// handshake (an empty list still announces the capability, for a host
/// that adds directories later).
pub async fn connect(
    servers: Vec<McpServerConfig>,
    roots: Option<Vec<McpRoot>>,
) -> Result<(McpServerManager, Vec<String>), McpConfigError> {
    let manager = McpServerManager::new();
    // A server's question during a tool call (elicitation) pauses that
    // call and reaches the user; announced in the handshake, so set first.
    manager.route_elicitation_to_calls(true);
    if let Some(roots) = roots {
        // Announced in the handshake: set before the servers connect.
        manager.set_roots(roots).await;
    }
    for config in servers {
        let name = config.name.clone();
        manager
            .register(config)
            .map_err(|e| McpConfigError::Register {
                name,
                message: e.to_string(),
            })?;
    }
    let mut report = Vec::new();
    for (name, result) in manager.connect_all().await {
        report.push(match result {
            Ok(status) => format!("mcp {name}: {} tools", status.tools.len()),
            Err(error) => format!("mcp {name}: not connected ({error})"),
        });
    }
    Ok((manager, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentkit_mcp::McpTransport;

    #[test]
    fn servers_are_read_from_toml() {
        let text = r#"
            model = "ignored"
            [mcp_servers.ref]
            command = "node"
            args = ["server.js", "stdio"]
            env = { A = "1" }
            tool_timeout_sec = 5

            [mcp_servers.remote]
            url = "http://127.0.0.1:9/mcp"
        "#;
        let servers = parse(text, Path::new("mcp.toml")).unwrap();
        assert_eq!(servers.len(), 2);
        let McpTransport::Stdio(stdio) = &servers[0].transport else {
            panic!("ref is stdio");
        };
        assert_eq!(stdio.command, "node");
        assert_eq!(stdio.args, ["server.js", "stdio"]);
        assert_eq!(stdio.env["A"], "1");
        assert_eq!(servers[0].call_timeout, Duration::from_secs(5));
        assert!(matches!(servers[1].transport, McpTransport::Http(_)));

        let both = "[mcp_servers.x]\ncommand = \"a\"\nurl = \"http://b\"";
        assert!(matches!(
            parse(both, Path::new("f")),
            Err(McpConfigError::Transport { name, .. }) if name == "x"
        ));
        assert!(matches!(
            parse("[mcp_servers", Path::new("f")),
            Err(McpConfigError::Parse { .. })
        ));
    }
}
