//! The Chat Completions decoder's unit tests.

use super::*;
use serde_json::json;

fn decode(chunks: &[Value]) -> Result<Vec<ModelTurnEvent>, ProviderError> {
    let mut decoder = ChunkDecoder::default();
    let mut out = Outputs::new();
    for chunk in chunks {
        let mut event = SseEvent::default();
        event.event = "message".into();
        event.data = chunk.to_string();
        decoder.on_event(event.as_event_ref(), &mut out)?;
    }
    decoder.on_end(&mut out)?;
    Ok(out.into_vec())
}

fn calls(events: &[ModelTurnEvent]) -> Vec<(String, String, Value)> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelTurnEvent::ToolCall(c) => {
                Some((c.id.to_string(), c.name.to_string(), c.input.to_value()))
            }
            _ => None,
        })
        .collect()
}

fn tool_delta(call: Value) -> Value {
    json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
}

fn finish(reason: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

#[test]
fn a_new_id_at_a_reused_index_is_a_new_call() {
    // Some gateways number every call 0.
    let events = decode(&[
        tool_delta(json!({"index": 0, "id": "a", "function": {"name": "one", "arguments": "{}"}})),
        tool_delta(
            json!({"index": 0, "id": "b", "function": {"name": "two", "arguments": "{\"x\":1}"}}),
        ),
        finish("tool_calls"),
    ])
    .unwrap();
    assert_eq!(
        calls(&events),
        vec![
            ("a".into(), "one".into(), json!({})),
            ("b".into(), "two".into(), json!({"x": 1})),
        ]
    );
}

#[test]
fn an_empty_id_in_a_later_fragment_is_an_absent_id() {
    // DashScope's compatible endpoint sends the id once, then `"id": ""`
    // at the same index in every following fragment.
    let events = decode(&[
        tool_delta(json!({"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}})),
        tool_delta(json!({"index": 0, "id": "", "type": "function", "function": {"arguments": "{\"city\":"}})),
        tool_delta(json!({"index": 0, "id": "", "type": "function", "function": {"name": "", "arguments": "\"Paris\"}"}})),
        tool_delta(json!({"index": 1, "id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}})),
        tool_delta(json!({"index": 1, "id": "", "function": {"arguments": ""}})),
        finish("tool_calls"),
    ])
    .unwrap();
    assert_eq!(
        calls(&events),
        vec![
            (
                "call_1".into(),
                "get_weather".into(),
                json!({"city": "Paris"})
            ),
            ("call_2".into(), "get_time".into(), json!({})),
        ]
    );
}

#[test]
fn fragments_without_an_index_follow_their_id_or_the_latest_call() {
    let events = decode(&[
        tool_delta(json!({"id": "a", "function": {"name": "one", "arguments": "{\"k\":"}})),
        tool_delta(json!({"function": {"arguments": "2}"}})),
        finish("tool_calls"),
    ])
    .unwrap();
    assert_eq!(
        calls(&events),
        vec![("a".into(), "one".into(), json!({"k": 2}))]
    );
}

#[test]
fn names_sent_in_pieces_or_cumulatively_come_out_whole() {
    for names in [
        ["get_", "weather"],
        ["get_", "get_weather"],
        ["get_weather", "get_weather"],
    ] {
        let events = decode(&[
            tool_delta(json!({"index": 0, "id": "a", "function": {"name": names[0]}})),
            tool_delta(json!({"index": 0, "function": {"name": names[1], "arguments": "{}"}})),
            finish("tool_calls"),
        ])
        .unwrap();
        assert_eq!(calls(&events)[0].1, "get_weather", "{names:?}");
    }
}

#[test]
fn a_call_without_a_name_is_a_protocol_error_and_missing_ids_are_filled() {
    let err = decode(&[
        tool_delta(json!({"index": 0, "id": "a", "function": {"arguments": "{}"}})),
        finish("tool_calls"),
    ])
    .unwrap_err();
    assert_eq!(err.kind, agentkit_http::ProviderErrorKind::Protocol);
    let events = decode(&[
        tool_delta(json!({"index": 0, "function": {"name": "one"}})),
        finish("tool_calls"),
    ])
    .unwrap();
    assert_eq!(calls(&events)[0].0, "0");
    let mut decoder = ChunkDecoder::new("call_s1t2_", None);
    let mut out = Outputs::new();
    for chunk in [
        tool_delta(json!({"index": 0, "function": {"name": "one"}})),
        finish("tool_calls"),
    ] {
        let mut event = SseEvent::default();
        event.data = chunk.to_string();
        decoder.on_event(event.as_event_ref(), &mut out).unwrap();
    }
    decoder.on_end(&mut out).unwrap();
    assert_eq!(calls(&out.into_vec())[0].0, "call_s1t2_0");
}

#[test]
fn finish_reasons_map() {
    for (wire, expected) in [
        ("stop", FinishReason::Completed),
        ("length", FinishReason::MaxTokens),
        ("content_filter", FinishReason::Blocked),
        ("tool_calls", FinishReason::ToolCall),
        ("something_new", FinishReason::Other("something_new".into())),
    ] {
        let events = decode(&[finish(wire)]).unwrap();
        let Some(ModelTurnEvent::Finished(result)) = events.last() else {
            panic!("finished");
        };
        assert_eq!(result.finish_reason, expected, "{wire}");
    }
}

fn decode_raw(chunks: &[&str]) -> Result<Vec<ModelTurnEvent>, ProviderError> {
    let mut decoder = ChunkDecoder::default();
    let mut out = Outputs::new();
    for chunk in chunks {
        let mut event = SseEvent::default();
        event.event = "message".into();
        event.data = (*chunk).into();
        decoder.on_event(event.as_event_ref(), &mut out)?;
    }
    decoder.on_end(&mut out)?;
    Ok(out.into_vec())
}

fn text(events: &[ModelTurnEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelTurnEvent::Delta(Delta::AppendText { chunk, .. }) => Some(chunk.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn chunks_repeating_a_head_decode_as_when_parsed_in_full() {
    let head = r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","#;
    let content =
        |t: &str| format!(r#"{head}"choices":[{{"index":0,"delta":{{"content":"{t}"}}}}]}}"#);
    let events = decode_raw(&[
        &content("a"),
        &content("b"),
        // Another head, where `"choices"` first shows up inside a
        // string, and a usage member before the choices: parsed in full.
        r#"{"id":"c2","model":"x\"choices","choices":[{"index":0,"delta":{"content":"c"}}]}"#,
        r#"{"usage":{"prompt_tokens":1},"choices":[{"index":0,"delta":{"content":"d"}}]}"#,
        r#"{"usage":{"prompt_tokens":2},"choices":[{"index":0,"delta":{"content":"e"}}]}"#,
        &content("f"),
        &format!(r#"{head}"choices":[{{"index":0,"delta":{{}},"finish_reason":"stop"}}]}}"#),
    ])
    .unwrap();
    assert_eq!(text(&events), "abcdef");
    let usages = events
        .iter()
        .filter(|e| matches!(e, ModelTurnEvent::Usage(_)))
        .count();
    assert_eq!(usages, 2);
    let Some(ModelTurnEvent::Finished(result)) = events.last() else {
        panic!("finished");
    };
    assert_eq!(result.metadata["agentkit.response_id"], json!("c1"));
    assert_eq!(result.metadata["agentkit.model"], json!("m"));
    // A member repeated after the head is still a duplicate.
    let err = decode_raw(&[
        &content("a"),
        &format!(r#"{head}"choices":[],"model":"n"}}"#),
    ])
    .unwrap_err();
    assert_eq!(err.kind, agentkit_http::ProviderErrorKind::Protocol);
    assert!(err.to_string().contains("duplicate field"), "{err}");
}

#[test]
fn switching_between_reasoning_and_text_commits_the_open_part() {
    let delta =
        |field: &str, text: &str| json!({"choices": [{"index": 0, "delta": {field: text}}]});
    let events = decode(&[
        delta("reasoning_content", "a"),
        delta("content", "b"),
        delta("reasoning_content", "c"),
        finish("stop"),
    ])
    .unwrap();
    let mut folder = agentkit_core::DeltaFolder::new();
    for event in &events {
        if let ModelTurnEvent::Delta(d) = event {
            folder.apply(d).unwrap();
        }
    }
    let parts = folder.finish().unwrap();
    assert_eq!(parts.len(), 3);
    assert_eq!(parts[1], agentkit_core::Part::text("b"));
}

#[test]
fn the_content_chunk_reader_reads_what_the_general_reader_reads_or_leaves_it() {
    let head = r#"{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1763780000,"model":"gpt-4o-mini""#;
    let choice = r#""choices":[{"index":0,"delta":{"content":"#;
    let tail = r#"},"logprobs":null,"finish_reason":null}]"#;
    let chunks = [
        format!(r#"{head},{choice}"caf\u00e9 \"x\"\n"{tail}}}"#),
        format!(
            r#"{head},"service_tier":"default","system_fingerprint":"fp_1",{choice}"a"{tail},"usage":null,"obfuscation":"Qv3"}}"#
        ),
        format!(r#"{head},"system_fingerprint":null,{choice}""{tail}}}"#),
        // Not the layout: the general reader decides.
        format!(r#"{head},{choice}"a"{tail},"usage":null,"x":1}}"#),
        format!(r#"{head},{choice}"a"{tail} }}"#),
        format!(r#"{head},{choice}null{tail}}}"#),
        format!(r#"{head},{choice}"\ud800"{tail}}}"#),
        format!(r#"{head},{choice}"a"{tail}}}}}"#),
        r#"{"id":"x","object":"chat.completion.chunk","created":-1,"model":"m","choices":[]}"#
            .to_owned(),
    ];
    let mut read = 0;
    for data in &chunks {
        let general: Option<Chunk<'_>> = agentkit_http::codec::from_str(data).ok();
        let serde: Option<Chunk<'_>> = serde_json::from_str(data).ok();
        if let Some(chunk) = read_content_chunk(data, Known::default()) {
            let (id, model, content) = (
                chunk.id.expect("an id"),
                chunk.model.expect("a model"),
                chunk.content,
            );
            let head = &data[..chunk.head.expect("the head was read")];
            assert!(
                head.starts_with(r#"{"id":"#) && data[head.len()..].starts_with(r#","choices""#)
            );
            read += 1;
            // The head, or the id and model, of the chunks before are
            // compared, not read; different ones are read.
            for known in [
                Known {
                    head,
                    ..Known::default()
                },
                Known {
                    head: "{\"id\":\"x",
                    id: Some("chatcmpl-9"),
                    model: Some("gpt-4o-mini"),
                },
            ] {
                let repeated = read_content_chunk(data, known).expect("read with the known values");
                assert!(repeated.id.is_none() && repeated.model.is_none());
                assert_eq!(repeated.content, content);
            }
            let other = Known {
                head: "{\"id\":\"y",
                id: Some("chatcmpl-"),
                model: Some("gpt-4o-mini-2"),
            };
            let other = read_content_chunk(data, other).expect("read with other values");
            assert_eq!(other.id.as_deref(), Some(id.as_ref()));
            assert_eq!(other.model.as_deref(), Some(model.as_ref()));
            assert_eq!(other.head, Some(head.len()));
            for chunk in [
                general.expect("the general reader reads it"),
                serde.expect("serde_json reads it"),
            ] {
                assert_eq!(chunk.id.as_deref(), Some(id.as_ref()), "{data}");
                assert_eq!(chunk.model.as_deref(), Some(model.as_ref()), "{data}");
                let choice = chunk.choices.first.as_ref().expect("a choice");
                assert!(chunk.choices.more.is_empty() && chunk.usage.is_none());
                assert_eq!((choice.index, choice.finish_reason.as_deref()), (0, None));
                let delta = choice.delta.as_ref().expect("a delta");
                assert_eq!(delta.content.as_deref(), Some(content.as_ref()), "{data}");
                assert!(delta.refusal.is_none() && delta.tool_calls.is_none());
            }
        }
    }
    assert_eq!(read, 3, "the usual layouts take the exact path");
}
