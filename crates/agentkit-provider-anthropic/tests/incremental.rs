//! Request bodies built incrementally (each item's blocks cached by the
//! session across turns) are exactly the bodies built from scratch: after
//! the transcript grows, after a mutator rewrites it, and with cache marks
//! that move with the last item.

use agentkit_core::{Item, ItemKind, Part, ReasoningPart, ToolCallPart, ToolResultPart, TurnId};
use agentkit_loop::{
    CacheBreakpoint, ModelAdapter, PromptCacheRequest, SessionConfig, TranscriptView, TurnRequest,
};
use agentkit_provider_anthropic::{AnthropicAdapter, AnthropicConfig, AnthropicSession};
use serde_json::{Value, json};

fn session() -> AnthropicSession {
    let adapter = AnthropicAdapter::new(
        AnthropicConfig::new("key", "claude-test").with_base_url("http://127.0.0.1:9"),
    )
    .unwrap();
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(adapter.start_session(SessionConfig::new("s")))
        .unwrap()
}

fn round(i: usize) -> [Item; 2] {
    let id = format!("toolu_{i}");
    let thinking = ReasoningPart {
        summary: Some(format!("step {i}")),
        signature: Some(format!("sig-{i}")),
        ..ReasoningPart::default()
    };
    [
        Item::new(
            ItemKind::Assistant,
            vec![
                Part::Text(agentkit_core::TextPart::new(format!(
                    "Looking at file {i} \"now\"."
                ))),
                Part::Reasoning(thinking),
                Part::ToolCall(ToolCallPart::new(id.clone(), "read", json!({ "n": i }))),
            ],
        ),
        Item::tool_result(ToolResultPart::success(id, format!("contents of {i}\n"))),
    ]
}

fn request(view: TranscriptView, cache: Option<PromptCacheRequest>) -> TurnRequest {
    let mut request = TurnRequest::new("s", TurnId::new("turn-1"), view);
    request.cache = cache;
    request
}

fn body(session: &mut AnthropicSession, request: &TurnRequest) -> Value {
    serde_json::from_slice(&session.request_body(request)).unwrap()
}

/// The body without its cache marks: the automatic strategy also marks the
/// prefix the session sent before, which a fresh session has not.
fn unmarked(mut body: Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("cache_control");
                map.values_mut().for_each(strip);
            }
            Value::Array(values) => values.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut body);
    body
}

/// Where the body's cache marks are: (message index, block index).
fn marks(body: &Value) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    for (m, message) in body["messages"].as_array().unwrap().iter().enumerate() {
        for (b, block) in message["content"].as_array().unwrap().iter().enumerate() {
            if block.get("cache_control").is_some() {
                found.push((m, b));
            }
        }
    }
    found
}

/// The message index holding transcript item `index`'s last block, in a
/// body built without history (an Anthropic body of the same items).
fn message_of(items: &[Item], index: usize) -> usize {
    let fresh = body(
        &mut session(),
        &request(TranscriptView::from_items(items[..=index].to_vec()), None),
    );
    fresh["messages"].as_array().unwrap().len() - 1
}

#[test]
fn automatic_breakpoints_read_the_stable_prefix_as_the_transcript_grows_and_after_compaction() {
    let cache = Some(PromptCacheRequest::automatic());
    let mut items = vec![Item::system("Be careful."), Item::user("Fix it.")];
    items.extend(round(0));
    let mut session = session();
    let mut view = TranscriptView::from_items(items.clone());
    // The first request: the system prompt and the last item (no tools).
    let first = body(&mut session, &request(view.clone(), cache.clone()));
    assert!(first["system"][0].get("cache_control").is_some());
    let last_message = first["messages"].as_array().unwrap().len() - 1;
    assert_eq!(marks(&first).len(), 1);
    assert_eq!(marks(&first)[0].0, last_message);
    for i in 1..4 {
        // Each turn adds a round; the previous end is marked (a cache
        // read) beside the new end (a cache write).
        let sent = items.len();
        let more = round(i);
        items.extend(more.iter().cloned());
        view = view.appended(more);
        let grown = body(&mut session, &request(view.clone(), cache.clone()));
        let found = marks(&grown);
        assert_eq!(found.len(), 2, "turn {i}: {found:?}");
        assert_eq!(found[0].0, message_of(&items, sent - 1), "turn {i}");
        assert_eq!(
            found[1].0,
            grown["messages"].as_array().unwrap().len() - 1,
            "turn {i}"
        );
        assert!(grown["system"][0].get("cache_control").is_some());
    }
    // A compaction keeps the first two items and replaces the rest: the
    // stable prefix ends after item 1, whatever came after is new.
    let mut compacted = items[..2].to_vec();
    compacted.push(Item::assistant("Summary: files 0 to 3 read."));
    compacted.push(Item::user("Go on."));
    let after = body(
        &mut session,
        &request(TranscriptView::from_items(compacted.clone()), cache.clone()),
    );
    let found = marks(&after);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].0, message_of(&compacted, 1));
    assert_eq!(found[1].0, after["messages"].as_array().unwrap().len() - 1);
    // Nothing unchanged but the system prompt: only the end is marked.
    let rewritten = vec![items[0].clone(), Item::user("Start over.")];
    let fresh_start = body(
        &mut session,
        &request(TranscriptView::from_items(rewritten), cache),
    );
    assert_eq!(marks(&fresh_start), [(0, 0)]);
    assert!(fresh_start["system"][0].get("cache_control").is_some());
}

#[test]
fn grown_transcripts_give_the_same_body_as_a_fresh_session() {
    let mut items = vec![Item::system("Be careful."), Item::user("Fix it.")];
    items.extend(round(0));
    let caches = [
        None,
        Some(PromptCacheRequest::automatic()),
        Some(PromptCacheRequest::explicit(vec![
            CacheBreakpoint::System,
            CacheBreakpoint::Item { index: 3 },
            CacheBreakpoint::LastItem,
        ])),
    ];
    for cache in caches {
        let mut incremental = session();
        let mut view = TranscriptView::from_items(items.clone());
        let mut all = items.clone();
        for i in 1..5 {
            let first = body(&mut incremental, &request(view.clone(), cache.clone()));
            let fresh = body(
                &mut session(),
                &request(TranscriptView::from_items(all.clone()), cache.clone()),
            );
            assert_eq!(
                unmarked(first),
                unmarked(fresh),
                "turn {i}, cache {cache:?}"
            );
            let more = round(i);
            all.extend(more.iter().cloned());
            // A developer note mid session stays in place as user text.
            if i == 3 {
                all.push(Item::text(ItemKind::Developer, "Stay brief."));
                view = view.appended(
                    more.into_iter()
                        .chain([Item::text(ItemKind::Developer, "Stay brief.")]),
                );
            } else {
                view = view.appended(more);
            }
        }
        let last = body(&mut incremental, &request(view, cache.clone()));
        let fresh = body(
            &mut session(),
            &request(TranscriptView::from_items(all), cache.clone()),
        );
        if cache == Some(PromptCacheRequest::automatic()) {
            assert_eq!(unmarked(last.clone()), unmarked(fresh));
        } else {
            assert_eq!(last, fresh);
        }
        // Consecutive tool results and the next assistant turn keep the
        // roles alternating.
        let roles: Vec<&str> = last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert!(roles.windows(2).all(|w| w[0] != w[1]), "{roles:?}");
        assert_eq!(last["system"][0]["text"], "Be careful.");
    }
}

#[test]
fn a_rewritten_transcript_gives_the_same_body_as_a_fresh_session() {
    let mut items = vec![Item::system("Be careful."), Item::user("Fix it.")];
    for i in 0..4 {
        items.extend(round(i));
    }
    let mut incremental = session();
    let cache = Some(PromptCacheRequest::automatic());
    body(
        &mut incremental,
        &request(TranscriptView::from_items(items.clone()), cache.clone()),
    );
    // A compactor drops the first rounds and elides a tool output.
    let mut rewritten = vec![items[0].clone(), Item::user("Summary: files 0 and 1 read.")];
    rewritten.extend(items[6..].iter().cloned());
    rewritten[3] = Item::tool_result(ToolResultPart::success("toolu_2", "(elided)"));
    let view = TranscriptView::from_items(rewritten.clone());
    let after = body(&mut incremental, &request(view, cache.clone()));
    let fresh = body(
        &mut session(),
        &request(TranscriptView::from_items(rewritten), cache),
    );
    assert_eq!(unmarked(after.clone()), unmarked(fresh));
    assert_eq!(after["messages"][2]["content"][0]["content"], "(elided)");
}

/// `body` with every `,"cache_control":{...}` cut out (a marker is a flat
/// object).
fn without_marks(body: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(body.to_vec()).unwrap();
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(r#","cache_control":{"#) {
        out.push_str(&rest[..at]);
        let close = rest[at..].find('}').unwrap();
        rest = &rest[at + close + 1..];
    }
    out.push_str(rest);
    out.into_bytes()
}

#[test]
fn messages_copied_as_runs_are_the_bytes_written_block_by_block() {
    // Messages of several blocks (text, thinking, a tool call; a user turn
    // of an instruction added mid-session and a result), a system prompt.
    let mut items = vec![Item::system("Be brief."), Item::user("go")];
    for i in 0..12 {
        items.extend(round(i));
        if i == 5 {
            items.push(Item::text(ItemKind::Developer, "Prefer small diffs."));
        }
    }
    let view = TranscriptView::from_items(items);
    // Without marks every message is one run of the cache; marked ones are
    // written block by block with the mark spliced in.
    let plain =
        session().request_body(&request(view.clone(), Some(PromptCacheRequest::disabled())));
    let explicit = PromptCacheRequest::explicit(vec![
        CacheBreakpoint::Item { index: 3 },
        CacheBreakpoint::Item { index: 10 },
        CacheBreakpoint::Item { index: 17 },
        CacheBreakpoint::LastItem,
    ]);
    let marked = session().request_body(&request(view, Some(explicit)));
    assert_ne!(plain, marked, "marks were placed");
    assert_eq!(without_marks(&marked), plain);
    let parsed: Value = serde_json::from_slice(&plain).unwrap();
    let messages = parsed["messages"].as_array().unwrap();
    assert!(
        messages
            .iter()
            .filter(|m| m["content"].as_array().unwrap().len() > 1)
            .count()
            >= 12,
        "multi-block messages were written as runs"
    );
}
