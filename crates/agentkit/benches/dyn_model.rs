//! The cost of choosing the model at run time: S1 (1000 tool rounds of a
//! scripted model through the real driver) with the adapter's own type and
//! with the same adapter behind `DynModel`, printed as a table.
//!
//! Run with `cargo bench -p agentkit --bench dyn_model`. Each figure is the
//! median of seven repetitions.

use agentkit::agent::{Agent, LoopInterrupt, LoopStep, ModelAdapter, SessionConfig};
use agentkit::core::{FinishReason, Item};
use agentkit::provider::DynModel;
use agentkit::testkit::{EchoTool, ScriptedModel, ScriptedTurn};
use agentkit::tools::ToolRegistry;
use serde_json::json;
use std::time::Instant;

fn model() -> ScriptedModel {
    let turn = |i: usize| {
        ScriptedTurn::new()
            .say_chunks(&["Let", " me", " check", "."])
            .call(&format!("call-{i}"), "echo", json!({ "text": "hi" }))
            .finish(FinishReason::ToolCall)
    };
    ScriptedModel::new((0..1000).map(turn).chain([ScriptedTurn::text("done")])).without_recording()
}

/// µs per round over 1000 rounds.
async fn s1<M: ModelAdapter>(model: M) -> f64 {
    let echo = EchoTool::new();
    let agent = Agent::builder()
        .model(model)
        .add_tool_source(ToolRegistry::new().with(echo))
        .max_model_calls(10_000) // one long turn, past the default step limit
        .transcript(vec![Item::system("bench")])
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s1")).await.unwrap();
    let started = Instant::now();
    let mut rounds = 0;
    loop {
        match driver.next().await.unwrap() {
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => rounds += 1,
            LoopStep::Finished(_) => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(rounds, 1000);
    started.elapsed().as_secs_f64() * 1e6 / 1000.0
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut direct, mut erased) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        direct.push(runtime.block_on(s1(model())));
        erased.push(runtime.block_on(s1(DynModel::new(model()))));
    }
    let (direct, erased) = (median(direct), median(erased));
    println!("| scenario | measure | value |");
    println!("| --- | --- | --- |");
    println!("| S1 | µs per round, ScriptedModel | {direct:.1} |");
    println!("| S1 | µs per round, DynModel(ScriptedModel) | {erased:.1} |");
    println!(
        "| S1 | erasure cost per round, µs | {:.2} |",
        erased - direct
    );
}
