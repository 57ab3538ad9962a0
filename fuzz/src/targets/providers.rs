//! `openai-chat`, `openai-responses`, `anthropic`: each adapter's stream
//! decoding, from body bytes to turn events.
//!
//! Properties: the turn's events and error are the same whether the body
//! arrives in one read, one byte per read, or cut at random; they are the
//! same when the body is first re-framed canonically (the adapter depends
//! on the events, not on CRLF or comments); and a turn that finishes cleanly
//! hands out deltas a `DeltaFolder` accepts completely.

use crate::{Outcome, Target, cuts_for, mutated, split_at};
use agentkit_core::DeltaFolder;
use agentkit_http::{SseLimits, SseParser, SseStream};
use agentkit_loop::{ModelTurn, ModelTurnEvent};
use bytes::Bytes;

/// Chat Completions.
pub const CHAT: Target = Target {
    name: "openai-chat",
    about: "Chat Completions stream: split invariance, framing invariance, foldable deltas",
    check: |input| check(input, Adapter::Chat),
    generate: || mutated(CHAT_SEEDS),
};

/// The Responses API.
pub const RESPONSES: Target = Target {
    name: "openai-responses",
    about: "Responses stream: split invariance, framing invariance, foldable deltas",
    check: |input| check(input, Adapter::Responses),
    generate: || mutated(RESPONSES_SEEDS),
};

/// Anthropic Messages.
pub const ANTHROPIC: Target = Target {
    name: "anthropic",
    about: "Anthropic Messages stream: split invariance, framing invariance, foldable deltas",
    check: |input| check(input, Adapter::Anthropic),
    generate: || mutated(ANTHROPIC_SEEDS),
};

macro_rules! fixtures {
    ($dir:literal: $($file:literal),*) => {
        &[$(include_bytes!(concat!("../../../crates/", $dir, "/", $file, ".sse"))),*]
    };
}

const CHAT_SEEDS: &[&[u8]] = fixtures!("agentkit-provider-openai/tests/fixtures":
    "text", "tool_call", "parallel_tool_calls", "reasoning", "reasoning_field",
    "repeated_id_and_name", "bad_arguments", "stream_error", "no_done");
const RESPONSES_SEEDS: &[&[u8]] = fixtures!("agentkit-provider-openai/tests/fixtures/responses":
    "text", "reasoning_tool_call", "bad_arguments", "incomplete", "failed", "error");
const ANTHROPIC_SEEDS: &[&[u8]] = fixtures!("agentkit-provider-anthropic/tests/fixtures":
    "text", "thinking", "tool_use", "parallel_tool_use", "structured", "bad_input",
    "overloaded", "no_message_stop");

#[derive(Clone, Copy)]
enum Adapter {
    Chat,
    Responses,
    Anthropic,
}

/// What a turn produced: each event, and how it ended.
#[derive(Debug, PartialEq)]
struct Decoded {
    events: Vec<ModelTurnEvent>,
    error: Option<String>,
}

fn turn(adapter: Adapter, events: SseStream) -> Box<dyn ModelTurn> {
    match adapter {
        Adapter::Chat => Box::new(agentkit_provider_openai::OpenAiTurn::from_events(events)),
        Adapter::Responses => {
            Box::new(agentkit_provider_openai::ResponsesTurn::from_events(events))
        }
        Adapter::Anthropic => Box::new(agentkit_provider_anthropic::AnthropicTurn::from_events(
            events,
        )),
    }
}

/// Ids an adapter makes up for calls the server sent without one carry a
/// random per-turn prefix (`call_17fcaa7d_1_0`); two decodes of one body
/// differ there and nowhere else.
fn without_random_ids(event: ModelTurnEvent) -> ModelTurnEvent {
    match event {
        ModelTurnEvent::ToolCall(mut call) => {
            let id = call.id.as_str();
            let random = id.len() > 14
                && id.starts_with("call_")
                && id.as_bytes()[13] == b'_'
                && id[5..13].bytes().all(|b| b.is_ascii_hexdigit());
            if random {
                call.id = format!("call_RANDOM{}", &id[13..]).into();
            }
            ModelTurnEvent::ToolCall(call)
        }
        other => other,
    }
}

fn decode(adapter: Adapter, pieces: &[&[u8]]) -> Decoded {
    let chunks: Vec<_> = pieces
        .iter()
        .map(|p| Ok(Bytes::copy_from_slice(p)))
        .collect();
    let mut turn = turn(
        adapter,
        SseStream::from_byte_stream(futures::stream::iter(chunks)),
    );
    let mut events = Vec::new();
    // Every event is a step forward; a decoder that never ends would loop
    // here, so the count is bounded by the input.
    let bound = 16 + pieces.iter().map(|p| p.len()).sum::<usize>() * 4;
    loop {
        match futures::executor::block_on(turn.next_event()) {
            Ok(Some(event)) => events.push(without_random_ids(event)),
            Ok(None) => {
                return Decoded {
                    events,
                    error: None,
                };
            }
            Err(err) => {
                return Decoded {
                    events,
                    error: Some(format!("{:?}: {}", err.kind, err.message)),
                };
            }
        }
        if events.len() > bound {
            return Decoded {
                events,
                error: Some("more events than the body could hold".into()),
            };
        }
    }
}

/// The body's events written back in the plainest framing: LF line ends,
/// no comments, one `data:` line per data line.
fn reframed(input: &[u8]) -> Option<Vec<u8>> {
    let mut parser = SseParser::new(SseLimits::default());
    let mut events = Vec::new();
    parser.feed(input, &mut events).ok()?;
    parser.finish(&mut events).ok()?;
    let mut out = Vec::new();
    for event in events {
        out.extend_from_slice(format!("event: {}\n", event.event).as_bytes());
        for line in event.data.split('\n') {
            out.extend_from_slice(format!("data: {line}\n").as_bytes());
        }
        out.push(b'\n');
    }
    Some(out)
}

fn check(input: &[u8], adapter: Adapter) -> Outcome {
    let whole = decode(adapter, &[input]);
    let bytewise: Vec<&[u8]> = input.chunks(1).collect();
    for (name, pieces) in [
        ("one byte per read", bytewise),
        ("random cuts", split_at(input, &cuts_for(input, 3))),
    ] {
        let split = decode(adapter, &pieces);
        if split != whole {
            return Err(format!(
                "{name}: {split:?}\n  differs from one read: {whole:?}"
            ));
        }
    }
    if let Some(canonical) = reframed(input) {
        let again = decode(adapter, &[&canonical]);
        if again != whole {
            return Err(format!(
                "re-framed body decodes differently: {again:?}\n  original: {whole:?}"
            ));
        }
    }
    if let Some(error) = &whole.error
        && error.starts_with("Other")
    {
        return Err(format!("untyped error: {error}"));
    }
    let finished = whole
        .events
        .iter()
        .any(|e| matches!(e, ModelTurnEvent::Finished(_)));
    if whole.error.is_none() && finished {
        let mut folder = DeltaFolder::new();
        for event in &whole.events {
            if let ModelTurnEvent::Delta(delta) = event {
                folder
                    .apply(delta)
                    .map_err(|err| format!("adapter delta refused by the folder: {err}"))?;
            }
        }
        folder
            .finish()
            .map_err(|err| format!("finished turn left parts open: {err}"))?;
    }
    Ok(())
}
