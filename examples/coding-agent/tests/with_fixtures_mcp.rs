//! MCP servers from a configuration file: the reference server over
//! stdio (installed by `cargo xtask fixtures`), its tools offered to the
//! model next to the built-in ones, called through the loop. Runs without
//! a terminal, so it also covers line mode and `--prompt`.

#[allow(dead_code)] // each test file uses part of the harness
mod server;

use agentkit_http::testing::ScriptedResponse;
use serde_json::json;
use std::process::Stdio;

fn sse(events: &[serde_json::Value]) -> ScriptedResponse {
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body += "data: [DONE]\n\n";
    ScriptedResponse::sse(body)
}

#[test]
fn mcp_tools_from_a_config_file_in_line_mode() {
    let entry = server::reference_mcp_server();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp_servers.ref]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
            entry.display().to_string()
        ),
    )
    .unwrap();

    let server = server::Server::start(vec![
        sse(&[
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1",
                "type": "function", "function": {"name": "mcp_ref_echo",
                "arguments": "{\"message\":\"hello from the config\"}"}}]}, "finish_reason": null}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ]),
        sse(&[
            json!({"choices": [{"index": 0, "delta": {"content": "The server echoed it."}, "finish_reason": null}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ]),
    ]);

    let output = server::agent_command(&server, dir.path())
        .args([
            "--mcp",
            config.to_str().unwrap(),
            "--yes",
            "--prompt",
            "echo it",
        ])
        .args(["--workspace", dir.path().to_str().unwrap()])
        .stdin(Stdio::piped())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "{text}");
    assert!(text.contains("mcp ref: "), "{text}");
    assert!(text.contains("● mcp_ref_echo"), "{text}");
    // MCP calls need approval; --yes gave it.
    assert!(
        text.contains("? call `echo` on MCP server `ref`?") || text.contains("approved (--yes)"),
        "{text}"
    );
    assert!(text.contains("✓ Echo: hello from the config"), "{text}");
    assert!(text.contains("The server echoed it."), "{text}");
    // One-shot: no prompt was read after the turn.
    assert!(!text.contains('\u{1b}'), "{text}");

    let tools: Vec<String> = server.bodies()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(tools.iter().any(|t| t == "mcp_ref_echo"), "{tools:?}");
    assert!(tools.iter().any(|t| t == "shell_exec"), "{tools:?}");
}

/// The workspace is offered to MCP servers as the client's root: the
/// fixture server's `list_roots` asks the agent (`roots/list`) during the
/// model's call and the model reads the workspace's `file://` URI.
#[test]
fn exec_offers_the_workspace_as_the_mcp_root() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = std::fs::canonicalize(dir.path()).unwrap().join("my work");
    std::fs::create_dir(&workspace).unwrap();
    let config = dir.path().join("mcp.toml");
    std::fs::write(&config, server::roots_mcp_config()).unwrap();
    let server = server::Server::start(vec![
        server::sse(server::tool_calls(&[(
            "call_1",
            "mcp_roots_list_roots",
            json!({}),
        )])),
        server::sse(server::text_answer("Listed.")),
    ]);
    let output = server::agent_command(&server, dir.path())
        .arg("exec")
        .args(["--workspace", workspace.to_str().unwrap()])
        .args([
            "--mcp",
            config.to_str().unwrap(),
            "--yes",
            "where may you work?",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{log}");
    let results = server::texts(&server.messages()[1], "tool");
    let expected = format!("file://{}", workspace.display()).replace(' ', "%20");
    assert_eq!(results, [expected], "{log}");
}
