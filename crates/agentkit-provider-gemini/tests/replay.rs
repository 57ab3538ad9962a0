//! Streams recorded from the real Gemini API, published by vercel/ai as
//! test fixtures (tests/cassettes/recorded/*.json name each source and its
//! licence), replayed whole and cut into 1-, 7- and 4096-byte pieces: one
//! test per recording and piece size.

use agentkit_core::{DeltaFolder, FinishReason, Part, ToolCallPart, Usage};
use agentkit_http::SseStream;
use agentkit_loop::{ModelTurn, ModelTurnEvent};
use agentkit_provider_gemini::GeminiTurn;
use agentkit_testkit::cassette::Cassette;

/// What a recording decodes to.
struct Decoded {
    parts: Vec<Part>,
    calls: Vec<ToolCallPart>,
    usage: Usage,
    reason: FinishReason,
    raw_reason: String,
}

async fn replay(name: &str, piece: usize) -> Decoded {
    let path = format!(
        "{}/tests/cassettes/recorded/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let cassette = Cassette::load(&path).expect("the cassette loads");
    let body = cassette.interactions[0].response.body.clone();
    let mut turn = GeminiTurn::from_events(SseStream::from_pieces(body, piece));
    let (mut folder, mut calls, mut usage, mut finished) =
        (DeltaFolder::new(), Vec::new(), None, None);
    while let Some(event) = turn.next_event().await.expect("decodes") {
        match event {
            ModelTurnEvent::Delta(delta) => folder.apply(&delta).expect("fits"),
            ModelTurnEvent::ToolCall(call) => calls.push(call),
            ModelTurnEvent::Usage(u) => usage = Some(u),
            ModelTurnEvent::Finished(result) => finished = Some(result),
            _ => {}
        }
    }
    let finished = finished.expect("finished");
    Decoded {
        parts: folder.finish().expect("committed"),
        calls,
        usage: usage.expect("usage"),
        raw_reason: finished.metadata["gemini.finish_reason"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        reason: finished.finish_reason,
    }
}

// A function call with its thought signature, which must go back with it.
agentkit_testkit::replayed!(gemini_tool_call, replay, |d: Decoded| {
    assert_eq!(d.calls.len(), 1);
    let call = &d.calls[0];
    assert_eq!(&*call.name, "weather");
    assert_eq!(call.input, serde_json::json!({"location": "San Francisco"}));
    let signature = call.metadata["gemini.thought_signature"].as_str().unwrap();
    assert!(signature.starts_with("EqUCCqICAb4+9vsh8Pd5"), "{signature}");
    assert!(d.parts.is_empty(), "{:?}", d.parts);
    assert_eq!(d.reason, FinishReason::ToolCall);
    assert_eq!(d.usage.tokens.input_tokens, 29);
    // Thoughts are output too.
    assert_eq!(d.usage.tokens.output_tokens, 15 + 45);
    assert_eq!(d.usage.tokens.reasoning_tokens, 45);
});

// Text over two chunks, then the signature alone on an empty text part: it
// lands on the text part it belongs to.
agentkit_testkit::replayed!(gemini_reasoning, replay, |d: Decoded| {
    let [Part::Text(text)] = &d.parts[..] else {
        panic!("{:?}", d.parts);
    };
    assert_eq!(
        text.text,
        "There are **3** \"r\"s in strawberry.\n\nHere is the breakdown: st**r**awbe**rr**y."
    );
    assert!(
        text.metadata["gemini.thought_signature"]
            .as_str()
            .unwrap()
            .starts_with("Eo0HCooH")
    );
    assert_eq!(d.reason, FinishReason::Completed);
    assert_eq!(d.raw_reason, "STOP");
    assert_eq!(d.usage.tokens.reasoning_tokens, 256);
});

// The prompt itself refused: no candidate, a block reason.
agentkit_testkit::replayed!(gemini_prompt_block, replay, |d: Decoded| {
    assert!(d.parts.is_empty() && d.calls.is_empty());
    assert_eq!(d.reason, FinishReason::Blocked);
    assert_eq!(d.raw_reason, "PROHIBITED_CONTENT");
    assert_eq!(d.usage.tokens.input_tokens, 9);
});
