//! Never a dead end at the context window, on a pseudo-terminal against the
//! OpenAI-compatible test server: `/clear`, `/compact`, and the automatic
//! recovery when the server refuses a request as too long (the loop
//! summarizes the conversation with the same model and retries).

#[allow(dead_code)] // each test file uses part of the harness
mod server;
#[allow(dead_code)]
mod terminal;

use agentkit_http::testing::ScriptedResponse;
use server::{Server, sse, text_answer, texts};
use terminal::Term;

fn spawn(server: &Server, workspace: &std::path::Path) -> Term {
    let url = server.base_url();
    Term::spawn(
        &["--workspace", workspace.to_str().unwrap()],
        &[("OPENAI_BASE_URL", &url), ("AGENTKIT_MODEL", "test-model")],
        workspace,
    )
}

/// Sends `text` at the prompt and waits for `answer`.
fn exchange(term: &mut Term, text: &str, answer: &str) {
    term.wait_prompt();
    term.enter(text);
    term.wait_for(answer);
}

/// Every user message the server saw in request `index`.
fn users(server: &Server, index: usize) -> Vec<String> {
    texts(&server.messages()[index], "user")
}

#[test]
fn clear_starts_a_fresh_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![
        sse(text_answer("Noted: pineapple.")),
        sse(text_answer("I do not know any word.")),
    ]);
    let mut term = spawn(&server, dir.path());
    term.wait_prompt();
    term.enter("/help");
    term.wait_for("/compact    summarize the conversation so far");
    assert!(
        term.screen()
            .contains("/clear      start a fresh conversation")
    );
    exchange(
        &mut term,
        "remember the word pineapple",
        "Noted: pineapple.",
    );
    term.wait_prompt();
    term.enter("/clear");
    term.wait_for("cleared: the next message starts a fresh conversation");
    exchange(&mut term, "which word?", "I do not know any word.");
    term.wait_for("⇣ conversation cleared: 4 → 2 items");
    assert_eq!(users(&server, 1), ["which word?"]);
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
}

#[test]
fn compact_summarizes_with_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![
        sse(text_answer("One.")),
        sse(text_answer("Two.")),
        sse(text_answer("- the user counted to two")),
        sse(text_answer("Three.")),
    ]);
    let mut term = spawn(&server, dir.path());
    exchange(&mut term, "count one", "One.");
    exchange(&mut term, "count two", "Two.");
    term.wait_prompt();
    term.enter("/compact");
    term.wait_for("the conversation will be summarized before the next model call");
    exchange(&mut term, "count three", "Three.");
    term.wait_for("⇣ conversation summarized");
    // Request 3 asked for the summary of the old exchanges; request 4 sent
    // the summary instead of them.
    let summary_request = users(&server, 2).join("\n");
    assert!(summary_request.contains("count one"), "{summary_request}");
    let last = server.messages()[3].clone();
    let all = serde_json::to_string(&last).unwrap();
    assert!(all.contains("the user counted to two"), "{all}");
    assert!(!users(&server, 3).iter().any(|u| u == "count one"), "{all}");
    assert_eq!(users(&server, 3).last().unwrap(), "count three");
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
}

#[test]
fn a_request_refused_as_too_long_is_summarized_and_retried() {
    let dir = tempfile::tempdir().unwrap();
    let too_long = ScriptedResponse::json(
        400,
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    );
    let server = Server::start(vec![
        sse(text_answer("One.")),
        sse(text_answer("Two.")),
        too_long,
        sse(text_answer("- the user counted to two")),
        sse(text_answer("Three.")),
    ]);
    let mut term = spawn(&server, dir.path());
    exchange(&mut term, "count one", "One.");
    exchange(&mut term, "count two", "Two.");
    exchange(&mut term, "count three", "Three.");
    term.wait_for("⇣ conversation summarized");
    let screen = term.screen();
    assert!(!screen.contains("press Enter to retry"), "{screen}");
    assert_eq!(server.messages().len(), 5);
    assert_eq!(users(&server, 4).last().unwrap(), "count three");
    assert!(!users(&server, 4).iter().any(|u| u == "count one"));
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
}
