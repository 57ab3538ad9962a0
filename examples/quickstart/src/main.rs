//! Offline quickstart: an agent loop driven by a scripted model.
//!
//! The "model" counts the words of a sentence with one tool, then saves a
//! note with another. Both are typed tools: an argument struct deriving
//! `Deserialize` and `JsonSchema`, and an async function. Saving proposes a
//! permission request, so it needs the user's approval, asked at the
//! terminal (with no terminal attached, it is approved automatically).
//! Every event is printed as it happens, and the final transcript at the end.
//!
//! Run it with `cargo run -p quickstart`.

use agentkit_core::{FinishReason, Item};
use agentkit_loop::{AgentEvent, LoopInterrupt, LoopObserver, LoopStep, SessionConfig};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tools_core::{
    PermissionRequest, SafeDefaultPermissions, ToolError, ToolRegistry, TypedTool,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncBufReadExt;

/// The arguments of `count_words`; the doc comments become the schema's
/// descriptions.
#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// The text whose words to count.
    text: String,
}

/// A typed output: the model receives it as JSON.
#[derive(Serialize)]
struct WordCount {
    words: usize,
}

/// The arguments of `save_note`.
#[derive(Deserialize, JsonSchema)]
struct NoteArgs {
    /// The note to keep.
    note: String,
}

/// `count_words` only computes: it proposes no permission request and runs
/// freely.
fn count_words() -> TypedTool {
    TypedTool::new(
        "count_words",
        "Counts the words of a text.",
        |args: CountArgs, _ctx| async move {
            Ok::<_, ToolError>(WordCount {
                words: args.text.split_whitespace().count(),
            })
        },
    )
}

/// `save_note` changes state, so it proposes a `notes.write` request; the
/// safe default checker asks the user about it.
fn save_note(notes: Arc<Mutex<Vec<String>>>) -> TypedTool {
    TypedTool::new(
        "save_note",
        "Saves a note for later.",
        move |args: NoteArgs, _ctx| {
            let notes = notes.clone();
            async move {
                notes.lock().expect("notes lock").push(args.note);
                Ok::<_, ToolError>("saved")
            }
        },
    )
    .with_requests(|args: &NoteArgs| {
        Ok(vec![PermissionRequest::custom(
            "notes.write",
            format!("save the note {:?}", args.note),
            json!({}),
        )])
    })
}

struct PrintEvents;

impl LoopObserver for PrintEvents {
    fn handle_event(&self, event: AgentEvent) {
        match event {
            AgentEvent::ContentDelta {
                delta: agentkit_core::Delta::AppendText { chunk, .. },
            } => {
                println!("  model> {chunk}")
            }
            AgentEvent::ToolCallRequested { call } => {
                println!("  call   {} {}", call.name, call.input)
            }
            AgentEvent::ToolResultReceived { result } => {
                println!("  result {}", result.output.to_text())
            }
            AgentEvent::ModelCallStarted { turn_id, .. } => println!("[{turn_id}]"),
            _ => {}
        }
    }
}

async fn ask(question: &str) -> bool {
    if !std::io::stdin().is_terminal() {
        println!("{question} [y/N] y (no terminal: approved automatically)");
        return true;
    }
    println!("{question} [y/N]");
    let mut line = String::new();
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    stdin.read_line(&mut line).await.is_ok() && line.trim().eq_ignore_ascii_case("y")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sentence = "the quick brown fox jumps over the lazy dog";
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .say("Let me count.")
            .call("call-1", "count_words", json!({ "text": sentence }))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::new()
            .call("call-2", "save_note", json!({ "note": "9 words" }))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::text("The sentence has 9 words."),
    ]);
    let notes = Arc::new(Mutex::new(Vec::new()));
    let agent = agentkit_loop::Agent::builder()
        .model(model)
        .add_tool_source(
            ToolRegistry::new()
                .with(count_words())
                .with(save_note(notes.clone())),
        )
        // Reads and pure functions run; side effects (here `notes.write`) ask.
        .permissions(SafeDefaultPermissions::new())
        .observer(PrintEvents)
        .transcript(vec![Item::system("You count words and keep notes.")])
        .input(vec![Item::user(format!(
            "How many words are in \"{sentence}\"? Note it down."
        ))])
        .build()?;
    let mut driver = agent.start(SessionConfig::new("quickstart")).await?;

    loop {
        match driver.next().await? {
            LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) => {
                if ask(&format!("Allow: {}?", pending.request.summary)).await {
                    pending.approve(&mut driver)?;
                } else {
                    pending.deny_with_reason(&mut driver, "the user said no")?;
                }
            }
            // No tool here asks the user anything mid-call.
            LoopStep::Interrupt(LoopInterrupt::Question(pending)) => {
                pending.decline(&mut driver)?
            }
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
            LoopStep::Interrupt(LoopInterrupt::AwaitingInput(_)) => break,
            // Later kinds of pause: nothing to do for a cooperative one; a
            // blocking one makes the next `next()` fail.
            LoopStep::Interrupt(_) => {}
            LoopStep::Finished(result) => {
                println!(
                    "finished: {:?}, {} items this turn",
                    result.finish_reason,
                    result.items.len()
                );
                break;
            }
        }
    }
    agentkit_core::validate_transcript(&driver.transcript().to_vec())?;
    println!("notes saved: {:?}", notes.lock().expect("notes lock"));
    println!(
        "\ntranscript:\n{}",
        serde_json::to_string_pretty(&driver.snapshot().transcript)?
    );
    Ok(())
}
