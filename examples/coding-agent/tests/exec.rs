//! `coding-agent exec` through plain pipes, as a script runs it: against
//! the OpenAI-compatible test server on 127.0.0.1 and against the offline
//! demo. Each exit code is checked with the turn that earns it.

#[allow(dead_code)] // each test file uses part of the harness
mod server;

use agentkit_http::testing::ScriptedResponse;
use serde_json::{Value, json};
use server::{Server, agent_command, agent_env, sse, text_answer, texts, tool_calls};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `coding-agent exec ARGS` in `dir` with `stdin` piped in; the
/// provider is `server`, or the offline demo without one.
fn exec(server: Option<&Server>, dir: &Path, args: &[&str], stdin: &str) -> Output {
    let url = server.map(Server::base_url);
    let env: Vec<(&str, &str)> = match &url {
        Some(url) => vec![("OPENAI_BASE_URL", url), ("AGENTKIT_MODEL", "test-model")],
        None => Vec::new(),
    };
    exec_with(&env, dir, args, stdin)
}

/// [`exec`] with the provider variables of `env`.
fn exec_with(env: &[(&str, &str)], dir: &Path, args: &[&str], stdin: &str) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_coding-agent"));
    agent_env(&mut command, None, &dir.join(".agent"))
        .arg("exec")
        .args(["--workspace", dir.to_str().unwrap()])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.envs(env.iter().copied());
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn code(output: &Output) -> i32 {
    output.status.code().expect("exited, not killed")
}

#[test]
fn the_answer_goes_to_stdout_and_progress_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![sse(text_answer("The answer is 42."))]);
    let output = exec(Some(&server), dir.path(), &["what is the answer?"], "");
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(stdout(&output), "The answer is 42.\n");
    let log = stderr(&output);
    assert!(log.contains("> what is the answer?"), "{log}");
    assert!(!log.contains('\u{1b}'), "{log}");
    let messages = server.messages();
    assert_eq!(texts(&messages[0], "user"), ["what is the answer?"]);
}

#[test]
fn the_prompt_comes_from_stdin_and_json_lines_describe_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![
        sse(tool_calls(&[(
            "call_1",
            "fs_write_file",
            json!({ "path": "notes.txt", "content": "milk\n" }),
        )])),
        sse(text_answer("Wrote notes.txt.")),
    ]);
    let output = exec(
        Some(&server),
        dir.path(),
        &["--json", "--auto-edit"],
        "write a note\nabout milk\n",
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let events: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).expect("every stdout line is JSON"))
        .collect();
    let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(names.len(), events.len(), "every line names its event");
    assert!(names.contains(&"model_call_started"), "{names:?}");
    assert!(names.contains(&"tool_call_requested"), "{names:?}");
    let last = events.last().unwrap();
    assert_eq!(last["event"], "exec_finished");
    assert_eq!(last["outcome"], "completed");
    assert_eq!(last["exit_code"], 0);
    assert_eq!(last["answer"], "Wrote notes.txt.");
    assert_eq!(last["usage"]["input_tokens"], 220);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "milk\n"
    );
    assert_eq!(
        texts(&server.messages()[0], "user"),
        ["write a note\nabout milk"]
    );
}

/// One row per mode and call: what the mode lets through runs, the rest
/// is denied and the exit code says so.
#[test]
fn approval_modes_decide_and_denials_exit_4() {
    let write = (
        "fs_write_file",
        json!({ "path": "out.txt", "content": "x" }),
    );
    let shell = ("shell_exec", json!({ "command": "touch out.txt" }));
    let outside = (
        "fs_write_file",
        json!({ "path": "/tmp/coding-agent-exec-outside.txt", "content": "x" }),
    );
    // (mode flag, call, exit code, whether out.txt exists after)
    let table = [
        ("--approval=ask", &write, 4, false),
        ("--auto-edit", &write, 0, true),
        ("--auto-edit", &shell, 4, false),
        ("--full-auto", &shell, 0, true),
        ("--full-auto", &outside, 4, false),
    ];
    for (flag, (tool, input), expected, exists) in table {
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(vec![
            sse(tool_calls(&[("call_1", tool, input.clone())])),
            sse(text_answer("Done as far as allowed.")),
        ]);
        let args: Vec<&str> = match flag.split_once('=') {
            Some((name, value)) => vec![name, value, "do it"],
            None => vec![flag, "do it"],
        };
        let output = exec(Some(&server), dir.path(), &args, "");
        let log = stderr(&output);
        assert_eq!(code(&output), expected, "{flag} {tool}: {log}");
        assert_eq!(dir.path().join("out.txt").exists(), exists, "{flag} {tool}");
        // The model always gets its answer and the turn its final text.
        assert_eq!(
            stdout(&output),
            "Done as far as allowed.\n",
            "{flag} {tool}"
        );
        let result = texts(&server.messages()[1], "tool").join("\n");
        if expected == 4 {
            assert!(log.contains("denied: --approval"), "{log}");
            assert!(result.contains("not approved"), "{result}");
        }
    }
    assert!(!Path::new("/tmp/coding-agent-exec-outside.txt").exists());
}

#[test]
fn the_step_limit_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a").unwrap();
    let server = Server::start(vec![
        sse(tool_calls(&[(
            "call_1",
            "fs_read_file",
            json!({ "path": "a.txt" }),
        )])),
        sse(text_answer("never asked for")),
    ]);
    let output = exec(Some(&server), dir.path(), &["--max-steps", "1", "read"], "");
    assert_eq!(code(&output), 3, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--max-steps"),
        "{}",
        stderr(&output)
    );
    assert_eq!(server.messages().len(), 1);
}

#[test]
fn a_failed_turn_exits_1_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![ScriptedResponse::json(
        400,
        r#"{"error":{"message":"model test-model does not exist"}}"#,
    )]);
    let output = exec(Some(&server), dir.path(), &["hello"], "");
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    let log = stderr(&output);
    assert!(log.contains("does not exist"), "{log}");
    assert!(!log.contains("press Enter"), "{log}");
}

#[test]
fn an_output_schema_is_asked_for_and_checked() {
    let schema = json!({
        "type": "object",
        "properties": { "failing": { "type": "integer" } },
        "required": ["failing"],
        "additionalProperties": false
    });
    // (answer, exit code)
    let table = [
        (r#"{"failing": 2}"#, 0),
        (r#"{"failing": "two"}"#, 5),
        ("two", 5),
    ];
    for (answer, expected) in table {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("schema.json");
        std::fs::write(&file, schema.to_string()).unwrap();
        let server = Server::start(vec![sse(text_answer(answer))]);
        let output = exec(
            Some(&server),
            dir.path(),
            &["--output-schema", file.to_str().unwrap(), "--json", "count"],
            "",
        );
        assert_eq!(code(&output), expected, "{answer}: {}", stderr(&output));
        let last: Value = serde_json::from_str(stdout(&output).lines().last().unwrap()).unwrap();
        if expected == 0 {
            assert_eq!(last["output"], json!({ "failing": 2 }));
        } else {
            assert_eq!(last["outcome"], "schema_mismatch");
            let why = last["error"].as_str().unwrap();
            assert!(why.contains("schema") || why.contains("not JSON"), "{why}");
        }
        let body = &server.bodies()[0];
        assert_eq!(body["response_format"]["type"], "json_schema", "{body}");
    }
}

#[test]
fn the_offline_demo_runs_in_exec_mode() {
    let dir = tempfile::tempdir().unwrap();
    // Full auto: the tests run and the fix lands without a question.
    let output = exec(None, dir.path(), &["--full-auto"], "");
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stdout(&output).contains("All 3 tests pass now."),
        "{}",
        stdout(&output)
    );
    assert!(stderr(&output).contains("approved (full-auto)"));
    // Ask: nobody can say yes, so the test run is denied.
    let output = exec(None, dir.path(), &[], "");
    assert_eq!(code(&output), 4, "{}", stderr(&output));
}

#[test]
fn prompt_without_a_terminal_fails_when_the_turn_fails() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![ScriptedResponse::json(
        400,
        r#"{"error":{"message":"no such model"}}"#,
    )]);
    let output = agent_command(&server, &dir.path().join(".agent"))
        .args(["--workspace", dir.path().to_str().unwrap()])
        .args(["--prompt", "hello"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = stdout(&output);
    assert_eq!(code(&output), 1, "{text}");
    assert!(text.contains("no such model"), "{text}");
    assert!(!text.contains("press Enter to retry"), "{text}");
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![]);
    let output = exec(Some(&server), dir.path(), &[], "  \n");
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).contains("exec needs a prompt"));
    let output = exec(
        Some(&server),
        dir.path(),
        &["--output-schema", "/nonexistent.json", "x"],
        "",
    );
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).contains("cannot read /nonexistent.json"));
}

#[test]
fn a_local_server_names_its_model_and_an_over_long_prompt_is_named() {
    let dir = tempfile::tempdir().unwrap();
    // As llama.cpp answers: its model at /v1/models, its context size at
    // /props, and an over-long prompt with 200 and an empty stream.
    let server = Server::start(vec![
        ScriptedResponse::json(
            200,
            r#"{"object":"list","data":[{"id":"SmolLM2-135M-Instruct"}]}"#,
        ),
        ScriptedResponse::json(200, r#"{"default_generation_settings":{"n_ctx":512}}"#),
        sse(String::new()),
    ]);
    let url = server.base_url();
    let prompt = "explain this: ".to_owned() + &"lorem ipsum ".repeat(200);
    let output = exec_with(&[("OPENAI_BASE_URL", &url)], dir.path(), &[&prompt], "");
    let log = stderr(&output);
    assert_eq!(code(&output), 1, "{log}");
    assert!(log.contains("probably too long"), "{log}");
    assert!(log.contains("context size (512 tokens)"), "{log}");
    let bodies = server.bodies();
    assert_eq!(bodies[2]["model"], "SmolLM2-135M-Instruct");
}

/// Sends "hello" to the server at `url`, expects the turn to fail, and
/// returns standard error.
fn failed_hello(url: &str, dir: &Path) -> String {
    let output = exec_with(
        &[("OPENAI_BASE_URL", url), ("AGENTKIT_MODEL", "m")],
        dir,
        &["hello"],
        "",
    );
    let log = stderr(&output);
    assert_eq!(code(&output), 1, "{log}");
    log
}

#[test]
fn connection_refused_is_one_sentence_naming_the_url() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let log = failed_hello(&url, dir.path());
    let line = log
        .lines()
        .find(|l| l.contains("cannot connect"))
        .expect(&log);
    assert_eq!(
        line,
        format!(
            "coding-agent exec: cannot connect to {url}: connection refused (is the server \
             running, at that address?)"
        )
    );
}

#[test]
fn a_base_url_without_v1_gets_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![ScriptedResponse::json(
        404,
        r#"{"detail":"Not Found"}"#,
    )]);
    let url = server.base_url().trim_end_matches("/v1").to_owned();
    let log = failed_hello(&url, dir.path());
    assert!(
        log.contains(&format!("try OPENAI_BASE_URL={url}/v1")),
        "{log}"
    );
}
