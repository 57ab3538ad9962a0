//! `shell_exec` inside the Landlock sandbox, on the real kernel: writes
//! outside the workspace fail, writes inside work, the network can be cut,
//! and the host process itself stays unrestricted.

#![cfg(target_os = "linux")]

use agentkit_tool_shell::{ShellConfig, ShellSandbox, shell_tools};
use agentkit_tools_core::{
    BasicToolExecutor, ToolContext, ToolExecutor, ToolFederation, ToolRequest, ToolResult,
};
use serde_json::json;
use std::time::Duration;
use tempfile::TempDir;

struct Sandboxed {
    dir: TempDir,
    executor: BasicToolExecutor,
}

impl Sandboxed {
    fn new(sandbox: ShellSandbox) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = ShellConfig::new(dir.path()).with_sandbox(sandbox);
        let executor =
            BasicToolExecutor::new(ToolFederation::new().with_source(shell_tools(config)));
        Self { dir, executor }
    }

    async fn run(&self, command: &str) -> ToolResult {
        let call = ToolRequest::new("c", "shell_exec", json!({ "command": command }));
        tokio::time::timeout(
            Duration::from_secs(30),
            self.executor.execute(call, ToolContext::detached()),
        )
        .await
        .expect("deadline")
        .expect("the tool ran")
    }
}

/// Whether this kernel enforces Landlock; the CI machines do (ABI 7). On a
/// kernel without it these tests check the unsandboxed report instead.
fn landlock_enforced(result: &ToolResult) -> bool {
    result.metadata.get("shell.sandbox") == Some(&json!("landlock"))
}

#[tokio::test]
async fn writes_outside_the_workspace_fail_and_inside_succeed() {
    let sandboxed = Sandboxed::new(ShellSandbox::new());
    let outside = std::env::temp_dir().join(format!("agentkit-outside-{}", std::process::id()));
    let _ = std::fs::remove_file(&outside);

    let inside = sandboxed.run("touch ./inside && echo made").await;
    assert!(!inside.is_error, "{}", inside.output.to_text());
    assert!(sandboxed.dir.path().join("inside").exists());
    if !landlock_enforced(&inside) {
        assert!(
            inside
                .output
                .to_text()
                .contains("WITHOUT the configured sandbox")
        );
        return;
    }

    let escaped = sandboxed.run(&format!("touch {}", outside.display())).await;
    assert!(escaped.is_error, "{}", escaped.output.to_text());
    assert!(
        escaped.output.to_text().contains("Permission denied"),
        "{}",
        escaped.output.to_text()
    );
    assert!(!outside.exists(), "the sandbox let a write out");

    // Children inherit the domain: a nested shell cannot write out either,
    // and /dev/null stays writable.
    let nested = sandboxed
        .run(&format!(
            "sh -c 'echo x > {}' 2>/dev/null; echo rc=$?",
            outside.display()
        ))
        .await;
    assert!(nested.output.to_text().contains("rc=1") || nested.output.to_text().contains("rc=2"));
    assert!(!outside.exists());

    // The host process was never restricted.
    std::fs::write(&outside, "host").unwrap();
    std::fs::remove_file(&outside).unwrap();
}

#[tokio::test]
async fn extra_writable_paths_are_allowed() {
    let extra = tempfile::tempdir().unwrap();
    let sandboxed = Sandboxed::new(ShellSandbox::new().allow_writes(extra.path()));
    let result = sandboxed
        .run(&format!("echo ok > {}/cache.txt", extra.path().display()))
        .await;
    assert!(!result.is_error, "{}", result.output.to_text());
    assert!(extra.path().join("cache.txt").exists());
}

#[tokio::test]
async fn the_network_can_be_cut() {
    if !std::path::Path::new("/bin/bash").exists() {
        return; // `/dev/tcp` is a bash feature
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo connected");

    let open = Sandboxed::new(ShellSandbox::new());
    let result = open.run(&connect).await;
    assert!(
        result.output.to_text().contains("connected"),
        "{}",
        result.output.to_text()
    );

    let closed = Sandboxed::new(ShellSandbox::new().without_network());
    let result = closed.run(&connect).await;
    if landlock_enforced(&result) {
        assert!(result.is_error, "{}", result.output.to_text());
        assert!(!result.output.to_text().contains("connected"));
    }
}
