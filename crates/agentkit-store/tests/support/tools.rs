//! Tools and checkers the store's tests run agents with.

use agentkit_core::Item;
use agentkit_loop::{
    Agent, AgentBuilder, LoopMutator, MutationContext, MutationPoint, TranscriptView,
};
use agentkit_store::SessionStore;
use agentkit_testkit::{AskFor, GuardedTool, ScriptedModel};
use agentkit_tools_core::{
    Tool, ToolContext, ToolError, ToolRegistry, ToolRequest, ToolResult, ToolSpec,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn spec(name: &str) -> Arc<ToolSpec> {
    Arc::new(
        ToolSpec::new(
            name,
            format!("the {name} tool"),
            json!({ "type": "object" }),
        )
        .unwrap(),
    )
}

/// Sleeps for `input.ms`.
pub struct Slow;

#[async_trait::async_trait]
impl Tool for Slow {
    fn spec(&self) -> Arc<ToolSpec> {
        spec("slow")
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let ms = request.input["ms"].as_u64().unwrap_or(10);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(ToolResult::new(format!("slept {ms}ms")))
    }
}

/// Needs approval (`danger.run`, asked by [`danger_needs_approval`]) and
/// counts its runs.
pub fn danger() -> GuardedTool {
    GuardedTool::new("danger")
}

/// `danger.*` needs approval; everything else is allowed.
pub fn danger_needs_approval() -> AskFor {
    AskFor::kinds("danger.")
}

/// Reads, while it runs, how many items of `input.session` the store holds.
/// Waits up to 5 s for `input.expect` of them: a backend may write through
/// a task, a few milliseconds after the append.
pub struct Peek {
    pub store: Arc<dyn SessionStore>,
}

#[async_trait::async_trait]
impl Tool for Peek {
    fn spec(&self) -> Arc<ToolSpec> {
        spec("peek")
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let id = request.input["session"].as_str().unwrap_or_default().into();
        let expect = request.input["expect"].as_u64().unwrap_or(0) as usize;
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let stored = self
                .store
                .load(&id)
                .await
                .map_err(|err| ToolError::ExecutionFailed(err.to_string()))?;
            if stored.items.len() >= expect || std::time::Instant::now() > deadline {
                return Ok(ToolResult::new(format!("stored: {}", stored.items.len())));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The tools every test agent gets.
pub fn registry(danger: &GuardedTool, peek: Arc<dyn SessionStore>) -> ToolRegistry {
    ToolRegistry::new()
        .with(Slow)
        .with(danger.clone())
        .with(Peek { store: peek })
}

/// What the rewrite tests run, before it is recorded: `model`, the test
/// tools (`peek` reading `store`) and [`RedactResults`].
pub fn redacting(
    model: ScriptedModel,
    store: Arc<dyn SessionStore>,
) -> AgentBuilder<ScriptedModel> {
    Agent::builder()
        .model(model)
        .add_tool_source(registry(&danger(), store))
        .mutator(RedactResults)
}

/// Rewrites every tool result's text in place (same length, same ids): a
/// rewrite the item indices alone cannot reveal.
pub struct RedactResults;

#[async_trait::async_trait]
impl LoopMutator for RedactResults {
    fn name(&self) -> &str {
        "redact"
    }

    async fn mutate(
        &self,
        ctx: &MutationContext,
        transcript: TranscriptView,
    ) -> Result<Option<Vec<Item>>, agentkit_loop::MutateError> {
        if ctx.point != MutationPoint::AfterToolResult {
            return Ok(None);
        }
        let mut items = transcript.to_vec();
        for item in &mut items {
            for part in &mut item.parts {
                if let agentkit_core::Part::ToolResult(result) = part {
                    result.output = agentkit_core::ToolOutput::Text("[redacted]".into());
                }
            }
        }
        Ok(Some(items))
    }
}

/// Answers whether the store already holds what tells a resume that the
/// call started, asked before it does anything else (`probe` blocks: the
/// runtime runs nothing else meanwhile, so no queued write can land in
/// between). Asks for the permission `probe.run` when its input says
/// `"ask": true`.
pub struct MarkProbe {
    pub probe: Arc<dyn Fn(&str) -> bool + Send + Sync>,
}

#[async_trait::async_trait]
impl Tool for MarkProbe {
    fn spec(&self) -> Arc<ToolSpec> {
        spec("probe")
    }

    fn proposed_requests(
        &self,
        input: &serde_json::Value,
    ) -> Result<Vec<agentkit_tools_core::PermissionRequest>, ToolError> {
        Ok(if input["ask"] == true {
            vec![agentkit_tools_core::PermissionRequest::custom(
                "probe.run",
                "run the probe",
                json!({}),
            )]
        } else {
            Vec::new()
        })
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let stored = (self.probe)(request.call_id.as_str());
        Ok(ToolResult::new(if stored { "started" } else { "unknown" }))
    }
}
