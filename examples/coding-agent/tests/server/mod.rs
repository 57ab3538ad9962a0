//! The project's OpenAI-compatible test server on 127.0.0.1, scripted with
//! streamed Chat Completions answers, for the tests that run the agent
//! against a "real" provider (on a pty, or over ACP).

use agentkit_http::testing::{ScriptedResponse, TestServer};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// The provider variables a developer's shell may hold: the agent under
/// test must not pick them up.
const PROVIDER_VARIABLES: [&str; 5] = [
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "AGENTKIT_MODEL",
    "AGENTKIT_PROVIDER",
];

/// Sets `command` (the agent, or a client that starts it) up for a test:
/// none of the shell's provider variables; with `base_url`, the
/// OpenAI-compatible server there and the model `test-model` (named, so the
/// agent does not ask the scripted server for its models first); without,
/// the offline demo. Its state goes to `home/state` and its configuration
/// is read from `home/config`, never the developer's own.
pub fn agent_env<'c>(
    command: &'c mut Command,
    base_url: Option<&str>,
    home: &Path,
) -> &'c mut Command {
    for variable in PROVIDER_VARIABLES {
        command.env_remove(variable);
    }
    if let Some(url) = base_url {
        command
            .env("OPENAI_BASE_URL", url)
            .env("AGENTKIT_MODEL", "test-model");
    }
    command
        .env("CODING_AGENT_STATE_DIR", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join("config"))
}

/// `coding-agent` against `server`, set up by [`agent_env`] with `home`.
pub fn agent_command(server: &Server, home: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_coding-agent"));
    agent_env(&mut command, Some(&server.base_url()), home);
    command
}

/// One SSE event of a Chat Completions stream.
pub fn event(chunk: Value) -> String {
    format!("data: {chunk}\n\n")
}

pub fn usage(prompt: u64, completion: u64) -> String {
    event(json!({
        "id": "c", "object": "chat.completion.chunk", "choices": [],
        "usage": { "prompt_tokens": prompt, "completion_tokens": completion,
                   "total_tokens": prompt + completion }
    }))
}

pub fn finish(reason: &str) -> String {
    event(json!({
        "id": "c", "object": "chat.completion.chunk",
        "choices": [{ "index": 0, "delta": {}, "finish_reason": reason }]
    }))
}

/// A streamed text answer, one event per word.
pub fn text_answer(text: &str) -> String {
    text_without_usage(text).replace("data: [DONE]\n\n", &(usage(120, 30) + "data: [DONE]\n\n"))
}

/// A streamed text answer from a server that reports no usage.
pub fn text_without_usage(text: &str) -> String {
    let mut body = String::new();
    for word in text.split_inclusive(' ') {
        body += &event(json!({
            "id": "c", "object": "chat.completion.chunk",
            "choices": [{ "index": 0, "delta": { "content": word }, "finish_reason": null }]
        }));
    }
    body + &finish("stop") + "data: [DONE]\n\n"
}

/// Tool calls, each `(id, name, arguments)`.
pub fn tool_calls(calls: &[(&str, &str, Value)]) -> String {
    let mut body = String::new();
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        body += &event(json!({
            "id": "c", "object": "chat.completion.chunk",
            "choices": [{ "index": 0, "delta": { "tool_calls": [{
                "index": index, "id": id, "type": "function",
                "function": { "name": name, "arguments": arguments.to_string() }
            }]}, "finish_reason": null }]
        }));
    }
    body + &finish("tool_calls") + &usage(100, 20) + "data: [DONE]\n\n"
}

pub fn sse(body: String) -> ScriptedResponse {
    ScriptedResponse::sse(body)
}

/// The server on its own runtime, so the test thread can block on the pty.
pub struct Server {
    runtime: tokio::runtime::Runtime,
    server: Option<TestServer>,
}

impl Server {
    pub fn start(script: Vec<ScriptedResponse>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let server = runtime.block_on(TestServer::start(script)).unwrap();
        Self {
            runtime,
            server: Some(server),
        }
    }

    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.as_ref().unwrap().url())
    }

    /// The JSON body of each request received.
    pub fn bodies(&self) -> Vec<Value> {
        self.server
            .as_ref()
            .unwrap()
            .requests()
            .iter()
            .map(|r| r.json())
            .collect()
    }

    /// The messages of each request received.
    pub fn messages(&self) -> Vec<Vec<Value>> {
        self.server
            .as_ref()
            .unwrap()
            .requests()
            .iter()
            .map(|r| r.json()["messages"].as_array().cloned().unwrap_or_default())
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _guard = self.runtime.enter();
        drop(self.server.take());
    }
}

/// The text of every message with this role.
pub fn texts(messages: &[Value], role: &str) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["role"] == role)
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// The MCP reference server's entry point (npm
/// `@modelcontextprotocol/server-everything`, installed by `cargo xtask
/// fixtures`).
pub fn reference_mcp_server() -> std::path::PathBuf {
    let entry = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../crates/agentkit-mcp/tests/fixtures/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(
        entry.is_file(),
        "the MCP reference server is not installed: run `cargo xtask fixtures` ({} is missing)",
        entry.display()
    );
    entry
}

/// The `roots` fixture MCP server (`crates/agentkit-mcp/tests/fixtures/roots.mjs`:
/// its `list_roots` tool asks the client's roots afresh), as an MCP config
/// file's text naming it `roots`. Its SDK comes with the reference
/// server's install.
pub fn roots_mcp_config() -> String {
    reference_mcp_server();
    let entry = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates/agentkit-mcp/tests/fixtures/roots.mjs");
    format!(
        "[mcp_servers.roots]\ncommand = \"node\"\nargs = [{:?}]\n",
        entry.display().to_string()
    )
}

/// Names the reference server `name` in the MCP config the agent reads by
/// default when `XDG_CONFIG_HOME` is `state/config`.
pub fn configure_reference_mcp(state: &std::path::Path, name: &str) {
    let dir = state.join("config/agentkit");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("mcp.toml"),
        format!(
            "[mcp_servers.{name}]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
            reference_mcp_server().display().to_string()
        ),
    )
    .unwrap();
}
