//! Offline example: a parent agent delegating to sub-agents.
//!
//! The lead agent has two sub-agents as tools. `researcher` reads the
//! project's notes with the read-only filesystem tools; `scribe` writes a
//! summary file, which the default permissions make ask first: the approval
//! surfaces to this program (the parent's host) naming the sub-agent, and is
//! given here. Every model is scripted, so it runs offline and the same way
//! every time. Events of the sub-agents are printed indented by depth, and
//! the lead's usage at the end includes what the sub-agents spent.
//!
//! Run it with `cargo run -p delegate`.

use agentkit_core::{FinishReason, Item, TokenUsage, Usage};
use agentkit_loop::{Agent, AgentEvent, LoopInterrupt, LoopObserver, LoopStep, SessionConfig};
use agentkit_subagent::{SUB_AGENT_KEY, SubAgent};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tool_fs::{FsToolsConfig, fs_read_only_tools, fs_tools};
use agentkit_tools_core::ToolRegistry;
use serde_json::json;
use std::path::Path;

/// Prints what the lead and its sub-agents do, one line per event.
struct Printer;

impl LoopObserver for Printer {
    fn handle_event(&self, event: AgentEvent) {
        let (indent, who, event) = match event {
            AgentEvent::SubAgent {
                agent,
                depth,
                inner,
                ..
            } => ("  ".repeat(depth as usize), agent, *inner),
            event => (String::new(), "lead".to_owned(), event),
        };
        let line = match event {
            AgentEvent::ToolStarted { tool_name, .. } => format!("runs {tool_name}"),
            AgentEvent::ToolResultReceived { result } => {
                let status = if result.is_error {
                    "failed"
                } else {
                    "answered"
                };
                format!("call {} {status}", result.call_id)
            }
            AgentEvent::ApprovalRequired { request } => format!("asks: {}", request.summary),
            AgentEvent::TurnFinished { result } => format!(
                "finished ({:?}, {} tokens)",
                result.finish_reason,
                result.usage.tokens.total()
            ),
            _ => return,
        };
        println!("{indent}[{who}] {line}");
    }
}

fn usage(input: u64, output: u64) -> Usage {
    Usage::from_tokens(TokenUsage {
        input_tokens: input,
        output_tokens: output,
        ..Default::default()
    })
}

/// A scripted turn that answers `text` and reports some usage.
fn answer(text: &str, input: u64) -> ScriptedTurn {
    ScriptedTurn::new()
        .say(text)
        .usage(usage(input, 20))
        .finish(FinishReason::Completed)
}

/// A scripted turn that calls one tool and reports some usage.
fn call(id: &str, tool: &str, input: serde_json::Value) -> ScriptedTurn {
    ScriptedTurn::new()
        .call(id, tool, input)
        .usage(usage(50, 10))
        .finish(FinishReason::ToolCall)
}

fn researcher(root: &Path) -> SubAgent<ScriptedModel> {
    let model = ScriptedModel::new([
        call("r1", "fs_read_file", json!({ "path": "NOTES.md" })),
        answer(
            "The release is planned for March; the blocker is the flaky upload test.",
            300,
        ),
    ]);
    let tools = FsToolsConfig::new(root);
    SubAgent::new(
        "researcher",
        "Reads the project's files and answers a question about them.",
        move || {
            Agent::builder()
                .model(model.clone())
                .add_tool_source(fs_read_only_tools(tools.clone()))
                .max_model_calls(8)
        },
    )
    .expect("a valid tool name")
    .with_instructions("You read files and answer in one or two sentences.")
}

fn scribe(root: &Path) -> SubAgent<ScriptedModel> {
    let model = ScriptedModel::new([
        call(
            "s1",
            "fs_write_file",
            json!({
                "path": "SUMMARY.md",
                "content": "# Status\n\nRelease in March; blocked by the flaky upload test.\n"
            }),
        ),
        answer("Wrote SUMMARY.md.", 120),
    ]);
    let tools = FsToolsConfig::new(root);
    SubAgent::new(
        "scribe",
        "Writes a file with the given content.",
        move || {
            Agent::builder()
                .model(model.clone())
                .add_tool_source(fs_tools(tools.clone()))
                .max_model_calls(4)
        },
    )
    .expect("a valid tool name")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = tempfile::tempdir()?;
    std::fs::write(
        workspace.path().join("NOTES.md"),
        "Release: March.\nBlocker: the upload test fails one run in ten.\n",
    )?;

    let lead_model = ScriptedModel::new([
        call(
            "l1",
            "researcher",
            json!({ "task": "When is the release, and what blocks it?", "context": "NOTES.md has the plan." }),
        ),
        call(
            "l2",
            "scribe",
            json!({ "task": "Write SUMMARY.md: release in March, blocked by the flaky upload test." }),
        ),
        answer(
            "The release is in March; SUMMARY.md records the blocker.",
            400,
        ),
    ]);
    let lead = Agent::builder()
        .model(lead_model)
        .add_tool_source(
            ToolRegistry::new()
                .with(researcher(workspace.path()))
                .with(scribe(workspace.path())),
        )
        .observer(Printer)
        .transcript(vec![Item::system("You lead; delegate the work.")])
        .input(vec![Item::user(
            "Where does the release stand? Keep a summary.",
        )])
        .build()?;

    let mut driver = lead.start(SessionConfig::new("delegate")).await?;
    let result = loop {
        match driver.next().await? {
            LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) => {
                // A real host would ask its user; the request names the child.
                let child = pending.request.metadata[SUB_AGENT_KEY]
                    .as_str()
                    .unwrap_or("?");
                println!(
                    "host: approving {} for sub-agent {child}",
                    pending.request.request_kind
                );
                pending.approve(&mut driver)?;
            }
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
            // No tool of this example asks the user anything.
            LoopStep::Interrupt(LoopInterrupt::Question(pending)) => {
                pending.decline(&mut driver)?
            }
            LoopStep::Interrupt(LoopInterrupt::AwaitingInput(_)) => {
                return Err("the lead asked for input before answering".into());
            }
            // Later kinds of pause: nothing to do for a cooperative one; a
            // blocking one makes the next `next()` fail.
            LoopStep::Interrupt(_) => {}
            LoopStep::Finished(result) => break result,
        }
    };

    println!();
    println!(
        "lead: {}",
        result
            .items
            .last()
            .map(Item::text_content)
            .unwrap_or_default()
    );
    println!(
        "lead's turn, sub-agents included: {} input + {} output tokens",
        result.usage.tokens.input_tokens, result.usage.tokens.output_tokens
    );
    let summary = std::fs::read_to_string(workspace.path().join("SUMMARY.md"))?;
    println!("SUMMARY.md:\n{summary}");
    // The lead's own three calls and the children's two each.
    let expected = 50 + 50 + 400 + (50 + 300) + (50 + 120);
    if result.finish_reason != FinishReason::Completed
        || !summary.contains("March")
        || result.usage.tokens.input_tokens != expected
    {
        return Err("the delegation did not go as scripted".into());
    }
    Ok(())
}
