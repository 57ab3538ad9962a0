//! S5: sending a model request of a long session over loopback HTTP, and
//! where that time goes (issue 17, target 1).
//!
//! A 10,000-item coding session (prose, tool calls, code in results) sends
//! turn N (a fresh adapter session: nothing cached) and then turn N+1, N+2
//! ... (two more items each: a call and its result), through the real
//! adapter and HTTP client to the local test server on 127.0.0.1. Timed:
//! from `begin_turn` until the response head is back, which is what sending
//! a request costs before the first streamed byte. The same run splits that
//! time into:
//!
//! - **body**: building the body in-process (`request_body` on a twin
//!   session in the same cache state);
//! - **fixed**: a request with a two-byte body through the same HTTP client
//!   (connect, request head, the server's task, response head);
//! - **transfer**: the same body bytes posted raw minus the fixed cost
//!   (copying the body through the client, the kernel and the server);
//! - **other**: what is left (the adapter's own work around the request).
//!
//! A second table counts the bytes on the wire for turn N+1 of the same
//! session on the Responses API with `previous_response_id` (issue 33): the
//! chained request carries only what follows the stored response, and a
//! server that lost that response gets the whole history once. Bytes are
//! exact and asserted (at most 1% of the full history); times never are.
//!
//! Run with `cargo bench -p agentkit --bench loopback` (or `cargo xtask
//! bench`; `-- chained` prints only the second table). Wall clock, medians: never asserted.

use agentkit::agent::{ModelAdapter, ModelSession, SessionConfig, TranscriptView, TurnRequest};
use agentkit::core::Item;
use agentkit::http::testing::{ScriptedResponse, TestServer};
use agentkit::http::{HttpClient, HttpConfig, StreamRequest};
use agentkit::openai::{OpenAiConfig, ResponsesAdapter, ResponsesConfig};
use std::time::{Duration, Instant};

#[path = "support/traffic.rs"]
mod traffic;
use traffic::{BodySession, Wire, request};

/// Items in the session at turn N.
const ITEMS: usize = 10_000;
/// Repetitions per figure; the median is printed.
const REPS: usize = 15;

impl BodySession {
    /// Sends the request; returns when the response head is back (the
    /// turn is dropped unread).
    async fn send(&mut self, request: TurnRequest) -> Duration {
        let start = Instant::now();
        match self {
            Self::Chat(s) => drop(s.begin_turn(request).await.expect("a turn")),
            Self::Responses(s) => drop(s.begin_turn(request).await.expect("a turn")),
            Self::Anthropic(s) => drop(s.begin_turn(request).await.expect("a turn")),
        }
        start.elapsed()
    }
}

/// Posts `body` through a plain client; returns when the head is back.
async fn post(client: &HttpClient, url: &str, body: Vec<u8>) -> Duration {
    let start = Instant::now();
    let response = client
        .post_sse(StreamRequest::with_body(format!("{url}/raw"), body))
        .await
        .expect("a response");
    drop(response);
    start.elapsed()
}

fn median(mut values: Vec<Duration>) -> f64 {
    values.sort();
    values[values.len() / 2].as_secs_f64() * 1e3
}

/// CPU time of every thread of this process so far (the client, the
/// server and the runtime all live here): wall clock on a shared machine
/// counts other processes' work too.
fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// One phase's wall-clock samples and the process CPU time they used.
#[derive(Default)]
struct Phase {
    wall: Vec<Duration>,
    cpu: Duration,
}

impl Phase {
    /// Runs `f`, recording its wall and CPU time.
    async fn time<R>(&mut self, f: impl std::future::Future<Output = R>) -> R {
        let (cpu, start) = (cpu_time(), Instant::now());
        let out = f.await;
        self.wall.push(start.elapsed());
        self.cpu += cpu_time().saturating_sub(cpu);
        out
    }

    /// "wall median / mean CPU", in milliseconds.
    fn show(&self) -> String {
        let cpu = self.cpu.as_secs_f64() * 1e3 / self.wall.len().max(1) as f64;
        format!("{:.2} / {cpu:.2}", median(self.wall.clone()))
    }

    fn wall(&self) -> f64 {
        median(self.wall.clone())
    }
}

/// Each phase of one wire.
#[derive(Default)]
struct Figures {
    body_bytes: usize,
    n_send: Phase,
    n_body: Phase,
    n1_send: Phase,
    n1_body: Phase,
    fixed: Phase,
    raw: Phase,
}

async fn measure(wire: Wire) -> Figures {
    // Every request gets a short finished stream; the head is what is timed.
    let server = TestServer::start((0..REPS * 4 + 4).map(|_| {
        ScriptedResponse::sse("data: {}\n\n".as_bytes().to_vec()).with_pause(Duration::ZERO)
    }))
    .await
    .expect("a test server");
    let url = server.url().to_owned();
    let client = HttpClient::new(HttpConfig::default()).expect("a client");
    let view = TranscriptView::from_items(traffic::history(ITEMS / 2 - 1));
    let mut f = Figures::default();

    // Turn N: fresh sessions, nothing cached.
    for turn in 0..REPS {
        let mut twin = BodySession::open(wire, &url).await;
        let body = f
            .n_body
            .time(async { twin.body(&request(turn, view.clone())) })
            .await;
        std::hint::black_box(body);
        let mut session = BodySession::open(wire, &url).await;
        let request = request(turn, view.clone());
        f.n_send.time(session.send(request)).await;
    }

    // Turn N+1, N+2 ...: one session (and its twin) growing by two items.
    let mut session = BodySession::open(wire, &url).await;
    let mut twin = BodySession::open(wire, &url).await;
    session.send(request(0, view.clone())).await;
    twin.body(&request(0, view.clone()));
    let mut view = view;
    for turn in 1..=REPS {
        view = view.appended(traffic::round(ITEMS / 2 + turn));
        let body = f
            .n1_body
            .time(async { twin.body(&request(turn, view.clone())) })
            .await;
        f.body_bytes = body.len();
        let request = request(turn, view.clone());
        f.n1_send.time(session.send(request)).await;
        f.fixed.time(post(&client, &url, b"{}".to_vec())).await;
        f.raw.time(post(&client, &url, body)).await;
    }
    f
}

/// Marks `item` as the answer of the stored response `id`, as the
/// Responses decoder does.
fn stored(mut item: Item, id: &str) -> Item {
    item.metadata
        .insert("agentkit.response_id".into(), serde_json::json!(id));
    item.metadata.insert(
        "agentkit.provider".into(),
        serde_json::json!("openai-responses"),
    );
    item
}

/// Bytes on the wire of a chained Responses session: turn N (the whole
/// history), turn N+1 (`previous_response_id`), and a turn whose stored
/// response the server lost (the refused chained request plus the whole
/// history).
async fn chained_bytes() -> (usize, usize, usize, usize) {
    let answer = || ScriptedResponse::sse("data: {}\n\n".as_bytes().to_vec());
    let lost = r#"{"error":{"message":"Previous response with id 'resp_n1' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}"#;
    let server = TestServer::start([
        answer(),
        answer(),
        ScriptedResponse::json(400, lost),
        answer(),
    ])
    .await
    .expect("a test server");
    let config: ResponsesConfig =
        OpenAiConfig::compatible(format!("{}/v1", server.url()), "gpt-bench").into();
    let adapter = ResponsesAdapter::new(config.with_store(true, true)).expect("an adapter");
    let mut session = adapter
        .start_session(SessionConfig::new("chained"))
        .await
        .expect("a session");
    let pairs = ITEMS / 2 - 1;
    let mut view = TranscriptView::from_items(traffic::history(pairs));
    let turn = |view: &TranscriptView, n: usize| request(n, view.clone());
    drop(session.begin_turn(turn(&view, 0)).await.expect("turn N"));
    // The model answered turn N with a call (stored as `resp_n`), and the
    // call's result follows.
    for (n, id) in [(1, "resp_n"), (2, "resp_n1")] {
        let [call, result] = traffic::round(pairs + n);
        view = view.appended([stored(call, id), result]);
        drop(session.begin_turn(turn(&view, n)).await.expect("turn N+n"));
    }
    let sizes: Vec<usize> = server.requests().iter().map(|r| r.body.len()).collect();
    assert_eq!(sizes.len(), 4, "N, N+1, N+2 refused, N+2 whole");
    (sizes[0], sizes[1], sizes[2], sizes[3])
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    if std::env::args().any(|a| a == "chained") {
        return print_chained(&runtime);
    }
    println!(
        "\n## S5: sending a request of a {ITEMS}-item session over loopback HTTP (ms: wall median of {REPS} / mean process CPU)\n"
    );
    println!(
        "| wire | body KiB | turn N send | turn N body | turn N+1 send | N+1 / N (wall) | N+1 body | fixed | body posted raw | transfer (wall) | other (wall) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for wire in [Wire::Chat, Wire::Responses, Wire::Anthropic] {
        let f = runtime.block_on(measure(wire));
        let transfer = f.raw.wall() - f.fixed.wall();
        let other = f.n1_send.wall() - f.n1_body.wall() - f.raw.wall();
        println!(
            "| {wire:?} | {:.0} | {} | {} | {} | {:.2} | {} | {} | {} | {transfer:.2} | {other:.2} |",
            f.body_bytes as f64 / 1024.0,
            f.n_send.show(),
            f.n_body.show(),
            f.n1_send.show(),
            f.n1_send.wall() / f.n_send.wall(),
            f.n1_body.show(),
            f.fixed.show(),
            f.raw.show(),
        );
    }
    println!(
        "\nturn N+1 send = N+1 body + fixed + transfer + other: fixed is a request with a two-byte body through the same client and server (a new connection each time: the test server closes it), transfer is the same body posted raw minus fixed, other is the adapter's own work around the request (negative: within the noise)."
    );
    print_chained(&runtime);
}

/// Prints (and checks) the chained session's bytes on the wire.
fn print_chained(runtime: &tokio::runtime::Runtime) {
    let (full, chained, refused, resent) = runtime.block_on(chained_bytes());
    let share = chained as f64 / full as f64 * 100.0;
    println!(
        "\n## Bytes on the wire for turn N+1 of a {ITEMS}-item Responses session (`previous_response_id`)\n"
    );
    println!(
        "| turn N (whole history) | turn N+1 chained | share | response lost: refused + whole history |"
    );
    println!("| --- | --- | --- | --- |");
    println!("| {full} | {chained} | {share:.3}% | {refused} + {resent} |");
    assert!(
        chained * 100 <= full,
        "a chained turn sends at most 1% of the history"
    );
}
