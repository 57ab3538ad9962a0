//! Offline quickstart: an agent loop driven by a scripted model.
//!
//! The "model" counts the words of a sentence with one tool, then saves a
//! note with another. Saving needs the user's approval, asked at the
//! terminal (with no terminal attached, it is approved automatically).
//! Every event is printed as it happens, and the final transcript at the end.
//!
//! Run it with `cargo run -p quickstart`.

use agentkit_core::{FinishReason, Item};
use agentkit_loop::{AgentEvent, LoopInterrupt, LoopObserver, LoopStep, SessionConfig};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tools_core::{
    ApprovalReason, PermissionChecker, PermissionDecision, PermissionRequest, Tool, ToolContext,
    ToolError, ToolRegistry, ToolRequest, ToolResult, ToolSpec, approval_for,
};
use serde_json::json;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncBufReadExt;

struct CountWords;

#[async_trait::async_trait]
impl Tool for CountWords {
    fn spec(&self) -> Arc<ToolSpec> {
        let schema = json!({ "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] });
        Arc::new(
            ToolSpec::new("count_words", "Counts the words of a text.", schema)
                .expect("valid name"),
        )
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let text = request.input["text"]
            .as_str()
            .ok_or_else(|| ToolError::InvalidInput("`text` must be a string".into()))?;
        Ok(ToolResult::new(text.split_whitespace().count().to_string()))
    }
}

struct SaveNote(Arc<Mutex<Vec<String>>>);

#[async_trait::async_trait]
impl Tool for SaveNote {
    fn spec(&self) -> Arc<ToolSpec> {
        let schema = json!({ "type": "object", "properties": { "note": { "type": "string" } }, "required": ["note"] });
        Arc::new(ToolSpec::new("save_note", "Saves a note for later.", schema).expect("valid name"))
    }

    fn proposed_requests(
        &self,
        input: &serde_json::Value,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        Ok(vec![PermissionRequest::custom(
            "notes.write",
            format!("save the note {}", input["note"]),
            json!({}),
        )])
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let note = request.input["note"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        self.0.lock().expect("notes lock").push(note);
        Ok(ToolResult::new("saved"))
    }
}

/// Writing notes needs the user's say-so; everything else is allowed.
struct AskBeforeWriting;

impl PermissionChecker for AskBeforeWriting {
    fn evaluate(&self, request: &PermissionRequest) -> PermissionDecision {
        if request.kind.ends_with(".write") {
            PermissionDecision::RequireApproval(approval_for(
                request,
                ApprovalReason::PolicyRequiresConfirmation,
            ))
        } else {
            PermissionDecision::Allow
        }
    }
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
            AgentEvent::TurnStarted { turn_id, .. } => println!("[{turn_id}]"),
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
                .with(CountWords)
                .with(SaveNote(notes.clone())),
        )
        .permissions(AskBeforeWriting)
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
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
            LoopStep::Interrupt(LoopInterrupt::AwaitingInput(_)) => break,
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
