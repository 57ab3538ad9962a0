//! Loop benchmarks S1, S1b and S2 (see issue #4), printed as a table.
//!
//! Run with `cargo xtask bench` (or `cargo bench -p agentkit-loop --bench
//! scenarios`). Each figure is the median of several repetitions; the
//! targets are ratios, so they hold on a noisy machine.

use agentkit_core::{FinishReason, Item, ItemKind, Part, ToolCallPart, ToolResultPart};
use agentkit_loop::{Agent, LoopInterrupt, LoopStep, SessionConfig};
use agentkit_testkit::{EchoTool, ScriptedModel, ScriptedTurn};
use agentkit_tools_core::ToolRegistry;
use serde_json::json;
use std::time::{Duration, Instant};

/// One S1 model turn: four text chunks and an `echo` call.
fn tool_turn(index: usize) -> ScriptedTurn {
    ScriptedTurn::new()
        .say_chunks(&["Let", " me", " check", "."])
        .call(&format!("call-{index}"), "echo", json!({ "text": "hi" }))
        .finish(FinishReason::ToolCall)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// S1: 1000 rounds; µs per round in rounds 0–99 and 900–999.
async fn s1() -> (f64, f64) {
    let model = ScriptedModel::new((0..1000).map(tool_turn).chain([ScriptedTurn::text("done")]))
        .without_recording();
    let agent = Agent::builder()
        .model(model)
        .add_tool_source(ToolRegistry::new().with(EchoTool::new()))
        .max_model_calls(10_000) // one long turn, past the default step limit
        .transcript(vec![Item::system("bench")])
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let mut driver = agent.start(SessionConfig::new("s1")).await.unwrap();
    let mut rounds = Vec::with_capacity(1000);
    loop {
        let started = Instant::now();
        match driver.next().await.unwrap() {
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_)) => {
                rounds.push(started.elapsed())
            }
            LoopStep::Finished(_) => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(rounds.len(), 1000);
    let window =
        |range: std::ops::Range<usize>| micros(rounds[range].iter().sum::<Duration>()) / 100.0;
    (window(0..100), window(900..1000))
}

fn preloaded(pairs: usize) -> Vec<Item> {
    let mut items = Vec::with_capacity(pairs * 2 + 1);
    items.push(Item::system("bench"));
    for i in 0..pairs {
        let id = format!("old-{i}");
        items.push(Item::new(
            ItemKind::Assistant,
            vec![Part::ToolCall(ToolCallPart::new(
                id.clone(),
                "echo",
                json!({ "text": "hi" }),
            ))],
        ));
        items.push(Item::tool_result(ToolResultPart::success(id, "echo: hi")));
    }
    items
}

/// Rounds S1b times after the second: the median of these is the round
/// with warm caches.
const LATER_ROUNDS: usize = 10;

/// What S1b measured, in µs.
struct S1b {
    start: f64,
    first: f64,
    next: f64,
    /// The median of the [`LATER_ROUNDS`] rounds after `next`.
    later: f64,
}

/// S1b: with P items preloaded, the cost of `start`, of the first round
/// after it (which copies the shared history into the session's log), of
/// the next round (its caches cold from that copy), and of the rounds
/// after that.
async fn s1b(p: usize) -> S1b {
    // One session per model: the script is not copied at `start`.
    let model = ScriptedModel::new(
        (0..LATER_ROUNDS + 2)
            .map(tool_turn)
            .chain([ScriptedTurn::text("done")]),
    )
    .without_recording();
    let agent = Agent::builder()
        .model(model)
        .add_tool_source(ToolRegistry::new().with(EchoTool::new()))
        .transcript(preloaded(p / 2))
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let started = Instant::now();
    let mut driver = agent.start(SessionConfig::new("s1b")).await.unwrap();
    let start = started.elapsed();
    let started = Instant::now();
    let step = driver.next().await.unwrap();
    let round = started.elapsed();
    assert!(matches!(
        step,
        LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))
    ));
    let mut rounds = Vec::with_capacity(LATER_ROUNDS + 1);
    for _ in 0..=LATER_ROUNDS {
        let started = Instant::now();
        let step = driver.next().await.unwrap();
        rounds.push(micros(started.elapsed()));
        assert!(matches!(
            step,
            LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))
        ));
    }
    S1b {
        start: micros(start),
        first: micros(round),
        next: rounds[0],
        later: median(rounds[1..].to_vec()),
    }
}

/// A figure of /proc/self/status in KiB (`VmHWM`: peak RSS, `VmRSS`: now).
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// What S2 measured.
struct S2 {
    micros_per_session: f64,
    peak_rss_mib: f64,
    /// RSS with every session idle minus RSS before the first was started,
    /// per session: the session's heap plus the allocator's overhead and
    /// whatever its turn left fragmented.
    rss_bytes_per_session: f64,
}

/// S2: 10,000 sessions from one agent on a 2-worker runtime, all alive at
/// the end, each idle after one turn (a tool round and an answer). Run in
/// a process of its own ([`s2_in_child`]).
fn s2() -> S2 {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let model =
        ScriptedModel::per_session([tool_turn(0), ScriptedTurn::text("done")]).without_recording();
    let agent = Agent::builder()
        .model(model)
        .add_tool_source(ToolRegistry::new().with(EchoTool::new()))
        .transcript(vec![Item::system("bench")])
        .input(vec![Item::user("go")])
        .build()
        .unwrap();
    let rss_before = status_kib("VmRSS:");
    let started = Instant::now();
    let drivers = runtime.block_on(async {
        let tasks: Vec<_> = (0..10_000)
            .map(|i| {
                let agent = agent.clone();
                tokio::spawn(async move {
                    let mut driver = agent
                        .start(SessionConfig::new(format!("s2-{i}")))
                        .await
                        .unwrap();
                    assert!(matches!(
                        driver.next().await.unwrap(),
                        LoopStep::Interrupt(_)
                    ));
                    assert!(matches!(
                        driver.next().await.unwrap(),
                        LoopStep::Finished(_)
                    ));
                    driver
                })
            })
            .collect();
        let mut drivers = Vec::with_capacity(tasks.len());
        for task in tasks {
            drivers.push(task.await.unwrap());
        }
        drivers
    });
    let micros_per_session = micros(started.elapsed()) / drivers.len() as f64;
    let peak_rss_mib = status_kib("VmHWM:").map_or(f64::NAN, |kib| kib as f64 / 1024.0);
    let rss_bytes_per_session = match (rss_before, status_kib("VmRSS:")) {
        (Some(before), Some(after)) => {
            (after as f64 - before as f64) * 1024.0 / drivers.len() as f64
        }
        _ => f64::NAN,
    };
    assert!(drivers.iter().all(|d| d.transcript().len() == 5));
    drop(drivers);
    S2 {
        micros_per_session,
        peak_rss_mib,
        rss_bytes_per_session,
    }
}

/// Set in the child process that runs S2 alone.
const S2_CHILD: &str = "AGENTKIT_BENCH_S2_CHILD";

/// Runs S2 in a fresh process: memory the other scenarios freed would
/// otherwise be reused by S2's sessions and hide their RSS.
fn s2_in_child() -> S2 {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .env(S2_CHILD, "1")
        .output()
        .unwrap();
    assert!(output.status.success(), "the S2 child failed");
    let text = String::from_utf8(output.stdout).unwrap();
    let figures: Vec<f64> = text
        .split_whitespace()
        .map(|f| f.parse().unwrap())
        .collect();
    S2 {
        micros_per_session: figures[0],
        peak_rss_mib: figures[1],
        rss_bytes_per_session: figures[2],
    }
}

fn main() {
    if std::env::var_os(S2_CHILD).is_some() {
        let s2 = s2();
        println!(
            "{} {} {}",
            s2.micros_per_session, s2.peak_rss_mib, s2.rss_bytes_per_session
        );
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    const REPS: usize = 5;

    let s1_runs: Vec<(f64, f64)> = (0..REPS).map(|_| runtime.block_on(s1())).collect();
    let early = median(s1_runs.iter().map(|r| r.0).collect());
    let late = median(s1_runs.iter().map(|r| r.1).collect());
    println!("| scenario | figure | median |");
    println!("| --- | --- | --- |");
    println!("| S1 | µs per round, rounds 0-99 | {early:.1} |");
    println!("| S1 | µs per round, rounds 900-999 | {late:.1} |");
    println!(
        "| S1 | ratio late/early (target <= 1.3) | {:.2} |",
        late / early
    );

    let (mut steady_at, mut later_at) = (Vec::new(), Vec::new());
    for p in [0, 1_000, 10_000, 100_000] {
        let runs: Vec<S1b> = (0..REPS).map(|_| runtime.block_on(s1b(p))).collect();
        let start = median(runs.iter().map(|r| r.start).collect());
        let first = median(runs.iter().map(|r| r.first).collect());
        let steady = median(runs.iter().map(|r| r.next).collect());
        let later = median(runs.iter().map(|r| r.later).collect());
        steady_at.push(steady);
        later_at.push(later);
        println!(
            "| S1b | P={p}: start / first round / next round / later rounds, µs | {start:.1} / {first:.1} / {steady:.1} / {later:.1} |"
        );
    }
    let ratio = steady_at[2] / steady_at[0];
    println!("| S1b | ratio round P=10000 / P=0 (target <= 2) | {ratio:.2} |");
    println!(
        "| S1b | ratio later rounds P=10000 / P=0 (caches warm again) | {:.2} |",
        later_at[2] / later_at[0]
    );

    // Each run in a fresh process. RSS growth moves with how the
    // allocator's arenas happened to grow (one binary gave 1,588 and 3,742
    // bytes a session in consecutive runs), so one run is not a figure.
    let s2_runs: Vec<S2> = (0..REPS).map(|_| s2_in_child()).collect();
    let per_session: Vec<f64> = s2_runs.iter().map(|r| r.rss_bytes_per_session).collect();
    let (low, high) = per_session
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        });
    println!(
        "| S2 | µs per session (10,000 sessions, 2 workers) | {:.1} |",
        median(s2_runs.iter().map(|r| r.micros_per_session).collect())
    );
    println!(
        "| S2 | peak RSS, MiB (whole process) | {:.1} |",
        median(s2_runs.iter().map(|r| r.peak_rss_mib).collect())
    );
    println!(
        "| S2 | RSS per idle session, bytes (RSS growth / 10,000; target <= 6,144; {REPS} runs {low:.0}-{high:.0}) | {:.0} |",
        median(per_session)
    );
}
