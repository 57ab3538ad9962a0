//! Many sessions at once (issue 17, target 6; issue 33's 10,000 row):
//! 1,000 concurrent sessions (or `AGENTKIT_MANY_SESSIONS`) on a 2-worker
//! runtime, each streaming realistic answers with a tool call
//! from a local OpenAI-compatible server (Chat Completions over loopback
//! HTTP), through the real adapter, HTTP client and driver.
//!
//! Each session runs one user turn of two model calls (the model calls the
//! `echo` tool, then calls it again and the step limit of two ends the
//! turn), so every server answer can be the same realistic stream. Printed:
//! sessions per second, p50 / p99 of the time from the first `next()` to the
//! session's first streamed delta, the process's peak RSS and how many
//! sessions failed (the run exits with an error if any did).
//!
//! Run with `cargo bench -p agentkit --bench many_sessions` (or
//! `cargo xtask bench`); `AGENTKIT_MANY_SESSIONS=10000 cargo bench -p
//! agentkit --bench many_sessions` for ten thousand;
//! `AGENTKIT_MAX_CONNECTIONS` sets the client's bound on open requests and
//! `AGENTKIT_MAX_LOCAL_CONNECTIONS` its bound on those to a server on this
//! machine, which is the one that applies here (the library's defaults
//! otherwise). Also printed: when the sessions' first `next()` came (a
//! session polled late waited before its clock started), the time from the
//! run's start to each session's first delta (that wait included), and the
//! process's CPU time, which moves much less with the machine's load than
//! the wall clock: in total per session, and how much of it the process
//! had used when each session's first delta came (on a loaded machine, that
//! divided by the two workers estimates the wall-clock wait on an idle
//! one). Each open request holds a client and
//! a server socket, so the open-files limit is raised to its hard maximum
//! first. Wall clock: never asserted.

use agentkit::agent::{Agent, AgentEvent, LoopObserver, LoopStep, SessionConfig};
use agentkit::core::Item;
use agentkit::http::testing::{ChatStream, ScriptedResponse, TestServer};
use agentkit::http::{HttpConfig, RetryPolicy};
use agentkit::openai::{OpenAiAdapter, OpenAiConfig};
use agentkit::testkit::EchoTool;
use agentkit::tools::ToolRegistry;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How many sessions: `AGENTKIT_MANY_SESSIONS`, 1,000 by default.
fn sessions() -> usize {
    std::env::var("AGENTKIT_MANY_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

/// The client's bounds on open requests, overall and to a server on this
/// machine: `AGENTKIT_MAX_CONNECTIONS` and `AGENTKIT_MAX_LOCAL_CONNECTIONS`,
/// the library's defaults (`HttpConfig::max_connections`,
/// `max_local_connections`) otherwise.
fn bounds() -> (usize, usize) {
    let read = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let defaults = HttpConfig::default();
    (
        read("AGENTKIT_MAX_CONNECTIONS", defaults.max_connections),
        read(
            "AGENTKIT_MAX_LOCAL_CONNECTIONS",
            defaults.max_local_connections,
        ),
    )
}

/// The CPU time the process has used (user and system, all threads).
/// Read through libc (nix) rather than rustix, whose vDSO lookup faults
/// under valgrind (callgrind and dhat runs of this bench).
fn cpu_time() -> Duration {
    use nix::time::{ClockId, clock_gettime};
    let now = clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID).expect("the process CPU clock");
    Duration::new(now.tv_sec() as u64, now.tv_nsec() as u32)
}

/// Raises the soft limit on open files to the hard one: ten thousand
/// sessions hold twenty thousand sockets in this process.
fn raise_open_files_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        limit.current = limit.maximum;
        if let Err(err) = setrlimit(Resource::Nofile, limit) {
            eprintln!("could not raise the open-files limit: {err}");
        }
    }
}

/// One streamed answer: 40 chunks of prose, then an `echo` call in three
/// argument fragments, usage and `[DONE]`.
fn answer() -> Vec<u8> {
    let words = [
        " Let",
        " me",
        " \"check\"",
        " the",
        " caf\u{e9}",
        " file",
        ".\n",
    ];
    let mut stream = ChatStream::new();
    for i in 0..40 {
        stream = stream.text(words[i % words.len()]);
    }
    stream
        .tool_call("call_Qm3bX9", "echo", &[r#"{"text""#, r#":"hi""#, "}"])
        .finish("tool_calls", 120, 60)
}

/// Records when the session's first content delta arrived, on the wall
/// clock and on the process's CPU clock.
struct FirstDelta(Arc<Mutex<Option<(Instant, Duration)>>>);

impl LoopObserver for FirstDelta {
    fn handle_event(&self, event: AgentEvent) {
        if let AgentEvent::ContentDelta { .. } = event {
            let mut first = self.0.lock().unwrap();
            first.get_or_insert_with(|| (Instant::now(), cpu_time()));
        }
    }
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let sessions = sessions();
    raise_open_files_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (max_connections, max_local) = bounds();
    let (elapsed, cpu, mut firsts, mut asks, mut cpu_firsts, errors) = runtime.block_on(async {
        let body = answer();
        // Answers are made per request (a script of 20,000 copies would
        // weigh more than the sessions).
        let answered = Arc::new(AtomicUsize::new(0));
        let counter = answered.clone();
        let server = TestServer::respond(move |_| {
            counter.fetch_add(1, Ordering::Relaxed);
            ScriptedResponse::sse(body.clone())
        })
        .await
        .unwrap();
        let config = OpenAiConfig::compatible(format!("{}/v1", server.url()), "gpt-bench")
            .with_http(
                HttpConfig::default()
                    .with_retry(RetryPolicy::none())
                    .with_max_connections(max_connections)
                    .with_max_local_connections(max_local),
            );
        let adapter = OpenAiAdapter::new(config).unwrap();
        let started = Instant::now();
        let cpu_before = cpu_time();
        let tasks: Vec<_> = (0..sessions)
            .map(|i| {
                let adapter = adapter.clone();
                let session = async move {
                    let first = Arc::new(Mutex::new(None));
                    let agent = Agent::builder()
                        .model(adapter)
                        .add_tool_source(ToolRegistry::new().with(EchoTool::new()))
                        .observer(FirstDelta(first.clone()))
                        .max_model_calls(2)
                        .transcript(vec![Item::system("You are a coding agent.")])
                        .input(vec![Item::user("Check the file, please.")])
                        .build()
                        .unwrap();
                    let mut driver = agent
                        .start(SessionConfig::new(format!("many-{i}")))
                        .await
                        .unwrap();
                    let asked = Instant::now();
                    if i == 0 {
                        eprintln!(
                            "driver: {} bytes, next(): {} bytes",
                            std::mem::size_of_val(&driver),
                            std::mem::size_of_val(&driver.next())
                        );
                    }
                    loop {
                        match driver.next().await {
                            Ok(LoopStep::Finished(_)) => break,
                            Ok(LoopStep::Interrupt(_)) => {}
                            Err(err) => return Err(err.to_string()),
                        }
                    }
                    let (at, cpu_at) = first.lock().unwrap().expect("a streamed delta");
                    Ok((at - asked, asked - started, cpu_at - cpu_before))
                };
                if i == 0 {
                    eprintln!("session future: {} bytes", std::mem::size_of_val(&session));
                }
                tokio::spawn(session)
            })
            .collect();
        let mut firsts = Vec::with_capacity(sessions);
        let mut asks = Vec::with_capacity(sessions);
        let mut cpu_firsts = Vec::with_capacity(sessions);
        let mut errors = Vec::new();
        for task in tasks {
            match task.await.unwrap() {
                Ok((first, asked, cpu_first)) => {
                    firsts.push(first);
                    asks.push(asked);
                    cpu_firsts.push(cpu_first);
                }
                Err(err) => errors.push(err),
            }
        }
        let elapsed = started.elapsed();
        let cpu = cpu_time() - cpu_before;
        if errors.is_empty() {
            assert_eq!(answered.load(Ordering::Relaxed), sessions * 2);
        }
        (elapsed, cpu, firsts, asks, cpu_firsts, errors)
    });
    if let Some(first) = errors.first() {
        eprintln!("{} sessions failed; the first: {first}", errors.len());
    }
    // From the run's start (every session was spawned then) to the
    // session's first delta: what a user who sent a message at the start
    // waits, the wait for the session's first poll included.
    let mut from_start: Vec<Duration> = firsts.iter().zip(&asks).map(|(f, a)| *f + *a).collect();
    firsts.sort();
    asks.sort();
    from_start.sort();
    cpu_firsts.sort();
    let rss = peak_rss_kib().map_or(f64::NAN, |kib| kib as f64 / 1024.0);
    println!("| scenario | figure | value |");
    println!("| --- | --- | --- |");
    println!(
        "| S6 | sessions per second ({sessions} sessions, 2 workers, 2 model calls each, at most {max_connections} open requests, {max_local} to this machine) | {:.0} |",
        sessions as f64 / elapsed.as_secs_f64()
    );
    println!(
        "| S6 | start to the session's first next(), p50 / p99, ms | {:.1} / {:.1} |",
        percentile(&asks, 0.5).as_secs_f64() * 1e3,
        percentile(&asks, 0.99).as_secs_f64() * 1e3
    );
    println!(
        "| S6 | first next() to first streamed delta, p50 / p99, ms | {:.1} / {:.1} |",
        percentile(&firsts, 0.5).as_secs_f64() * 1e3,
        percentile(&firsts, 0.99).as_secs_f64() * 1e3
    );
    println!(
        "| S6 | start of the run to the session's first delta, p50 / p99, ms | {:.1} / {:.1} |",
        percentile(&from_start, 0.5).as_secs_f64() * 1e3,
        percentile(&from_start, 0.99).as_secs_f64() * 1e3
    );
    println!(
        "| S6 | CPU time the process used from the run's start to the session's first delta, p50 / p99, ms | {:.1} / {:.1} |",
        percentile(&cpu_firsts, 0.5).as_secs_f64() * 1e3,
        percentile(&cpu_firsts, 0.99).as_secs_f64() * 1e3
    );
    println!("| S6 | peak RSS, MiB (whole process) | {rss:.1} |");
    println!(
        "| S6 | CPU time (user + system, client and server) per session, ms | {:.3} |",
        cpu.as_secs_f64() * 1e3 / sessions as f64
    );
    println!("| S6 | sessions failed | {} |", errors.len());
    if !errors.is_empty() {
        std::process::exit(1);
    }
}
