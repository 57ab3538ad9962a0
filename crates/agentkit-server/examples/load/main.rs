//! The load test of `cargo xtask load-server` (not part of CI): a temporary
//! PostgreSQL cluster, the local provider test server, real replica
//! processes (`examples/replica.rs`) on the one database, and many
//! concurrent AG-UI sessions through HTTP, each a run with one tool call,
//! followed over SSE and resumed with `Last-Event-ID` when its stream
//! breaks.
//!
//! Two phases: all replicas up, then the same with the first replica
//! SIGKILLed once half of its own sessions finished. Each phase prints
//! throughput, p50 / p99 time to the first event and the first text delta,
//! peak RSS per replica, and checks what must hold: every run finished,
//! every transcript valid (user, one call, its one answer, the final
//! answer) and no tool ran twice (each run leaves a mark file named after
//! its call id). A broken check fails the command.
//!
//! `load [--sessions N] [--replicas R] [--quick]`; `--quick` is 100
//! sessions. The replica binary is looked up next to this one (build both:
//! `cargo build --release -p agentkit-server --example replica --example load`).

mod client;
mod provider;

use agentkit_testkit::process::{ListeningProcess, example_binary};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A replica process (`examples/replica.rs`, next to this binary), killed
/// when dropped.
fn replica(conninfo: &str, dir: &Path, provider: &str) -> ListeningProcess {
    ListeningProcess::spawn(
        Command::new(example_binary("replica"))
            .env("REPLICA_PG", conninfo)
            .env("REPLICA_TOKEN", client::TOKEN)
            .env("REPLICA_LEASE_MS", "3000")
            .env("REPLICA_DIR", dir)
            .env("REPLICA_PROVIDER", provider),
        "the replica",
    )
}

struct Options {
    sessions: usize,
    replicas: usize,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        sessions: 1_000,
        replicas: 2,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            args.next()
                .and_then(|v| v.parse().ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{name} needs a positive number"))
        };
        match arg.as_str() {
            "--sessions" => options.sessions = number("--sessions")?,
            "--replicas" => options.replicas = number("--replicas")?,
            "--quick" => options.sessions = 100,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if options.replicas < 2 {
        return Err("--replicas: at least 2, one of them is killed".into());
    }
    Ok(options)
}

/// What a phase measured.
struct Report {
    sessions_per_second: f64,
    first_event: (f64, f64),
    first_delta: (f64, f64),
    rss: Vec<f64>,
    reconnects: u32,
    interrupted: usize,
    /// Sessions not finished or with an invalid transcript.
    lost: usize,
    problems: Vec<String>,
}

fn percentiles(mut values: Vec<Duration>) -> (f64, f64) {
    if values.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    values.sort();
    let at = |p: f64| values[((values.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e3;
    (at(0.5), at(0.99))
}

/// One phase on a fresh set of replicas; with `kill`, the first replica is
/// SIGKILLed once half of its own sessions finished.
async fn phase(
    conninfo: &str,
    provider: &str,
    options: &Options,
    name: &str,
    kill: bool,
) -> Report {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // The job tool returns at once: the test is about the server.
    std::fs::write(dir.path().join("release"), b"").expect("the release mark");
    let mut replicas: Vec<ListeningProcess> = (0..options.replicas)
        .map(|_| replica(conninfo, dir.path(), provider))
        .collect();
    let urls = Arc::new(
        replicas
            .iter()
            .map(ListeningProcess::url)
            .collect::<Vec<_>>(),
    );
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("an HTTP client");
    let finished = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..options.sessions)
        .map(|i| {
            let (http, urls, finished) = (http.clone(), urls.clone(), finished.clone());
            let thread = format!("{name}-{i}");
            let home = i % urls.len();
            tokio::spawn(async move {
                let outcome = client::session(http, urls, i, thread).await;
                // Counted per home replica: the killed one must still have
                // sessions in flight when it dies.
                if home == 0 {
                    finished.fetch_add(1, Ordering::SeqCst);
                }
                outcome
            })
        })
        .collect();
    let mut rss = vec![f64::NAN; replicas.len()];
    if kill {
        // Half of replica 0's own sessions: with the other replicas'
        // counted too, a fast replica 0 could be done before the kill.
        let on_first = options.sessions.div_ceil(replicas.len());
        while finished.load(Ordering::SeqCst) < on_first / 2 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        rss[0] = replicas[0].peak_rss_mib();
        replicas[0].kill();
    }
    let mut outcomes = Vec::with_capacity(tasks.len());
    for task in tasks {
        outcomes.push(task.await.expect("a session task"));
    }
    let elapsed = started.elapsed();
    for (at, replica) in rss.iter_mut().zip(&replicas) {
        if at.is_nan() {
            *at = replica.peak_rss_mib();
        }
    }

    let mut problems = Vec::new();
    let mut lost = std::collections::HashSet::new();
    for (i, outcome) in outcomes.iter().enumerate() {
        if !outcome.finished {
            lost.insert(i);
            problems.push(format!(
                "{name}-{i}: not finished: {}",
                outcome.error.as_deref().unwrap_or("?")
            ));
        }
    }
    // Every transcript, through the replicas still alive.
    let live: Vec<String> = urls[usize::from(kill)..].to_vec();
    let mut calls: HashMap<String, bool> = HashMap::new();
    for i in 0..options.sessions {
        match client::check_transcript(&http, &live, &format!("{name}-{i}")).await {
            Ok((call, ran)) => {
                calls.insert(call, ran);
            }
            Err(problem) => {
                lost.insert(i);
                problems.push(problem);
            }
        }
    }
    // Every tool run, by its call id: at most once, and once for each
    // call whose answer says it finished.
    let mut runs: HashMap<String, usize> = HashMap::new();
    for entry in std::fs::read_dir(dir.path()).expect("the marks").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(rest) = name.strip_prefix("started-") {
            let call = rest.rsplit_once('-').map_or(rest, |(call, _pid)| call);
            *runs.entry(call.to_owned()).or_default() += 1;
        }
    }
    for (call, count) in &runs {
        if *count > 1 {
            problems.push(format!("tool call {call} ran {count} times"));
        }
    }
    for (call, ran) in &calls {
        if *ran && runs.get(call).copied().unwrap_or(0) != 1 {
            problems.push(format!("tool call {call} finished without one run"));
        }
    }
    Report {
        sessions_per_second: options.sessions as f64 / elapsed.as_secs_f64(),
        first_event: percentiles(outcomes.iter().filter_map(|o| o.first_event).collect()),
        first_delta: percentiles(outcomes.iter().filter_map(|o| o.first_delta).collect()),
        rss,
        reconnects: outcomes.iter().map(|o| o.reconnects).sum(),
        interrupted: calls.values().filter(|ran| !**ran).count(),
        lost: lost.len(),
        problems,
    }
}

fn main() -> std::process::ExitCode {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("load: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    agentkit_http::install_tls_provider();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let cluster = agentkit_testkit::pg::TempCluster::start();
    let reports = runtime.block_on(async {
        let provider = provider::start().await.expect("the provider server");
        let all_up = phase(&cluster.conninfo(), provider.url(), &options, "up", false).await;
        let killed = phase(&cluster.conninfo(), provider.url(), &options, "kill", true).await;
        [("all up", all_up), ("one SIGKILLed halfway", killed)]
    });
    println!(
        "\n{} concurrent sessions across {} replicas, one run with a tool call each\n",
        options.sessions, options.replicas
    );
    println!(
        "| phase | sessions/s | first event p50 / p99, ms | first delta p50 / p99, ms | peak RSS per replica, MiB | reconnects | calls interrupted | sessions lost |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut failed = false;
    for (name, report) in &reports {
        let rss: Vec<String> = report.rss.iter().map(|r| format!("{r:.0}")).collect();
        println!(
            "| {name} | {:.0} | {:.0} / {:.0} | {:.0} / {:.0} | {} | {} | {} | {} |",
            report.sessions_per_second,
            report.first_event.0,
            report.first_event.1,
            report.first_delta.0,
            report.first_delta.1,
            rss.join(" / "),
            report.reconnects,
            report.interrupted,
            report.lost,
        );
        for problem in report.problems.iter().take(20) {
            eprintln!("{name}: {problem}");
        }
        failed |= !report.problems.is_empty();
    }
    if failed {
        eprintln!("load: sessions were lost or a tool ran twice (above)");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
