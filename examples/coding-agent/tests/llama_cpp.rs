//! The coding agent against llama.cpp's OpenAI-compatible server
//! (`llama-cpp-python[server]`, SmolLM2-135M, `--chat_format
//! chatml-function-calling`) with a forced tool call, so the whole tool
//! path runs against a real server: the server's tool-call stream, the
//! agent running the tool in the workspace, and the next request carrying
//! the result back in the form llama.cpp's chat template accepts.
//!
//! A 135M model never calls a tool on its own: `CODING_AGENT_TOOL_CHOICE`
//! forces `fs_list_directory` on every model call, and `--max-steps 2`
//! stops the turn after the second call. The test asserts what the agent
//! did (events, requests), never the model's words.
//!
//! It runs from a cassette recorded from the real server
//! (`tests/cassettes/llama_cpp_forced_tool.json`); `cargo xtask llama`
//! installs and starts the server and re-records it
//! (`AGENTKIT_RECORD=<server root>`).

use agentkit_testkit::cassette::CassetteSession;
use serde_json::Value;
use std::process::{Command, Stdio};

const TOOL: &str = "fs_list_directory";

#[test]
fn a_forced_tool_call_runs_through_a_real_llama_cpp_server() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/cassettes/llama_cpp_forced_tool.json"
    );
    let upstream = std::env::var("AGENTKIT_RECORD").ok();
    let session = runtime
        .block_on(CassetteSession::open(path, upstream.as_deref()))
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::write(workspace.join("README.md"), "# demo\n").unwrap();

    let output = Command::new(env!("CARGO_BIN_EXE_coding-agent"))
        .arg("exec")
        .args(["--workspace", workspace.to_str().unwrap()])
        .args(["--json", "--max-steps", "2"])
        .arg("What files are in this project?")
        .env("OPENAI_BASE_URL", format!("{}/v1", session.url()))
        .env("AGENTKIT_MODEL", "smollm2")
        .env("AGENTKIT_MAX_TOKENS", "96")
        .env("AGENTKIT_CONTEXT_WINDOW", "4096")
        .env("CODING_AGENT_TOOL_CHOICE", TOOL)
        .env("CODING_AGENT_STATE_DIR", dir.path().join("state"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("AGENTKIT_PROVIDER")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("every stdout line is JSON"))
        .collect();

    // Two model calls, each a call of the forced tool, each answered once.
    let calls: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "tool_call_requested")
        .map(|e| &e["call"])
        .collect();
    assert_eq!(calls.len(), 2, "{log}");
    assert!(calls.iter().all(|c| c["name"] == TOOL), "{calls:?}");
    for call in &calls {
        let answered = events
            .iter()
            .filter(|e| {
                e["event"] == "tool_result_received" && e["result"]["call_id"] == call["id"]
            })
            .count();
        assert_eq!(answered, 1, "call {} answered once: {log}", call["id"]);
    }
    let last = events.last().expect("events");
    assert_eq!(last["event"], "exec_finished");
    assert_eq!(last["outcome"], "step_limit", "{last}");
    assert_eq!(output.status.code(), Some(3), "{log}");

    // The server's side: every model request forced the tool; the second
    // carried the first call and its result back.
    let requests: Vec<Value> = session
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.json())
        .collect();
    assert_eq!(
        requests.len(),
        2,
        "{:?}",
        requests
            .iter()
            .map(|r| (
                r["messages"].as_array().map(Vec::len),
                r["tool_choice"].clone(),
                r["max_tokens"].clone()
            ))
            .collect::<Vec<_>>()
    );
    for request in &requests {
        assert_eq!(request["tool_choice"]["function"]["name"], TOOL);
    }
    let messages = requests[1]["messages"].as_array().unwrap();
    let asked = messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("the assistant's call is sent back");
    assert_eq!(asked["tool_calls"][0]["id"], calls[0]["id"]);
    let answer = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the tool's result is sent back");
    assert_eq!(answer["tool_call_id"], calls[0]["id"]);

    let workspace_text = workspace.to_string_lossy().into_owned();
    let state_text = dir.path().to_string_lossy().into_owned();
    session
        .finish(&[&workspace_text, &state_text])
        .unwrap_or_else(|e| panic!("{e}"));
}
