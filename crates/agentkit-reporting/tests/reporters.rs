//! The reporters against a real loop run.

use agentkit_core::{FinishReason, Item, TokenUsage, Usage};
use agentkit_loop::{Agent, AgentEvent, LoopObserver, LoopStep, SessionConfig};
use agentkit_reporting::{ChannelObserver, JsonlReporter, TerminalReporter, UsageTotals};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tools_core::{
    Tool, ToolContext, ToolError, ToolRegistry, ToolRequest, ToolResult, ToolSpec,
};
use serde_json::json;
use std::sync::{Arc, Mutex};

struct Upper;

#[async_trait::async_trait]
impl Tool for Upper {
    fn spec(&self) -> Arc<ToolSpec> {
        Arc::new(ToolSpec::new("upper", "Uppercases.", json!({ "type": "object" })).unwrap())
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::new(
            request.input["text"].as_str().unwrap_or("").to_uppercase(),
        ))
    }
}

/// A writer the test can read while the reporter owns a clone.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Buffer {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

fn usage(input: u64, output: u64) -> Usage {
    Usage::from_tokens(TokenUsage {
        input_tokens: input,
        output_tokens: output,
        ..Default::default()
    })
}

async fn run(observers: Vec<Arc<dyn LoopObserver>>) {
    let model = ScriptedModel::new([
        ScriptedTurn::new()
            .say_chunks(&["Let me ", "shout."])
            .call("c1", "upper", json!({ "text": "hi" }))
            .usage(usage(10, 5))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::new()
            .say("HI it is.")
            .usage(usage(20, 3))
            .finish(FinishReason::Completed),
    ]);
    let mut builder = Agent::builder()
        .model(model)
        .add_tool_source(ToolRegistry::new().with(Upper))
        .input(vec![Item::user("shout hi")]);
    for observer in observers {
        builder = builder.observer_arc(observer);
    }
    let mut driver = builder
        .build()
        .unwrap()
        .start(SessionConfig::new("r"))
        .await
        .unwrap();
    while !matches!(driver.next().await.unwrap(), LoopStep::Finished(_)) {}
}

#[tokio::test]
async fn terminal_reporter_shows_text_tools_and_usage() {
    let buffer = Buffer::default();
    run(vec![Arc::new(TerminalReporter::new(buffer.clone()))]).await;
    let text = buffer.text();
    assert_eq!(
        text,
        "Let me shout.\n→ upper {\"text\":\"hi\"}\n← c1: HI\nHI it is.\n[Completed; 30 in / 8 out tokens]\n"
    );
}

#[test]
fn terminal_reporter_indents_sub_agent_lines_and_hides_their_streamed_text() {
    let buffer = Buffer::default();
    let reporter = TerminalReporter::new(buffer.clone());
    let tagged = |depth, inner| AgentEvent::SubAgent {
        agent: if depth == 1 { "planner" } else { "researcher" }.into(),
        depth,
        call_id: "p1".into(),
        inner: Box::new(inner),
    };
    let call = agentkit_core::ToolCallPart::new("r1", "fs_read_file", json!({ "path": "a" }));
    reporter.handle_event(tagged(1, AgentEvent::ToolCallRequested { call }));
    reporter.handle_event(tagged(
        2,
        AgentEvent::ContentDelta {
            delta: agentkit_core::Delta::AppendText {
                part_id: agentkit_core::PartId::new("t"),
                chunk: "thinking aloud".into(),
            },
        },
    ));
    reporter.handle_event(tagged(
        2,
        AgentEvent::Warning {
            message: "slow".into(),
        },
    ));
    assert_eq!(
        buffer.text(),
        "  [planner] → fs_read_file {\"path\":\"a\"}\n    [researcher] warning: slow\n"
    );
}

#[tokio::test]
async fn jsonl_reporter_writes_one_parseable_event_per_line() {
    let buffer = Buffer::default();
    run(vec![Arc::new(JsonlReporter::new(buffer.clone()))]).await;
    let events: Vec<serde_json::Value> = buffer
        .text()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert!(
        !names.contains(&"content_delta"),
        "deltas are off by default"
    );
    assert_eq!(names.first(), Some(&"run_started"));
    assert_eq!(names.last(), Some(&"turn_finished"));
    let result = events
        .iter()
        .find(|e| e["event"] == "tool_result_received")
        .unwrap();
    assert_eq!(result["result"]["output"]["value"], "HI");
    // Lines parse back into events.
    let back: AgentEvent = serde_json::from_value(events[0].clone()).unwrap();
    assert!(matches!(back, AgentEvent::RunStarted { .. }));
}

#[tokio::test]
async fn usage_totals_sum_across_sessions() {
    let totals = UsageTotals::new();
    run(vec![Arc::new(totals.clone())]).await;
    run(vec![Arc::new(totals.clone())]).await;
    assert_eq!(totals.turns(), 2);
    assert_eq!(totals.usage().tokens.input_tokens, 60);
    assert_eq!(totals.usage().tokens.output_tokens, 16);
}

#[tokio::test]
async fn channel_observer_forwards_in_order() {
    let (observer, mut receiver) = ChannelObserver::new();
    run(vec![Arc::new(observer)]).await;
    let mut names = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        names.push(
            serde_json::to_value(&event).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(names.first().map(String::as_str), Some("run_started"));
    assert_eq!(names.last().map(String::as_str), Some("turn_finished"));
    assert_eq!(
        names.iter().filter(|n| *n == "model_call_started").count(),
        2
    );
}
