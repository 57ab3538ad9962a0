//! The soak run behind `cargo xtask soak --minutes N`: sessions one after
//! another, for N minutes, against the local test server speaking Chat
//! Completions, with faults drawn at random for every model call
//! (connection resets mid-stream, stalls past the idle timeout, 429 and 500
//! answers, malformed events) and tools that panic or fail. The driver
//! retries a failed call (`next()` again), as a host does.
//!
//! After every session: the transcript is valid (every tool call answered
//! exactly once), every good answer the server sent is in it (nothing
//! lost), and every scripted answer was consumed. At the end: resident
//! memory after warm-up (the first quarter) may not grow by more than a
//! quarter plus 16 MiB. The figures are printed for the reliability chapter.
//!
//! Ignored by default (it runs for minutes); `cargo xtask soak` runs it.
//! Without `AGENTKIT_SOAK_MINUTES` it runs a few sessions only.

use agentkit_core::{Item, ItemKind, validate_transcript};
use agentkit_http::testing::{Ending, ScriptedResponse, TestServer};
use agentkit_http::{HttpConfig, RetryPolicy};
use agentkit_loop::{Agent, LoopError, LoopInterrupt, LoopStep, SessionConfig};
use agentkit_provider_openai::{OpenAiAdapter, OpenAiConfig};
use agentkit_testkit::{SoakRng as Rng, soak_minutes};
use agentkit_tools_core::{
    Tool, ToolContext, ToolError, ToolRegistry, ToolRequest, ToolResult, ToolSpec,
};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A tool that behaves as its name says: `echo` answers, `fail` fails,
/// `panic` panics.
struct Behaving(&'static str);

#[async_trait::async_trait]
impl Tool for Behaving {
    fn spec(&self) -> Arc<ToolSpec> {
        Arc::new(
            ToolSpec::new(
                self.0,
                "A soak tool.",
                json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            )
            .unwrap(),
        )
    }

    async fn invoke(
        &self,
        request: ToolRequest,
        _ctx: ToolContext,
    ) -> Result<ToolResult, ToolError> {
        match self.0 {
            "panic" => panic!("a soak tool panicked on purpose"),
            "fail" => Err(ToolError::ExecutionFailed("failed on purpose".into())),
            _ => Ok(ToolResult::new(format!("echo {}", request.input["n"]))),
        }
    }
}

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> String {
    let event = json!({
        "id": "c", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {event}\n\n")
}

fn text_answer(text: &str) -> String {
    chunk(json!({"role": "assistant", "content": text}), None)
        + &chunk(json!({}), Some("stop"))
        + "data: [DONE]\n\n"
}

fn tool_answer(id: &str, name: &str, n: u64) -> String {
    chunk(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
            "function": {"name": name, "arguments": format!("{{\"n\":{n}}}")}}]}),
        None,
    ) + &chunk(json!({}), Some("tool_calls"))
        + "data: [DONE]\n\n"
}

/// What one session's server will answer, and what it must leave behind.
struct Script {
    responses: Vec<ScriptedResponse>,
    good: usize,
    faults: [u64; 5],
}

const FAULTS: [&str; 5] = ["reset", "stall", "429", "500", "malformed"];

fn script(rng: &mut Rng, session: u64) -> Script {
    let mut responses = Vec::new();
    let mut faults = [0; 5];
    let rounds = 1 + rng.below(4);
    for round in 0..=rounds {
        // Faults before each good answer.
        while rng.below(3) == 0 {
            let kind = rng.below(5) as usize;
            faults[kind] += 1;
            let partial = tool_answer("x", "echo", 0);
            responses.push(match kind {
                0 => ScriptedResponse::sse(partial[..partial.len() / 2].to_owned())
                    .ending(Ending::Abort),
                1 => ScriptedResponse::sse(chunk(json!({"content": "wait"}), None))
                    .ending(Ending::Stall),
                2 => ScriptedResponse::json(429, r#"{"error":{"message":"slow down"}}"#)
                    .with_header("retry-after", "0"),
                3 => ScriptedResponse::json(500, r#"{"error":{"message":"boom"}}"#),
                _ => ScriptedResponse::sse("data: {\"choices\": [{\"delta\": oops}\n\n"),
            });
        }
        let body = if round == rounds {
            text_answer(&format!("done {session}"))
        } else {
            let tool = ["echo", "fail", "panic"][rng.below(3) as usize];
            tool_answer(&format!("call-{session}-{round}"), tool, round)
        };
        responses.push(ScriptedResponse::sse(body).split_every(1 + rng.below(64) as usize));
    }
    Script {
        good: rounds as usize + 1,
        responses,
        faults,
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

async fn run_session(rng: &mut Rng, session: u64) -> ([u64; 5], usize) {
    let script = script(rng, session);
    let server = TestServer::start(script.responses).await.unwrap();
    let http = HttpConfig::default()
        .with_retry(RetryPolicy::none())
        .with_idle_timeout(Duration::from_millis(500));
    let config = OpenAiConfig::compatible(format!("{}/v1", server.url()), "m").with_http(http);
    let agent = Agent::builder()
        .model(OpenAiAdapter::new(config).unwrap())
        .add_tool_source(
            ToolRegistry::new()
                .with(Behaving("echo"))
                .with(Behaving("fail"))
                .with(Behaving("panic")),
        )
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent
        .start(SessionConfig::new(format!("soak-{session}")))
        .await
        .unwrap();
    let mut retries = 0;
    loop {
        let step = tokio::time::timeout(Duration::from_secs(60), driver.next())
            .await
            .expect("a step never hangs");
        match step {
            Ok(LoopStep::Finished(_)) => break,
            Ok(LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))) => {}
            Err(LoopError::Model(_)) => {
                retries += 1;
                assert!(retries < 100, "session {session}: retried forever");
            }
            other => panic!("session {session}: unexpected {other:?}"),
        }
    }
    let items = driver.transcript().to_vec();
    validate_transcript(&items)
        .unwrap_or_else(|e| panic!("session {session}: invalid transcript: {e}"));
    let answers = items
        .iter()
        .filter(|i| i.kind == ItemKind::Assistant)
        .count();
    assert_eq!(
        answers, script.good,
        "session {session}: an answer was lost"
    );
    assert_eq!(
        items.last().unwrap().text_content(),
        format!("done {session}")
    );
    assert_eq!(server.remaining(), 0, "session {session}: answers unused");
    (script.faults, retries)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes long; run by `cargo xtask soak --minutes N`"]
async fn soak() {
    let minutes = soak_minutes("AGENTKIT_SOAK_MINUTES", 0.05);
    let mut rng = Rng::from_env();
    let seed = rng.seed();
    println!("soak: {minutes} min, seed {seed}");
    // The panicking tool panics thousands of times on purpose; the loop
    // catches each one. Keep the log to the figures.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let on_purpose = info
            .payload()
            .downcast_ref::<&str>()
            .is_some_and(|m| m.contains("on purpose"));
        if !on_purpose {
            default_hook(info);
        }
    }));
    let total = Duration::from_secs_f64(minutes * 60.0);
    let started = Instant::now();
    let (mut sessions, mut retries, mut faults) = (0u64, 0u64, [0u64; 5]);
    let mut warm_rss = None;
    let mut max_after_warm = 0;
    while started.elapsed() < total || sessions < 3 {
        let (seen, tried) = run_session(&mut rng, sessions).await;
        sessions += 1;
        retries += tried as u64;
        for (sum, n) in faults.iter_mut().zip(seen) {
            *sum += n;
        }
        let rss = rss_kib();
        if warm_rss.is_none() && started.elapsed() >= total / 4 {
            warm_rss = Some(rss);
        } else if warm_rss.is_some() {
            max_after_warm = max_after_warm.max(rss);
        }
    }
    let final_rss = rss_kib();
    let warm = warm_rss.unwrap_or(final_rss);
    let injected: Vec<String> = FAULTS
        .iter()
        .zip(faults)
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    println!(
        "soak: {sessions} sessions in {:.1} min, {} faults injected ({}), {retries} failed model calls retried",
        started.elapsed().as_secs_f64() / 60.0,
        faults.iter().sum::<u64>(),
        injected.join(", "),
    );
    println!(
        "soak: RSS after warm-up {warm} KiB, highest after {max_after_warm} KiB, final {final_rss} KiB"
    );
    assert!(
        max_after_warm <= warm + warm / 4 + 16 * 1024,
        "resident memory grew after warm-up: {warm} -> {max_after_warm} KiB"
    );
}
