//! Benchmark S3 (issue 6): decoding a long Chat Completions stream.
//!
//! 100,004 `chat.completion.chunk` events shaped like today's OpenAI API (a
//! role chunk, 100,000 content chunks " t{i % 1000}" each with its own
//! `obfuscation` string, a finish chunk, a usage chunk, `[DONE]`) go through
//! the whole adapter decoding path: SSE framing, JSON, deltas. Measured (a)
//! in-process from memory, handed over in 16 KiB chunks and in one single
//! chunk, plus the SSE layer alone for comparison, and (b) served by a local
//! HTTP server in 16 KiB pieces. Figures are medians of several runs, in MB/s
//! of SSE body. Run with `cargo xtask bench` or
//! `cargo bench -p agentkit-provider-openai --bench s3_stream`.

use agentkit_http::testing::{ScriptedResponse, TestServer};
use agentkit_http::{HttpConfig, RetryPolicy, SseStream};
use agentkit_loop::{
    ModelAdapter, ModelSession, ModelTurn, ModelTurnEvent, SessionConfig, TranscriptView,
    TurnRequest,
};
use agentkit_provider_openai::{OpenAiAdapter, OpenAiConfig, OpenAiTurn};
use bytes::Bytes;
use std::time::{Duration, Instant};

const CONTENT_CHUNKS: usize = 100_000;
const RUNS: usize = 11;

/// A stream shaped like today's OpenAI API: every chunk repeats the id,
/// model, `service_tier` and `system_fingerprint`, carries `logprobs` and
/// `usage` as `null`, and ends with an `obfuscation` string of varying
/// length and content (so no two chunks are the same bytes around their
/// text); the usage arrives in a last chunk with no choices.
fn body() -> Vec<u8> {
    let head = r#"{"id":"chatcmpl-CXk7RvO2mNcP1hT0qzYbWfA3LuEd","object":"chat.completion.chunk","created":1763780000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":[{"index":0,"delta":"#;
    // A small deterministic generator for the obfuscation strings.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut obfuscation = move || {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let len = 1 + (state % 16) as usize;
        (0..len)
            .map(|i| ALPHABET[((state >> (i * 3)) % ALPHABET.len() as u64) as usize] as char)
            .collect::<String>()
    };
    let mut out = String::with_capacity(32 << 20);
    let mut chunk = |out: &mut String, delta: &str, finish: &str| {
        out.push_str(&format!(
            "data: {head}{delta},\"logprobs\":null,\"finish_reason\":{finish}}}],\"usage\":null,\"obfuscation\":\"{}\"}}\n\n",
            obfuscation()
        ));
    };
    chunk(
        &mut out,
        r#"{"role":"assistant","content":"","refusal":null}"#,
        "null",
    );
    for i in 0..CONTENT_CHUNKS {
        chunk(
            &mut out,
            &format!("{{\"content\":\" t{}\"}}", i % 1000),
            "null",
        );
    }
    chunk(&mut out, "{}", "\"stop\"");
    out.push_str(r#"data: {"id":"chatcmpl-CXk7RvO2mNcP1hT0qzYbWfA3LuEd","object":"chat.completion.chunk","created":1763780000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":100000,"total_tokens":100012,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"obfuscation":"Qv"}"#);
    out.push_str("\n\ndata: [DONE]\n\n");
    out.into_bytes()
}

fn chunks(body: &Bytes, size: usize) -> Vec<Result<Bytes, agentkit_http::ProviderError>> {
    (0..body.len())
        .step_by(size)
        .map(|start| Ok(body.slice(start..(start + size).min(body.len()))))
        .collect()
}

/// Drains a turn; returns the number of text appends, checked by the caller.
async fn drain(mut turn: impl ModelTurn) -> usize {
    let mut appends = 0;
    while let Some(event) = turn.next_event().await.expect("decodes") {
        if let ModelTurnEvent::Delta(agentkit_core::Delta::AppendText { .. }) = event {
            appends += 1;
        }
    }
    appends
}

async fn adapter_in_memory(body: &Bytes, size: usize) -> Duration {
    let pieces = chunks(body, size);
    let started = Instant::now();
    let events = SseStream::from_byte_stream(futures::stream::iter(pieces));
    let appends = drain(OpenAiTurn::from_events(events)).await;
    let elapsed = started.elapsed();
    assert_eq!(appends, CONTENT_CHUNKS);
    elapsed
}

async fn sse_only(body: &Bytes, size: usize) -> Duration {
    let pieces = chunks(body, size);
    let started = Instant::now();
    let mut events = SseStream::from_byte_stream(futures::stream::iter(pieces));
    let mut count = 0;
    while events.next_event().await.unwrap().is_some() {
        count += 1;
    }
    let elapsed = started.elapsed();
    assert_eq!(count, CONTENT_CHUNKS + 4);
    elapsed
}

async fn over_http(body: &Bytes) -> Duration {
    let server = TestServer::start([ScriptedResponse::sse(body.to_vec())
        .split_every(16 * 1024)
        .with_pause(Duration::ZERO)])
    .await
    .unwrap();
    let config = OpenAiConfig::compatible(format!("{}/v1", server.url()), "gpt-bench")
        .with_http(HttpConfig::default().with_retry(RetryPolicy::none()));
    let adapter = OpenAiAdapter::new(config).unwrap();
    let mut session = adapter
        .start_session(SessionConfig::new("bench"))
        .await
        .unwrap();
    let request = TurnRequest {
        session_id: "bench".into(),
        turn_id: agentkit_core::TurnId::new("turn-1"),
        transcript: TranscriptView::from_items(vec![agentkit_core::Item::user("go")]),
        available_tools: Default::default(),
        metadata: Default::default(),
        cache: None,
        output_schema: None,
    };
    let started = Instant::now();
    let turn = session.begin_turn(request).await.unwrap();
    let appends = drain(turn).await;
    let elapsed = started.elapsed();
    assert_eq!(appends, CONTENT_CHUNKS);
    elapsed
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let body = Bytes::from(body());
    let mb = body.len() as f64 / 1e6;
    println!(
        "S3: {} events, {:.1} MB of SSE body, median of {RUNS} runs",
        CONTENT_CHUNKS + 4,
        mb
    );
    println!("{:<44} {:>10} {:>10}", "case", "ms", "MB/s");
    let report = |name: &str, runs: Vec<Duration>| {
        let m = median(runs);
        println!(
            "{:<44} {:>10.1} {:>10.0}",
            name,
            m.as_secs_f64() * 1e3,
            mb / m.as_secs_f64()
        );
        m
    };
    runtime.block_on(async {
        let kib16 = 16 * 1024;
        // Rounds interleave the cases, so load that drifts during the run
        // (other builds on a shared machine) spreads over all of them.
        let mut times: [Vec<Duration>; 5] = Default::default();
        for _ in 0..RUNS {
            times[0].push(adapter_in_memory(&body, kib16).await);
            times[1].push(adapter_in_memory(&body, body.len()).await);
            times[2].push(sse_only(&body, kib16).await);
            times[3].push(sse_only(&body, body.len()).await);
            times[4].push(over_http(&body).await);
        }
        let [a16, a1, s16, s1, http] = times;
        let a16 = report("(a) adapter, in memory, 16 KiB chunks", a16);
        let a1 = report("(a) adapter, in memory, one single chunk", a1);
        let s16 = report("    SSE layer only, 16 KiB chunks", s16);
        let s1 = report("    SSE layer only, one single chunk", s1);
        report("(b) adapter, local HTTP server, 16 KiB pieces", http);
        println!(
            "one chunk / 16 KiB chunks: adapter {:.2}, SSE layer {:.2} (1.0 = cost linear in the chunk size)",
            a1.as_secs_f64() / a16.as_secs_f64(),
            s1.as_secs_f64() / s16.as_secs_f64()
        );
    });
}
