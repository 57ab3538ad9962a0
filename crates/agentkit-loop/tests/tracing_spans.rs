//! The loop's spans follow the OpenTelemetry GenAI names, and record message
//! content only when the agent opts in.

mod support;

use agentkit_core::Item;
use agentkit_loop::{Agent, SessionConfig};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use support::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Span name and every field recorded on it.
type Spans = Arc<Mutex<BTreeMap<u64, (String, BTreeMap<String, String>)>>>;

#[derive(Default)]
struct Recorder {
    next: AtomicU64,
    spans: Spans,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.spans
            .lock()
            .unwrap()
            .insert(id, (attrs.metadata().name().to_owned(), fields));
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some((_, fields)) = self.spans.lock().unwrap().get_mut(&span.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

async fn run(record_content: bool) -> Vec<(String, BTreeMap<String, String>)> {
    let recorder = Recorder::default();
    let spans = recorder.spans.clone();
    let _guard = tracing::subscriber::set_default(recorder);
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "echo", json!({ "text": "secret" })),
        ScriptedTurn::text("the answer"),
    ]);
    let agent = Agent::builder()
        .model(model)
        .add_tool_source(registry())
        .record_content_in_traces(record_content)
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("traced")).await.unwrap();
    while !matches!(
        driver.next().await.unwrap(),
        agentkit_loop::LoopStep::Finished(_)
    ) {}
    let spans = spans.lock().unwrap();
    spans.values().cloned().collect()
}

#[tokio::test]
async fn spans_use_genai_names_and_hide_content_by_default() {
    let spans = run(false).await;
    let names: Vec<&str> = spans.iter().map(|(name, _)| name.as_str()).collect();
    assert!(names.contains(&"invoke_agent"));
    assert_eq!(
        names.iter().filter(|n| **n == "chat").count(),
        2,
        "{names:?}"
    );
    let tool = spans
        .iter()
        .find(|(name, _)| name == "execute_tool")
        .expect("a tool span");
    assert_eq!(tool.1["gen_ai.tool.name"], "echo");
    assert_eq!(tool.1["gen_ai.tool.call.id"], "c1");
    let agent = spans
        .iter()
        .find(|(name, _)| name == "invoke_agent")
        .unwrap();
    assert_eq!(agent.1["gen_ai.conversation.id"], "traced");
    let everything = format!("{spans:?}");
    assert!(
        !everything.contains("secret"),
        "tool arguments leaked: {everything}"
    );
    assert!(!everything.contains("the answer"), "model output leaked");
}

#[tokio::test]
async fn content_is_recorded_when_opted_in() {
    let spans = run(true).await;
    let tool = spans
        .iter()
        .find(|(name, _)| name == "execute_tool")
        .expect("a tool span");
    assert!(tool.1["gen_ai.tool.call.arguments"].contains("secret"));
    assert_eq!(tool.1["gen_ai.tool.call.result"], "echo: secret");
    let chat = spans.iter().rfind(|(name, _)| name == "chat").unwrap();
    assert_eq!(chat.1["gen_ai.output.messages"], "the answer");
}
