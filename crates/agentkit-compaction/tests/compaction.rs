//! Compaction strategies on hand-built transcripts and through a real loop.

use agentkit_compaction::{CompactionStrategy, CompactionTrigger, Compactor, estimate_tokens};
use agentkit_core::{Item, ItemKind, Part, ToolCallPart, ToolResultPart, validate_transcript};
use agentkit_loop::{Agent, LoopStep, SessionConfig};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tools_core::{
    Tool, ToolContext, ToolError, ToolRegistry, ToolRequest, ToolResult, ToolSpec,
};
use serde_json::json;
use std::sync::Arc;

fn exchange(n: usize, output: &str) -> Vec<Item> {
    let id = format!("c{n}");
    vec![
        Item::user(format!("question {n}")),
        Item::new(
            ItemKind::Assistant,
            vec![Part::ToolCall(ToolCallPart::new(
                id.clone(),
                "read",
                json!({}),
            ))],
        ),
        Item::tool_result(ToolResultPart::success(id, output)),
        Item::assistant(format!("answer {n}")),
    ]
}

fn transcript(exchanges: usize) -> Vec<Item> {
    let mut items = vec![Item::system("sys")];
    for n in 0..exchanges {
        items.extend(exchange(n, &"x".repeat(4_000)));
    }
    items
}

#[test]
fn under_budget_nothing_changes() {
    let compactor = Compactor::new(CompactionTrigger::Items(100));
    assert_eq!(compactor.compact(&transcript(3)), None);
}

#[test]
fn elision_shortens_old_outputs_and_keeps_recent_ones() {
    let items = transcript(5);
    let compactor = Compactor::new(CompactionTrigger::EstimatedTokens(1_000)).keep_recent(4);
    let out = compactor.compact(&items).unwrap();
    validate_transcript(&out).unwrap();
    assert_eq!(out.len(), items.len());
    let results: Vec<_> = out.iter().flat_map(Item::tool_results).collect();
    assert!(
        results[..4]
            .iter()
            .all(|r| r.output.to_text() == "[output elided to save context: 4000 bytes]")
    );
    assert_eq!(
        results[4].output.to_text().len(),
        4_000,
        "the last exchange is protected"
    );
    assert!(estimate_tokens(&out) < estimate_tokens(&items) / 3);
    // A second pass finds nothing new to do.
    assert_eq!(compactor.compact(&out), None);
}

#[test]
fn dropping_cuts_only_at_user_boundaries_and_stops_when_it_fits() {
    let items = transcript(5); // 21 items
    let compactor = Compactor::new(CompactionTrigger::Items(12))
        .keep_recent(4)
        .strategy(CompactionStrategy::DropOldestExchanges);
    let out = compactor.compact(&items).unwrap();
    validate_transcript(&out).unwrap();
    assert!(out.len() <= 12, "{}", out.len());
    assert_eq!(out[0].kind, ItemKind::System);
    assert_eq!(out[1].kind, ItemKind::Context);
    assert_eq!(
        out[1].text_content(),
        "[12 earlier items were removed to save context]"
    );
    assert_eq!(
        out[2].text_content(),
        "question 3",
        "whole exchanges are dropped, oldest first"
    );
}

struct Big;

#[async_trait::async_trait]
impl Tool for Big {
    fn spec(&self) -> Arc<ToolSpec> {
        Arc::new(ToolSpec::new("big", "Returns a lot.", json!({ "type": "object" })).unwrap())
    }

    async fn invoke(
        &self,
        _request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::new("y".repeat(8_000)))
    }
}

#[tokio::test]
async fn the_model_sees_the_compacted_transcript() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "big", json!({})),
        ScriptedTurn::tool_call("c2", "big", json!({})),
        ScriptedTurn::text("done"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(ToolRegistry::new().with(Big))
        .compaction(Compactor::new(CompactionTrigger::EstimatedTokens(3_000)).keep_recent(2))
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s")).await.unwrap();
    while !matches!(driver.next().await.unwrap(), LoopStep::Finished(_)) {}
    let last = model.requests().last().unwrap().transcript.to_vec();
    validate_transcript(&last).unwrap();
    let outputs: Vec<String> = last
        .iter()
        .flat_map(Item::tool_results)
        .map(|r| r.output.to_text())
        .collect();
    assert_eq!(outputs[0], "[output elided to save context: 8000 bytes]");
    assert_eq!(outputs[1].len(), 8_000, "the latest result is kept");
}
