//! Tool-call ids come from the model: every way of repeating one gets a
//! fresh id, in the first answer and later ones, short and long, and the
//! fresh ids themselves are not handed out twice.

mod support;

use agentkit_core::{FinishReason, Item};
use agentkit_loop::Agent;
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use serde_json::json;
use support::*;

/// A turn asking for one echo call per id.
fn calls(ids: &[&str]) -> ScriptedTurn {
    ids.iter()
        .fold(ScriptedTurn::new(), |turn, id| {
            turn.call(id, "echo", json!({ "text": id }))
        })
        .finish(FinishReason::ToolCall)
}

#[tokio::test]
async fn every_repeated_call_id_gets_a_fresh_one() {
    const LONG: &str = "toolu_01A09q90qw90lq917835lq9";
    let model = ScriptedModel::new([
        // Twice in the session's first answer.
        calls(&["a", "a"]),
        // The fresh id the model was told, and a new one.
        calls(&["a_2", "b"]),
        // An old id after new ones; a long provider id.
        calls(&["c", "b", LONG]),
        calls(&[LONG, LONG]),
        ScriptedTurn::text("done"),
    ]);
    let mut driver = start_go(
        Agent::builder()
            .model(model.clone())
            .add_tool_source(registry()),
    )
    .await;
    let transcript = run_to_end(&mut driver, 20).await;
    let ids: Vec<(&str, Option<&str>)> = transcript
        .iter()
        .flat_map(Item::tool_calls)
        .map(|call| {
            let original = call
                .metadata
                .get("agentkit.original_call_id")
                .and_then(|v| v.as_str());
            (call.id.as_str(), original)
        })
        .collect();
    let long_2 = format!("{LONG}_2");
    let long_3 = format!("{LONG}_3");
    assert_eq!(
        ids,
        [
            ("a", None),
            ("a_2", Some("a")),
            ("a_2_2", Some("a_2")),
            ("b", None),
            ("c", None),
            ("b_2", Some("b")),
            (LONG, None),
            (long_2.as_str(), Some(LONG)),
            (long_3.as_str(), Some(LONG)),
        ]
    );
    // Each call ran once, with its own input.
    let outputs: Vec<String> = transcript
        .iter()
        .flat_map(|item| item.parts.iter())
        .filter_map(|part| part.as_tool_result().map(|r| r.output.to_text()))
        .collect();
    assert_eq!(
        outputs,
        ["a", "a", "a_2", "b", "c", "b", LONG, LONG, LONG].map(|t| format!("echo: {t}"))
    );
}
