//! The agent against an OpenAI-compatible server on 127.0.0.1, on a
//! pseudo-terminal: approvals, steering during a slow tool, urgent
//! messages, Ctrl-C mid-stream, and resuming a killed session.

#[allow(dead_code)] // each test file uses part of the harness
mod server;
#[allow(dead_code)]
mod terminal;

use agentkit_http::testing::{Ending, ScriptedResponse};
use serde_json::json;
use server::{Server, sse, text_answer, text_without_usage, texts, tool_calls};
use std::time::Duration;
use terminal::Term;

fn spawn(server: &Server, workspace: &std::path::Path, extra: &[&str]) -> Term {
    let url = server.base_url();
    let mut args = vec!["--workspace", workspace.to_str().unwrap()];
    args.extend_from_slice(extra);
    Term::spawn(
        &args,
        &[("OPENAI_BASE_URL", &url), ("AGENTKIT_MODEL", "test-model")],
        workspace,
    )
}

/// The agent with `--yes` against a server whose model runs `command`
/// with `shell_exec`, then answers `then`.
fn a_command_then(command: &str, then: String) -> (tempfile::TempDir, Server, Term) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![
        sse(tool_calls(&[(
            "call_1",
            "shell_exec",
            json!({ "command": command }),
        )])),
        sse(then),
    ]);
    let term = spawn(&server, dir.path(), &["--yes"]);
    (dir, server, term)
}

#[test]
fn prompt_tool_call_approval_result() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![
        sse(tool_calls(&[(
            "call_1",
            "fs_write_file",
            json!({ "path": "notes.txt", "content": "remember the milk\n" }),
        )])),
        sse(text_answer("I wrote notes.txt for you.")),
    ]);
    let mut term = spawn(&server, dir.path(), &[]);
    term.wait_for("test-model at http://127.0.0.1");
    term.enter("write a note about the milk");
    term.wait_for("> write a note about the milk");
    term.wait_for("● fs_write_file notes.txt");
    term.wait_for("  + remember the milk");
    term.wait_for("allow? [y]es / [n]o / [a]lways for this session");
    assert!(!dir.path().join("notes.txt").exists());
    term.type_text("y");
    term.wait_for("I wrote notes.txt for you.");
    // Usage of both model calls: 100 + 120 in, 20 + 30 out.
    term.wait_for("── 220 in · 50 out · cost n/a this turn");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "remember the milk\n"
    );
    let messages = server.messages();
    assert_eq!(messages.len(), 2);
    let results = texts(&messages[1], "tool");
    assert_eq!(results.len(), 1, "{:?}", messages[1]);
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
}

#[test]
fn a_message_typed_during_a_slow_tool_is_injected_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![
        sse(tool_calls(&[(
            "call_1",
            "shell_exec",
            json!({ "command": "sleep 3; echo slept" }),
        )])),
        sse(text_answer("Done, and I will check the README too.")),
        sse(text_answer("Summary: it slept.")),
    ]);
    let mut term = spawn(&server, dir.path(), &["--yes"]);
    term.wait_for("test-model");
    term.wait_prompt();
    term.enter("run the slow thing");
    // While the command runs: the spinner names it, and the input line is
    // live.
    term.wait_for("shell_exec $ sleep 3; echo slept  ");
    term.enter("also check the README");
    term.wait_for("⧗ queued #1 (steer): also check the README");
    term.enter("+then summarize it");
    term.wait_for("⧗ queued follow-up #2: then summarize it (sent when this turn is done)");
    term.wait_for("✓ exit code 0 · slept");
    term.wait_for("↳ injected #1 after the tool round: also check the README");
    term.wait_for("Done, and I will check the README too.");
    // The follow-up waited for the model to finish, then went in the same
    // turn (point B).
    term.wait_for("↳ injected #2 when the model finished: then summarize it");
    term.wait_for("Summary: it slept.");
    let screen = term.screen();
    let queued = screen.find("⧗ queued #1").unwrap();
    let result = screen.find("✓ exit code 0 · slept").unwrap();
    let injected = screen.find("↳ injected #1").unwrap();
    assert!(queued < result && result < injected, "{screen}");

    // The model saw the tool result, then the message, in that order.
    let messages = server.messages();
    let second = &messages[1];
    let roles: Vec<&str> = second.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles[roles.len() - 2..], ["tool", "user"], "{second:?}");
    assert!(
        texts(second, "user")
            .last()
            .unwrap()
            .contains("also check the README")
    );
    let third = &messages[2];
    assert!(
        texts(third, "user")
            .last()
            .unwrap()
            .contains("then summarize it")
    );
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
}

#[test]
fn an_urgent_message_skips_the_remaining_tools() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![
        sse(tool_calls(&[
            (
                "call_1",
                "shell_exec",
                json!({ "command": "sleep 2; echo one" }),
            ),
            (
                "call_2",
                "shell_exec",
                json!({ "command": "echo two > two.txt" }),
            ),
            (
                "call_3",
                "shell_exec",
                json!({ "command": "echo three > three.txt" }),
            ),
        ])),
        sse(text_answer("Stopped as you asked.")),
    ]);
    let mut term = spawn(&server, dir.path(), &["--yes"]);
    term.wait_for("test-model");
    term.wait_prompt();
    term.enter("do three things");
    term.wait_for("shell_exec $ sleep 2; echo one  ");
    term.enter("!stop, do not write any files");
    term.wait_for("⧗ queued #1 (urgent): stop, do not write any files");
    term.wait_for("↳ injected #1 mid-round");
    term.wait_for("Stopped as you asked.");
    let screen = term.screen();
    assert!(
        screen.contains("remaining tool call(s) skipped"),
        "{screen}"
    );
    assert!(!dir.path().join("two.txt").exists());
    assert!(!dir.path().join("three.txt").exists());

    // Every call is answered; the skipped ones say so; then the message.
    let messages = server.messages();
    let second = &messages[1];
    let results = texts(second, "tool");
    assert_eq!(results.len(), 3, "{second:?}");
    assert!(
        results[1].contains("skipped") && results[2].contains("skipped"),
        "{results:?}"
    );
    assert!(
        texts(second, "user")
            .last()
            .unwrap()
            .contains("stop, do not write any files")
    );
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
}

#[test]
fn ctrl_c_mid_stream_cancels_and_the_next_prompt_works() {
    let dir = tempfile::tempdir().unwrap();
    let long = "word ".repeat(400);
    let server = Server::start(vec![
        sse(text_answer(&format!("Starting a long answer: {long}")))
            .split_every(60)
            .with_pause(Duration::from_millis(100)),
        sse(text_answer("Second answer, after the cancelled one.")),
    ]);
    let mut term = spawn(&server, dir.path(), &[]);
    term.wait_for("test-model");
    term.wait_prompt();
    term.enter("tell me a long story");
    term.wait_for("Starting a long answer:");
    term.ctrl_c();
    term.wait_for("cancelling the turn…");
    term.wait_for("turn cancelled; the transcript is intact.");
    term.wait_prompt();
    term.enter("and now something short");
    term.wait_for("Second answer, after the cancelled one.");
    let messages = server.messages();
    assert_eq!(messages.len(), 2);
    let users = texts(&messages[1], "user");
    assert_eq!(
        users.last().map(String::as_str),
        Some("and now something short")
    );
    // A single Ctrl-C at the prompt does not quit; a second one does.
    term.wait_prompt();
    term.ctrl_c();
    term.wait_for("(Ctrl-C again or Ctrl-D to quit)");
    term.ctrl_c();
    assert!(term.wait_exit());
}

fn wait_for_file(path: &std::path::Path) {
    let start = std::time::Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{path:?} never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `coding-agent --list` on the state directory of `dir`.
fn list(dir: &std::path::Path) -> String {
    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_coding-agent"))
        .arg("--list")
        .env("CODING_AGENT_STATE_DIR", dir.join("state"))
        .output()
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    String::from_utf8_lossy(&listed.stdout).into_owned()
}

#[test]
fn resume_after_the_process_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![
        sse(text_answer("Noted: pineapple.")),
        sse(tool_calls(&[(
            "call_1",
            "shell_exec",
            json!({ "command": "echo started > started.txt; sleep 5; echo slow" }),
        )])),
        sse(tool_calls(&[(
            "call_2",
            "fs_write_file",
            json!({ "path": "word.txt", "content": "pineapple\n" }),
        )])),
        sse(text_answer("Saved the word to word.txt.")),
    ]);

    // First process: one turn, then killed (SIGKILL) while a command of
    // the second turn runs.
    let mut term = spawn(&server, dir.path(), &[]);
    term.wait_for("test-model");
    term.wait_prompt();
    term.enter("remember the word pineapple");
    term.wait_for("Noted: pineapple.");
    term.wait_for("── 120 in · 30 out");
    term.wait_prompt();
    term.enter("save it to a file");
    term.wait_for("allow? [y]es");
    term.type_text("y");
    term.wait_for("shell_exec $ echo started > started.txt; sleep 5; echo slow  ");
    // Killed once the command surely runs.
    wait_for_file(&dir.path().join("started.txt"));
    term.kill();
    drop(term);

    // The list shows the session: its title, when, its usage so far.
    let listed = list(dir.path());
    let row = listed
        .lines()
        .find(|l| l.contains("remember the word pineapple"))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        row.contains("just now") && row.contains(" 150 "),
        "{listed}"
    );

    // Second process: the turn goes on where it stopped. The command that
    // was running when the process died is answered as interrupted (never
    // run twice behind the model's back), and the model is called again,
    // which asks to write the file. Killed again at that approval.
    let mut term = spawn(&server, dir.path(), &["--resume"]);
    term.wait_for("resumed session");
    term.wait_for("> remember the word pineapple");
    term.wait_for("allow? [y]es");
    term.wait_for("  + pineapple");
    term.kill();
    drop(term);
    assert_eq!(server.messages().len(), 3);

    // Third process: the pending approval is asked again; the turn ends.
    let mut term = spawn(&server, dir.path(), &["--resume"]);
    term.wait_for("resumed session");
    term.wait_for("(an approval is waiting)");
    term.wait_for("allow? [y]es");
    term.type_text("y");
    term.wait_for("Saved the word to word.txt.");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("word.txt")).unwrap(),
        "pineapple\n"
    );
    // The model saw the whole conversation, each call with its answer.
    let messages = server.messages();
    assert_eq!(messages.len(), 4);
    let last = &messages[3];
    assert!(texts(last, "user").iter().any(|t| t.contains("pineapple")));
    assert!(
        texts(last, "assistant")
            .iter()
            .any(|t| t.contains("Noted: pineapple."))
    );
    let results = texts(last, "tool");
    assert_eq!(results.len(), 2, "{last:?}");
    assert!(results[0].contains("interrupted"), "{results:?}");
    // The request right after the crash sent the same history plus that
    // answer: nothing written before the kill was lost.
    assert_eq!(messages[2][..], last[..messages[2].len()]);
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
    // Closed cleanly: a new process takes the session at once.
    let mut term = spawn(&server, dir.path(), &["--resume"]);
    term.wait_for("resumed session");
    term.wait_prompt();
    assert!(!term.screen().contains("still leased"), "{}", term.screen());
    term.ctrl_d();
    assert!(term.wait_exit());
}

#[test]
fn errors_and_the_step_limit_never_end_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![
        ScriptedResponse::json(
            400,
            r#"{"error":{"message":"the server refused this","type":"invalid_request_error"}}"#,
        ),
        sse(tool_calls(&[(
            "call_1",
            "shell_exec",
            json!({ "command": "echo one" }),
        )])),
        sse(tool_calls(&[(
            "call_2",
            "shell_exec",
            json!({ "command": "echo two" }),
        )])),
        sse(text_answer("All done.")),
    ]);
    let mut term = spawn(&server, dir.path(), &["--yes", "--max-steps", "1"]);
    term.wait_for("test-model");
    term.wait_prompt();
    term.enter("count to two");
    term.wait_for("the server refused this");
    term.wait_for("the conversation is kept: press Enter to retry, or type a message");
    // Enter retries the same call.
    term.enter("");
    term.wait_for("✓ exit code 0 · one");
    term.wait_for("step limit: 1 tool rounds this turn.");
    term.enter("");
    term.wait_for("✓ exit code 0 · two");
    term.wait_count("step limit: 1 tool rounds this turn.", 2);
    // A message typed at the step limit goes with the next call.
    term.enter("keep going please");
    term.wait_for("All done.");
    let messages = server.messages();
    assert_eq!(messages.len(), 4);
    // The failed request and its retry sent the same conversation.
    assert_eq!(messages[0], messages[1]);
    assert_eq!(
        texts(&messages[3], "user").last().map(String::as_str),
        Some("keep going please")
    );
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
}

#[test]
fn ctrl_c_mid_tool_kills_the_command_and_answers_the_call() {
    let (dir, server, mut term) = a_command_then(
        "sleep 30; echo late > late.txt",
        text_answer("Fine, I stopped."),
    );
    term.wait_for("test-model");
    term.wait_prompt();
    term.enter("wait a long time");
    term.wait_for("shell_exec $ sleep 30; echo late > late.txt  ");
    term.ctrl_c();
    // Well within the command's 30 s: the whole process group is killed.
    term.wait_for("turn cancelled; the transcript is intact.");
    term.wait_prompt();
    term.enter("never mind");
    term.wait_for("Fine, I stopped.");
    assert!(!dir.path().join("late.txt").exists());
    // The cancelled call was answered before the next message.
    let messages = server.messages();
    let second = &messages[1];
    let roles: Vec<&str> = second.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(
        roles[roles.len() - 3..],
        ["assistant", "tool", "user"],
        "{second:?}"
    );
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
}

#[test]
fn a_network_error_mid_stream_keeps_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let broken = text_answer("Half of an answer that never arrives whole");
    let cut = broken.find("never").unwrap();
    let server = Server::start(vec![
        // The connection breaks in the middle of the stream: the words up
        // to "never" arrive, then nothing.
        sse(broken[..cut].to_owned()).ending(Ending::Abort),
        sse(text_answer("The whole answer, this time.")),
        sse(text_answer("Yes, I remember.")),
    ]);
    let mut term = spawn(&server, dir.path(), &[]);
    term.wait_for("test-model");
    term.wait_prompt();
    term.enter("answer me");
    term.wait_for("error: ");
    term.wait_for("the conversation is kept: press Enter to retry, or type a message");
    term.wait_prompt();
    // Enter retries the same request.
    term.enter("");
    term.wait_for("The whole answer, this time.");
    // The partial answer is marked as cut, and the error and the retried
    // answer come below it, each on its own line.
    let screen = term.screen();
    let partial = screen.find("Half of an answer that").unwrap();
    let cut = screen.find("✂ cut off here").unwrap();
    let error = screen.find("error: ").unwrap();
    let retried = screen.find("The whole answer, this time.").unwrap();
    assert!(partial < cut && cut < error && error < retried, "{screen}");
    assert!(
        screen
            .lines()
            .any(|l| l.trim_start().starts_with("The whole answer")),
        "{screen}"
    );
    term.wait_prompt();
    term.enter("do you remember my question?");
    term.wait_for("Yes, I remember.");
    let messages = server.messages();
    assert_eq!(messages.len(), 3);
    // The broken call and its retry sent the same conversation; the next
    // request holds the whole exchange.
    assert_eq!(messages[0], messages[1]);
    assert_eq!(
        texts(&messages[2], "user"),
        ["answer me", "do you remember my question?"]
    );
    assert!(
        texts(&messages[2], "assistant")
            .iter()
            .any(|t| t == "The whole answer, this time.")
    );
    // At the prompt: a Ctrl-D while the step back to it is saved is not
    // read as quitting.
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
}

#[test]
fn queued_messages_show_one_per_line() {
    let (_dir, _server, mut term) =
        a_command_then("sleep 3; echo slept", text_without_usage("Noted both."));
    term.wait_prompt();
    term.enter("run the slow thing");
    term.wait_for("shell_exec $ sleep 3; echo slept  ");
    term.enter("first note");
    term.wait_for("⧗ queued #1 (steer): first note");
    term.enter("second note");
    term.wait_for("⧗ queued #2 (steer): second note");
    term.wait_for("Noted both.");
    // Both went in together, each on its own line.
    term.wait_for("↳ injected #1, #2 after the tool round:");
    let screen = term.screen();
    assert!(
        screen.contains("\n    first note\n    second note\n"),
        "{screen}"
    );
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
}

#[test]
fn a_server_without_usage_shows_unknown_counts() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![sse(text_without_usage("Hello."))]);
    let mut term = spawn(&server, dir.path(), &[]);
    term.wait_prompt();
    term.enter("hi");
    term.wait_for("── ? in · ? out (not reported) · cost n/a this turn │ session ? tokens");
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
}
