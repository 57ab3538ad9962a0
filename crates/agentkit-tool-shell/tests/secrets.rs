//! The host's credentials do not reach the commands the model runs: each
//! row plants a variable that looks like a key in the host's environment
//! and has a command try to print it.

use agentkit_tool_shell::{ShellConfig, shell_tools};
use agentkit_tools_core::{
    BasicToolExecutor, ToolContext, ToolExecutor, ToolFederation, ToolRequest,
};
use serde_json::json;

const PLANTED: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GITHUB_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "MCP_AUTH_TOKEN",
    "SOME_SERVICE_SECRET",
    "DB_PASSWORD",
    "lowercase_api_key",
];

async fn printed(config: ShellConfig, command: &str) -> String {
    let executor = BasicToolExecutor::new(ToolFederation::new().with_source(shell_tools(config)));
    let call = ToolRequest::new("call", "shell_exec", json!({ "command": command }));
    executor
        .execute(call, ToolContext::detached())
        .await
        .unwrap()
        .output
        .to_text()
}

// One test sets the variables, so no other test of this binary races it.
#[tokio::test]
async fn planted_keys_never_reach_a_command_unless_the_host_lets_them() {
    let dir = tempfile::tempdir().unwrap();
    let planted: Vec<(String, String)> = PLANTED
        .iter()
        .map(|name| (name.to_string(), format!("sk-planted-{name}-31337")))
        .collect();
    // `set_var` is unsafe in edition 2024 (and this workspace forbids
    // unsafe), so the keys are planted in the environment of a second run
    // of this test, which is the host.
    let host = std::env::var("AGENTKIT_PLANTED_HOST").is_ok();
    if !host {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "planted_keys_never_reach_a_command_unless_the_host_lets_them",
                "--exact",
                "--nocapture",
            ])
            .env("AGENTKIT_PLANTED_HOST", "1")
            .envs(planted.iter().cloned())
            .status()
            .unwrap();
        assert!(status.success(), "the host process failed");
        return;
    }
    for (name, value) in &planted {
        // Every way a command would look: env, printenv, /proc, a child.
        for probe in [
            "env".to_string(),
            format!("printenv {name}; true"),
            "cat /proc/self/environ | tr '\\0' '\\n'".to_string(),
            format!("sh -c 'echo ${name}'"),
        ] {
            let out = printed(ShellConfig::new(dir.path()), &probe).await;
            assert!(!out.contains(value), "{probe} printed {name}: {out}");
        }
    }
    // Ordinary variables still pass.
    let out = printed(ShellConfig::new(dir.path()), "echo $AGENTKIT_PLANTED_HOST").await;
    assert!(out.contains("stdout:\n1"), "{out}");
    // Let through by name, or all of them.
    let out = printed(
        ShellConfig::new(dir.path()).pass_secret_env("GITHUB_TOKEN"),
        "env",
    )
    .await;
    assert!(out.contains("sk-planted-GITHUB_TOKEN-31337"), "{out}");
    assert!(!out.contains("sk-planted-OPENAI_API_KEY"), "{out}");
    let out = printed(ShellConfig::new(dir.path()).pass_all_env(), "env").await;
    assert!(out.contains("sk-planted-OPENAI_API_KEY-31337"), "{out}");
    // A variable the call sets itself is the model's own and stays.
    let executor = BasicToolExecutor::new(
        ToolFederation::new().with_source(shell_tools(ShellConfig::new(dir.path()))),
    );
    let call = ToolRequest::new(
        "call",
        "shell_exec",
        json!({ "command": "echo $MY_TOKEN", "env": { "MY_TOKEN": "given" } }),
    );
    let out = executor
        .execute(call, ToolContext::detached())
        .await
        .unwrap()
        .output
        .to_text();
    assert!(out.contains("given"), "{out}");
}
