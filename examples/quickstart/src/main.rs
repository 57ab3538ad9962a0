//! Offline quickstart: folds a streamed model answer into transcript items,
//! answers its tool call, checks the transcript and prints it as JSON.
//!
//! Run it with `cargo run -p quickstart`.

use agentkit_core::{
    Delta, DeltaFolder, Item, ItemKind, Part, PartId, PartKind, ToolCallPart, ToolResultPart,
    validate_transcript,
};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut transcript = vec![
        Item::system("You are a terse assistant."),
        Item::user("How many lines does README.md have?"),
    ];

    // What a provider adapter would emit while the answer streams in.
    let text = PartId::new("part-0");
    let stream = [
        Delta::BeginPart {
            part_id: text.clone(),
            kind: PartKind::Text,
        },
        Delta::AppendText {
            part_id: text.clone(),
            chunk: "Let me".into(),
        },
        Delta::AppendText {
            part_id: text.clone(),
            chunk: " count.".into(),
        },
        Delta::CommitPart { part_id: text },
    ];
    let mut folder = DeltaFolder::new();
    for delta in &stream {
        println!("delta: {}", serde_json::to_string(delta)?);
        folder.apply(delta)?;
    }
    let mut parts = folder.finish()?;
    parts.push(Part::ToolCall(ToolCallPart::new(
        "call-1",
        "count_lines",
        json!({ "path": "README.md" }),
    )));
    transcript.push(Item::new(ItemKind::Assistant, parts));

    // A transcript with an unanswered call is invalid until the result lands.
    if let Err(err) = validate_transcript(&transcript) {
        println!("before the result: {err}");
    }
    transcript.push(Item::tool_result(ToolResultPart::success("call-1", "42")));
    transcript.push(Item::assistant("README.md has 42 lines."));
    validate_transcript(&transcript)?;

    println!(
        "\ntranscript:\n{}",
        serde_json::to_string_pretty(&transcript)?
    );
    Ok(())
}
