//! The serialized shape of the transcript is part of the public contract:
//! hosts persist transcripts and read them back with later versions. These
//! snapshots fail on any change to it.

use agentkit_core::{
    CustomPart, DataRef, FilePart, FinishReason, Item, ItemKind, MediaPart, Part, ReasoningPart,
    StructuredPart, TokenUsage, ToolCallPart, ToolOutput, ToolResultPart, Usage,
    validate_transcript,
};
use serde_json::json;

fn representative_transcript() -> Vec<Item> {
    vec![
        Item::system("You are a careful coding agent.").with_id("item-0"),
        Item::new(
            ItemKind::User,
            vec![
                Part::text("What is in this screenshot, and in notes.txt?"),
                Part::Media(MediaPart::image("image/png", vec![137, 80, 78, 71])),
                Part::File(FilePart {
                    name: Some("notes.txt".into()),
                    mime_type: Some("text/plain".into()),
                    data: DataRef::Text {
                        text: "remember the milk".into(),
                    },
                    metadata: Default::default(),
                }),
            ],
        )
        .with_id("item-1"),
        Item::new(
            ItemKind::Assistant,
            vec![
                Part::Reasoning(ReasoningPart {
                    summary: Some("The user wants two things.".into()),
                    signature: Some("EqQBCgIYAhIM...".into()),
                    ..Default::default()
                }),
                Part::text("Let me look."),
                Part::ToolCall(ToolCallPart::new(
                    "call_1",
                    "read_file",
                    json!({ "path": "notes.txt" }),
                )),
                Part::ToolCall(ToolCallPart::new("call_2", "ocr", json!({ "image": 0 }))),
            ],
        )
        .with_id("item-2"),
        Item::tool_result(ToolResultPart::success("call_1", "remember the milk")).with_id("item-3"),
        Item::tool_result(
            ToolResultPart::error("call_2", "ocr is not installed")
                .with_metadata("agentkit.error_kind", "execution_failed"),
        )
        .with_id("item-4"),
        Item::new(
            ItemKind::Assistant,
            vec![
                Part::Structured(StructuredPart {
                    value: json!({ "items": ["milk"] }),
                    schema: None,
                    metadata: Default::default(),
                }),
                Part::Custom(CustomPart {
                    kind: "acme.citation".into(),
                    value: json!({ "source": "notes.txt" }),
                    metadata: Default::default(),
                }),
            ],
        )
        .with_id("item-5")
        .with_finish_reason(FinishReason::MaxTokens),
    ]
}

#[test]
fn representative_transcript_is_valid() {
    validate_transcript(&representative_transcript()).unwrap();
}

#[test]
fn transcript_json_snapshot() {
    insta::assert_json_snapshot!(representative_transcript());
}

#[test]
fn transcript_yaml_snapshot() {
    insta::assert_yaml_snapshot!(representative_transcript());
}

#[test]
fn transcript_round_trips_through_json() {
    let transcript = representative_transcript();
    let text = serde_json::to_string(&transcript).unwrap();
    let back: Vec<Item> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, transcript);
}

/// Transcripts saved before the finish reason was a field kept it as an
/// `agentkit.finish_reason` metadata entry: it reads into the field.
#[test]
fn an_old_finish_reason_entry_reads_into_the_field() {
    let old = json!([
        { "kind": "assistant", "parts": [{ "type": "text", "text": "The list goes" }],
          "metadata": { "agentkit.finish_reason": "max_tokens", "acme.trace": "t-1" } },
        { "kind": "assistant", "parts": [{ "type": "text", "text": "Done." }],
          "metadata": { "agentkit.finish_reason": "completed" } },
        { "kind": "assistant", "parts": [{ "type": "text", "text": "Hm." }],
          "metadata": { "agentkit.finish_reason": { "other": "pause_turn" } } },
        { "kind": "assistant", "parts": [{ "type": "text", "text": "?" }],
          "metadata": { "agentkit.finish_reason": 5 } },
    ]);
    let items: Vec<Item> = serde_json::from_value(old).unwrap();
    assert_eq!(items[0].finish_reason(), Some(FinishReason::MaxTokens));
    assert_eq!(items[0].metadata.keys().collect::<Vec<_>>(), ["acme.trace"]);
    assert_eq!(
        serde_json::to_value(&items[0]).unwrap(),
        json!({ "kind": "assistant", "parts": [{ "type": "text", "text": "The list goes" }],
                "metadata": { "acme.trace": "t-1" }, "finish_reason": "max_tokens" })
    );
    assert_eq!(
        items[0],
        Item::assistant("The list goes")
            .with_metadata("acme.trace", "t-1")
            .with_finish_reason(FinishReason::MaxTokens)
    );
    // The reason the content says is not kept twice.
    assert_eq!(items[1], Item::assistant("Done."));
    assert_eq!(
        items[2].finish_reason(),
        Some(FinishReason::Other("pause_turn".into()))
    );
    // Not a reason: the entry stays, nothing is lost.
    assert_eq!(items[3].metadata["agentkit.finish_reason"], json!(5));
}

#[test]
fn tags_are_snake_case() {
    let part = serde_json::to_value(Part::ToolResult(ToolResultPart::success("c", "ok"))).unwrap();
    assert_eq!(
        part,
        json!({ "type": "tool_result", "call_id": "c", "output": { "kind": "text", "value": "ok" }, "is_error": false })
    );
    assert_eq!(
        serde_json::to_value(ItemKind::Notification).unwrap(),
        json!("notification")
    );
    assert_eq!(
        serde_json::to_value(FinishReason::MaxTokens).unwrap(),
        json!("max_tokens")
    );
    assert_eq!(
        serde_json::to_value(FinishReason::Other("pause".into())).unwrap(),
        json!({ "other": "pause" })
    );
}

#[test]
fn minimal_json_fills_defaults() {
    // Optional fields may be left out by hand-written or older transcripts.
    let item: Item = serde_json::from_value(json!({
        "kind": "tool",
        "parts": [{ "type": "tool_result", "call_id": "c", "output": { "kind": "structured", "value": [1] } }]
    }))
    .unwrap();
    let result = item.tool_results().next().unwrap();
    assert!(!result.is_error);
    assert_eq!(result.output, ToolOutput::Structured(json!([1])));
}

#[test]
fn unknown_part_type_is_a_clear_error() {
    let err = serde_json::from_value::<Part>(json!({ "type": "hologram" })).unwrap_err();
    assert!(err.to_string().contains("hologram"), "{err}");
}

#[test]
fn usage_round_trips() {
    let usage = Usage::from_tokens(TokenUsage {
        input_tokens: 3,
        output_tokens: 4,
        cache_read_tokens: 1,
        ..Default::default()
    });
    let back: Usage = serde_json::from_value(serde_json::to_value(&usage).unwrap()).unwrap();
    assert_eq!(back, usage);
    let sparse: Usage = serde_json::from_value(json!({ "tokens": { "input_tokens": 9 } })).unwrap();
    assert_eq!(sparse.tokens.input_tokens, 9);
    assert_eq!(sparse.tokens.output_tokens, 0);
}

#[test]
fn tool_output_to_text() {
    let output = ToolOutput::Parts(vec![
        Part::text("a"),
        Part::Media(MediaPart::image("image/png", vec![1])),
    ]);
    assert_eq!(output.to_text(), "a\n[image image/png]");
}
