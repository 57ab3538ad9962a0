//! Tools, checkers and observers shared by the loop's integration tests.
#![allow(dead_code)]

use agentkit_core::Item;
use agentkit_loop::{AgentEvent, LoopObserver, TranscriptObserver};
use agentkit_tools_core::{
    ApprovalReason, PermissionChecker, PermissionDecision, PermissionRequest, Tool, ToolContext,
    ToolError, ToolRegistry, ToolRequest, ToolResult, ToolSpec, approval_for,
};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub fn spec(name: &str) -> Arc<ToolSpec> {
    Arc::new(
        ToolSpec::new(
            name,
            format!("the {name} tool"),
            json!({ "type": "object" }),
        )
        .unwrap(),
    )
}

/// Returns `echo: <text>`.
pub struct Echo;

#[async_trait::async_trait]
impl Tool for Echo {
    fn spec(&self) -> Arc<ToolSpec> {
        spec("echo")
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::new(format!(
            "echo: {}",
            request.input["text"].as_str().unwrap_or("")
        )))
    }
}

/// Proposes one `danger.<kind>` request per entry of `input.kinds` and
/// counts its runs.
pub struct Danger {
    pub runs: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl Tool for Danger {
    fn spec(&self) -> Arc<ToolSpec> {
        spec("danger")
    }

    fn proposed_requests(&self, input: &Value) -> Result<Vec<PermissionRequest>, ToolError> {
        let kinds = input["kinds"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| vec![json!("write")]);
        Ok(kinds
            .iter()
            .map(|k| {
                PermissionRequest::custom(
                    format!("danger.{}", k.as_str().unwrap()),
                    format!("do {k}"),
                    json!({}),
                )
            })
            .collect())
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(ToolResult::new(format!("did {}", request.input)))
    }
}

/// Panics.
pub struct Panics;

#[async_trait::async_trait]
impl Tool for Panics {
    fn spec(&self) -> Arc<ToolSpec> {
        spec("panics")
    }

    async fn invoke(
        &self,
        _request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        panic!("the tool exploded")
    }
}

/// Sleeps for `input.ms`, or until the turn is cancelled.
pub struct Slow;

#[async_trait::async_trait]
impl Tool for Slow {
    fn spec(&self) -> Arc<ToolSpec> {
        spec("slow")
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let ms = request.input["ms"].as_u64().unwrap_or(10);
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(ms)) => Ok(ToolResult::new(format!("slept {ms}ms"))),
            _ = ctx.cancellation.cancelled() => Err(ToolError::Cancelled),
        }
    }
}

pub fn registry() -> ToolRegistry {
    ToolRegistry::new().with(Echo).with(Panics).with(Slow)
}

/// `danger.*` requests need approval; everything else is allowed.
pub struct DangerNeedsApproval;

impl PermissionChecker for DangerNeedsApproval {
    fn evaluate(&self, request: &PermissionRequest) -> PermissionDecision {
        if request.kind.starts_with("danger.") && request.kind != "danger.read" {
            PermissionDecision::RequireApproval(approval_for(
                request,
                ApprovalReason::PolicyRequiresConfirmation,
            ))
        } else {
            PermissionDecision::Allow
        }
    }
}

/// Records event names.
#[derive(Default, Clone)]
pub struct EventLog(pub Arc<Mutex<Vec<AgentEvent>>>);

impl EventLog {
    pub fn names(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["event"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }
}

impl LoopObserver for EventLog {
    fn handle_event(&self, event: AgentEvent) {
        self.0.lock().unwrap().push(event);
    }
}

/// Records appended items with their index.
#[derive(Default, Clone)]
pub struct ItemLog(pub Arc<Mutex<Vec<(usize, Item)>>>);

impl TranscriptObserver for ItemLog {
    fn on_item_appended(&self, index: usize, item: &Item) {
        self.0.lock().unwrap().push((index, item.clone()));
    }
}

/// A driver whose `danger` tool needs approval, with input "go" queued.
pub async fn danger_driver(
    model: &agentkit_testkit::ScriptedModel,
    runs: Arc<AtomicUsize>,
    concurrent: bool,
) -> agentkit_loop::LoopDriver<agentkit_testkit::ScriptedSession> {
    let mut builder = agentkit_loop::Agent::builder()
        .model(model.clone())
        .add_tool_source(registry().with(Danger { runs }))
        .permissions(DangerNeedsApproval)
        .input(vec![Item::user("go")]);
    if concurrent {
        builder = builder.task_manager(agentkit_loop::ConcurrentTaskManager::new(4));
    }
    builder
        .build()
        .unwrap()
        .start(agentkit_loop::SessionConfig::new("s"))
        .await
        .unwrap()
}

/// Sends "go" as the first input and starts session "s".
pub async fn start_go(
    builder: agentkit_loop::AgentBuilder<agentkit_testkit::ScriptedModel>,
) -> agentkit_loop::LoopDriver<agentkit_testkit::ScriptedSession> {
    builder
        .input(vec![Item::user("go")])
        .build()
        .unwrap()
        .start(agentkit_loop::SessionConfig::new("s"))
        .await
        .unwrap()
}

/// Runs the session's turn to its end (at most `max_steps` steps) and
/// returns the transcript, checked valid.
pub async fn run_to_end(
    driver: &mut agentkit_loop::LoopDriver<agentkit_testkit::ScriptedSession>,
    max_steps: usize,
) -> Vec<Item> {
    let mut steps = 0;
    while !matches!(
        driver.next().await.unwrap(),
        agentkit_loop::LoopStep::Finished(_)
    ) {
        steps += 1;
        assert!(steps < max_steps, "the turn ends within {max_steps} steps");
    }
    let transcript = driver.transcript().to_vec();
    agentkit_core::validate_transcript(&transcript).unwrap();
    transcript
}
