//! The counted scenarios: what `cargo xtask perf` runs under callgrind.
//!
//! Wall-clock figures move with the machine's load; instruction counts do
//! not, so these scenarios can gate CI. Each run of this binary plays one
//! scenario (`counted <name>`, `counted --list` names them): the setup runs
//! outside [`measured_region`], the measured part inside it, and callgrind is
//! told to count only inside that function (`--toggle-collect`). The binary
//! itself counts allocations and live heap bytes of the measured part with a
//! counting global allocator, and prints one JSON line: how many units the
//! part did (rounds, items, bytes) and the allocation figures, which xtask
//! divides and compares with the committed baseline.
//!
//! Run natively (`cargo bench -p agentkit --bench counted -- <name>`) it
//! prints the same line without an instruction count.

use agentkit::agent::{
    Agent, LoopDriver, LoopInterrupt, LoopStep, ModelAdapter, ModelSession, ModelTurn,
    ModelTurnEvent, SessionConfig, TranscriptView, TurnRequest,
};
use agentkit::anthropic::AnthropicTurn;
use agentkit::core::{FinishReason, Item, TurnId};
use agentkit::http::SseStream;
use agentkit::openai::{OpenAiTurn, ResponsesTurn};
use agentkit::testkit::{EchoTool, ScriptedModel, ScriptedTurn};
use agentkit::tools::ToolRegistry;
use serde_json::json;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use std::alloc::System;

#[path = "support/traffic.rs"]
mod traffic;
use traffic::{BodySession, Wire, history, request};

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// What a scenario did in its measured part.
struct Measured {
    /// How many units (rounds, items, bytes, sessions) it covered.
    units: u64,
    /// The unit's name, for the report.
    unit: &'static str,
}

/// The only function callgrind counts in (`--toggle-collect`); never
/// inlined, so its name is in the binary.
#[inline(never)]
fn measured_region<R>(f: impl FnOnce() -> R) -> R {
    std::hint::black_box(f())
}

/// Runs `f` inside the measured region, with its allocations counted.
fn measure(f: impl FnOnce() -> Measured) -> String {
    let region = Region::new(ALLOCATOR);
    let measured = measured_region(f);
    let stats = region.change();
    // A reallocation's growth is already in `bytes_allocated` (and a
    // shrink in `bytes_deallocated`); `bytes_reallocated` repeats it.
    let live = stats.bytes_allocated as i64 - stats.bytes_deallocated as i64;
    json!({
        "units": measured.units,
        "unit": measured.unit,
        "allocations": stats.allocations + stats.reallocations,
        "live_bytes": live,
    })
    .to_string()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

fn tools() -> ToolRegistry {
    ToolRegistry::new().with(EchoTool::new())
}

/// One S1 model turn: four text chunks and an `echo` call.
fn tool_turn(index: usize) -> ScriptedTurn {
    ScriptedTurn::new()
        .say_chunks(&["Let", " me", " check", "."])
        .call(&format!("call-{index}"), "echo", json!({ "text": "hi" }))
        .finish(FinishReason::ToolCall)
}

const ROUNDS: usize = 200;

/// S1: tool rounds through the real driver (model, tool, interrupt).
fn s1_round() -> String {
    tool_rounds(vec![Item::system("bench")], ROUNDS)
}

/// A session of `rounds` tool rounds and an answer that starts from
/// `transcript`, with `go` queued.
fn tool_session(
    rt: &tokio::runtime::Runtime,
    transcript: Vec<Item>,
    rounds: usize,
) -> LoopDriver<<ScriptedModel as ModelAdapter>::Session> {
    let model = ScriptedModel::new(
        (0..rounds)
            .map(tool_turn)
            .chain([ScriptedTurn::text("done")]),
    )
    .without_recording();
    let agent = Agent::builder()
        .model(model)
        .add_tool_source(tools())
        .max_model_calls(10_000)
        .transcript(transcript)
        .input(vec![Item::user("go")])
        .build()
        .expect("an agent");
    rt.block_on(agent.start(SessionConfig::new("s1")))
        .expect("a session")
}

/// Runs the next step, which must end a tool round.
fn round(rt: &tokio::runtime::Runtime, driver: &mut LoopDriver<impl ModelSession>) {
    let step = rt.block_on(driver.next()).expect("a step");
    assert!(matches!(
        step,
        LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))
    ));
}

/// `rounds` tool rounds of one session that starts from `transcript`; the
/// rounds after the first are measured. The first round warms lazily built
/// state (`first_round_long` measures it).
fn tool_rounds(transcript: Vec<Item>, rounds: usize) -> String {
    let rt = runtime();
    let mut driver = tool_session(&rt, transcript, rounds);
    round(&rt, &mut driver);
    measure(|| {
        rt.block_on(async {
            for _ in 1..rounds {
                match driver.next().await.expect("a step") {
                    LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {}
                    other => panic!("unexpected {other:?}"),
                }
            }
        });
        Measured {
            units: (rounds - 1) as u64,
            unit: "round",
        }
    })
}

/// The scripted model's own share of an S1 round: the same turns played
/// without the driver, so the loop's overhead is S1 minus this.
fn s1_model_only() -> String {
    let rt = runtime();
    let model = ScriptedModel::new((0..ROUNDS).map(tool_turn)).without_recording();
    let mut session = rt
        .block_on(model.start_session(SessionConfig::new("model")))
        .expect("a session");
    let view = TranscriptView::from_items(vec![Item::user("go")]);
    let request = TurnRequest::new("model", TurnId::new("turn-1"), view);
    let play = |session: &mut <ScriptedModel as ModelAdapter>::Session| {
        rt.block_on(async {
            let mut turn = session
                .begin_turn(request.clone(), None)
                .await
                .expect("a turn");
            while let Some(event) = turn.next_event().await.expect("an event") {
                std::hint::black_box(&event);
            }
        })
    };
    play(&mut session);
    measure(|| {
        for _ in 1..ROUNDS {
            play(&mut session);
        }
        Measured {
            units: (ROUNDS - 1) as u64,
            unit: "round",
        }
    })
}

/// S1b's steady round: tool rounds of a session that loaded a 10,000-item
/// history. A round must not cost more because the history is long:
/// compare with `s1_round`.
fn long_session_round() -> String {
    tool_rounds(history(LOAD_ITEMS / 2 - 1), 20)
}

/// The first round of a session that loaded a 10,000-item history, per
/// item of the history (#33's target: at most twice a steady round, so
/// about 4 instructions per item): the session appends after the agent's
/// shared starting transcript without copying it, and checks new call ids
/// against the set the agent's validation built.
fn first_round_long() -> String {
    let rt = runtime();
    let mut driver = tool_session(&rt, history(LOAD_ITEMS / 2 - 1), 1);
    measure(|| {
        round(&rt, &mut driver);
        Measured {
            units: LOAD_ITEMS as u64,
            unit: "item",
        }
    })
}

const LOAD_ITEMS: usize = 10_000;

/// Target 2: `Agent::builder().transcript(..)` + `build` + `start`. The
/// agent and driver are dropped after the measured part: loading is
/// measured, not tearing down.
fn load_transcript() -> String {
    let rt = runtime();
    let items = history(LOAD_ITEMS / 2 - 1);
    let len = items.len();
    let model = ScriptedModel::new([]).without_recording();
    let mut kept = None;
    let line = measure(|| {
        let agent = Agent::builder()
            .model(model)
            .add_tool_source(tools())
            .transcript(items)
            .build()
            .expect("an agent");
        let driver = rt
            .block_on(agent.start(SessionConfig::new("load")))
            .expect("a session");
        assert_eq!(driver.transcript().len(), len);
        kept = Some((agent, driver));
        Measured {
            units: len as u64,
            unit: "item",
        }
    });
    drop(kept);
    line
}

/// Target 2: `Agent::resume` from a snapshot decoded from JSON (the
/// decoding is setup: it is the store's or the host's part).
fn resume_snapshot() -> String {
    let rt = runtime();
    let items = history(LOAD_ITEMS / 2 - 1);
    let len = items.len();
    let agent = Agent::builder()
        .model(ScriptedModel::new([]).without_recording())
        .add_tool_source(tools())
        .transcript(items)
        .build()
        .expect("an agent");
    let snapshot = rt
        .block_on(agent.start(SessionConfig::new("resume")))
        .expect("a session")
        .snapshot();
    let json = serde_json::to_string(&snapshot).expect("a snapshot encodes");
    let snapshot = serde_json::from_str(&json).expect("a snapshot decodes");
    let agent = Agent::builder()
        .model(ScriptedModel::new([]).without_recording())
        .add_tool_source(tools())
        .build()
        .expect("an agent");
    let mut kept = None;
    let line = measure(|| {
        let driver = rt
            .block_on(agent.resume(SessionConfig::new("resume"), snapshot))
            .expect("a resumed session");
        assert_eq!(driver.transcript().len(), len);
        kept = Some(driver);
        Measured {
            units: len as u64,
            unit: "item",
        }
    });
    drop(kept);
    line
}

const IDLE_SESSIONS: usize = 1_000;

/// Target 3: the live heap an idle session keeps after one turn (a tool
/// round and an answer), per session. The call's input is parsed from
/// JSON text when the model emits it, as a real adapter parses the call it
/// streams, so each session holds (and the figure counts) its own input.
fn idle_session() -> String {
    let rt = runtime();
    let call = ScriptedTurn::new()
        .say_chunks(&["Let", " me", " check", "."])
        .call_json("call-0", "echo", r#"{"text":"hi"}"#)
        .finish(FinishReason::ToolCall);
    let model = ScriptedModel::per_session([call, ScriptedTurn::text("done")]).without_recording();
    let agent = Agent::builder()
        .model(model)
        .add_tool_source(tools())
        .transcript(vec![Item::system("bench")])
        .input(vec![Item::user("go")])
        .build()
        .expect("an agent");
    let ids: Vec<String> = (0..IDLE_SESSIONS).map(|i| format!("idle-{i}")).collect();
    let mut drivers = Vec::new();
    let line = measure(|| {
        // Inside the measured part: a driver's own size counts, as it
        // would where a host keeps its sessions.
        drivers.reserve_exact(IDLE_SESSIONS);
        rt.block_on(async {
            for id in &ids {
                let mut driver = agent
                    .start(SessionConfig::new(id.as_str()))
                    .await
                    .expect("a session");
                assert!(matches!(
                    driver.next().await.expect("a step"),
                    LoopStep::Interrupt(_)
                ));
                assert!(matches!(
                    driver.next().await.expect("a step"),
                    LoopStep::Finished(_)
                ));
                drivers.push(driver);
            }
        });
        Measured {
            units: IDLE_SESSIONS as u64,
            unit: "session",
        }
    });
    assert!(drivers.iter().all(|d| d.transcript().len() == 5));
    line
}

const REQUEST_ITEMS: usize = 10_000;

/// Target 1, turn N: the whole body of a 10,000-item session, built by an
/// adapter session that has not built one before.
fn request_turn_n(wire: Wire) -> String {
    let rt = runtime();
    // Never connected: only bodies are built.
    let mut session = rt.block_on(BodySession::open(wire, "http://127.0.0.1:9"));
    let view = TranscriptView::from_items(history(REQUEST_ITEMS / 2 - 1));
    let request = request(1, view);
    measure(|| {
        let body = session.body(&request);
        Measured {
            units: body.len() as u64,
            unit: "body byte",
        }
    })
}

/// Target 1, turn N+1: the same session after two more items (a call and
/// its result), as the driver hands them over (the same log, grown).
fn request_turn_n1(wire: Wire) -> String {
    let rt = runtime();
    // Never connected: only bodies are built.
    let mut session = rt.block_on(BodySession::open(wire, "http://127.0.0.1:9"));
    let items = history(REQUEST_ITEMS / 2);
    let mut items = items.into_iter();
    let first = TranscriptView::from_items(items.by_ref().take(REQUEST_ITEMS).collect());
    session.body(&request(1, first.clone()));
    let grown = first.appended(items);
    assert_eq!(grown.len(), REQUEST_ITEMS + 2);
    let request = request(2, grown);
    measure(|| {
        let body = session.body(&request);
        Measured {
            units: 1,
            unit: "turn",
        }
        .with_check(!body.is_empty())
    })
}

impl Measured {
    fn with_check(self, ok: bool) -> Self {
        assert!(ok, "the scenario produced nothing");
        self
    }
}

/// Prose like a real answer: quotes, newlines, non-ASCII, code.
const WORDS: &[&str] = &[
    " The",
    " function",
    " returns",
    " `Ok(())`",
    " when",
    " \"the file\"",
    " exists",
    ";",
    " otherwise",
    "\n\n",
    " it",
    " fails",
    " \u{2014}",
    " caf\u{e9}",
    " na\u{ef}ve",
    " \u{1f980}",
    " tests",
    ".",
    "\n- ",
    " `cargo test`",
];

/// A deterministic generator for ids and `obfuscation` strings.
struct Noise(u64);

impl Noise {
    fn text(&mut self, min: usize, spread: u64) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let len = min + (self.0 % spread) as usize;
        (0..len)
            .map(|i| ALPHABET[((self.0 >> (i % 20 * 3)) % ALPHABET.len() as u64) as usize] as char)
            .collect()
    }
}

const STREAM_DELTAS: usize = 4_000;

fn json_str(text: &str) -> String {
    serde_json::to_string(text).expect("a string encodes")
}

/// A Chat Completions stream like today's OpenAI API: every chunk repeats
/// the id, model and fingerprint and ends with a varying `obfuscation`.
fn chat_stream() -> Vec<u8> {
    let mut noise = Noise(0x2545_f491_4f6c_dd1d);
    let head = r#"{"id":"chatcmpl-CXk7RvO2mNcP1hT0qzYbWfA3LuEd","object":"chat.completion.chunk","created":1763780000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":[{"index":0,"delta":"#;
    let mut out = String::new();
    let chunk = |out: &mut String, delta: &str, finish: &str, noise: &mut Noise| {
        out.push_str(&format!(
            "data: {head}{delta},\"logprobs\":null,\"finish_reason\":{finish}}}],\"usage\":null,\"obfuscation\":\"{}\"}}\n\n",
            noise.text(1, 16)
        ));
    };
    chunk(
        &mut out,
        r#"{"role":"assistant","content":"","refusal":null}"#,
        "null",
        &mut noise,
    );
    for i in 0..STREAM_DELTAS {
        let delta = format!("{{\"content\":{}}}", json_str(WORDS[i % WORDS.len()]));
        chunk(&mut out, &delta, "null", &mut noise);
    }
    chunk(
        &mut out,
        r#"{"tool_calls":[{"index":0,"id":"call_Qm3bX9","type":"function","function":{"name":"fs_read","arguments":""}}]}"#,
        "null",
        &mut noise,
    );
    for piece in [r#"{\"path\""#, r#":\"src/lib.rs\""#, "}"] {
        let delta = format!(
            "{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":\"{piece}\"}}}}]}}"
        );
        chunk(&mut out, &delta, "null", &mut noise);
    }
    chunk(&mut out, "{}", "\"tool_calls\"", &mut noise);
    out.push_str(r#"data: {"id":"chatcmpl-CXk7RvO2mNcP1hT0qzYbWfA3LuEd","object":"chat.completion.chunk","created":1763780000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":4004,"total_tokens":4016,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"obfuscation":"Qv"}"#);
    out.push_str("\n\ndata: [DONE]\n\n");
    out.into_bytes()
}

/// A Responses API stream: typed events with sequence numbers, the item id
/// in every delta, and a varying `obfuscation`.
fn responses_stream() -> Vec<u8> {
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
    let mut out = String::new();
    let mut seq = 0;
    let event = |out: &mut String, name: &str, data: String| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    let response = r#"{"id":"resp_68c1f2a9b0e48190a1d3c5e7f9b2d4f6","object":"response","created_at":1763900000,"status":"in_progress","model":"gpt-5-mini-2025-08-07","output":[],"usage":null}"#;
    event(
        &mut out,
        "response.created",
        format!(r#"{{"type":"response.created","sequence_number":0,"response":{response}}}"#),
    );
    let msg = "msg_68c1f2aa4c2c8190b7e2d9a3f1c6e8d0";
    event(
        &mut out,
        "response.output_item.added",
        format!(
            r#"{{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{{"id":"{msg}","type":"message","status":"in_progress","content":[],"role":"assistant"}}}}"#
        ),
    );
    event(
        &mut out,
        "response.content_part.added",
        format!(
            r#"{{"type":"response.content_part.added","sequence_number":2,"item_id":"{msg}","output_index":0,"content_index":0,"part":{{"type":"output_text","annotations":[],"logprobs":[],"text":""}}}}"#
        ),
    );
    seq += 3;
    let mut text = String::new();
    for i in 0..STREAM_DELTAS {
        let word = WORDS[i % WORDS.len()];
        text.push_str(word);
        event(
            &mut out,
            "response.output_text.delta",
            format!(
                r#"{{"type":"response.output_text.delta","sequence_number":{seq},"item_id":"{msg}","output_index":0,"content_index":0,"delta":{},"logprobs":[],"obfuscation":"{}"}}"#,
                json_str(word),
                noise.text(1, 16)
            ),
        );
        seq += 1;
    }
    event(
        &mut out,
        "response.output_text.done",
        format!(
            r#"{{"type":"response.output_text.done","sequence_number":{seq},"item_id":"{msg}","output_index":0,"content_index":0,"text":{},"logprobs":[]}}"#,
            json_str(&text)
        ),
    );
    seq += 1;
    let message = format!(
        r#"{{"id":"{msg}","type":"message","status":"completed","content":[{{"type":"output_text","annotations":[],"logprobs":[],"text":{}}}],"role":"assistant"}}"#,
        json_str(&text)
    );
    event(
        &mut out,
        "response.output_item.done",
        format!(
            r#"{{"type":"response.output_item.done","sequence_number":{seq},"output_index":0,"item":{message}}}"#
        ),
    );
    seq += 1;
    event(
        &mut out,
        "response.completed",
        format!(
            r#"{{"type":"response.completed","sequence_number":{seq},"response":{{"id":"resp_68c1f2a9b0e48190a1d3c5e7f9b2d4f6","object":"response","created_at":1763900000,"status":"completed","model":"gpt-5-mini-2025-08-07","output":[{message}],"usage":{{"input_tokens":12,"input_tokens_details":{{"cached_tokens":0}},"output_tokens":4000,"output_tokens_details":{{"reasoning_tokens":0}},"total_tokens":4012}}}}}}"#
        ),
    );
    out.into_bytes()
}

/// An Anthropic Messages stream: named events, a text block of deltas, a
/// tool_use block with partial JSON, pings.
fn anthropic_stream() -> Vec<u8> {
    let mut out = String::new();
    let event = |out: &mut String, name: &str, data: &str| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        &mut out,
        "message_start",
        r#"{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":2095,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1,"service_tier":"standard"}}}"#,
    );
    event(
        &mut out,
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    );
    for i in 0..STREAM_DELTAS {
        if i % 500 == 0 {
            event(&mut out, "ping", r#"{"type": "ping"}"#);
        }
        let data = format!(
            r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":{}}}}}"#,
            json_str(WORDS[i % WORDS.len()])
        );
        event(&mut out, "content_block_delta", &data);
    }
    event(
        &mut out,
        "content_block_stop",
        r#"{"type":"content_block_stop","index":0}"#,
    );
    event(
        &mut out,
        "content_block_start",
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"fs_read","input":{}}}"#,
    );
    for piece in [r#"{\"path\""#, r#":\"src/lib.rs\""#, "}"] {
        let data = format!(
            r#"{{"type":"content_block_delta","index":1,"delta":{{"type":"input_json_delta","partial_json":"{piece}"}}}}"#
        );
        event(&mut out, "content_block_delta", &data);
    }
    event(
        &mut out,
        "content_block_stop",
        r#"{"type":"content_block_stop","index":1}"#,
    );
    event(
        &mut out,
        "message_delta",
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":4010}}"#,
    );
    event(&mut out, "message_stop", r#"{"type":"message_stop"}"#);
    out.into_bytes()
}

/// Target 4: decoding a realistic stream end to end (SSE framing, JSON,
/// deltas, the tool call) from memory, in 16 KiB chunks.
fn sse_decode(wire: Wire) -> String {
    let rt = runtime();
    let body = bytes::Bytes::from(match wire {
        Wire::Chat => chat_stream(),
        Wire::Responses => responses_stream(),
        Wire::Anthropic => anthropic_stream(),
    });
    let pieces: Vec<Result<bytes::Bytes, agentkit::http::ProviderError>> = (0..body.len())
        .step_by(16 * 1024)
        .map(|start| Ok(body.slice(start..(start + 16 * 1024).min(body.len()))))
        .collect();
    let len = body.len();
    measure(|| {
        let events = SseStream::from_byte_stream(futures::stream::iter(pieces));
        let (texts, calls) = rt.block_on(async {
            match wire {
                Wire::Chat => drain(OpenAiTurn::from_events(events)).await,
                Wire::Responses => drain(ResponsesTurn::from_events(events)).await,
                Wire::Anthropic => drain(AnthropicTurn::from_events(events)).await,
            }
        });
        assert_eq!(texts, STREAM_DELTAS);
        assert_eq!(calls, usize::from(!matches!(wire, Wire::Responses)));
        Measured {
            units: len as u64,
            unit: "stream byte",
        }
    })
}

/// Drains a turn: (text appends, tool calls).
async fn drain(mut turn: impl ModelTurn) -> (usize, usize) {
    let (mut texts, mut calls) = (0, 0);
    while let Some(event) = turn.next_event().await.expect("the stream decodes") {
        match event {
            ModelTurnEvent::Delta(agentkit::core::Delta::AppendText { .. }) => texts += 1,
            ModelTurnEvent::ToolCall(_) => calls += 1,
            _ => {}
        }
    }
    (texts, calls)
}

/// A scenario: runs, and returns its report line.
type Scenario = fn() -> String;

/// Every scenario by name.
const SCENARIOS: &[(&str, Scenario)] = &[
    ("s1_round", s1_round),
    ("s1_model_only", s1_model_only),
    ("long_session_round", long_session_round),
    ("first_round_long", first_round_long),
    ("load_transcript", load_transcript),
    ("resume_snapshot", resume_snapshot),
    ("idle_session", idle_session),
    ("request_chat_turn_n", || request_turn_n(Wire::Chat)),
    ("request_chat_turn_n1", || request_turn_n1(Wire::Chat)),
    ("request_responses_turn_n", || {
        request_turn_n(Wire::Responses)
    }),
    ("request_responses_turn_n1", || {
        request_turn_n1(Wire::Responses)
    }),
    ("request_anthropic_turn_n", || {
        request_turn_n(Wire::Anthropic)
    }),
    ("request_anthropic_turn_n1", || {
        request_turn_n1(Wire::Anthropic)
    }),
    ("sse_chat", || sse_decode(Wire::Chat)),
    ("sse_responses", || sse_decode(Wire::Responses)),
    ("sse_anthropic", || sse_decode(Wire::Anthropic)),
];

fn main() {
    // `cargo bench` passes `--bench`; anything starting with `-` other
    // than `--list` is ignored.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in SCENARIOS {
            println!("{name}");
        }
        return;
    }
    let wanted: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    for (name, scenario) in SCENARIOS {
        if wanted.is_empty() || wanted.iter().any(|w| w == name) {
            println!("{name} {}", scenario());
        }
    }
}
