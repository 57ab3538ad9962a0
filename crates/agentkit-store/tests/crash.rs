//! A worker is killed with SIGKILL in the middle of a tool round; another
//! process resumes the session and finishes the turn. Nothing written
//! before the kill is lost, and the transcript stays valid.
//!
//! The worker is this test binary run again with `--ignored --exact
//! crash_worker` and the store's location in the environment.

mod support;

use agentkit_core::{Item, validate_transcript};
use agentkit_loop::{Agent, LoopInterrupt, LoopStep};
use agentkit_store::{NewSession, PgStore, SessionLease, SessionStore, SqliteStore, StoreError};
use agentkit_testkit::pg::TempCluster;
use agentkit_testkit::{ScriptedModel, ScriptedTurn};
use agentkit_tools_core::ToolRegistry;
use serde_json::json;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::tools::Slow;

const BACKEND: &str = "AGENTKIT_STORE_CRASH_BACKEND";
const LOCATION: &str = "AGENTKIT_STORE_CRASH_LOCATION";
const CASE: &str = "AGENTKIT_STORE_CRASH_CASE";
const SESSION: &str = "crashing";

/// Where the worker is when it is killed.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Case {
    /// A round of two calls run one after the other, in the second (a
    /// minute long), the first one's result written.
    SecondCall,
    /// The same two calls run at once: the quick one's result is written
    /// while the long one runs.
    ParallelCalls,
    /// A round of one call, answered, in the `AfterToolResult` mutator (a
    /// minute long, like a compaction calling a model): the round's result,
    /// the last item of the step, must be stored before the mutator runs.
    AfterRoundMutator,
}

/// At `AfterToolResult`: counts its runs and takes `pause` (a minute in
/// the worker, like a compaction calling a model).
struct AfterRounds {
    runs: Arc<std::sync::atomic::AtomicUsize>,
    pause: Duration,
}

#[async_trait::async_trait]
impl agentkit_loop::LoopMutator for AfterRounds {
    fn name(&self) -> &str {
        "after-rounds"
    }

    async fn mutate(
        &self,
        ctx: &agentkit_loop::MutationContext,
        _transcript: agentkit_loop::TranscriptView,
    ) -> Result<Option<Vec<Item>>, agentkit_loop::MutateError> {
        if ctx.point == agentkit_loop::MutationPoint::AfterToolResult {
            self.runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::time::sleep(self.pause).await;
        }
        Ok(None)
    }
}

async fn store(backend: &str, location: &str) -> Arc<dyn SessionStore> {
    match backend {
        "sqlite" => Arc::new(SqliteStore::open(location).unwrap()),
        _ => Arc::new(PgStore::connect(location).await.unwrap()),
    }
}

/// The worker: one turn whose round has a quick call, then a call that
/// sleeps for a minute. It is killed during the second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by the crash tests as a child process"]
async fn crash_worker() {
    let (Ok(backend), Ok(location)) = (std::env::var(BACKEND), std::env::var(LOCATION)) else {
        return;
    };
    let store = store(&backend, &location).await;
    let created = store
        .create(NewSession::new().with_id(SESSION))
        .await
        .unwrap();
    let lease = SessionLease::acquire_with_ttl(store, &created.id, Duration::from_millis(500))
        .await
        .unwrap();
    let case = std::env::var(CASE).unwrap_or_default();
    let mutator = case == "AfterRoundMutator";
    let mut answer = ScriptedTurn::new().call("quick", "slow", json!({ "ms": 1 }));
    if !mutator {
        answer = answer.call("long", "slow", json!({ "ms": 60_000 }));
    }
    let model = ScriptedModel::new([answer.finish(agentkit_core::FinishReason::ToolCall)]);
    let mut builder = Agent::builder()
        .model(model)
        .add_tool_source(ToolRegistry::new().with(Slow));
    if case == "ParallelCalls" {
        builder = builder.task_manager(agentkit_loop::ConcurrentTaskManager::new(2));
    }
    if mutator {
        builder = builder.mutator(AfterRounds {
            runs: Arc::default(),
            pause: Duration::from_secs(60),
        });
    }
    let agent = lease.record(builder).build().unwrap();
    let mut session = lease.open(&agent).await.unwrap();
    let LoopStep::Interrupt(LoopInterrupt::AwaitingInput(request)) = session.next().await.unwrap()
    else {
        panic!("expected AwaitingInput")
    };
    request
        .submit(&mut session, vec![Item::user("run both")])
        .unwrap();
    session.next().await.unwrap();
    panic!("the worker should have been killed during the long call or mutator");
}

/// SIGKILLs a writer, then resumes and checks its session (see the tests
/// below); returns how long the round took.
fn crash_and_resume(backend: &str, location: &str, case: Case) -> Duration {
    let started = Instant::now();
    let mut worker = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "crash_worker", "--nocapture"])
        .env(BACKEND, backend)
        .env(LOCATION, location)
        .env(CASE, format!("{case:?}"))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // Wait until the quick call's result is stored: the long call runs.
        let observer = store(backend, location).await;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(stored) = observer.load(&SESSION.into()).await
                && stored.items.len() >= 3
            {
                break;
            }
            if let Some(status) = worker.try_wait().unwrap() {
                panic!("the worker exited early with {status}");
            }
            assert!(
                Instant::now() < deadline,
                "the worker never reached the long call or mutator"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        worker.kill().unwrap(); // SIGKILL
        worker.wait().unwrap();
        let before = observer.load(&SESSION.into()).await.unwrap().items;
        assert_eq!(
            before.len(),
            3,
            "user, the call(s), the quick result: {before:?}"
        );

        // Another worker takes over once the dead one's lease expired.
        let store = store(backend, location).await;
        let lease = loop {
            match SessionLease::acquire(store.clone(), &SESSION.into()).await {
                Ok(lease) => break lease,
                Err(StoreError::Busy { .. }) => tokio::time::sleep(Duration::from_millis(50)).await,
                Err(err) => panic!("{err}"),
            }
        };
        let model = ScriptedModel::new([ScriptedTurn::text("finished after the crash")]);
        let after_rounds = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let agent = lease
            .record(
                Agent::builder()
                    .model(model.clone())
                    .add_tool_source(ToolRegistry::new().with(Slow))
                    .mutator(AfterRounds {
                        runs: after_rounds.clone(),
                        pause: Duration::ZERO,
                    }),
            )
            .build()
            .unwrap();
        let mut session = lease.open(&agent).await.unwrap();
        let step = session.next().await.unwrap();
        assert!(
            matches!(step, LoopStep::Interrupt(LoopInterrupt::AfterToolResult(_))),
            "{step:?}"
        );
        // The round's `AfterToolResult` mutators run once in this process:
        // as the interrupted call's answer completes the round, or, killed
        // while they ran, owed on resume (a redaction is never skipped).
        assert_eq!(after_rounds.load(std::sync::atomic::Ordering::SeqCst), 1);
        let LoopStep::Finished(turn) = session.next().await.unwrap() else {
            panic!("the turn did not finish")
        };
        assert_eq!(
            turn.items.last().unwrap().text_content(),
            "finished after the crash"
        );
        let transcript = session.transcript().to_vec();
        validate_transcript(&transcript).unwrap();
        assert_eq!(
            &transcript[..3],
            &before[..],
            "everything written before the kill is kept"
        );
        // The quick call's real result is kept.
        let quick = transcript[2].tool_results().next().unwrap();
        assert_eq!(quick.call_id.as_str(), "quick");
        assert!(!quick.is_error, "{quick:?}");
        if case == Case::AfterRoundMutator {
            assert_eq!(model.requests()[0].transcript.len(), 3);
        } else {
            // The long call may have had effects: it is answered as
            // interrupted, never run again behind the model's back.
            let long = transcript[3].tool_results().next().unwrap();
            assert_eq!(long.call_id.as_str(), "long");
            assert!(long.is_error);
            assert_eq!(long.metadata["agentkit.error_kind"], "interrupted");
            assert_eq!(model.requests()[0].transcript.len(), 4);
        }
        session.close().await.unwrap();
        let stored = observer.load(&SESSION.into()).await.unwrap();
        assert_eq!(stored.items, transcript);
    });
    started.elapsed()
}

#[test]
fn sqlite_a_killed_worker_loses_nothing() {
    for case in [
        Case::SecondCall,
        Case::ParallelCalls,
        Case::AfterRoundMutator,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        crash_and_resume("sqlite", path.to_str().unwrap(), case);
    }
}

#[test]
fn postgres_a_killed_worker_loses_nothing() {
    for case in [
        Case::SecondCall,
        Case::ParallelCalls,
        Case::AfterRoundMutator,
    ] {
        let cluster = TempCluster::start();
        crash_and_resume("postgres", &cluster.conninfo(), case);
    }
}

/// `cargo xtask soak`'s store phase: for `AGENTKIT_SOAK_STORE_MINUTES`,
/// round after round, a process writing a session to a SQLite file is
/// SIGKILLed in the middle of a tool round, and the session is loaded,
/// resumed and validated (every assertion of the test above, each round).
#[test]
#[ignore = "a soak: run by cargo xtask soak"]
fn soak_killed_store_writers() {
    let minutes: f64 = std::env::var("AGENTKIT_SOAK_STORE_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(1.0);
    let until = Instant::now() + Duration::from_secs_f64(minutes * 60.0);
    let mut rounds = 0u32;
    let mut slowest = Duration::ZERO;
    while Instant::now() < until {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        slowest = slowest.max(crash_and_resume(
            "sqlite",
            path.to_str().unwrap(),
            Case::SecondCall,
        ));
        rounds += 1;
    }
    println!(
        "store soak: {rounds} writers SIGKILLed mid-round, {rounds} sessions loaded, resumed and valid; slowest round {:.1} s",
        slowest.as_secs_f64()
    );
}
