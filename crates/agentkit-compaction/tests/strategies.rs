//! Each strategy on one transcript, before and after (insta snapshots), the
//! summarizer's request, token accounting, and a long session that crosses
//! its budget many times and keeps working.

use agentkit_compaction::{
    CompactionStrategy, CompactionTrigger, Compactor, ModelSummarizer, count_tokens,
    estimate_tokens,
};
use agentkit_core::{Item, ItemKind, Part, ToolCallPart, ToolResultPart, validate_transcript};
use agentkit_loop::{
    Agent, AgentEvent, LoopObserver, MutationContext, MutationPoint, SessionConfig,
    TranscriptObserver,
};
use agentkit_testkit::{
    Approvals, ScriptedModel, ScriptedTurn, assert_transcript_snapshot, run_to_finish,
};
use agentkit_tools_core::{
    Tool, ToolContext, ToolError, ToolRegistry, ToolRequest, ToolResult, ToolSpec,
};
use serde_json::json;
use std::sync::{Arc, Mutex};

/// A system prompt and `n` exchanges, each a question, a tool call, its
/// result and an answer, with ids like a driver gives them.
fn session(n: usize) -> Vec<Item> {
    let mut items = vec![Item::system("You are a coding agent.")];
    for i in 0..n {
        let id = format!("call_{i}");
        items.push(Item::user(format!("question {i}")));
        items.push(Item::new(
            ItemKind::Assistant,
            vec![Part::ToolCall(ToolCallPart::new(
                id.clone(),
                "read_file",
                json!({ "path": format!("src/{i}.rs") }),
            ))],
        ));
        items.push(Item::tool_result(ToolResultPart::success(
            id,
            format!("fn f{i}() {{}}\n").repeat(100),
        )));
        items.push(Item::assistant(format!("answer {i}")));
    }
    for (index, item) in items.iter_mut().enumerate() {
        item.id = Some(format!("item-{index}").into());
    }
    items
}

fn ctx() -> MutationContext {
    MutationContext::new("s", MutationPoint::BeforeModelCall)
}

#[tokio::test]
async fn elide_tool_outputs_before_and_after() {
    let items = session(4);
    let compactor = Compactor::new(CompactionTrigger::EstimatedTokens(1_000)).keep_recent(4);
    let rewrite = compactor.compact_for(&ctx(), &items).await.unwrap();
    validate_transcript(&rewrite.items).unwrap();
    let report = rewrite.compaction.clone().unwrap();
    assert_eq!(report.strategy, "elide_tool_outputs");
    assert!(report.tokens_after < report.tokens_before);
    assert_eq!(report.archived_items, 0, "elided items keep their ids");
    assert_transcript_snapshot!("before", &items);
    assert_transcript_snapshot!("elided", &rewrite.items);
}

#[tokio::test]
async fn drop_oldest_exchanges_before_and_after() {
    let items = session(4);
    let compactor = Compactor::new(CompactionTrigger::Items(10))
        .keep_recent(4)
        .strategy(CompactionStrategy::DropOldestExchanges);
    let rewrite = compactor.compact_for(&ctx(), &items).await.unwrap();
    validate_transcript(&rewrite.items).unwrap();
    assert_eq!(
        rewrite.items[0].kind,
        ItemKind::System,
        "the system prompt stays"
    );
    assert!(rewrite.items.len() <= 10);
    assert_eq!(rewrite.compaction.as_ref().unwrap().archived_items, 8);
    assert_transcript_snapshot!("dropped", &rewrite.items);
}

#[tokio::test]
async fn summarize_before_and_after() {
    let items = session(4);
    let cheap = ScriptedModel::new([ScriptedTurn::new()
        .say_chunks(&[
            "- read src/0.rs",
            " to src/2.rs\n- answered three questions",
        ])
        .finish(agentkit_core::FinishReason::Completed)]);
    let compactor = Compactor::new(CompactionTrigger::EstimatedTokens(1_000))
        .keep_recent(4)
        .strategy(CompactionStrategy::Summarize)
        .summarizer(ModelSummarizer::new(cheap.clone()));
    let rewrite = compactor.compact_for(&ctx(), &items).await.unwrap();
    validate_transcript(&rewrite.items).unwrap();
    let summary = &rewrite.items[1];
    assert_eq!(summary.kind, ItemKind::Context);
    assert_eq!(summary.metadata["agentkit.summary"], json!(true));
    assert!(summary.text_content().contains("answered three questions"));
    // The summarizer saw the old items as text, without tool structures.
    let request = cheap.requests()[0].transcript.to_vec();
    assert_eq!(request.len(), 1);
    let prompt = request[0].text_content();
    assert!(prompt.contains("[tool] result of call_0: fn f0() {}"));
    assert!(prompt.contains("[assistant] calls read_file"));
    assert!(
        !prompt.contains("You are a coding agent."),
        "the system prompt is never summarized"
    );
    assert_eq!(request[0].tool_calls().count(), 0);
    assert_eq!(rewrite.compaction.as_ref().unwrap().strategy, "summarize");
    assert_transcript_snapshot!("summarized", &rewrite.items);
}

#[tokio::test]
async fn a_failing_summarizer_falls_back_to_dropping() {
    let items = session(4);
    let broken = ScriptedModel::new([ScriptedTurn::failing(agentkit_loop::ModelError::new(
        agentkit_loop::ModelErrorKind::Server,
        "down",
    ))]);
    let compactor = Compactor::new(CompactionTrigger::EstimatedTokens(1_000))
        .keep_recent(4)
        .strategy(CompactionStrategy::Summarize)
        .summarizer(ModelSummarizer::new(broken));
    let rewrite = compactor.compact_for(&ctx(), &items).await.unwrap();
    validate_transcript(&rewrite.items).unwrap();
    assert!(
        rewrite
            .compaction
            .unwrap()
            .strategy
            .starts_with("drop_oldest_exchanges")
    );
}

#[tokio::test]
async fn the_providers_measurement_decides_not_bytes() {
    let items = session(2);
    // By bytes the transcript is small, but the provider measured 9,000
    // tokens at the last call: a 5,000-token budget is crossed.
    let mut usage = agentkit_core::Usage::default();
    usage.tokens.input_tokens = 8_900;
    usage.tokens.output_tokens = 100;
    let last = agentkit_loop::LastCallUsage {
        usage,
        transcript_len: items.len(),
    };
    assert!(estimate_tokens(&items) < 5_000);
    assert_eq!(count_tokens(&items, Some(&last)), 9_000);
    let compactor = Compactor::new(CompactionTrigger::Tokens(5_000)).keep_recent(2);
    let context = ctx().with_last_call(Some(last));
    assert!(compactor.compact_for(&context, &items).await.is_some());
    assert!(compactor.compact_for(&ctx(), &items).await.is_none());
}

/// Returns 3 KB of text.
struct Read;

#[async_trait::async_trait]
impl Tool for Read {
    fn spec(&self) -> Arc<ToolSpec> {
        Arc::new(ToolSpec::new("read", "Reads.", json!({ "type": "object" })).unwrap())
    }

    async fn invoke(&self, r: ToolRequest, _c: ToolContext) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::new(format!(
            "{}: {}",
            r.call_id,
            "z".repeat(3_000)
        )))
    }
}

#[derive(Default, Clone)]
struct Compactions(Arc<Mutex<Vec<(usize, usize)>>>);

impl LoopObserver for Compactions {
    fn handle_event(&self, event: AgentEvent) {
        if let AgentEvent::CompactionApplied {
            items_before,
            items_after,
            ..
        } = event
        {
            self.0.lock().unwrap().push((items_before, items_after));
        }
    }
}

/// Counts what transcript observers receive: appended and archived items.
#[derive(Default, Clone)]
struct Archive(Arc<Mutex<(usize, usize)>>);

impl TranscriptObserver for Archive {
    fn on_item_appended(&self, _index: usize, _item: &Item) {
        self.0.lock().unwrap().0 += 1;
    }

    fn on_transcript_rewritten(&self, _items: &[Item], archived: &[Item]) {
        self.0.lock().unwrap().1 += archived.len();
    }
}

#[tokio::test]
async fn a_long_session_crosses_the_budget_many_times_and_keeps_working() {
    const ROUNDS: usize = 1_500;
    const BUDGET: usize = 20_000;
    let mut turns: Vec<ScriptedTurn> = (0..ROUNDS)
        .map(|i| ScriptedTurn::tool_call(&format!("r{i}"), "read", json!({})))
        .collect();
    turns.push(ScriptedTurn::text("all files read"));
    let model = ScriptedModel::new(turns);
    let summarizer = ScriptedModel::per_session([ScriptedTurn::text("- read many files")]);
    let compactions = Compactions::default();
    let archive = Archive::default();
    let agent = Agent::builder()
        .model(model.clone())
        .add_tool_source(ToolRegistry::new().with(Read))
        .compaction(
            Compactor::new(CompactionTrigger::Tokens(BUDGET))
                .keep_recent(6)
                .strategy(CompactionStrategy::Summarize)
                .summarizer(ModelSummarizer::new(summarizer)),
        )
        .max_model_calls(ROUNDS as u32 + 1)
        .observer(compactions.clone())
        .transcript_observer(archive.clone())
        .input(vec![Item::user("read everything")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("long")).await.unwrap();
    let run = run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    assert_eq!(
        run.result.items.last().unwrap().text_content(),
        "all files read"
    );
    assert_eq!(run.pauses, ROUNDS);
    // Thousands of items went through the session ...
    let (appended, archived) = *archive.0.lock().unwrap();
    assert!(appended > 2 * ROUNDS, "{appended} items appended");
    // ... compaction ran many times and kept every request within budget,
    // and every item it removed reached the observer as archived.
    let done = compactions.0.lock().unwrap().clone();
    assert!(done.len() > 10, "{} compactions", done.len());
    assert!(done.iter().all(|(before, after)| after < before));
    assert!(archived > ROUNDS, "{archived} items archived");
    for request in model.requests() {
        let items = request.transcript.to_vec();
        validate_transcript(&items).unwrap();
        assert!(
            estimate_tokens(&items) <= BUDGET,
            "{}",
            estimate_tokens(&items)
        );
        // The user's first message, or the summary that replaced it.
        assert!(matches!(items[0].kind, ItemKind::User | ItemKind::Context));
    }
}
