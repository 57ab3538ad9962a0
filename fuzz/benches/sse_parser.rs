//! The SSE parser against the decoder it replaced (`eventsource-stream`),
//! on a 33 MB Chat Completions-shaped stream: 100,000 chunk events, read in
//! 16 KiB pieces and in one piece. Prints MB/s (best of 5) for each; both
//! must find the same number of events. Not part of CI (timings on shared
//! machines are noisy): `cargo bench -p agentkit-fuzz --bench sse_parser`.
//!
//! Measured when the parser landed (2 shared cores, release): 16 KiB reads
//! 632 MB/s -> 3,852 MB/s; one read 630 -> 2,608 MB/s.

use agentkit_http::{SseLimits, SseParser};
use std::time::Instant;

fn body() -> Vec<u8> {
    let head = r#"{"id":"chatcmpl-CXk7RvO2mNcP1hT0qzYbWfA3LuEd","object":"chat.completion.chunk","created":1763780000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":[{"index":0,"delta":"#;
    let mut out = String::new();
    for i in 0..100_000 {
        out.push_str(&format!(
            "data: {head}{{\"content\":\" t{}\"}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null,\"obfuscation\":\"abc{}\"}}\n\n",
            i % 1000,
            i % 97
        ));
    }
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

/// The old path: reads cut at blank lines first (as agentkit-http did, to
/// keep eventsource-stream linear), then decoded.
fn reference(pieces: Vec<Vec<u8>>) -> usize {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;
    let chunks = futures::stream::iter(pieces.into_iter().map(Ok::<_, std::convert::Infallible>));
    futures::executor::block_on(chunks.eventsource().count())
}

fn cut_at_event_ends(body: &[u8], read: usize) -> Vec<Vec<u8>> {
    let mut pieces = Vec::new();
    for chunk in body.chunks(read) {
        let mut start = 0;
        for end in memchr_blank_lines(chunk) {
            pieces.push(chunk[start..end].to_vec());
            start = end;
        }
        if start < chunk.len() {
            pieces.push(chunk[start..].to_vec());
        }
    }
    pieces
}

fn memchr_blank_lines(chunk: &[u8]) -> impl Iterator<Item = usize> + '_ {
    chunk
        .windows(2)
        .enumerate()
        .filter(|(_, w)| *w == b"\n\n")
        .map(|(i, _)| i + 2)
}

fn main() {
    let body = body();
    let mb = body.len() as f64 / 1e6;
    println!("stream: {mb:.1} MB");
    for read in [16 * 1024, body.len()] {
        let (mut old, mut new) = (f64::MAX, f64::MAX);
        for _ in 0..5 {
            let pieces = cut_at_event_ends(&body, read);
            let started = Instant::now();
            let expected = reference(pieces);
            old = old.min(started.elapsed().as_secs_f64());

            let started = Instant::now();
            let mut parser = SseParser::new(SseLimits::default());
            let mut events = Vec::new();
            let mut count = 0;
            for chunk in body.chunks(read) {
                parser.feed(chunk, &mut events).expect("decodes");
                count += events.len();
                events.clear();
            }
            new = new.min(started.elapsed().as_secs_f64());
            assert_eq!(count, expected, "both decoders see every event");
        }
        println!(
            "reads of {read:>8} bytes: eventsource-stream {:>6.0} MB/s, SseParser {:>6.0} MB/s ({:.1}x)",
            mb / old,
            mb / new,
            old / new
        );
    }
}
