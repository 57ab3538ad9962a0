//! A question an MCP server asks during a tool call (elicitation), in each
//! place the coding agent runs, against the MCP reference server (installed
//! by `cargo xtask fixtures`) and the OpenAI-compatible test server:
//!
//! - on a terminal (a pty) the user fills the form in field by field, with
//!   defaults, choices and re-asking after a wrong value, Esc declines, and
//!   a URL question is shown and accepted;
//! - `exec` mode has nobody to ask: the question is declined, said so on
//!   standard error and as a `question` event line with `--json`.
//!
//! What the server got back is read from the tool's result, which the
//! server writes from the answer it received.

#[allow(dead_code)] // each test file uses part of the harness
mod server;
#[allow(dead_code)]
mod terminal;

use serde_json::{Value, json};
use server::{Server, configure_reference_mcp, sse, text_answer, texts, tool_calls};
use std::process::Stdio;
use terminal::Term;

/// The reference server's tool that asks a 13-field form.
const ASK: &str = "mcp_ev_trigger-elicitation-request";

/// The text of every tool result the model read in request `n`.
fn results(server: &Server, n: usize) -> String {
    texts(&server.messages()[n], "tool").join("\n")
}

/// On a terminal: the form is asked field by field. Enter on a required
/// field without a default, a word for a yes/no field and a word for an
/// integer are refused with the reason and asked again; Enter takes the
/// default; a choice is picked by number or by title; a value outside the
/// schema's bounds or format (an integer over its maximum, an address
/// without a domain, a 13th month) is refused at its field. The server gets
/// the answers with the defaults filled in. A second question is declined
/// with Esc.
#[test]
fn the_terminal_asks_the_form_field_by_field() {
    let dir = tempfile::tempdir().unwrap();
    configure_reference_mcp(dir.path(), "ev");
    let server = Server::start(vec![
        sse(tool_calls(&[("call_1", ASK, json!({}))])),
        sse(text_answer("Thanks, Ada.")),
        sse(tool_calls(&[("call_2", ASK, json!({}))])),
        sse(text_answer("You declined.")),
        sse(tool_calls(&[(
            "call_3",
            "mcp_ev_trigger-url-elicitation",
            json!({ "url": "https://example.com/consent", "elicitationId": "e-1" }),
        )])),
        sse(text_answer("Signed in.")),
    ]);
    let url = server.base_url();
    let mut term = Term::spawn(
        &[
            "--workspace",
            dir.path().to_str().unwrap(),
            // Approvals are not what this is about; questions are still asked.
            "--yes",
        ],
        &[("OPENAI_BASE_URL", &url), ("AGENTKIT_MODEL", "test-model")],
        dir.path(),
    );
    term.wait_prompt();
    term.enter("who am I?");
    term.wait_for("MCP server ev asks:");
    term.wait_for("Please provide inputs for the following fields:");
    // The schema's fields, in its order: what is typed at each (an empty
    // string is Enter), and the refusals wrong values get first.
    let answers: &[(&str, &[&str])] = &[
        ("name", &["", "Ada Lovelace"]),
        ("check", &["maybe", "y"]),
        ("firstLine", &[""]),
        ("email", &["ada", ""]),
        ("homepage", &[""]),
        ("birthdate", &["1815-13-10", ""]),
        ("integer", &["many", "500", "7"]),
        ("number", &[""]),
        ("untitledSingleSelectEnum", &["3"]),
        ("untitledMultipleSelectEnum", &[""]),
        ("titledSingleSelectEnum", &["Wonder Woman"]),
        ("titledMultipleSelectEnum", &[""]),
        ("legacyTitledEnum", &["Dogs"]),
    ];
    for (field, typed) in answers {
        for text in *typed {
            term.wait_prompt_starting(&format!("  {field}"));
            term.enter(text);
        }
    }
    term.wait_for("Thanks, Ada.");
    let screen = term.screen();
    // What the user saw: descriptions, types, defaults, choices, reasons.
    for shown in [
        "name — String: Your full, legal name (text, required)",
        "this field is required; try again",
        "\"maybe\": answer yes or no; try again",
        "\"many\" is not a whole number; try again",
        "the field \"email\" is not a valid email; try again",
        "the field \"birthdate\" is not a valid date; try again",
        "the field \"integer\" must be at most 100; try again",
        "integer — Integer: Your favorite integer",
        "choices: 1) Monica  2) Rachel  3) Joey",
        "3) Wonder Woman (hero-3)",
        "you: sent",
    ] {
        assert!(
            screen.contains(shown),
            "{shown:?} not on the screen:\n{screen}"
        );
    }
    let got = results(&server, 1);
    assert!(got.contains("- Name: Ada Lovelace"), "{got}");
    assert!(got.contains("- Agreed to terms: true"), "{got}");
    assert!(got.contains("- Favorite Integer: 7"), "{got}");
    // Defaults the user took with Enter reached the server.
    assert!(got.contains("- Favorite Number: 3.14"), "{got}");
    assert!(got.contains("It was a dark and stormy night."), "{got}");
    // Choices by number and by title, sent as their values.
    assert!(got.contains("Joey"), "{got}");
    assert!(got.contains("hero-3"), "{got}");
    assert!(got.contains("pet-2"), "{got}");

    // The second question: Esc declines it.
    term.wait_prompt();
    term.enter("ask again");
    term.wait_prompt_starting("  name");
    term.type_text("\x1b");
    term.wait_for("You declined.");
    assert!(term.screen().contains("you: declined"));
    let got = results(&server, 3);
    assert!(got.contains("declined"), "{got}");

    // A URL question: the address is shown, `o` accepts.
    term.wait_prompt();
    term.enter("sign me in");
    term.wait_for("open: https://example.com/consent");
    term.wait_prompt_starting("go there? [o]pen / [d]ecline");
    term.type_text("o");
    term.wait_for("Signed in.");
    let got = results(&server, 5);
    assert!(
        got.contains("User completed the URL elicitation flow"),
        "{got}"
    );
    term.wait_prompt();
    term.ctrl_d();
    assert!(term.wait_exit());
}

/// `exec` has nobody to ask: the question is declined, on standard error
/// and (with `--json`) as a `question` event; the turn goes on and
/// completes.
#[test]
fn exec_declines_a_question_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    configure_reference_mcp(dir.path(), "ev");
    let server = Server::start(vec![
        sse(tool_calls(&[("call_1", ASK, json!({}))])),
        sse(text_answer("Nobody answered.")),
    ]);
    let output = agentkit_testkit::process::output_within(
        server::agent_command(&server, dir.path())
            .args(["exec", "--json", "--full-auto", "who am I?"])
            .args(["--workspace", dir.path().to_str().unwrap()])
            .stdin(Stdio::null()),
        std::time::Duration::from_secs(120),
        "coding-agent exec",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("declined a question from MCP server ev (exec mode asks nobody)"),
        "{stderr}"
    );
    let events: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let question = events
        .iter()
        .find(|e| e["event"] == "question")
        .unwrap_or_else(|| panic!("no question event:\n{stdout}"));
    assert_eq!(question["answer"], "declined");
    assert_eq!(question["call_id"], "call_1");
    assert_eq!(question["tool"], ASK);
    assert_eq!(question["question"]["source"], "ev");
    assert_eq!(
        question["question"]["message"],
        "Please provide inputs for the following fields:"
    );
    assert_eq!(question["question"]["kind"]["mode"], "form");
    let finished = events.last().unwrap();
    assert_eq!(finished["event"], "exec_finished");
    assert_eq!(finished["questions_declined"], 1);
    assert_eq!(finished["outcome"], "completed");
    // The server heard the decline.
    let got = results(&server, 1);
    assert!(got.contains("User declined"), "{got}");
}
