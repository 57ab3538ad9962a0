//! `coding-agent --acp` driven by a real ACP client no one here wrote: the
//! official ACP TypeScript SDK (installed from the committed lockfile in
//! `crates/agentkit-acp/tests/fixtures` by `cargo xtask fixtures`), through
//! `coding-agent.mjs` there. The model is the project's OpenAI-compatible
//! test server on 127.0.0.1. Two agent processes share one session store:
//! the first runs a prompt with an approved tool call, a cancelled turn and
//! a short prompt; the second loads the session and goes on with it.

#[allow(dead_code)] // each test file uses part of the harness
mod server;

use serde_json::json;
use server::{Server, agent_env, sse, text_answer, texts, tool_calls};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/agentkit-acp/tests/fixtures")
}

/// Runs the client `script` against `coding-agent --acp` with `server` as
/// the model, its workspace `dir/work`, its state in `dir`, and checks that
/// all `checks` passed.
fn run_client(script: &str, server: &Server, dir: &Path, checks: usize) {
    let sdk = fixtures().join("node_modules/@agentclientprotocol/sdk/package.json");
    assert!(
        sdk.is_file(),
        "the ACP TypeScript SDK is not installed in {}: run `cargo xtask fixtures` (needs Node.js 20+)",
        fixtures().display()
    );
    let mut client = Command::new("node");
    client
        .arg(fixtures().join(script))
        .arg(env!("CARGO_BIN_EXE_coding-agent"))
        .arg(dir.join("work"))
        .current_dir(fixtures())
        .env("CODING_AGENT_LEASE_MS", "1000");
    let output = agentkit_testkit::process::output_within(
        agent_env(&mut client, Some(&server.base_url()), dir),
        Duration::from_secs(120),
        "the ACP client (node, 20 or newer)",
    );
    agentkit_testkit::process::assert_all_passed(&output, checks, "the ACP client");
}

#[test]
fn an_acp_client_drives_the_coding_agent_and_loads_its_stored_session() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir(&workspace).unwrap();
    let long = "word ".repeat(400);
    let server = Server::start(vec![
        sse(tool_calls(&[(
            "call_1",
            "fs_write_file",
            json!({ "path": "notes.txt", "content": "remember the milk\n" }),
        )])),
        sse(text_answer("I wrote notes.txt.")),
        sse(text_answer(&format!("Starting a long answer: {long}")))
            .split_every(60)
            .with_pause(Duration::from_millis(100)),
        sse(text_answer("Short answer.")),
        sse(text_answer("You asked me to write notes.txt.")),
    ]);

    run_client("coding-agent.mjs", &server, dir.path(), 12);

    // The model's side: the request of the loaded session carried the whole
    // stored conversation, the tool call with its result.
    let messages = server.messages();
    assert_eq!(messages.len(), 5);
    let last = &messages[4];
    assert_eq!(
        texts(last, "user"),
        [
            "write a note about the milk",
            "tell me a long story",
            "and now something short",
            "what did you write?"
        ]
    );
    assert_eq!(texts(last, "tool").len(), 1);
    assert!(
        texts(last, "assistant")
            .iter()
            .any(|t| t == "Short answer.")
    );

    // The terminal's list shows the session the editor used.
    let listed = Command::new(env!("CARGO_BIN_EXE_coding-agent"))
        .arg("--list")
        .env("CODING_AGENT_STATE_DIR", dir.path().join("state"))
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("write a note about the milk"), "{listed}");
}

/// "Always allow" from the editor is scoped like the terminal's: to the
/// program of a shell command (`python3`), so another program is asked
/// again.
#[test]
fn always_allow_from_an_editor_covers_one_program() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir(&workspace).unwrap();
    let shell = |command: &str| json!({ "command": command });
    let server = Server::start(vec![
        sse(tool_calls(&[(
            "call_1",
            "shell_exec",
            shell("python3 -c 'print(1)'"),
        )])),
        sse(text_answer("Ran it.")),
        sse(tool_calls(&[
            ("call_2", "shell_exec", shell("python3 -c 'print(2)'")),
            ("call_3", "shell_exec", shell("touch made-by-touch")),
        ])),
        sse(text_answer("Ran python; touch was refused.")),
    ]);
    run_client("coding-agent-always.mjs", &server, dir.path(), 3);
    // The model read python's output for call_2.
    let results = texts(&server.messages()[3], "tool");
    assert!(results.iter().any(|r| r.contains('2')), "{results:?}");
}

/// A session whose agent was killed mid-command shows, once loaded in a
/// new process, the interrupted call with its final state.
#[test]
fn a_session_loaded_after_a_kill_shows_every_call_finished() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    let server = Server::start(vec![
        sse(tool_calls(&[(
            "call_1",
            "shell_exec",
            json!({ "command": "sleep 20" }),
        )])),
        sse(text_answer("Resumed after the kill.")),
    ]);
    run_client("coding-agent-killed.mjs", &server, dir.path(), 3);
    // The model read the call's answer: interrupted, not run twice.
    let results = texts(&server.messages()[1], "tool").join("\n");
    assert!(results.contains("interrupted"), "{results}");
}

/// The editor's mode picker chooses the approval mode: in auto-edit a file
/// write is not asked, a shell command still is.
#[test]
fn session_modes_choose_what_runs_unasked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    let server = Server::start(vec![
        sse(tool_calls(&[
            (
                "call_1",
                "fs_write_file",
                json!({ "path": "notes.txt", "content": "milk\n" }),
            ),
            (
                "call_2",
                "shell_exec",
                json!({ "command": "touch made-by-touch" }),
            ),
        ])),
        sse(text_answer("Wrote it; touch was refused.")),
    ]);
    run_client("coding-agent-modes.mjs", &server, dir.path(), 4);
}

/// The editor's prompt box offers the slash commands, a command sent as a
/// prompt runs without the model (`/help`, `/clear`), and the todo list is
/// the editor's plan.
#[test]
fn slash_commands_and_plans_reach_the_editor() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    let todos = json!({ "todos": [
        { "content": "read the failing test", "status": "completed", "priority": "high" },
        { "content": "fix the parser", "status": "in_progress" },
        { "content": "run the tests", "status": "pending", "priority": "low" },
    ]});
    let server = Server::start(vec![
        sse(tool_calls(&[("call_1", "todo_write", todos)])),
        sse(text_answer("Planned.")),
        sse(text_answer("Fresh start.")),
    ]);
    run_client("coding-agent-commands.mjs", &server, dir.path(), 4);
    // `/help` and `/clear` never reached the model; after `/clear` the
    // model saw the new message alone.
    let messages = server.messages();
    assert_eq!(messages.len(), 3);
    assert_eq!(texts(&messages[0], "user"), ["plan the fix"]);
    let result = texts(&messages[1], "tool").join("\n");
    assert!(
        result.contains("1 of 3 done; now: fix the parser"),
        "{result}"
    );
    assert_eq!(texts(&messages[2], "user"), ["hello again"]);
    assert!(texts(&messages[2], "assistant").is_empty());
}

/// An editor that offers its buffers (`fs.readTextFile`,
/// `fs.writeTextFile`) gets the file tools' reads and writes: the model
/// reads the unsaved buffer, not the disk, the write lands in the editor's
/// buffer, not on disk, and a path outside the workspace is checked (the
/// user refuses it) before the editor is asked.
#[test]
fn file_tools_use_the_editors_buffers_when_offered() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), "saved: buy milk\n").unwrap();
    std::fs::write(dir.path().join("outside.txt"), "secret\n").unwrap();
    let server = Server::start(vec![
        sse(tool_calls(&[
            ("call_1", "fs_read_file", json!({ "path": "notes.txt" })),
            (
                "call_2",
                "fs_read_file",
                json!({ "path": "../outside.txt" }),
            ),
        ])),
        sse(tool_calls(&[(
            "call_3",
            "fs_write_file",
            json!({ "path": "out.txt", "content": "summary: oat milk\n" }),
        )])),
        sse(text_answer("Wrote the summary.")),
    ]);
    run_client("coding-agent-buffers.mjs", &server, dir.path(), 3);
    let results = texts(&server.messages()[1], "tool");
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].contains("unsaved: buy oat milk"), "{results:?}");
    assert!(!results[1].contains("secret"), "{results:?}");
    // The disk is untouched: the write is the editor's to save.
    assert!(!workspace.join("out.txt").exists());
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.txt")).unwrap(),
        "saved: buy milk\n"
    );
}

/// A question an MCP server asks during a tool call goes to an editor that
/// announced form elicitation (`elicitation/create`), and the editor's
/// answer goes back: content the schema refuses is asked for again, with
/// the reason; accepted content reaches the server, a cancel too.
#[test]
fn an_mcp_servers_question_is_put_to_the_editor() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    // The reference MCP server, where the agent looks by default.
    server::configure_reference_mcp(dir.path(), "ev");
    let ask = "mcp_ev_trigger-elicitation-request";
    let server = Server::start(vec![
        sse(tool_calls(&[("call_1", ask, json!({}))])),
        sse(text_answer("Hello, Grace.")),
        sse(tool_calls(&[("call_2", ask, json!({}))])),
        sse(text_answer("Cancelled.")),
    ]);
    run_client("coding-agent-elicitation.mjs", &server, dir.path(), 4);
    // The model read what the server made of the editor's answers, the
    // schema's defaults filled in for what the editor left out.
    let first = texts(&server.messages()[1], "tool").join("\n");
    assert!(first.contains("- Name: Grace Hopper"), "{first}");
    assert!(first.contains("- Favorite Number: 3.14"), "{first}");
    let second = texts(&server.messages()[3], "tool").join("\n");
    assert!(second.contains("User cancelled"), "{second}");
}

/// The MCP servers are shared by the editor's sessions, so their roots
/// are every open session's directory: two sessions, and the `roots`
/// fixture server (crates/agentkit-mcp/tests/fixtures/roots.mjs, which
/// asks `roots/list` afresh) lists both; once the editor closes the first
/// session (`session/close`), only the other.
#[test]
fn mcp_servers_get_every_sessions_directory_as_a_root() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(base.join("work")).unwrap();
    std::fs::create_dir(base.join("other")).unwrap();
    let config = base.join("config/agentkit");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("mcp.toml"), server::roots_mcp_config()).unwrap();
    let server = Server::start(vec![
        sse(tool_calls(&[("call_1", "mcp_roots_list_roots", json!({}))])),
        sse(text_answer("Both.")),
        sse(tool_calls(&[("call_2", "mcp_roots_list_roots", json!({}))])),
        sse(text_answer("One.")),
    ]);
    run_client("coding-agent-roots.mjs", &server, &base, 4);
    let messages = server.messages();
    let listed = texts(&messages[1], "tool").join("\n");
    let mut lines: Vec<&str> = listed.lines().collect();
    lines.sort_unstable();
    let uri = |name: &str| format!("file://{}", base.join(name).display());
    assert_eq!(lines, [uri("other"), uri("work")], "{listed}");
    // The second session's conversation: both calls, the second after the
    // first session was closed.
    let results = texts(&messages[3], "tool");
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[1], uri("other"));
}
