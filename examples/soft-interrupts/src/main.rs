//! Offline example of soft interrupts.
//!
//! A scripted "model" works through slow tool rounds. Meanwhile another task
//! plays the user: it types a normal message (injected after the round that
//! is running, point D), then an urgent one (the remaining calls of the next
//! round are skipped, point C). Events are printed as they happen.
//!
//! Run it with `cargo run -p soft-interrupts`.

use agentkit_core::{FinishReason, Item};
use agentkit_loop::{Agent, AgentEvent, LoopInterrupt, LoopObserver, LoopStep, SessionConfig};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tools_core::{ToolError, ToolRegistry, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use std::time::{Duration, Instant};

/// The arguments of `edit_file`.
#[derive(Deserialize, JsonSchema)]
struct EditArgs {
    /// The file to edit.
    path: String,
}

/// Pretends to edit a file, slowly; stops when the turn is cancelled.
fn edit_file() -> TypedTool {
    TypedTool::new(
        "edit_file",
        "Edits a file.",
        |args: EditArgs, ctx| async move {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(300)) => Ok(format!("edited {}", args.path)),
                _ = ctx.cancellation.cancelled() => Err(ToolError::Cancelled),
            }
        },
    )
}

struct Printer(Instant);

impl LoopObserver for Printer {
    fn handle_event(&self, event: AgentEvent) {
        let at = self.0.elapsed().as_millis();
        match event {
            AgentEvent::ToolCallRequested { call } => {
                println!("{at:>5} ms  call     {} {}", call.name, call.input)
            }
            AgentEvent::ToolResultReceived { result } => {
                let tag = if result.is_error { "error " } else { "result" };
                println!(
                    "{at:>5} ms  {tag}   {}: {}",
                    result.call_id,
                    result.output.to_text()
                )
            }
            AgentEvent::SoftInterruptInjected {
                point,
                item,
                skipped_tools,
                ..
            } => println!(
                "{at:>5} ms  injected at {point:?} ({skipped_tools} tools skipped): {:?}",
                item.text_content()
            ),
            AgentEvent::ModelCallStarted { turn_id, .. } => {
                println!("{at:>5} ms  model    {turn_id}")
            }
            _ => {}
        }
    }
}

fn round(first: usize, paths: &[&str]) -> ScriptedTurn {
    let mut turn = ScriptedTurn::new().say("Working on it.");
    for (i, path) in paths.iter().enumerate() {
        turn = turn.call(
            &format!("call-{}", first + i),
            "edit_file",
            json!({ "path": path }),
        );
    }
    turn.finish(FinishReason::ToolCall)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = ScriptedModel::new([
        round(1, &["src/lib.rs", "src/parser.rs"]),
        round(3, &["tests/parser.rs", "tests/lexer.rs", "tests/e2e.rs"]),
        ScriptedTurn::text("Understood: I left the tests alone and kept the change concise."),
    ]);
    let agent = Agent::builder()
        .model(model)
        .add_tool_source(ToolRegistry::new().with(edit_file()))
        .observer(Printer(Instant::now()))
        .input(vec![Item::user("Refactor the parser.")])
        .build()?;
    let mut driver = agent.start(SessionConfig::new("soft-interrupts")).await?;

    let queue = driver.soft_interrupts();
    let user = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        println!("  user types: \"also, keep it concise\"");
        queue.push_text("Also, keep it concise.");
        tokio::time::sleep(Duration::from_millis(700)).await;
        println!("  user types (urgent): \"stop, don't touch the tests\"");
        queue.push_urgent(Item::user("Stop, don't touch the tests!"));
    });

    loop {
        match driver.next().await? {
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
            LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) => {
                pending.approve(&mut driver)?
            }
            LoopStep::Interrupt(LoopInterrupt::Question(pending)) => {
                pending.decline(&mut driver)?
            }
            LoopStep::Interrupt(LoopInterrupt::AwaitingInput(_)) => break,
            // Later kinds of pause: nothing to do for a cooperative one; a
            // blocking one makes the next `next()` fail.
            LoopStep::Interrupt(_) => {}
            LoopStep::Finished(result) => {
                println!(
                    "finished: {}",
                    result
                        .items
                        .last()
                        .map(Item::text_content)
                        .unwrap_or_default()
                );
                break;
            }
        }
    }
    user.await?;
    agentkit_core::validate_transcript(&driver.transcript().to_vec())?;
    println!(
        "transcript is valid: {} items, every tool call answered",
        driver.transcript().len()
    );
    Ok(())
}
