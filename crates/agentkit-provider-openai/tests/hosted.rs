//! Hosted tools' output items in a Responses stream (in the documented
//! wire format): each kept whole as a custom part in stream order, the
//! message's citations on its text part, and the answer Completed.

use agentkit_core::{DeltaFolder, FinishReason, Part};
use agentkit_http::SseStream;
use agentkit_loop::{ModelTurn, ModelTurnEvent};
use agentkit_provider_openai::ResponsesTurn;
use serde_json::{Value, json};

fn event(value: Value) -> String {
    format!(
        "event: {}\ndata: {value}\n\n",
        value["type"].as_str().unwrap()
    )
}

#[tokio::test]
async fn web_search_and_code_interpreter_items_become_parts() {
    let search = json!({"id": "ws_1", "type": "web_search_call", "status": "completed",
        "action": {"type": "search", "query": "Berlin news", "sources": [{"type": "url", "url": "https://example.org/a"}]}});
    let code = json!({"id": "ci_1", "type": "code_interpreter_call", "status": "completed",
        "code": "print(6*7)", "container_id": "cntr_1", "outputs": [{"type": "logs", "logs": "42\n"}]});
    let citation = json!({"type": "url_citation", "start_index": 0, "end_index": 5,
        "title": "A", "url": "https://example.org/a"});
    let body: String = [
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "ws_1", "type": "web_search_call", "status": "in_progress"}}),
        json!({"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws_1"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": search}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": code}),
        json!({"type": "response.output_item.added", "output_index": 2, "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 2, "content_index": 0, "delta": "Hello, 42."}),
        json!({"type": "response.output_text.annotation.added", "output_index": 2, "annotation": citation}),
        json!({"type": "response.output_item.done", "output_index": 2, "item": {"id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "Hello, 42.", "annotations": [citation]}]}}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "usage": {"input_tokens": 3, "output_tokens": 4}}}),
    ]
    .into_iter()
    .map(event)
    .collect();
    for piece in [0, 1, 7] {
        let mut turn = ResponsesTurn::from_events(SseStream::from_pieces(body.clone(), piece));
        let mut folder = DeltaFolder::new();
        let mut reason = None;
        while let Some(event) = turn.next_event().await.unwrap() {
            match event {
                ModelTurnEvent::Delta(delta) => folder.apply(&delta).unwrap(),
                ModelTurnEvent::Finished(result) => reason = Some(result.finish_reason),
                _ => {}
            }
        }
        assert_eq!(reason, Some(FinishReason::Completed));
        let parts = folder.finish().unwrap();
        let [Part::Custom(s), Part::Custom(c), Part::Text(text)] = &parts[..] else {
            panic!("{parts:?}");
        };
        assert_eq!(
            (s.kind.as_str(), &s.value),
            ("openai.web_search_call", &search)
        );
        assert_eq!(s.metadata["openai.item_id"], "ws_1");
        assert_eq!(
            (c.kind.as_str(), &c.value),
            ("openai.code_interpreter_call", &code)
        );
        assert_eq!(text.text, "Hello, 42.");
        assert_eq!(text.metadata["openai.annotations"], json!([citation]));
    }
}
