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

#[tokio::test]
async fn the_childs_final_answer_reaches_the_parent() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        workspace.path().join("notes.txt"),
        "the launch is on Tuesday\n",
    )
    .unwrap();
    let child_model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "fs_read_file", json!({ "path": "notes.txt" })),
        ScriptedTurn::text("The notes say the launch is on Tuesday."),
    ]);
    let root = workspace.path().to_owned();
    let model = child_model.clone();
    let reader = SubAgent::new("reader", "Reads the notes.", move || {
        Agent::builder()
            .model(model.clone())
            .add_tool_source(fs_tools(FsToolsConfig::new(&root)))
    })
    .unwrap()
    .with_instructions("Read files and report.");
    let events = Events::default();
    let agent = parent(
        ScriptedModel::new([
            ScriptedTurn::tool_call(
                "p1",
                "reader",
                json!({ "task": "When is the launch?", "context": "See notes.txt." }),
            ),
            ScriptedTurn::text("Tuesday."),
        ]),
        reader,
        &events,
    );
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    assert_eq!(run.result.finish_reason, FinishReason::Completed);
    assert!(run.approvals.is_empty(), "reads need no approval");
    let results = results_by_call(&run.transcript);
    assert_eq!(
        results["p1"].output.to_text(),
        "The notes say the launch is on Tuesday."
    );
    assert_eq!(results["p1"].metadata[SUB_AGENT_KEY], "reader");

    // The child saw its instructions, the context and the task, and the
    // file's real content came back from the real tool.
    let requests = child_model.requests();
    let first = requests[0].transcript.to_vec();
    assert_eq!(first[0].kind, ItemKind::System);
    assert_eq!(first[0].text_content(), "Read files and report.");
    assert_eq!(first[1].kind, ItemKind::Context);
    assert_eq!(first[1].text_content(), "See notes.txt.");
    assert_eq!(first[2].text_content(), "When is the launch?");
    assert_eq!(requests[0].session_id.as_str(), "parent/reader/p1");
    let second = requests[1].transcript.to_vec();
    let read = second.iter().flat_map(|i| i.tool_results()).next().unwrap();
    assert!(read.output.to_text().contains("the launch is on Tuesday"));
}

#[tokio::test]
async fn a_child_with_an_output_schema_answers_structured() {
    let schema = OutputSchema::new(
        "forecast",
        json!({
            "type": "object",
            "properties": { "city": { "type": "string" }, "celsius": { "type": "number" } },
            "required": ["city", "celsius"]
        }),
    );
    let child_model =
        ScriptedModel::new([ScriptedTurn::text(r#"{"city": "Oslo", "celsius": -3.5}"#)]);
    let model = child_model.clone();
    let forecaster = SubAgent::new("forecaster", "Forecasts.", move || {
        Agent::builder().model(model.clone())
    })
    .unwrap()
    .with_output_schema(schema);
    let (run, _) = delegate_once(forecaster, Approvals::DenyAll).await;
    let result = &results_by_call(&run.transcript)["p1"];
    assert!(!result.is_error);
    assert_eq!(
        result.output,
        agentkit_core::ToolOutput::Structured(json!({ "city": "Oslo", "celsius": -3.5 }))
    );
    // The child's model was asked for that schema.
    let asked = child_model.requests()[0].output_schema.clone().unwrap();
    assert_eq!(asked.name, "forecast");

    // An answer that is not JSON is a typed failure, not a crash.
    let bad = ScriptedModel::new([ScriptedTurn::text("sunny, I think")]);
    let tool = SubAgent::new("forecaster", "Forecasts.", move || {
        Agent::builder().model(bad.clone())
    })
    .unwrap()
    .with_output_schema(OutputSchema::new("forecast", json!({ "type": "object" })));
    let err = tool
        .invoke(
            ToolRequest::new("x", "forecaster", json!({ "task": "?" })),
            ToolContext::detached(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::ExecutionFailed(_)));
    assert!(err.to_string().contains("invalid JSON"), "{err}");
}

#[tokio::test]
async fn usage_and_cost_of_the_child_roll_up_into_the_parents_turn() {
    let mut costly = usage(100, 20);
    costly.cost = Some(agentkit_core::CostUsage {
        amount: 0.25,
        currency: "USD".into(),
    });
    let child_model = ScriptedModel::new([
        ScriptedTurn::new()
            .call("c1", "missing_tool", json!({}))
            .usage(costly.clone())
            .finish(FinishReason::ToolCall),
        ScriptedTurn::new()
            .say("done")
            .usage(costly)
            .finish(FinishReason::Completed),
    ]);
    let worker = SubAgent::new("worker", "Works.", move || {
        Agent::builder().model(child_model.clone())
    })
    .unwrap();
    let mut parent_cost = usage(10, 5);
    parent_cost.cost = Some(agentkit_core::CostUsage {
        amount: 0.01,
        currency: "USD".into(),
    });
    let events = Events::default();
    let agent = parent(
        ScriptedModel::new([
            ScriptedTurn::new()
                .call("p1", "worker", json!({ "task": "work" }))
                .usage(parent_cost.clone())
                .finish(FinishReason::ToolCall),
            ScriptedTurn::new()
                .say("ok")
                .usage(parent_cost)
                .finish(FinishReason::Completed),
        ]),
        worker,
        &events,
    );
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    let total = &run.result.usage;
    assert_eq!(total.tokens.input_tokens, 2 * 10 + 2 * 100);
    assert_eq!(total.tokens.output_tokens, 2 * 5 + 2 * 20);
    let cost = total.cost.as_ref().unwrap();
    assert_eq!(cost.currency, "USD");
    assert!((cost.amount - 0.52).abs() < 1e-9, "{}", cost.amount);
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

#[tokio::test]
async fn events_are_tagged_with_name_and_depth_two_levels_down() {
    let researcher_model = ScriptedModel::new([ScriptedTurn::text("42")]);
    let researcher = SubAgent::new("researcher", "Finds answers.", move || {
        Agent::builder().model(researcher_model.clone())
    })
    .unwrap();
    let planner = planner(researcher, "r1", "The researcher says 42.");
    let (run, events) = delegate_once(planner, Approvals::DenyAll).await;
    assert_eq!(
        results_by_call(&run.transcript)["p1"].output.to_text(),
        "The researcher says 42."
    );

    let tagged = events.tagged();
    // Flattened: nothing nests a SubAgent event inside another.
    assert!(
        tagged
            .iter()
            .all(|(_, _, inner)| !matches!(inner, AgentEvent::SubAgent { .. }))
    );
    let planner_started = tagged.iter().any(|(agent, depth, inner)| {
        agent == "planner"
            && *depth == 1
            && matches!(inner, AgentEvent::ToolStarted { tool_name, .. } if tool_name == "researcher")
    });
    assert!(planner_started, "{tagged:#?}");
    let researcher_finished = tagged.iter().find_map(|(agent, depth, inner)| match inner {
        AgentEvent::TurnFinished { result } if agent == "researcher" => Some((*depth, result)),
        _ => None,
    });
    let (depth, result) = researcher_finished.expect("the grandchild's turn was forwarded");
    assert_eq!(depth, 2);
    assert_eq!(result.items[0].text_content(), "42");
    // The grandchild's events carry the call that started it in the planner.
    let call_ids: Vec<_> = events
        .all()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::SubAgent { agent, call_id, .. } if agent == "researcher" => {
                Some(call_id.to_string())
            }
            _ => None,
        })
        .collect();
    assert!(!call_ids.is_empty() && call_ids.iter().all(|id| id == "r1"));
    // Tagged events serialize (JSON Lines logs) and read back unchanged.
    for event in events.all() {
        let json = serde_json::to_value(&event).unwrap();
        let back: AgentEvent = serde_json::from_value(json).unwrap();
        assert_eq!(back, event);
    }
    let json = serde_json::to_value(
        events
            .all()
            .iter()
            .find(|e| matches!(e, AgentEvent::SubAgent { depth: 2, .. }))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(json["event"], "sub_agent");
    assert_eq!(json["agent"], "researcher");
    assert_eq!(json["depth"], 2);
    // The parent's own events are untagged.
    assert!(
        events.all().iter().any(
            |e| matches!(e, AgentEvent::ToolStarted { tool_name, .. } if tool_name == "planner")
        )
    );
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

#[tokio::test]
async fn a_childs_approval_surfaces_to_the_parents_host_and_approving_resumes_it() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let tool = writer(workspace.path(), write_script("Written."), items.clone());
    let handle = tool.clone();
    let events = Events::default();
    let (mut driver, pending) = until_approval(tool, &events).await;
    // Not auto-approved: nothing was written yet, and the child waits.
    assert!(!workspace.path().join("out.txt").exists());
    assert_eq!(handle.parked(), 1);
    // The request is for the parent's call and names the child.
    assert_eq!(pending.call.id.as_str(), "p1");
    assert_eq!(pending.call.name, "writer");
    assert_eq!(pending.request.call_id.as_ref().unwrap().as_str(), "p1");
    assert_eq!(pending.request.metadata[SUB_AGENT_KEY], "writer");
    assert_eq!(
        pending.request.metadata[SUB_AGENT_PATH_KEY],
        json!(["writer"])
    );
    assert_eq!(
        pending.request.metadata["agentkit.sub_agent_tool"],
        "fs_write_file"
    );
    assert!(pending.request.summary.starts_with("writer (sub-agent): "));
    assert_eq!(pending.request.request_kind, "filesystem.write");
    // `next()` refuses to go on while it is unresolved, as for any approval.
    assert!(driver.next().await.is_err());

    pending.approve(&mut driver).unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    assert_eq!(run.result.finish_reason, FinishReason::Completed);
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("out.txt")).unwrap(),
        "hello from the child\n"
    );
    assert_eq!(
        results_by_call(&run.transcript)["p1"].output.to_text(),
        "Written."
    );
    assert_eq!(handle.parked(), 0);
    let child = items.get();
    validate_transcript(&child).unwrap();
    assert!(!results_by_call(&child)["w1"].is_error);
    // The parent's observers saw the approval and its resolution.
    let all = events.all();
    assert!(
        all.iter()
            .any(|e| matches!(e, AgentEvent::ApprovalRequired { .. }))
    );
    assert!(all.iter().any(
        |e| matches!(e, AgentEvent::ApprovalResolved { call_id, approved: true } if call_id.as_str() == "p1")
    ));
}

#[tokio::test]
async fn denying_a_childs_approval_tells_the_child_which_goes_on() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let child_model = write_script("I was not allowed to write.");
    let tool = writer(workspace.path(), child_model.clone(), items.clone());
    let (mut driver, pending) = until_approval(tool, &Events::default()).await;
    pending
        .deny_with_reason(&mut driver, "not in this directory")
        .unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    assert!(!workspace.path().join("out.txt").exists());
    // The parent's call is answered by the child, not by a denial stub.
    let answer = &results_by_call(&run.transcript)["p1"];
    assert!(!answer.is_error);
    assert_eq!(answer.output.to_text(), "I was not allowed to write.");
    // The child's model read the denial with the host's reason.
    let child = items.get();
    validate_transcript(&child).unwrap();
    let denied = &results_by_call(&child)["w1"];
    assert_eq!(error_kind(denied), Some("permission_denied"));
    assert!(denied.output.to_text().contains("not in this directory"));
    assert_eq!(child_model.requests().len(), 2);
}

#[tokio::test]
async fn a_grandchilds_approval_surfaces_through_two_levels() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let writer = writer(workspace.path(), write_script("Written."), items.clone());
    let planner = planner(writer, "q1", "The writer wrote it.");
    let (run, _) = delegate_once(planner, Approvals::ApproveAll).await;
    assert_eq!(run.approvals.len(), 1);
    let request = &run.approvals[0].request;
    assert_eq!(
        request.metadata[SUB_AGENT_PATH_KEY],
        json!(["planner", "writer"])
    );
    assert_eq!(request.metadata[SUB_AGENT_KEY], "planner");
    assert_eq!(request.metadata["agentkit.sub_agent_tool"], "fs_write_file");
    assert!(
        request
            .summary
            .starts_with("planner (sub-agent): writer (sub-agent): "),
        "{}",
        request.summary
    );
    assert!(workspace.path().join("out.txt").exists());
    assert_eq!(
        results_by_call(&run.transcript)["p1"].output.to_text(),
        "The writer wrote it."
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_parent_stops_the_child_with_a_valid_transcript() {
    let items = Items::default();
    let (waiter, wait, child_model) = waiter(&items);
    let controller = CancellationController::new();
    let events = Events::default();
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            delegate("p1", "waiter", "Wait."),
            ScriptedTurn::text("never reached"),
        ]))
        .add_tool_source(ToolRegistry::new().with(waiter))
        .observer(events.clone())
        .cancellation(controller.handle())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let interrupt = {
        let events = events.clone();
        tokio::spawn(async move {
            events
                .wait_for(|agent, _, e| {
                    agent == "waiter" && matches!(e, AgentEvent::ToolStarted { tool_name, .. } if tool_name == "wait")
                })
                .await;
            controller.interrupt();
        })
    };
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!("the parent's turn ends")
    };
    interrupt.await.unwrap();
    assert_eq!(result.finish_reason, FinishReason::Cancelled);
    let transcript = driver.transcript().to_vec();
    validate_transcript(&transcript).unwrap();
    assert_eq!(
        error_kind(&results_by_call(&transcript)["p1"]),
        Some("cancelled")
    );

    // The child ends its own turn cancelled, on its own task.
    events
        .wait_for(|agent, _, e| {
            agent == "waiter"
                && matches!(e, AgentEvent::TurnFinished { result } if result.finish_reason == FinishReason::Cancelled)
        })
        .await;
    assert!(
        wait.cancelled.load(Ordering::SeqCst),
        "the child's tool saw it"
    );
    let child = items.get();
    validate_transcript(&child).unwrap();
    assert!(results_by_call(&child).contains_key("c1"));
    assert_eq!(child_model.requests().len(), 1, "the child stopped at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_parent_while_the_child_waits_for_approval_ends_the_child() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let tool = writer(workspace.path(), write_script("Written."), items.clone());
    let handle = tool.clone();
    let controller = CancellationController::new();
    let events = Events::default();
    let agent = Agent::builder()
        .model(ScriptedModel::new([delegate("p1", "writer", "Write.")]))
        .add_tool_source(ToolRegistry::new().with(tool))
        .observer(events.clone())
        .cancellation(controller.handle())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(_)) = driver.next().await.unwrap()
    else {
        panic!("approval expected")
    };
    controller.interrupt();
    let LoopStep::Finished(result) = driver.next().await.unwrap() else {
        panic!("the parent's turn ends cancelled")
    };
    assert_eq!(result.finish_reason, FinishReason::Cancelled);
    validate_transcript(&driver.transcript().to_vec()).unwrap();
    events
        .wait_for(|agent, _, e| {
            agent == "writer"
                && matches!(e, AgentEvent::TurnFinished { result } if result.finish_reason == FinishReason::Cancelled)
        })
        .await;
    assert!(!workspace.path().join("out.txt").exists());
    let child = items.get();
    validate_transcript(&child).unwrap();
    assert_eq!(
        error_kind(&results_by_call(&child)["w1"]),
        Some("cancelled")
    );
    // The child is over: it no longer counts as waiting.
    assert_eq!(handle.parked(), 0);
}

#[tokio::test]
async fn a_child_at_its_step_limit_is_a_typed_error_for_the_parent() {
    let items = Items::default();
    let child_items = items.clone();
    let child_model = ScriptedModel::new([
        ScriptedTurn::new()
            .say("Looking")
            .call("c1", "nothing", json!({}))
            .finish(FinishReason::ToolCall),
        ScriptedTurn::new()
            .say("Still looking")
            .call("c2", "nothing", json!({}))
            .usage(usage(7, 3))
            .finish(FinishReason::ToolCall),
    ]);
    let looper = SubAgent::new("looper", "Loops.", move || {
        Agent::builder()
            .model(child_model.clone())
            .max_model_calls(2)
            .transcript_observer(child_items.clone())
    })
    .unwrap();
    let (run, _) = delegate_once(looper, Approvals::DenyAll).await;
    let result = &results_by_call(&run.transcript)["p1"];
    assert!(result.is_error);
    assert_eq!(error_kind(result), Some("execution_failed"));
    assert_eq!(
        result.output.to_text(),
        "sub-agent looper reached its step limit (2 model calls) before answering; its last words: Still looking"
    );
    // Its usage still counts, and its transcript is valid.
    assert_eq!(run.result.usage.tokens.input_tokens, 7);
    let child = items.get();
    validate_transcript(&child).unwrap();
    assert_eq!(results_by_call(&child).len(), 2);
}

#[tokio::test]
async fn a_failing_child_is_abandoned_and_reported() {
    let items = Items::default();
    let child_model = ScriptedModel::new([
        ScriptedTurn::tool_call("c1", "nothing", json!({})),
        ScriptedTurn::failing(agentkit_loop::ModelError::new(
            agentkit_loop::ModelErrorKind::Authentication,
            "bad key",
        )),
    ]);
    let broken = observed("broken", child_model, &items);
    let (run, events) = delegate_once(broken, Approvals::DenyAll).await;
    let result = &results_by_call(&run.transcript)["p1"];
    assert_eq!(error_kind(result), Some("execution_failed"));
    let text = result.output.to_text();
    assert!(text.starts_with("sub-agent broken failed: "), "{text}");
    assert!(text.contains("bad key"), "{text}");
    validate_transcript(&items.get()).unwrap();
    let finished = events.tagged().into_iter().find_map(|(_, _, e)| match e {
        AgentEvent::TurnFinished { result } => Some(result.finish_reason),
        _ => None,
    });
    assert_eq!(finished, Some(FinishReason::Error));
}

#[tokio::test]
async fn a_snapshot_keeps_the_paused_call_and_a_resumed_driver_continues_the_child() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let tool = writer(workspace.path(), write_script("Written."), items.clone());
    let events = Events::default();
    let agent = parent(
        ScriptedModel::new([delegate("p1", "writer", "Write."), ScriptedTurn::text("ok")]),
        tool,
        &events,
    );
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(first)) = driver.next().await.unwrap()
    else {
        panic!("approval expected")
    };
    // Saved as JSON and resumed by the same agent (same process: the child
    // still waits), the approval is shown again and answering it resumes
    // the child.
    let saved = serde_json::to_string(&driver.snapshot()).unwrap();
    drop(driver);
    let snapshot = serde_json::from_str(&saved).unwrap();
    let mut driver = agent
        .resume(SessionConfig::new("parent"), snapshot)
        .await
        .unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(again)) = driver.next().await.unwrap()
    else {
        panic!("the paused call's approval survives the snapshot")
    };
    assert_eq!(again.call, first.call);
    assert_eq!(again.request.summary, first.request.summary);
    again.approve(&mut driver).unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    assert_eq!(
        results_by_call(&run.transcript)["p1"].output.to_text(),
        "Written."
    );
    assert!(workspace.path().join("out.txt").exists());
}

#[tokio::test]
async fn a_resumed_call_whose_child_is_gone_is_answered_as_lost() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let tool = writer(workspace.path(), write_script("Written."), items.clone());
    let (driver, _) = until_approval(tool, &Events::default()).await;
    let saved = serde_json::to_string(&driver.snapshot()).unwrap();

    // Another process: a new sub-agent, with no child waiting.
    let elsewhere = writer(workspace.path(), write_script("Written."), Items::default());
    let agent = parent(
        ScriptedModel::new([ScriptedTurn::text("The writer is gone.")]),
        elsewhere,
        &Events::default(),
    );
    let mut driver = agent
        .resume(
            SessionConfig::new("parent"),
            serde_json::from_str(&saved).unwrap(),
        )
        .await
        .unwrap();
    let run = run_to_finish(&mut driver, Approvals::ApproveAll)
        .await
        .unwrap();
    let result = &results_by_call(&run.transcript)["p1"];
    assert_eq!(error_kind(result), Some("unavailable"));
    assert_eq!(
        result.output.to_text(),
        "tool unavailable: sub-agent writer is no longer waiting for this approval"
    );
    assert!(!workspace.path().join("out.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_that_stops_waiting_interrupts_the_child() {
    let items = Items::default();
    let (waiter, wait, _) = waiter(&items);
    let events = Events::default();
    // The parent's task manager gives every call 200 ms.
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            delegate("p1", "waiter", "Wait."),
            ScriptedTurn::text("Too slow."),
        ]))
        .add_tool_source(ToolRegistry::new().with(waiter))
        .task_manager(
            agentkit_loop::SimpleTaskManager::new().with_timeout(Duration::from_millis(200)),
        )
        .observer(events.clone())
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    assert_eq!(
        error_kind(&results_by_call(&run.transcript)["p1"]),
        Some("timeout")
    );
    events
        .wait_for(|agent, _, e| {
            agent == "waiter"
                && matches!(e, AgentEvent::TurnFinished { result } if result.finish_reason == FinishReason::Cancelled)
        })
        .await;
    assert!(wait.cancelled.load(Ordering::SeqCst));
    validate_transcript(&items.get()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_approval_waits_for_the_parents_running_siblings() {
    let workspace = tempfile::tempdir().unwrap();
    let tool = writer(workspace.path(), write_script("Written."), Items::default());
    let nap = Sleep::new("nap", 150);
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::new()
                .call("p1", "writer", json!({ "task": "Write." }))
                .call("p2", "nap", json!({}))
                .finish(FinishReason::ToolCall),
            ScriptedTurn::text("Both done."),
        ]))
        .add_tool_source(ToolRegistry::new().with(tool).with(nap.clone()))
        .task_manager(agentkit_loop::ConcurrentTaskManager::new(2))
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(pending)) = driver.next().await.unwrap()
    else {
        panic!("approval expected")
    };
    // Shown only once the sibling finished: the pause did not cut it short.
    assert!(nap.finished.load(Ordering::SeqCst));
    assert_eq!(pending.call.id.as_str(), "p1");
    pending.approve(&mut driver).unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    let results = results_by_call(&run.transcript);
    assert_eq!(results["p1"].output.to_text(), "Written.");
    assert_eq!(results["p2"].output.to_text(), "rested");
    assert!(workspace.path().join("out.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_left_waiting_by_an_abandoned_turn_is_ended_at_the_next_call() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let child_model = ScriptedModel::new([
        ScriptedTurn::tool_call(
            "w1",
            "fs_write_file",
            json!({ "path": "out.txt", "content": "x" }),
        ),
        ScriptedTurn::text("Second child answers."),
    ]);
    let tool = writer(workspace.path(), child_model, items.clone());
    let handle = tool.clone();
    let events = Events::default();
    let agent = parent(
        ScriptedModel::new([
            delegate("p1", "writer", "Write."),
            delegate("p2", "writer", "Just answer."),
            ScriptedTurn::text("ok"),
        ]),
        tool,
        &events,
    );
    let mut driver = agent.start(SessionConfig::new("parent")).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::ApprovalRequest(_)) = driver.next().await.unwrap()
    else {
        panic!("approval expected")
    };
    // The host gives up on the turn: the paused call is answered as
    // abandoned, and nothing will resume the child.
    driver.abandon_turn("the user left").unwrap();
    assert_eq!(handle.parked(), 1);

    // The next call of the same sub-agent in this session ends it.
    let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = driver.next().await.unwrap()
    else {
        panic!("idle after the abandoned turn")
    };
    request
        .submit(&mut driver, vec![Item::user("again")])
        .unwrap();
    let run = run_to_finish(&mut driver, Approvals::DenyAll)
        .await
        .unwrap();
    assert_eq!(
        results_by_call(&run.transcript)["p2"].output.to_text(),
        "Second child answers."
    );
    events
        .wait_for(|agent, _, e| {
            agent == "writer"
                && matches!(e, AgentEvent::TurnFinished { result } if result.finish_reason == FinishReason::Cancelled)
        })
        .await;
    assert_eq!(handle.parked(), 0);
    assert!(!workspace.path().join("out.txt").exists());
}

#[tokio::test]
async fn a_child_may_ask_again_after_a_denial() {
    let workspace = tempfile::tempdir().unwrap();
    let items = Items::default();
    let write = |id: &str, path: &str| {
        ScriptedTurn::tool_call(
            id,
            "fs_write_file",
            json!({ "path": path, "content": "x\n" }),
        )
    };
    let child_model = ScriptedModel::new([
        write("w1", "first.txt"),
        write("w2", "second.txt"),
        ScriptedTurn::text("Wrote the second file."),
    ]);
    let tool = writer(workspace.path(), child_model, items.clone());
    let (run, _) = delegate_once(
        tool,
        Approvals::decide(|pending| {
            pending.request.metadata["agentkit.sub_agent_input"]["path"] == "second.txt"
        }),
    )
    .await;
    // One parent call, paused twice: denied, then approved.
    assert_eq!(run.approvals.len(), 2);
    assert!(run.approvals.iter().all(|a| a.call.id.as_str() == "p1"));
    assert!(!workspace.path().join("first.txt").exists());
    assert!(workspace.path().join("second.txt").exists());
    assert_eq!(
        results_by_call(&run.transcript)["p1"].output.to_text(),
        "Wrote the second file."
    );
    let child = items.get();
    validate_transcript(&child).unwrap();
    assert_eq!(
        error_kind(&results_by_call(&child)["w1"]),
        Some("permission_denied")
    );
}
