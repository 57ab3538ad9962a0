//! Request bodies built incrementally (each item's messages or input items
//! cached by the session across turns) are exactly the bodies built from
//! scratch, for Chat Completions and the Responses API: after the
//! transcript grows and after a mutator rewrites it.

use agentkit_core::{Item, ItemKind, Part, ToolCallPart, ToolResultPart, TurnId};
use agentkit_loop::{ModelAdapter, SessionConfig, TranscriptView, TurnRequest};
use agentkit_provider_openai::{OpenAiAdapter, OpenAiConfig, ResponsesAdapter};
use serde_json::{Value, json};

/// Builds bodies with a session of either API.
type Builder = Box<dyn FnMut(&TurnRequest) -> Vec<u8>>;

fn chat() -> Builder {
    let adapter =
        OpenAiAdapter::new(OpenAiConfig::compatible("http://127.0.0.1:9/v1", "m")).unwrap();
    let mut session = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(adapter.start_session(SessionConfig::new("s")))
        .unwrap();
    Box::new(move |request| session.request_body(request))
}

fn responses() -> Builder {
    let adapter =
        ResponsesAdapter::new(OpenAiConfig::compatible("http://127.0.0.1:9/v1", "m")).unwrap();
    let mut session = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(adapter.start_session(SessionConfig::new("s")))
        .unwrap();
    Box::new(move |request| session.request_body(request))
}

fn round(i: usize) -> [Item; 2] {
    let id = format!("call_{i}");
    [
        Item::new(
            ItemKind::Assistant,
            vec![
                Part::text(format!("Reading file {i} \u{2014} \"carefully\".")),
                Part::ToolCall(ToolCallPart::new(id.clone(), "read", json!({ "n": i }))),
            ],
        ),
        Item::tool_result(ToolResultPart::success(id, format!("contents of {i}\n"))),
    ]
}

fn request(view: TranscriptView) -> TurnRequest {
    TurnRequest::new("s", TurnId::new("turn-1"), view)
}

fn parse(body: Vec<u8>) -> Value {
    serde_json::from_slice(&body).unwrap()
}

#[test]
fn grown_transcripts_give_the_same_body_as_a_fresh_session() {
    for (api, make) in [("chat", chat as fn() -> Builder), ("responses", responses)] {
        let mut incremental = make();
        let mut all = vec![Item::system("Be careful."), Item::user("Fix it.")];
        let mut view = TranscriptView::from_items(all.clone());
        for i in 0..4 {
            let body = parse(incremental(&request(view.clone())));
            let fresh = parse(make()(&request(TranscriptView::from_items(all.clone()))));
            assert_eq!(body, fresh, "{api}, turn {i}");
            let more = round(i);
            all.extend(more.iter().cloned());
            view = view.appended(more);
        }
        let body = parse(incremental(&request(view)));
        let key = if api == "chat" { "messages" } else { "input" };
        // system, user, then per round: the assistant's message (and for
        // Responses its function call as an item of its own), the result.
        let per_round = if api == "chat" { 2 } else { 3 };
        assert_eq!(
            body[key].as_array().unwrap().len(),
            2 + 4 * per_round,
            "{api}"
        );
        assert_eq!(body["model"], "m");
        assert_eq!(body["stream"], true);
    }
}

#[test]
fn a_rewritten_transcript_gives_the_same_body_as_a_fresh_session() {
    for (api, make) in [("chat", chat as fn() -> Builder), ("responses", responses)] {
        let mut items = vec![Item::system("Be careful."), Item::user("Fix it.")];
        for i in 0..4 {
            items.extend(round(i));
        }
        let mut incremental = make();
        incremental(&request(TranscriptView::from_items(items.clone())));
        let mut rewritten = vec![items[0].clone(), Item::user("Summary: files 0 and 1 read.")];
        rewritten.extend(items[6..].iter().cloned());
        rewritten[3] = Item::tool_result(ToolResultPart::success("call_2", "(elided)"));
        let body = parse(incremental(&request(TranscriptView::from_items(
            rewritten.clone(),
        ))));
        let fresh = parse(make()(&request(TranscriptView::from_items(rewritten))));
        assert_eq!(body, fresh, "{api}");
        assert!(body.to_string().contains("(elided)"), "{api}");
        assert!(!body.to_string().contains("contents of 2"), "{api}");
    }
}
