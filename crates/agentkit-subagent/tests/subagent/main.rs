//! Sub-agents end to end: a parent agent on the scripted model calls a
//! child agent (also scripted) through `SubAgent`, with real filesystem tools
//! in the child where a tool is needed, and the real loop on both sides.

use agentkit_core::{
    CancellationController, FinishReason, Item, ItemKind, TokenUsage, Usage, validate_transcript,
};
use agentkit_loop::{
    Agent, AgentEvent, LoopDriver, LoopInterrupt, LoopObserver, LoopStep, OutputSchema,
    PendingApproval, SessionConfig, TranscriptObserver,
};
use agentkit_subagent::{SUB_AGENT_KEY, SUB_AGENT_PATH_KEY, SubAgent};
use agentkit_testkit::{
    Approvals, ScriptedModel, ScriptedSession, ScriptedTurn, error_kind, results_by_call,
    run_to_finish,
};
use agentkit_tool_fs::{FsToolsConfig, fs_tools};
use agentkit_tools_core::{
    Tool, ToolContext, ToolError, ToolRegistry, ToolRequest, ToolResult, ToolSpec,
};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Every event the parent's observers saw.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<AgentEvent>>>);

impl LoopObserver for Events {
    fn handle_event(&self, event: AgentEvent) {
        self.0.lock().unwrap().push(event);
    }
}

impl Events {
    fn all(&self) -> Vec<AgentEvent> {
        self.0.lock().unwrap().clone()
    }

    /// `(agent, depth, inner)` of every sub-agent event.
    fn tagged(&self) -> Vec<(String, u32, AgentEvent)> {
        self.all()
            .into_iter()
            .filter_map(|event| match event {
                AgentEvent::SubAgent {
                    agent,
                    depth,
                    inner,
                    ..
                } => Some((agent, depth, *inner)),
                _ => None,
            })
            .collect()
    }

    /// Delivers what the idle parent's calls still report (a child ending
    /// on its own task after the parent's turn is over) until a tagged
    /// event matches; gives up after a minute.
    async fn deliver_until(
        &self,
        driver: &mut LoopDriver<ScriptedSession>,
        what: impl Fn(&str, u32, &AgentEvent) -> bool,
    ) {
        let tasks = driver.background_tasks();
        tokio::time::timeout(Duration::from_secs(60), async {
            while !self.tagged().iter().any(|(a, d, e)| what(a, *d, e)) {
                tasks.undelivered().await;
                driver.next().await.unwrap();
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no matching sub-agent event in {:#?}", self.tagged()));
    }

    /// Waits (up to 5 s) until a tagged event matches.
    async fn wait_for(&self, what: impl Fn(&str, u32, &AgentEvent) -> bool) {
        for _ in 0..500 {
            if self.tagged().iter().any(|(a, d, e)| what(a, *d, e)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no matching sub-agent event in {:#?}", self.tagged());
    }
}

/// The child's transcript, as its transcript observer saw it.
#[derive(Clone, Default)]
struct Items(Arc<Mutex<Vec<Item>>>);

impl TranscriptObserver for Items {
    fn on_item_appended(&self, index: usize, item: &Item) {
        let mut items = self.0.lock().unwrap();
        assert_eq!(index, items.len(), "items arrive in order, once");
        items.push(item.clone());
    }
}

impl Items {
    fn get(&self) -> Vec<Item> {
        self.0.lock().unwrap().clone()
    }
}

fn usage(input: u64, output: u64) -> Usage {
    Usage::from_tokens(TokenUsage {
        input_tokens: input,
        output_tokens: output,
        ..Default::default()
    })
}

fn parent(
    model: ScriptedModel,
    tool: impl Tool + 'static,
    events: &Events,
) -> Agent<ScriptedModel> {
    Agent::builder()
        .model(model)
        .add_tool_source(ToolRegistry::new().with(tool))
        .observer(events.clone())
        .input(vec![Item::user("Please delegate.")])
        .build()
        .unwrap()
}

fn delegate(call: &str, agent: &str, task: &str) -> ScriptedTurn {
    ScriptedTurn::tool_call(call, agent, json!({ "task": task }))
}

/// Runs a parent whose model delegates once to `tool` (call `p1`), then
/// answers; returns the run and the parent's events.
async fn delegate_once(
    tool: SubAgent<ScriptedModel>,
    approvals: Approvals,
) -> (agentkit_testkit::Run, Events) {
    let events = Events::default();
    let name = tool.name().to_owned();
    let agent = parent(
        ScriptedModel::new([delegate("p1", &name, "Do it."), ScriptedTurn::text("ok")]),
        tool,
        &events,
    );
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let run = run_to_finish(&mut driver, approvals).await.unwrap();
    (run, events)
}

/// A child on `model` whose transcript lands in `items`.
fn observed(name: &str, model: ScriptedModel, items: &Items) -> SubAgent<ScriptedModel> {
    let items = items.clone();
    SubAgent::new(name, "A child.", move || {
        Agent::builder()
            .model(model.clone())
            .transcript_observer(items.clone())
    })
    .unwrap()
}

/// A child named `planner` that delegates once to `inner` (call `call`),
/// then says `answer`.
fn planner(inner: SubAgent<ScriptedModel>, call: &str, answer: &str) -> SubAgent<ScriptedModel> {
    let model = ScriptedModel::new([
        delegate(call, inner.name(), "Do your part."),
        ScriptedTurn::text(answer),
    ]);
    SubAgent::new("planner", "Plans.", move || {
        Agent::builder()
            .model(model.clone())
            .add_tool_source(ToolRegistry::new().with(inner.clone()))
    })
    .unwrap()
}

/// A child that writes a file: with the default permissions a write asks.
fn writer(
    workspace: &std::path::Path,
    model: ScriptedModel,
    items: Items,
) -> SubAgent<ScriptedModel> {
    let root = workspace.to_owned();
    SubAgent::new("writer", "Writes files.", move || {
        Agent::builder()
            .model(model.clone())
            .add_tool_source(fs_tools(FsToolsConfig::new(&root)))
            .transcript_observer(items.clone())
    })
    .unwrap()
}

fn write_script(after: &str) -> ScriptedModel {
    ScriptedModel::new([
        ScriptedTurn::tool_call(
            "w1",
            "fs_write_file",
            json!({ "path": "out.txt", "content": "hello from the child\n" }),
        ),
        ScriptedTurn::text(after),
    ])
}

/// Starts a parent that delegates to `tool` (call `p1`) and runs it to the
/// first approval, which must come.
async fn until_approval(
    tool: SubAgent<ScriptedModel>,
    events: &Events,
) -> (LoopDriver<ScriptedSession>, PendingApproval) {
    let name = tool.name().to_owned();
    let agent = parent(
        ScriptedModel::new([
            delegate("p1", &name, "Write out.txt"),
            ScriptedTurn::text("ok"),
        ]),
        tool,
        events,
    );
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) = driver.next().await.unwrap()
    else {
        panic!("the child's call must be approved by the parent's host")
    };
    (driver, pending)
}

/// Sleeps `ms` unless the turn is cancelled first, and says which happened.
#[derive(Clone)]
struct Sleep {
    spec: Arc<ToolSpec>,
    ms: u64,
    cancelled: Arc<AtomicBool>,
    finished: Arc<AtomicBool>,
}

impl Sleep {
    fn new(name: &str, ms: u64) -> Self {
        Self {
            spec: Arc::new(ToolSpec::new(name, "Sleeps.", json!({ "type": "object" })).unwrap()),
            ms,
            cancelled: Arc::default(),
            finished: Arc::default(),
        }
    }
}

#[async_trait::async_trait]
impl Tool for Sleep {
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    async fn invoke(&self, _: ToolRequest, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        tokio::select! {
            _ = ctx.cancellation.cancelled() => {
                self.cancelled.store(true, Ordering::SeqCst);
                Err(ToolError::Cancelled)
            }
            _ = tokio::time::sleep(Duration::from_millis(self.ms)) => {
                self.finished.store(true, Ordering::SeqCst);
                Ok(ToolResult::new("rested"))
            }
        }
    }
}

/// A child that calls a 30 s `wait` tool; returns it, the tool and its model.
fn waiter(items: &Items) -> (SubAgent<ScriptedModel>, Sleep, ScriptedModel) {
    let wait = Sleep::new("wait", 30_000);
    let child_model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "wait", json!({})),
        ScriptedTurn::text("never reached"),
    ]);
    let (tool, model, items) = (wait.clone(), child_model.clone(), items.clone());
    let waiter = SubAgent::new("waiter", "Waits.", move || {
        Agent::builder()
            .model(model.clone())
            .add_tool_source(ToolRegistry::new().with(tool.clone()))
            .transcript_observer(items.clone())
    })
    .unwrap();
    (waiter, wait, child_model)
}

mod answers;
mod approvals;
mod events;
mod stops;
