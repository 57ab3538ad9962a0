//! `snapshot`: reading a `LoopSnapshot` written by another version (or
//! damaged on disk) and resuming from it.
//!
//! Seeds are real snapshots, taken from a driver after a finished turn and
//! while it waits for an approval; inputs are those JSON documents mutated.
//! Properties: reading never panics, a snapshot that reads round-trips
//! through JSON unchanged, and resuming from it either is refused with a
//! typed `LoopError` or gives a driver that can take a few steps without
//! panicking or hanging.

use crate::{Outcome, Target, mutated};
use agentkit_core::Item;
use agentkit_loop::{Agent, LoopSnapshot, SessionConfig};
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tools_core::{
    Tool, ToolContext, ToolError, ToolRegistry, ToolRequest, ToolResult, ToolSpec,
};
use serde_json::json;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The target.
pub const TARGET: Target = Target {
    name: "snapshot",
    about: "LoopSnapshot: damaged JSON refused or round-trips; resume is typed, never a panic",
    check,
    generate: || mutated(seeds()),
};

/// A tool with side effects, so the default permissions ask first.
struct Write;

#[async_trait::async_trait]
impl Tool for Write {
    fn spec(&self) -> Arc<ToolSpec> {
        Arc::new(
            ToolSpec::new("write", "Writes.", json!({"type": "object"}))
                .expect("a valid tool name"),
        )
    }

    async fn invoke(&self, _: ToolRequest, _: ToolContext) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::new("written"))
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime")
}

fn agent(turns: Vec<ScriptedTurn>) -> Result<Agent<ScriptedModel>, String> {
    Agent::builder()
        .model(ScriptedModel::new(turns))
        .add_tool_source(ToolRegistry::new().with(Write))
        .max_model_calls(4)
        .input(vec![Item::user("hello")])
        .build()
        .map_err(|e| e.to_string())
}

/// Real snapshots: after a finished text turn, and paused at an approval.
pub(crate) fn seeds() -> &'static [&'static [u8]] {
    static SEEDS: OnceLock<Vec<&'static [u8]>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let scripts = [
            vec![ScriptedTurn::text("Hi.")],
            vec![
                ScriptedTurn::tool_call("call-1", "write", json!({"path": "a", "n": 1})),
                ScriptedTurn::text("Done."),
            ],
        ];
        let mut seeds = Vec::new();
        for turns in scripts {
            let snapshot = runtime().block_on(async {
                let agent = agent(turns).ok()?;
                let mut driver = agent.start(SessionConfig::new("s1")).await.ok()?;
                driver.next().await.ok()?;
                Some(driver.snapshot())
            });
            if let Some(bytes) = snapshot.and_then(|s| serde_json::to_vec_pretty(&s).ok()) {
                seeds.push(&*Box::leak(bytes.into_boxed_slice()));
            }
        }
        assert_eq!(seeds.len(), 2, "the seed snapshots could not be taken");
        seeds
    })
}

fn check(input: &[u8]) -> Outcome {
    let Ok(snapshot) = serde_json::from_slice::<LoopSnapshot>(input) else {
        return Ok(());
    };
    let written = serde_json::to_vec(&snapshot).map_err(|e| format!("cannot write back: {e}"))?;
    let again: LoopSnapshot = serde_json::from_slice(&written)
        .map_err(|e| format!("written snapshot unreadable: {e}"))?;
    if again != snapshot {
        return Err("the snapshot changed through a JSON round trip".into());
    }
    runtime().block_on(async {
        let agent = agent(vec![
            ScriptedTurn::text("Again."),
            ScriptedTurn::text("More."),
        ])?;
        let config = SessionConfig::new(snapshot.session_id.clone());
        let Ok(mut driver) = agent.resume(config, snapshot).await else {
            return Ok(());
        };
        for _ in 0..3 {
            match tokio::time::timeout(Duration::from_secs(2), driver.next()).await {
                Err(_) => return Err("a resumed driver hung for 2 s".to_owned()),
                Ok(Err(_)) => break,
                Ok(Ok(_)) => {}
            }
        }
        Ok(())
    })
}
