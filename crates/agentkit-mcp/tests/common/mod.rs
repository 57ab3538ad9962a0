//! Helpers shared by the integration tests: where the real servers are,
//! and timeouts so no test can hang.

#![allow(dead_code)] // each test binary uses a different subset

pub mod oauth_server;
pub mod rmcp_server;

use agentkit_mcp::McpServerConfig;
use agentkit_tools_core::{Tool, ToolSource};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Fails the test instead of hanging when `future` takes longer than `secs`.
pub async fn within<T>(secs: u64, what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {secs} s"))
}

/// Polls `check` until it holds, for at most `secs`.
pub async fn eventually(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    within(secs, what, async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    })
    .await;
}

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The MCP reference server over stdio, from the npm fixture.
pub fn everything(name: &str) -> McpServerConfig {
    let entry =
        fixtures_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        entry.is_file(),
        "{} is missing: run `cargo xtask fixtures` first",
        entry.display()
    );
    McpServerConfig::stdio(name, "node")
        .arg(entry.to_string_lossy())
        .arg("stdio")
        .cwd(fixtures_dir())
}

/// A tool of the source by its exposed name.
pub fn tool(source: &impl ToolSource, name: &str) -> Arc<dyn Tool> {
    let snapshot = source.snapshot();
    snapshot
        .tools
        .iter()
        .find(|tool| tool.spec().name == name)
        .cloned()
        .unwrap_or_else(|| panic!("no tool {name} in {:?}", snapshot.names()))
}

/// `true` while a process with this id exists (and, where /proc tells,
/// is not a zombie).
pub fn process_alive(pid: u32) -> bool {
    if !Path::new("/proc/self/stat").exists() {
        return std::process::Command::new("kill")
            .args(["-0", &pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the field after the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}
